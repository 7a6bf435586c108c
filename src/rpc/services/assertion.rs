//! A device's failed `assert`, reported by the host's C library as a host `assert` would be.
//!
//! The device sends the line in a packet, then the expression, the file and the function as byte
//! strings ([`ffi::opcode::ASSERT_FAIL`]). The host flushes every stream, so that what the device
//! printed before comes first, and calls the C library's `__assert_fail`, which prints
//! `program: file:line: function: Assertion `expression' failed.` on stderr and aborts the process
//! (status 134), exactly as the same `assert` in host code. Of the lanes that failed together, the
//! lowest one's assertion is reported.

use std::ffi::{c_char, c_uint, c_void, CString};

use crate::rpc::protocol::ffi;
use crate::rpc::protocol::port::Port;

extern "C" {
    fn __assert_fail(assertion: *const c_char, file: *const c_char, line: c_uint, function: *const c_char) -> !;
}

/// A lane's string as C text (bytes up to the first NUL; a string with none is taken whole).
fn text(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).expect("no NUL before `end`")
}

/// libc's callback for [`ffi::opcode::ASSERT_FAIL`]; does not return when a lane reported a failure.
///
/// # Safety
/// Called by libc's server with the port it is serving.
pub unsafe extern "C" fn serve(raw: ffi::Port, _data: *mut c_void) {
    // SAFETY: the port of the running callback, used only within it.
    let mut port = unsafe { Port::from_raw(raw) };
    let mut lines = port.lane_packets();
    let received = (port.recv(&mut lines), port.recv_n(), port.recv_n(), port.recv_n());
    crate::rpc::calls::moved_through_port(port.moved());
    let (Ok(active), Ok(expressions), Ok(files), Ok(functions)) = received else {
        return;
    };
    let Some(lane) = (0..expressions.len()).find(|&l| !expressions[l].as_slice().is_empty()) else {
        return;
    };
    let line = if active > 0 { lines[0].data[0] as c_uint } else { 0 };
    let (expression, file, function) = (
        text(expressions[lane].as_slice()),
        text(files[lane].as_slice()),
        text(functions[lane].as_slice()),
    );
    crate::rpc::services::streams::checked::fflush(std::ptr::null_mut());
    // SAFETY: three NUL-terminated strings that live until the call, which ends the process.
    unsafe { __assert_fail(expression.as_ptr(), file.as_ptr(), line, function.as_ptr()) }
}
