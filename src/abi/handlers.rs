//! User handlers written in C: the adapter that lets the RPC registry call them, and the port
//! operations they find in their `omprpc_port` (C calls these, so each runs inside the C boundary
//! guard: a NULL argument is reported, and nothing unwinds into the handler).

use std::ffi::c_void;

use super::port::omprpc_port;
use crate::util::error::{Error, Result};

/// A handler as C registers it: called with the port being served and the user's data pointer.
pub type HandlerFn = unsafe extern "C" fn(port: *mut omprpc_port, user_data: *mut c_void);

/// A C handler and its user data.
pub struct CHandler {
    function: HandlerFn,
    user_data: usize,
}

impl CHandler {
    /// `function`, to be called with `user_data`.
    pub fn new(function: HandlerFn, user_data: *mut c_void) -> CHandler {
        CHandler {
            function,
            user_data: user_data as usize,
        }
    }
}

#[cfg(feature = "rpc")]
mod adapter {
    use super::*;
    use crate::abi::port::omprpc_packet;
    use crate::abi::{guard, non_null};
    use crate::rpc::{Packet, Port, UserHandler};

    const _: () = assert!(size_of::<omprpc_packet>() == size_of::<Packet>());

    impl UserHandler for CHandler {
        fn serve(&self, port: &mut Port<'_>) {
            let mut c_port = omprpc_port {
                handle: (port as *mut Port<'_>).cast(),
                lanes: port.lanes(),
                recv: Some(port_recv),
                send: Some(port_send),
                recv_n: Some(port_recv_n),
                send_n: Some(port_send_n),
            };
            // SAFETY: the handler was registered for this opcode with this user data; `c_port` and the
            // port it points to live for the duration of the call.
            unsafe { (self.function)(&mut c_port, self.user_data as *mut c_void) }
        }

        fn name(&self) -> String {
            let address = self.function as usize;
            let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
            // SAFETY: dladdr only reads the address and fills `info`; the strings it returns belong to
            // the loaded object, which stays loaded while its handler is registered.
            let symbol = unsafe {
                (libc::dladdr(address as *const c_void, info.as_mut_ptr()) != 0)
                    .then(|| info.assume_init())
                    .filter(|info| !info.dli_sname.is_null())
                    .map(|info| std::ffi::CStr::from_ptr(info.dli_sname).to_string_lossy().into_owned())
            };
            match symbol {
                Some(name) => format!("handler {name}()"),
                None => format!("the handler at {address:#x}"),
            }
        }
    }

    /// The server's port behind a handler's `omprpc_port`.
    ///
    /// # Safety
    /// `port` is null or the `omprpc_port` that `serve` passed to a running handler.
    unsafe fn rpc_port<'a>(port: *mut omprpc_port) -> Result<(&'a mut Port<'static>, usize)> {
        // SAFETY: per this function's contract, `handle` points to `serve`'s port, alive during the
        // handler's call; its lifetime is erased only for the duration of that call.
        let port = unsafe { port.as_mut() }.ok_or(Error::NullArg("the port"))?;
        let lanes = port.lanes as usize;
        // SAFETY: as above.
        let inner =
            unsafe { port.handle.cast::<Port<'static>>().as_mut() }.ok_or(Error::NullArg("the port's handle"))?;
        Ok((inner, lanes))
    }

    pub(super) unsafe extern "C" fn port_recv(port: *mut omprpc_port, packets: *mut omprpc_packet) -> u32 {
        guard("omprpc_port_recv", || {
            // SAFETY: C handlers pass the port they were given and room for `lanes` packets.
            let (port, lanes) = unsafe { rpc_port(port) }?;
            non_null(packets, "the packet array")?;
            // SAFETY: as above; omprpc_packet and Packet have one layout (checked above).
            let packets = unsafe { std::slice::from_raw_parts_mut(packets.cast::<Packet>(), lanes) };
            port.recv(packets)
        })
    }

    pub(super) unsafe extern "C" fn port_send(port: *mut omprpc_port, packets: *const omprpc_packet) -> u32 {
        guard("omprpc_port_send", || {
            // SAFETY: as in `port_recv`, with `packets` readable.
            let (port, lanes) = unsafe { rpc_port(port) }?;
            non_null(packets.cast_mut(), "the packet array")?;
            // SAFETY: as above.
            let packets = unsafe { std::slice::from_raw_parts(packets.cast::<Packet>(), lanes) };
            port.send(packets)
        })
    }

    pub(super) unsafe extern "C" fn port_recv_n(port: *mut omprpc_port, data: *mut *mut c_void, sizes: *mut u64) {
        guard("omprpc_port_recv_n", || {
            // SAFETY: as in `port_recv`, with `lanes` writable entries in both arrays.
            let (port, lanes) = unsafe { rpc_port(port) }?;
            non_null(data, "the data array")?;
            non_null(sizes, "the sizes array")?;
            for (lane, bytes) in port.recv_n()?.into_iter().enumerate().take(lanes) {
                let (ptr, len) = bytes.into_raw();
                // SAFETY: `lane < lanes` entries are writable (contract); the handler frees `ptr`.
                unsafe {
                    *data.add(lane) = ptr;
                    *sizes.add(lane) = len as u64;
                }
            }
            Ok(())
        })
    }

    pub(super) unsafe extern "C" fn port_send_n(port: *mut omprpc_port, data: *const *const c_void, sizes: *const u64) {
        guard("omprpc_port_send_n", || {
            // SAFETY: as in `port_recv_n`, with readable arrays.
            let (port, lanes) = unsafe { rpc_port(port) }?;
            non_null(data.cast_mut(), "the data array")?;
            non_null(sizes.cast_mut(), "the sizes array")?;
            let slices: Vec<&[u8]> = (0..lanes)
                .map(|lane| {
                    // SAFETY: `lanes` readable entries (contract); each non-null `data[lane]` holds
                    // `sizes[lane]` bytes, alive during the call.
                    unsafe {
                        let (ptr, len) = (*data.add(lane), *sizes.add(lane) as usize);
                        if ptr.is_null() || len == 0 {
                            &[][..]
                        } else {
                            std::slice::from_raw_parts(ptr.cast::<u8>(), len)
                        }
                    }
                })
                .collect();
            port.send_n(&slices)
        })
    }
}

/// Registers a C handler for a user opcode on every device.
#[cfg(feature = "rpc")]
pub fn register(opcode: u16, handler: CHandler) -> Result<()> {
    crate::rpc::HostServices::register_handler(opcode, Box::new(handler))
}

/// Without host services there is nothing to register with.
#[cfg(not(feature = "rpc"))]
pub fn register(_opcode: u16, handler: CHandler) -> Result<()> {
    let _ = (handler.function, handler.user_data);
    Err(Error::Unsupported(
        "this omprpc was built without host services (cargo feature `rpc`)".into(),
    ))
}
