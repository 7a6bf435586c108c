//! The front door of host services: what the plugin's core and the ABI layer ask of them goes through
//! [`HostServices`], so that a reader finds the whole conversation in one place and a build without
//! the `rpc` feature is one stub of the same type, not a condition at every call.
//!
//! An image's server and a device's heap reach the plugin as [`ImageServer`] and [`DeviceHeap`],
//! handles that say what the plugin may do with them (`plugin::rpc_link` reads the image's globals
//! and builds them from the backend's memory). Still outside: the C side of user handlers
//! (`abi::handlers`), which is the protocol's port seen from C.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::protocol::memory::DeviceMemory;
use crate::util::doorbell::Doorbell;
use crate::util::error::Result;

/// Host services as the plugin sees them: kernels that may call the host start and end, threads
/// that wait for such kernels serve what is left, handlers are registered, and what was observed is
/// reported. Every function is cheap when host services are unused.
pub struct HostServices;

/// A kernel that may call the host, as the trace shows it: its name and launch time (ns).
pub type TracedKernel = (String, u64);

/// The server of one loaded image: made by [`HostServices::open_server`], put in service once its
/// client is in the image, taken out when the image goes ([`ImageServer::detach`]).
#[derive(Clone)]
pub struct ImageServer(
    #[cfg(feature = "rpc")] Arc<super::serving::server::RpcServer>,
    #[cfg(not(feature = "rpc"))] Never,
);

/// The heap device code's `malloc` takes from, one per device, shared by its images' servers.
#[derive(Clone)]
pub struct DeviceHeap(
    #[cfg(feature = "rpc")] Arc<super::services::heap::DeviceHeap>,
    #[cfg(not(feature = "rpc"))] Never,
);

/// What the stub's handles hold: nothing can make one.
#[cfg(not(feature = "rpc"))]
#[derive(Clone, Copy)]
pub enum Never {}

/// Why an image that asks for host services gets none from a build without them.
#[cfg(not(feature = "rpc"))]
fn not_built() -> crate::util::error::Error {
    crate::util::error::Error::Unsupported("this omprpc was built without host services (feature `rpc`)".into())
}

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
    /// at most `limit` for any that another thread is serving, so that their effects precede the
    /// program's next statement.
    pub fn serve_what_is_waiting(device: usize, limit: Duration) {
        super::serving::threads::serve_what_is_waiting(device, limit)
    }

    /// Whether this thread is serving a host call (then a device's `exit` may be ending the process
    /// from it, and waiting for that device's kernels would never end).
    pub fn this_thread_is_serving() -> bool {
        super::calls::this_thread_is_serving()
    }

    /// The launch time of a kernel that may call the host (ns), when kernels are traced
    /// (`OMPRPC_TRACE`): only then are their names and times kept.
    pub fn launch_time_if_tracing() -> Option<u64> {
        super::observing::trace::enabled().then(crate::util::clock::now_ns)
    }

    /// Adds the kernels noted in `kernels` for `device`, ended now, to the trace, and forgets them;
    /// the list is not even locked when no trace is written.
    pub fn trace_kernels(device: usize, kernels: &Mutex<Vec<TracedKernel>>) {
        if let Some(trace) = super::observing::trace::global() {
            let ended = crate::util::clock::now_ns();
            for (name, launched) in std::mem::take(&mut *crate::util::sync::lock(kernels)) {
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

    /// Bytes of libc's client object, which an image's `__llvm_libc_rpc_client` must point at room for.
    pub fn client_size() -> usize {
        // SAFETY: a pure function of the linked library.
        unsafe { super::protocol::ffi::rpc_get_client_size() as usize }
    }

    /// Whether a server can serve device code built for ports of `lanes` lanes.
    pub fn serves_lanes(lanes: u32) -> bool {
        super::protocol::mailbox::LANE_SIZES.contains(&(lanes as usize))
    }

    /// The doorbell the serving threads sleep on, for device code that can ring it.
    pub fn doorbell() -> &'static Doorbell {
        &super::serving::threads::DOORBELL
    }

    /// A heap for `device`'s code, over `memory`, reserving `chunk` bytes at a time (`None`: memory
    /// the host gives on demand).
    pub fn heap(device: usize, memory: Arc<dyn DeviceMemory>, chunk: Option<usize>) -> Result<DeviceHeap> {
        super::services::heap::DeviceHeap::new(device, memory, chunk).map(DeviceHeap)
    }

    /// A server for one image of `device`: `ports` ports of `lanes` lanes, its mailbox from `memory`,
    /// `malloc` from `heap`.
    pub fn open_server(
        device: usize,
        ports: u32,
        lanes: u32,
        memory: Arc<dyn DeviceMemory>,
        heap: &DeviceHeap,
    ) -> Result<ImageServer> {
        super::serving::server::RpcServer::with_heap(device, ports, lanes, memory, Arc::clone(&heap.0)).map(ImageServer)
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
    pub fn trace_kernels(_device: usize, _kernels: &Mutex<Vec<TracedKernel>>) {}

    /// There are no statistics to print.
    pub fn print_stats() -> Result<()> {
        Err(crate::util::error::Error::InvalidArg(
            "this plugin was built without host services".into(),
        ))
    }

    /// Nothing to report.
    pub fn report_at_exit() {}

    /// No client object is served.
    pub fn client_size() -> usize {
        0
    }

    /// No lanes are served.
    pub fn serves_lanes(_lanes: u32) -> bool {
        false
    }

    /// A doorbell no thread sleeps on.
    pub fn doorbell() -> &'static Doorbell {
        static UNHEARD: Doorbell = Doorbell::new();
        &UNHEARD
    }

    /// There is no heap to make.
    pub fn heap(_device: usize, _memory: Arc<dyn DeviceMemory>, _chunk: Option<usize>) -> Result<DeviceHeap> {
        Err(not_built())
    }

    /// There is no server to open.
    pub fn open_server(
        _device: usize,
        _ports: u32,
        _lanes: u32,
        _memory: Arc<dyn DeviceMemory>,
        _heap: &DeviceHeap,
    ) -> Result<ImageServer> {
        Err(not_built())
    }
}

#[cfg(feature = "rpc")]
impl ImageServer {
    /// The bytes of libc's client object for this server, to copy into the image.
    pub fn client_bytes(&self) -> Vec<u8> {
        self.0.client_bytes()
    }

    /// Its ports.
    pub fn ports(&self) -> u32 {
        self.0.ports()
    }

    /// Lanes per port.
    pub fn lane_size(&self) -> u32 {
        self.0.lane_size()
    }

    /// The image's code rings the doorbell after each request: the serving threads may sleep until
    /// it rings instead of looking on a backoff.
    pub fn rings_doorbell(&self) {
        self.0.rings_doorbell()
    }

    /// Puts it in service: the serving threads (started now, the first time) serve it.
    pub fn put_in_service(&self) -> Result<()> {
        super::serving::threads::put_in_service(Arc::clone(&self.0))
    }

    /// Whether its device was lost and its calls answered for it.
    pub fn device_lost(&self) -> bool {
        self.0.device_lost()
    }

    /// Its device is lost: the calls it was in the middle of are answered for it, waiting at most
    /// `limit` for them to end, and it is taken out of service.
    pub fn retire_lost_device(&self, limit: Duration) -> Result<()> {
        super::serving::registry::retire_lost_device_server(&self.0, limit)
    }

    /// Takes it out of service and frees it and its mailbox (its image is going).
    pub fn detach(self) -> Result<()> {
        super::serving::registry::remove_server(&self.0)?;
        self.0.shutdown()
    }

    /// Frees a server never put in service.
    pub fn shutdown(self) -> Result<()> {
        self.0.shutdown()
    }
}

#[cfg(feature = "rpc")]
impl DeviceHeap {
    /// Whether device code's `malloc` ran out of room since the last reservation.
    pub fn needs_more(&self) -> bool {
        self.0.needs_more()
    }

    /// Reserves more, if it ran out (only while no kernel that may call the host is in flight).
    pub fn grow_if_exhausted(&self) -> Result<()> {
        self.0.grow_if_exhausted()
    }

    /// Gives its reservations back, at teardown.
    pub fn release(&self) -> Result<()> {
        self.0.release()
    }
}

/// Handles nothing can make: each method is unreachable by construction.
#[cfg(not(feature = "rpc"))]
impl ImageServer {
    /// See the `rpc` build.
    pub fn client_bytes(&self) -> Vec<u8> {
        match self.0 {}
    }

    /// See the `rpc` build.
    pub fn ports(&self) -> u32 {
        match self.0 {}
    }

    /// See the `rpc` build.
    pub fn lane_size(&self) -> u32 {
        match self.0 {}
    }

    /// See the `rpc` build.
    pub fn rings_doorbell(&self) {
        match self.0 {}
    }

    /// See the `rpc` build.
    pub fn put_in_service(&self) -> Result<()> {
        match self.0 {}
    }

    /// See the `rpc` build.
    pub fn device_lost(&self) -> bool {
        match self.0 {}
    }

    /// See the `rpc` build.
    pub fn retire_lost_device(&self, _limit: Duration) -> Result<()> {
        match self.0 {}
    }

    /// See the `rpc` build.
    pub fn detach(self) -> Result<()> {
        match self.0 {}
    }

    /// See the `rpc` build.
    pub fn shutdown(self) -> Result<()> {
        match self.0 {}
    }
}

#[cfg(not(feature = "rpc"))]
impl DeviceHeap {
    /// See the `rpc` build.
    pub fn needs_more(&self) -> bool {
        match self.0 {}
    }

    /// See the `rpc` build.
    pub fn grow_if_exhausted(&self) -> Result<()> {
        match self.0 {}
    }

    /// See the `rpc` build.
    pub fn release(&self) -> Result<()> {
        match self.0 {}
    }
}
