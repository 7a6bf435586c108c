//! The one registry of host services: the RPC servers of all devices, which the serving thread and
//! waiting threads serve, and the user handlers, which every server gets. One lock orders handler
//! registration against server creation, so that a server never misses a handler.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::rpc::calls::this_thread_is_serving;
use crate::rpc::protocol::ffi::opcode;
use crate::rpc::serving::handlers::{Registered, UserHandler};
use crate::rpc::serving::server::RpcServer;
use crate::util::error::{Error, Result};
use crate::util::sync::{lock, read, write};

struct Registry {
    servers: RwLock<Arc<Vec<Arc<RpcServer>>>>,
    /// Bumped whenever `servers` changes, so that the serving thread re-reads it only then.
    generation: AtomicUsize,
    /// User handlers by opcode; its lock also orders registrations against new servers.
    handlers: Mutex<HashMap<u16, &'static Registered>>,
}

static REGISTRY: LazyLock<Registry> = LazyLock::new(|| Registry {
    servers: RwLock::new(Arc::new(Vec::new())),
    generation: AtomicUsize::new(0),
    handlers: Mutex::new(HashMap::new()),
});

/// The servers now in service.
pub fn servers() -> Arc<Vec<Arc<RpcServer>>> {
    Arc::clone(&read(&REGISTRY.servers))
}

/// Changes whenever the set of servers changes.
pub fn generation() -> usize {
    REGISTRY.generation.load(Ordering::Acquire)
}

/// Adds `server` to the servers in service, with every registered user handler installed; see
/// [`crate::rpc::serving::threads::put_in_service`], which starts the threads that serve it first.
pub(crate) fn add_server(server: Arc<RpcServer>) -> Result<()> {
    {
        let handlers = lock(&REGISTRY.handlers);
        for registered in handlers.values() {
            server.install_user_opcode(registered)?;
        }
        let mut servers = write(&REGISTRY.servers);
        let mut list = Vec::clone(&servers);
        list.push(server);
        *servers = Arc::new(list);
        REGISTRY.generation.fetch_add(1, Ordering::AcqRel);
    }
    Ok(())
}

/// Takes `server` off the list that the serving threads scan.
fn take_out(server: &Arc<RpcServer>) {
    let mut servers = write(&REGISTRY.servers);
    if !servers.iter().any(|s| Arc::ptr_eq(s, server)) {
        return;
    }
    let list: Vec<Arc<RpcServer>> = servers.iter().filter(|s| !Arc::ptr_eq(s, server)).cloned().collect();
    *servers = Arc::new(list);
    REGISTRY.generation.fetch_add(1, Ordering::AcqRel);
}

/// The device of `server` is lost (a kernel faulted): takes the server out of service and answers
/// for the device every call a thread is in the middle of ([`RpcServer::answer_for_lost_device`]),
/// until none is, or `limit` has passed (an error then: a handler that does not return, or a server
/// served through libc's whole-server scan, whose calls cannot be told apart).
pub fn retire_lost_device_server(server: &Arc<RpcServer>, limit: Duration) -> Result<()> {
    take_out(server);
    let deadline = Instant::now() + limit;
    loop {
        server.answer_for_lost_device();
        if !server.in_a_call() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Timeout(format!(
                "a host call of {} was still being served {limit:?} after the device was lost",
                server.owner()
            )));
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Takes `server` out of service and waits (up to a few seconds) until no thread is serving it, so that
/// it can be shut down.
pub fn remove_server(server: &Arc<RpcServer>) -> Result<()> {
    take_out(server);
    // Threads that serve hold a snapshot of the list; they let go of it when they next look at the
    // generation or go to sleep.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Arc::strong_count(server) > 1 {
        if Instant::now() > deadline {
            return Err(Error::Timeout(format!(
                "the RPC server of {} was still being served after 5 s; it is out of service \
                 and its mailbox is left allocated",
                server.owner()
            )));
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    Ok(())
}

/// Registers `handler` for user opcode `op` on every device, present and future; a later registration
/// of the same opcode replaces it.
pub fn register_handler(op: u16, handler: Box<dyn UserHandler>) -> Result<()> {
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
    let registered: &'static Registered = Box::leak(Box::new(Registered::new(op, handler)));
    let mut handlers = lock(&REGISTRY.handlers);
    for server in servers().iter() {
        server.install_user_opcode(registered)?;
    }
    handlers.insert(op, registered);
    Ok(())
}

/// The handler registered for `op`, if any.
pub fn registered(op: u16) -> Option<&'static Registered> {
    lock(&REGISTRY.handlers).get(&op).copied()
}
