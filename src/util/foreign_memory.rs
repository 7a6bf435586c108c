//! Reading memory that libomptarget (or a caller of the C API) points us at, without trusting the
//! pointer: images, entry tables, names and host globals are copied with `process_vm_readv`, which reports an
//! unmapped address as `EFAULT` instead of crashing the process.

use std::ffi::CString;

use crate::util::error::{Error, Result};

const PAGE: usize = 4096;

fn fault(what: &str, addr: usize, len: usize) -> Error {
    Error::InvalidArg(format!(
        "{what} at {addr:#x} ({len} bytes) is not readable memory (a dangling or corrupt pointer?)"
    ))
}

/// Copies `len` bytes at `addr` out of this process's memory; `what` names them in the error.
pub fn read_bytes(what: &str, addr: usize, len: usize) -> Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if addr == 0 {
        return Err(Error::InvalidArg(format!("{what} is at address NULL")));
    }
    if addr.checked_add(len).is_none() || len > isize::MAX as usize {
        return Err(fault(what, addr, len));
    }
    let mut out = Vec::<u8>::new();
    out.try_reserve_exact(len)
        .map_err(|_| Error::OutOfMemory { size: len })?;
    let mut done = 0usize;
    while done < len {
        let local = libc::iovec {
            // SAFETY: `done < len <= capacity`, so the pointer stays inside the reservation.
            iov_base: unsafe { out.as_mut_ptr().add(done) }.cast(),
            iov_len: len - done,
        };
        let remote = libc::iovec {
            iov_base: (addr + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: `local` describes writable memory we own; the kernel checks `remote` for us.
        let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::ENOSYS) | Some(libc::EPERM) => {
                    // Where the call is forbidden (some sandboxes), fall back to a plain copy.
                    // SAFETY: libomptarget guarantees these ranges; this path loses only the
                    // protection against corrupt pointers.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            (addr + done) as *const u8,
                            out.as_mut_ptr().add(done),
                            len - done,
                        )
                    };
                    break;
                }
                _ => return Err(fault(what, addr, len)),
            }
        }
        if n == 0 {
            return Err(fault(what, addr, len));
        }
        done += n as usize;
    }
    // SAFETY: all `len` bytes were written above, by the kernel or by the fallback copy.
    unsafe { out.set_len(len) };
    Ok(out)
}

/// Copies the NUL-terminated string at `addr`, at most `max` bytes long.
pub fn read_c_string(what: &str, addr: usize, max: usize) -> Result<CString> {
    if addr == 0 {
        return Err(Error::InvalidArg(format!("{what} is NULL")));
    }
    let mut bytes = Vec::new();
    let mut at = addr;
    while bytes.len() <= max {
        // Never cross a page boundary in one read, so a string ending just before an unmapped page
        // is read whole.
        let chunk = (PAGE - at % PAGE).min(64).min(max + 1 - bytes.len());
        let part = read_bytes(what, at, chunk)?;
        if let Some(nul) = part.iter().position(|&b| b == 0) {
            bytes.extend_from_slice(&part[..nul]);
            return Ok(CString::new(bytes).expect("no interior NUL"));
        }
        bytes.extend_from_slice(&part);
        at += chunk;
    }
    Err(Error::InvalidArg(format!(
        "{what} at {addr:#x} is not terminated within {max} bytes"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_good_memory_and_refuses_bad() {
        let data = *b"hello\0world, and more\0";
        assert_eq!(read_bytes("data", data.as_ptr() as usize, 11).unwrap(), data[..11]);
        assert_eq!(
            read_c_string("name", data.as_ptr() as usize, 100).unwrap().as_bytes(),
            b"hello"
        );
        assert!(
            read_c_string("name", data.as_ptr() as usize + 6, 5).is_err(),
            "no NUL within 5 bytes"
        );
        let err = read_bytes("image", 0x10, 64).unwrap_err().to_string();
        assert!(err.contains("not readable"), "{err}");
        assert!(read_bytes("image", 0, 1).is_err());
        assert!(read_bytes("image", usize::MAX - 3, 8).is_err());
        assert!(read_c_string("name", 0x10, 10).is_err());
    }
}
