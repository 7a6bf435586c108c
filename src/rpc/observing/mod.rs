//! Observing host calls: statistics (`OMPRPC_STATS`), a trace (`OMPRPC_TRACE`) and a watchdog
//! (`OMPRPC_WATCHDOG_MS`).

#[cfg(feature = "rpc")]
pub mod stats;
#[cfg(feature = "rpc")]
pub mod trace;
#[cfg(feature = "rpc")]
pub mod watchdog;

/// Whether statistics, a trace or the watchdog are asked for: only then is a host call's clock read
/// and anything reported at exit.
#[cfg(feature = "rpc")]
pub fn asked() -> bool {
    let settings = crate::util::config::host_services();
    settings.stats || settings.trace.is_some() || settings.watchdog.is_some()
}

/// Says the watchdog's last lines (`OMPRPC_WATCHDOG_MS`), prints the statistics (`OMPRPC_STATS`) and
/// writes the trace (`OMPRPC_TRACE`), once: at the end of the program, however it ends (plugin
/// teardown, `exit`, a device's `exit`, a fatal RPC error).
#[cfg(feature = "rpc")]
pub fn report_at_exit() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        watchdog::finish();
        if stats::enabled() {
            stats::print();
        }
        trace::finish();
    });
}

/// Arranges for [`report_at_exit`] to run at `exit`, when statistics, a trace or the watchdog are
/// asked for (a program whose runtime never tears the plugin down still gets them).
#[cfg(feature = "rpc")]
pub fn report_at_exit_when_asked() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    if !asked() {
        return;
    }
    REGISTERED.call_once(|| {
        extern "C" fn at_exit() {
            let _ = std::panic::catch_unwind(report_at_exit);
        }
        // SAFETY: `at_exit` is a plain function that catches every panic.
        if unsafe { libc::atexit(at_exit) } != 0 {
            crate::util::log::error("could not arrange for host-call statistics, the trace or the watchdog's last lines to be written at exit");
        }
    });
}
