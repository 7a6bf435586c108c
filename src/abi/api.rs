//! The omprpc C API for host programs (`include/omprpc.h`, generated from this file by cbindgen).
//! Everything a program may call besides the libomptarget plugin interface lives here.

use std::ffi::{c_char, CStr};

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
