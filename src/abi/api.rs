//! The omprpc C API for host programs (`include/omprpc.h`, generated from this file by cbindgen).
//! Everything a program may call besides the libomptarget plugin interface lives here.
//!
//! The plugin is loaded by libomptarget at run time rather than linked, so programs look these
//! functions up by name; `OMPRPC_LOOKUP(omprpc_register_handler)` in the header does it.

use std::ffi::{c_char, c_void, CStr};

use super::guard;
use crate::plugin::error::Error;

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

/// A port being served, as a handler receives it; valid only during the handler's call.
#[allow(non_camel_case_types)]
pub struct omprpc_port {
    _opaque: [u8; 0],
}

/// One lane's 64-byte packet.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy)]
pub struct omprpc_packet {
    /// The packet's eight words.
    pub data: [u64; 8],
}

/// A host handler for a user opcode: it receives what the device sends and sends the reply, with
/// the `omprpc_port_*` functions, in the order the device-side call expects.
#[allow(non_camel_case_types)]
pub type omprpc_handler = Option<unsafe extern "C" fn(port: *mut omprpc_port, user_data: *mut c_void)>;

/// Registers `handler` for user opcode `opcode` (0x8000-0xffff) on every device, before or after
/// the devices start; a later registration of the same opcode replaces it. Returns 0, or -1 with a
/// message on stderr (reserved opcode, NULL handler, called from inside a handler, or a plugin built
/// without host services).
#[no_mangle]
pub extern "C" fn omprpc_register_handler(opcode: u16, handler: omprpc_handler, user_data: *mut c_void) -> i32 {
    guard("omprpc_register_handler", || {
        let handler = handler.ok_or(Error::NullArg("the handler"))?;
        register(opcode, handler, user_data)
    })
}

#[cfg(feature = "rpc")]
fn register(
    opcode: u16,
    handler: unsafe extern "C" fn(*mut omprpc_port, *mut c_void),
    user_data: *mut c_void,
) -> crate::plugin::error::Result<i32> {
    // SAFETY: `omprpc_port` is an opaque stand-in for `*mut c_void`; the two function types have the
    // same ABI.
    let handler: crate::rpc::handlers::HandlerFn = unsafe { std::mem::transmute(handler) };
    crate::rpc::handlers::register(opcode, handler, user_data).map(|()| 0)
}

#[cfg(not(feature = "rpc"))]
fn register(
    _opcode: u16,
    _handler: unsafe extern "C" fn(*mut omprpc_port, *mut c_void),
    _user_data: *mut c_void,
) -> crate::plugin::error::Result<i32> {
    Err(Error::Unsupported(
        "this omprpc was built without host services (cargo feature `rpc`)".into(),
    ))
}

#[cfg(feature = "rpc")]
fn port<'a>(port: *mut omprpc_port) -> crate::plugin::error::Result<&'a crate::rpc::ffi::Port> {
    // SAFETY: handlers receive a pointer to the `ffi::Port` that `handlers::dispatch` holds for the
    // duration of the call; the caller promises to pass that pointer.
    unsafe { port.cast::<crate::rpc::ffi::Port>().as_ref() }.ok_or(Error::NullArg("the port"))
}

/// Number of lanes of the port's device (1 on the host device): the length of the arrays that
/// `omprpc_port_recv_n` and `omprpc_port_send_n` take, and the most packets `omprpc_port_recv` and
/// `omprpc_port_send` move.
///
/// # Safety
/// `port` is the port passed to the running handler.
#[no_mangle]
pub unsafe extern "C" fn omprpc_port_lanes(port: *mut omprpc_port) -> u32 {
    #[cfg(feature = "rpc")]
    return guard("omprpc_port_lanes", || self::port(port).map(|p| p.lane_size));
    #[cfg(not(feature = "rpc"))]
    {
        let _ = port;
        0
    }
}

/// Receives one packet from each active lane into `packets`, in lane order; returns how many.
///
/// # Safety
/// `port` is the port passed to the running handler; `packets` has room for `omprpc_port_lanes`
/// packets.
#[no_mangle]
pub unsafe extern "C" fn omprpc_port_recv(port: *mut omprpc_port, packets: *mut omprpc_packet) -> u32 {
    #[cfg(feature = "rpc")]
    return guard("omprpc_port_recv", || {
        let port = self::port(port)?;
        super::non_null(packets, "the packets")?;
        // SAFETY: per this function's contract.
        Ok(unsafe { crate::rpc::handlers::recv(port, packets.cast()) })
    });
    #[cfg(not(feature = "rpc"))]
    {
        let _ = (port, packets);
        0
    }
}

/// Sends `packets` to the active lanes, in lane order; returns how many were sent.
///
/// # Safety
/// As for `omprpc_port_recv`, with `packets` readable.
#[no_mangle]
pub unsafe extern "C" fn omprpc_port_send(port: *mut omprpc_port, packets: *const omprpc_packet) -> u32 {
    #[cfg(feature = "rpc")]
    return guard("omprpc_port_send", || {
        let port = self::port(port)?;
        super::non_null(packets.cast_mut(), "the packets")?;
        // SAFETY: per this function's contract.
        Ok(unsafe { crate::rpc::handlers::send(port, packets.cast()) })
    });
    #[cfg(not(feature = "rpc"))]
    {
        let _ = (port, packets);
        0
    }
}

/// Receives a byte string from each lane: `data[lane]` gets a buffer from `malloc` (free it with
/// `free`) and `sizes[lane]` its size; lanes that sent nothing get NULL and 0.
///
/// # Safety
/// `port` is the port passed to the running handler; `data` and `sizes` have `omprpc_port_lanes`
/// writable entries.
#[no_mangle]
pub unsafe extern "C" fn omprpc_port_recv_n(port: *mut omprpc_port, data: *mut *mut c_void, sizes: *mut u64) {
    #[cfg(feature = "rpc")]
    guard("omprpc_port_recv_n", || {
        let port = self::port(port)?;
        super::non_null(data, "the data array")?;
        super::non_null(sizes, "the sizes array")?;
        // SAFETY: per this function's contract.
        unsafe { crate::rpc::handlers::recv_n(port, data, sizes) };
        Ok(())
    });
    #[cfg(not(feature = "rpc"))]
    let _ = (port, data, sizes);
}

/// Sends a byte string to each lane: `sizes[lane]` bytes from `data[lane]`.
///
/// # Safety
/// `port` is the port passed to the running handler; `data` and `sizes` have `omprpc_port_lanes`
/// readable entries, each `data[lane]` readable for `sizes[lane]` bytes.
#[no_mangle]
pub unsafe extern "C" fn omprpc_port_send_n(port: *mut omprpc_port, data: *const *const c_void, sizes: *const u64) {
    #[cfg(feature = "rpc")]
    guard("omprpc_port_send_n", || {
        let port = self::port(port)?;
        super::non_null(data.cast_mut(), "the data array")?;
        super::non_null(sizes.cast_mut(), "the sizes array")?;
        // SAFETY: per this function's contract.
        unsafe { crate::rpc::handlers::send_n(port, data, sizes) };
        Ok(())
    });
    #[cfg(not(feature = "rpc"))]
    let _ = (port, data, sizes);
}
