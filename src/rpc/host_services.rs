//! The front door of host services: what the plugin's core and the ABI layer ask of them goes through
//! [`HostServices`], so that a reader finds the whole conversation in one place and a build without
//! the `rpc` feature is one stub of the same type, not a condition at every call.
//!
//! Still outside it: attaching an image's server (`plugin::rpc_link`, which builds the server from
//! the backend's memory) and the C side of user handlers (`abi::handlers`).

use std::time::Duration;

use crate::util::error::Result;

/// Host services as the plugin sees them: kernels that may call the host start and end, threads
/// that wait for such kernels serve what is left, handlers are registered, and what was observed is
/// reported. Every function is cheap when host services are unused.
pub struct HostServices;

/// A kernel that may call the host, as the trace shows it: its name and launch time (ns).
pub type TracedKernel = (String, u64);

#[cfg(feature = "rpc")]
impl HostServices {
    /// A kernel that may call the host is about to start: the serving threads are started (the first
    /// time) and woken. Fails when a serving thread cannot be started.
    pub fn kernel_started() -> Result<()> {
        super::serving::threads::kernel_started()
    }

    /// `count` such kernels ended: the serving threads may sleep once none runs.
    pub fn kernels_finished(count: usize) {
        super::serving::threads::kernels_finished(count)
    }

    /// Serves the calls `device`'s kernels left behind (one-way calls such as a last `free`), waiting
    /// at most `limit` for any another thread is serving, so that their effects precede the
    /// program's next statement.
    pub fn serve_what_is_waiting(device: usize, limit: Duration) {
        super::serving::threads::serve_what_is_waiting(device, limit)
    }

    /// Whether this thread is serving a host call (then a device's `exit` may be ending the process
    /// from it, and waiting for that device's kernels would never end).
    pub fn this_thread_is_serving() -> bool {
        super::serving::calls::this_thread_is_serving()
    }

    /// The launch time of a kernel that may call the host (ns), when kernels are traced
    /// (`OMPRPC_TRACE`): only then are their names and times kept.
    pub fn launch_time_if_tracing() -> Option<u64> {
        super::observing::trace::enabled().then(crate::util::clock::now_ns)
    }

    /// Adds `kernels` of `device`, ended now, to the trace.
    pub fn trace_kernels(device: usize, kernels: Vec<TracedKernel>) {
        if let Some(trace) = super::observing::trace::global() {
            let ended = crate::util::clock::now_ns();
            for (name, launched) in kernels {
                trace.kernel(device, &name, launched, ended);
            }
        }
    }

    /// Prints the statistics gathered so far, as at exit; when `OMPRPC_STATS` is not set, one line
    /// says how to gather them.
    pub fn print_stats() -> Result<()> {
        if super::observing::stats::enabled() {
            super::observing::stats::print();
        } else {
            crate::util::log::error("no host-call statistics: set OMPRPC_STATS=1 to gather them");
        }
        Ok(())
    }

    /// The statistics, trace and watchdog's last words, once, at the end of the program.
    pub fn report_at_exit() {
        super::observing::report_at_exit()
    }

    /// Registers `handler` for the user `opcode` on every device, present and future.
    pub fn register_handler(opcode: u16, handler: Box<dyn super::serving::handlers::UserHandler>) -> Result<()> {
        super::serving::registry::register_handler(opcode, handler)
    }
}

/// Without host services: nothing runs, nothing is served, and what asks for them is told why.
#[cfg(not(feature = "rpc"))]
impl HostServices {
    /// Nothing to start.
    pub fn kernel_started() -> Result<()> {
        Ok(())
    }

    /// Nothing to stop.
    pub fn kernels_finished(_count: usize) {}

    /// Nothing waits.
    pub fn serve_what_is_waiting(_device: usize, _limit: Duration) {}

    /// No thread serves.
    pub fn this_thread_is_serving() -> bool {
        false
    }

    /// No trace is written.
    pub fn launch_time_if_tracing() -> Option<u64> {
        None
    }

    /// No trace to add to.
    pub fn trace_kernels(_device: usize, _kernels: Vec<TracedKernel>) {}

    /// There are no statistics to print.
    pub fn print_stats() -> Result<()> {
        Err(crate::util::error::Error::InvalidArg(
            "this plugin was built without host services".into(),
        ))
    }

    /// Nothing to report.
    pub fn report_at_exit() {}
}
