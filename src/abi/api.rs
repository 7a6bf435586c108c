//! The omprpc C API for host programs (`include/omprpc.h`, generated from this file and the handler's
//! types in [`super::port`] by cbindgen).
//! Everything a program may call besides the libomptarget plugin interface lives here.
//!
//! The plugin is loaded by libomptarget at run time rather than linked, so programs look these
//! functions up by name; `OMPRPC_LOOKUP(omprpc_register_handler)` in the header does it.

use std::ffi::{c_char, c_void, CStr};

use super::guard;
use super::port::omprpc_handler;
use crate::util::error::Error;

/// The omprpc version as a static NUL-terminated string, e.g. "0.1.0".
///
/// A program can look this symbol up with `dlsym` to find out whether omprpc serves its devices.
#[no_mangle]
pub extern "C" fn omprpc_version() -> *const c_char {
    const VERSION: &CStr = match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => c"unknown",
    };
    VERSION.as_ptr()
}

/// Registers `handler` for user opcode `opcode` (0x8000-0xffff) on every device, before or after
/// the devices start; a later registration of the same opcode replaces it. Calls of one opcode reach
/// its handler one at a time (on whichever thread serves them); handlers of different opcodes may
/// run at the same time, so state they share needs a lock. Returns 0, or -1 with a message on stderr
/// (reserved opcode, NULL handler, called from inside a handler, or a plugin built without host
/// services).
#[no_mangle]
pub extern "C" fn omprpc_register_handler(opcode: u16, handler: omprpc_handler, user_data: *mut c_void) -> i32 {
    guard("omprpc_register_handler", || {
        let handler = handler.ok_or(Error::NullArg("the handler"))?;
        super::handlers::register(opcode, super::handlers::CHandler::new(handler, user_data)).map(|()| 0)
    })
}

/// Prints the statistics of host calls gathered so far to stderr, per device and opcode (calls, lanes,
/// bytes each way, latency p50/p99/max), as `OMPRPC_STATS=1` prints them at exit. Statistics are
/// gathered only while `OMPRPC_STATS` is set; without it, one line says so. Returns 0, or -1 in a
/// plugin built without host services.
#[no_mangle]
pub extern "C" fn omprpc_stats_print() -> i32 {
    guard("omprpc_stats_print", || {
        crate::rpc::HostServices::print_stats().map(|()| 0)
    })
}
