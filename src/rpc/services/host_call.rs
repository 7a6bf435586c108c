//! LLVM libc's `rpc_host_call(fn, data, size)`: the host calls `fn` with a copy of the `size` bytes the
//! device sent, and answers with what it returned.
//!
//! The device sends the bytes (`send_n`), then a packet whose first word is the host address of `fn`,
//! as LLVM libc's client does, but under the plugin's own opcode ([`ffi::opcode::HOST_FUNCTION`]), and
//! reads the result from the first word of the reply. libc's own server, which serves LLVM libc's
//! client (opcode 12, before any callback), calls any address it is given and answers nothing; here
//! the address is first checked to lie in the code of an object loaded in the process (an executable
//! segment of the program or a library), so that a wrong pointer is refused with one line, and the
//! device gets 0, instead of the process jumping into data. The function runs
//! on the serving thread, once per calling lane, in lane order; while it runs, that thread serves no
//! other call.

use std::ffi::{c_int, c_void};

use crate::rpc::protocol::ffi;
use crate::rpc::protocol::port::Port;

/// Whether `address` lies in an executable segment of an object loaded in the process.
fn is_loaded_code(address: usize) -> bool {
    struct Search {
        address: usize,
        found: bool,
    }
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: the loader passes a valid `info` whose program headers live during the callback;
        // `data` is the search below.
        unsafe {
            let search = &mut *data.cast::<Search>();
            let info = &*info;
            let headers = std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum));
            search.found = headers.iter().any(|h| {
                let start = (info.dlpi_addr as usize).wrapping_add(h.p_vaddr as usize);
                h.p_type == libc::PT_LOAD
                    && h.p_flags & libc::PF_X != 0
                    && (start..start.saturating_add(h.p_memsz as usize)).contains(&search.address)
            });
            c_int::from(search.found)
        }
    }
    let mut search = Search { address, found: false };
    // SAFETY: `visit` matches the callback type and only reads what the loader hands it.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut search as *mut Search).cast()) };
    search.found
}

/// libc's callback for [`ffi::opcode::HOST_FUNCTION`].
///
/// # Safety
/// Called by libc's server with the port it is serving.
pub unsafe extern "C" fn serve(raw: ffi::Port, _data: *mut c_void) {
    // SAFETY: the port of the running callback, used only within it.
    let mut port = unsafe { Port::from_raw(raw) };
    let mut functions = port.lane_packets();
    let received = port.recv_n().and_then(|data| Ok((data, port.recv(&mut functions)?)));
    let Ok((mut data, _)) = received else {
        return;
    };
    let mut replies = port.lane_packets();
    // The packets come in the order of the lanes that called, which are the lanes that sent bytes.
    let calling = data.iter_mut().filter(|bytes| bytes.sent());
    for ((bytes, function), reply) in calling.zip(&functions).zip(&mut replies) {
        let address = function.data[0] as usize;
        if !is_loaded_code(address) {
            crate::util::log::error(format_args!(
                "rpc_host_call from device code was refused: {address:#x} is not in the code of the \
                 program or a library loaded in it (a host function's address is expected); the call \
                 returns 0"
            ));
            continue;
        }
        // SAFETY: `address` lies in loaded code (checked above), which the device named as a function
        // taking a pointer to its bytes, as rpc_host_call's contract says; the bytes are the host's
        // copy, alive during the call.
        let result = unsafe {
            let f: unsafe extern "C" fn(*mut c_void) -> u64 = std::mem::transmute(address);
            f(bytes.as_mut_ptr().cast())
        };
        reply.data[0] = result;
    }
    let _ = port.send(&replies);
    crate::rpc::calls::moved_through_port(port.moved());
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn a_host_function(_: *mut c_void) -> u64 {
        7
    }

    #[test]
    fn only_addresses_in_loaded_code_count_as_functions() {
        assert!(is_loaded_code(a_host_function as *const () as usize));
        assert!(
            is_loaded_code(libc::getpid as *const () as usize),
            "a library's function"
        );
        static DATA: u64 = 1;
        assert!(!is_loaded_code(&DATA as *const u64 as usize), "a constant");
        let heap = Box::new(0u64);
        assert!(!is_loaded_code(&*heap as *const u64 as usize), "the heap");
        assert!(!is_loaded_code(0));
        assert!(!is_loaded_code(0x1234));
    }
}
