//! The C types a user handler meets (`include/omprpc.h`, with [`super::api`]): the packet, the port it is
//! handed while it serves a call, and the handler's own signature. Apart from the functions so that the
//! handler adapter ([`super::handlers`]) and the API can both use them without using each other.

use std::ffi::c_void;

/// One lane's 64-byte packet.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy)]
pub struct omprpc_packet {
    /// The packet's eight words.
    pub data: [u64; 8],
}

/// A port being served, as a handler receives it; valid only during the handler's call. The handler
/// moves data with the operations it carries (the `omprpc_port_*` wrappers below call them), so that
/// the program needs no link to the plugin: it receives the device's call once (`recv`, or `recv_n`
/// for `omprpc_call_bytes`) and replies once (`send` or `send_n`). Any other step is refused with an
/// error, and a handler that returns without replying gets an empty reply sent for it.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct omprpc_port {
    /// The server's port; not for the handler's use.
    pub handle: *mut c_void,
    /// Lanes of the port's device (1 on the host device): the length of the arrays `recv_n` and
    /// `send_n` take, and the most packets `recv` and `send` move.
    pub lanes: u32,
    /// Receives one packet from each active lane, in lane order; returns how many.
    pub recv: Option<unsafe extern "C" fn(port: *mut omprpc_port, packets: *mut omprpc_packet) -> u32>,
    /// Sends one packet to each active lane, in lane order; returns how many.
    pub send: Option<unsafe extern "C" fn(port: *mut omprpc_port, packets: *const omprpc_packet) -> u32>,
    /// Receives a byte string per lane: `data[lane]` from `malloc` (free it), `sizes[lane]` its size.
    pub recv_n: Option<unsafe extern "C" fn(port: *mut omprpc_port, data: *mut *mut c_void, sizes: *mut u64)>,
    /// Sends `sizes[lane]` bytes from `data[lane]` to each lane.
    pub send_n: Option<unsafe extern "C" fn(port: *mut omprpc_port, data: *const *const c_void, sizes: *const u64)>,
}

/// A host handler for a user opcode.
#[allow(non_camel_case_types)]
pub type omprpc_handler = Option<unsafe extern "C" fn(port: *mut omprpc_port, user_data: *mut c_void)>;
