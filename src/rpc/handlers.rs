//! User opcodes: handlers registered by the host program (through `omprpc_register_handler`) and the
//! dispatch from libc's server to them.
//!
//! libc's callback map is not locked, so every server gets one dispatch callback per user opcode,
//! installed while nobody serves that server; the handlers themselves live here, behind a lock, and
//! may be registered before or after devices start.

use std::collections::HashMap;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, LazyLock, Mutex, RwLock, Weak};

use super::ffi::{self, opcode};
use super::server::{this_thread_is_serving, RpcServer};
use crate::abi::api::{omprpc_packet, omprpc_port};
use crate::abi::{guard, non_null};
use crate::plugin::error::{Error, Result};
use crate::plugin::sync::{lock, read, write};

/// A handler as C registers it: called with the port being served and the user's data pointer.
pub type HandlerFn = unsafe extern "C" fn(port: *mut omprpc_port, user_data: *mut c_void);

/// A registered handler. Each registration is leaked so that libc's callback data can point at it
/// for the life of the process: dispatch then needs no lookup and no lock.
#[derive(Clone, Copy)]
pub struct Handler {
    function: HandlerFn,
    user_data: usize,
}

static REGISTRY: LazyLock<RwLock<HashMap<u16, &'static Handler>>> = LazyLock::new(Default::default);
static SERVERS: LazyLock<Mutex<Vec<Weak<RpcServer>>>> = LazyLock::new(Default::default);

/// Installs every registered user opcode in a new `server` and keeps it for later registrations.
pub fn attach(server: &Arc<RpcServer>) -> Result<()> {
    let mut servers = lock(&SERVERS);
    let registered: Vec<(u16, &'static Handler)> = read(&REGISTRY).iter().map(|(&op, &h)| (op, h)).collect();
    for (op, handler) in registered {
        server.install_user_opcode(op, handler)?;
    }
    servers.retain(|s| s.strong_count() > 0);
    servers.push(Arc::downgrade(server));
    Ok(())
}

/// Registers `function` for user opcode `op` on every device, present and future.
pub fn register(op: u16, function: HandlerFn, user_data: *mut c_void) -> Result<()> {
    if op < opcode::FIRST_USER {
        return Err(Error::InvalidArg(format!(
            "opcode {op:#06x} is reserved; user opcodes are 0x8000 to 0xffff"
        )));
    }
    if this_thread_is_serving() {
        return Err(Error::InvalidArg(
            "a handler cannot be registered from inside a handler".into(),
        ));
    }
    // Record the handler and take the list of servers under SERVERS, then install without it: a
    // server made meanwhile reads the registry in `attach` and installs the handler itself.
    let servers: Vec<Arc<RpcServer>> = {
        let servers = lock(&SERVERS);
        let handler: &'static Handler = Box::leak(Box::new(Handler {
            function,
            user_data: user_data as usize,
        }));
        write(&REGISTRY).insert(op, handler);
        servers.iter().filter_map(Weak::upgrade).collect()
    };
    let handler = *read(&REGISTRY).get(&op).expect("just registered");
    for server in servers {
        server.install_user_opcode(op, handler)?;
    }
    Ok(())
}

/// Whether a handler is registered for `op`.
pub fn is_registered(op: u16) -> bool {
    read(&REGISTRY).contains_key(&op)
}

/// libc's callback for every user opcode; `data` is the opcode's `Handler`.
///
/// # Safety
/// Called by libc's server with the port it is serving and the data it was registered with.
pub unsafe extern "C" fn dispatch(port: ffi::Port, data: *mut c_void) {
    // SAFETY: `install_user_opcode` registers a leaked, never freed `Handler` as the data.
    let handler = unsafe { &*data.cast::<Handler>() };
    let mut raw = port;
    let mut port = omprpc_port {
        handle: (&mut raw as *mut ffi::Port).cast(),
        lanes: raw.lane_size,
        recv: Some(port_recv),
        send: Some(port_send),
        recv_n: Some(port_recv_n),
        send_n: Some(port_send_n),
    };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the handler was registered for this opcode with this user data; the port is valid for
        // the duration of the call.
        unsafe { (handler.function)(&mut port, handler.user_data as *mut c_void) }
    }));
}

/// The server's port behind a handler's `omprpc_port`.
///
/// # Safety
/// `port` is null or the `omprpc_port` that [`dispatch`] passed to a running handler.
unsafe fn raw_port<'a>(port: *mut omprpc_port) -> Result<&'a ffi::Port> {
    // SAFETY: per this function's contract, `handle` points to `dispatch`'s `ffi::Port`.
    unsafe { port.as_ref().and_then(|p| p.handle.cast::<ffi::Port>().as_ref()) }.ok_or(Error::NullArg("the port"))
}

// The operations a handler finds in its `omprpc_port`. C calls them, so each runs inside the C
// boundary guard: a NULL argument is reported, and nothing unwinds into the handler.

unsafe extern "C" fn port_recv(port: *mut omprpc_port, packets: *mut omprpc_packet) -> u32 {
    guard("omprpc_port_recv", || {
        // SAFETY: C handlers pass the port they were given and room for `lanes` packets.
        let raw = unsafe { raw_port(port) }?;
        non_null(packets, "the packet array")?;
        // SAFETY: as above.
        Ok(unsafe { recv(raw, packets.cast()) })
    })
}

unsafe extern "C" fn port_send(port: *mut omprpc_port, packets: *const omprpc_packet) -> u32 {
    guard("omprpc_port_send", || {
        // SAFETY: as in `port_recv`, with `packets` readable.
        let raw = unsafe { raw_port(port) }?;
        non_null(packets.cast_mut(), "the packet array")?;
        // SAFETY: as above.
        Ok(unsafe { send(raw, packets.cast()) })
    })
}

unsafe extern "C" fn port_recv_n(port: *mut omprpc_port, data: *mut *mut c_void, sizes: *mut u64) {
    guard("omprpc_port_recv_n", || {
        // SAFETY: as in `port_recv`, with `lanes` entries in both arrays.
        let raw = unsafe { raw_port(port) }?;
        non_null(data, "the data array")?;
        non_null(sizes, "the sizes array")?;
        // SAFETY: as above.
        unsafe { recv_n(raw, data, sizes) };
        Ok(())
    })
}

unsafe extern "C" fn port_send_n(port: *mut omprpc_port, data: *const *const c_void, sizes: *const u64) {
    guard("omprpc_port_send_n", || {
        // SAFETY: as in `port_recv_n`, with readable arrays.
        let raw = unsafe { raw_port(port) }?;
        non_null(data.cast_mut(), "the data array")?;
        non_null(sizes.cast_mut(), "the sizes array")?;
        // SAFETY: as above.
        unsafe { send_n(raw, data, sizes) };
        Ok(())
    })
}

/// Receives one packet per active lane into `packets` (lane order); returns how many.
///
/// # Safety
/// `port` is the port passed to a running handler; `packets` has room for `port.lane_size` packets.
pub unsafe fn recv(port: &ffi::Port, packets: *mut ffi::Buffer) -> u32 {
    let mut cursor = Cursor { packets, count: 0 };
    unsafe extern "C" fn take(buffer: *mut ffi::Buffer, data: *mut c_void) {
        // SAFETY: `data` is the cursor below, `buffer` a live packet; the cursor stays within
        // `lane_size` packets because libc calls this once per active lane.
        unsafe {
            let cursor = &mut *data.cast::<Cursor>();
            *cursor.packets.add(cursor.count as usize) = *buffer;
            cursor.count += 1;
        }
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { ffi::rpc_recv(*port, take, (&mut cursor as *mut Cursor).cast()) };
    cursor.count
}

/// Sends `packets` to the active lanes (lane order); returns how many.
///
/// # Safety
/// As for [`recv`], with `packets` readable.
pub unsafe fn send(port: &ffi::Port, packets: *const ffi::Buffer) -> u32 {
    let mut cursor = Cursor {
        packets: packets.cast_mut(),
        count: 0,
    };
    unsafe extern "C" fn fill(buffer: *mut ffi::Buffer, data: *mut c_void) {
        // SAFETY: as in `recv`.
        unsafe {
            let cursor = &mut *data.cast::<Cursor>();
            *buffer = *cursor.packets.add(cursor.count as usize);
            cursor.count += 1;
        }
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { ffi::rpc_send(*port, fill, (&mut cursor as *mut Cursor).cast()) };
    cursor.count
}

struct Cursor {
    packets: *mut ffi::Buffer,
    count: u32,
}

unsafe extern "C" fn malloc_for_recv_n(size: u64, _data: *mut c_void) -> *mut c_void {
    // SAFETY: malloc has no preconditions; the handler frees the result with free().
    unsafe { libc::malloc((size as usize).max(1)) }
}

/// Receives a byte string per lane into `data`/`sizes` (`lane_size` entries each, lane-indexed).
///
/// # Safety
/// As for [`recv`]; `data` and `sizes` hold `lane_size` writable entries.
pub unsafe fn recv_n(port: &ffi::Port, data: *mut *mut c_void, sizes: *mut u64) {
    // SAFETY: forwarded from this function's contract; the allocator matches the callback type.
    unsafe {
        for lane in 0..port.lane_size as usize {
            *data.add(lane) = std::ptr::null_mut();
            *sizes.add(lane) = 0;
        }
        ffi::rpc_recv_n(*port, data, sizes, malloc_for_recv_n, std::ptr::null_mut())
    }
}

/// Sends a byte string per lane from `data`/`sizes` (`lane_size` entries each, lane-indexed).
///
/// # Safety
/// As for [`recv`]; `data` and `sizes` hold `lane_size` readable entries.
pub unsafe fn send_n(port: &ffi::Port, data: *const *const c_void, sizes: *const u64) {
    // SAFETY: forwarded from this function's contract; libc only reads `size` despite its type.
    unsafe {
        let mut sizes: Vec<u64> = std::slice::from_raw_parts(sizes, port.lane_size as usize).to_vec();
        ffi::rpc_send_n(*port, data, sizes.as_mut_ptr())
    }
}
