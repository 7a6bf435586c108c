//! The device library's `getenv` (`device/omprpc_libc.c`): a target region has no environment of its
//! own, so the host's C library looks the name up in the process's environment, and the device gets
//! glibc's answer.
//!
//! Each calling lane sends the name (`send_n`, its NUL included); the host answers each lane
//! (`send_n`) with the value's bytes and a NUL when the variable is set (an empty value is one byte),
//! and with nothing when it is not. The device keeps the value in memory of its own, so that the
//! pointer it returns stays valid.

use std::ffi::{c_void, CStr, CString};

use crate::rpc::protocol::ffi;
use crate::rpc::protocol::port::Port;

/// What the host answers for `name` (up to its first NUL, as the C library would read it): the
/// value and its NUL, or nothing when the variable is unset.
fn lookup(name: &[u8]) -> Vec<u8> {
    let name: Vec<u8> = name.iter().copied().take_while(|&b| b != 0).collect();
    let name = CString::new(name).expect("no NUL left in the name");
    // SAFETY: `name` is NUL-terminated and lives during the call; getenv's result, when not null,
    // points into the environment, read at once (a program that changes its environment from another
    // thread at the same moment races with glibc's own getenv as well).
    let value = unsafe { libc::getenv(name.as_ptr()) };
    if value.is_null() {
        return Vec::new();
    }
    // SAFETY: a non-null getenv result is a NUL-terminated string of the environment.
    unsafe { CStr::from_ptr(value) }.to_bytes_with_nul().to_vec()
}

/// libc's callback for [`ffi::opcode::GETENV`].
///
/// # Safety
/// Called by libc's server with the port it is serving.
pub unsafe extern "C" fn serve(raw: ffi::Port, _data: *mut c_void) {
    // SAFETY: the port of the running callback, used only within it.
    let mut port = unsafe { Port::from_raw(raw) };
    let Ok(names) = port.recv_n() else {
        return;
    };
    // Lane-indexed, as the names are: lanes that did not call get nothing.
    let values: Vec<Vec<u8>> = names
        .iter()
        .map(|name| {
            if name.sent() {
                lookup(name.as_slice())
            } else {
                Vec::new()
            }
        })
        .collect();
    let slices: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
    let _ = port.send_n(&slices);
    crate::rpc::calls::moved_through_port(port.moved());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_the_environments_with_their_nul() {
        // PATH is set for every test run; a name that no one sets is not.
        let path = std::env::var_os("PATH").expect("PATH is set");
        let mut expected = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec();
        expected.push(0);
        assert_eq!(lookup(b"PATH\0"), expected);
        assert_eq!(lookup(b"PATH\0trailing bytes are not read"), expected);
        assert_eq!(lookup(b"OMPRPC_GETENV_UNIT_TEST_NEVER_SET\0"), Vec::<u8>::new());
        assert_eq!(lookup(b""), Vec::<u8>::new(), "an empty name is unset");
    }
}
