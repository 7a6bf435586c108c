//! The one registry of host services: the RPC servers of all devices, which the serving thread and
//! waiting threads serve, and the user handlers, which every server gets. One lock orders handler
//! registration against server creation, so that a server never misses a handler.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use crate::rpc::protocol::ffi::opcode;
use crate::rpc::protocol::port::Port;
use crate::rpc::serving::server::{this_thread_is_serving, RpcServer};
use crate::util::error::{Error, Result};
use crate::util::sync::{lock, read, write, PerProcess};

/// A host handler for a user opcode. It runs on whichever thread serves the port (the serving thread,
/// or a thread waiting for the device's work) while the device waits for it.
pub trait UserHandler: Send + Sync {
    /// Serves one call: moves the packets or byte strings the device-side call expects.
    fn serve(&self, port: &mut Port<'_>);

    /// How messages name the handler (the watchdog's report of a call that seems stuck in it).
    fn name(&self) -> String {
        "a handler registered from Rust".into()
    }
}

/// A registered handler. Registrations are leaked, so that libc's callback data can point at them for
/// the life of the process and dispatch needs no lookup and no lock.
pub struct Registered {
    /// The opcode it serves.
    pub opcode: u16,
    /// The handler.
    pub handler: Box<dyn UserHandler>,
    /// Held while the handler runs: calls of one opcode are served one at a time, whichever threads
    /// serve them (the serving thread, threads waiting for their device's work), so that a handler
    /// needs no locking of its own for its own state. One per process: a forked child must not wait
    /// for a handler that a parent's thread was running at the fork.
    serial: PerProcess<Mutex<()>>,
}

impl Registered {
    /// A registration of `handler` for `opcode`.
    pub fn new(opcode: u16, handler: Box<dyn UserHandler>) -> Registered {
        Registered {
            opcode,
            handler,
            serial: PerProcess::new(),
        }
    }

    /// Waits for this opcode's turn: held while its handler runs.
    pub fn one_at_a_time(&'static self) -> MutexGuard<'static, ()> {
        lock(self.serial.get_or_make(|| Mutex::new(()), |_| {}))
    }
}

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

/// Starts the serving thread on first use (an error if it cannot start), then puts `server` in
/// service with every registered user handler installed.
pub fn add_server(server: Arc<RpcServer>) -> Result<()> {
    crate::rpc::serving::threads::ensure_started()?;
    crate::rpc::observing::report_at_exit_when_asked();
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
                "a host call of device {} was still being served {limit:?} after the device was lost",
                server.device()
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
                "the RPC server of device {} was still being served after 5 s; it is out of service \
                 and its mailbox is left allocated",
                server.device()
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

/// Whether each user opcode's handler is running now in this process (index: opcode - 0x8000), so
/// that serving threads leave a second call of a busy opcode waiting in its port instead of each
/// blocking on the handler's lock (which would tie up every serving thread behind one slow handler).
/// A forked child starts with none running.
fn running() -> &'static [AtomicBool; 0x8000] {
    static RUNNING: PerProcess<[AtomicBool; 0x8000]> = PerProcess::new();
    RUNNING.get_or_make(|| [const { AtomicBool::new(false) }; 0x8000], |_| {})
}

/// Whether the handler of user opcode `op` is serving a call now.
pub fn user_opcode_running(op: u16) -> bool {
    op >= opcode::FIRST_USER && running()[usize::from(op - opcode::FIRST_USER)].load(Ordering::Acquire)
}

/// Marks the handler of a user opcode as running until dropped (also when the handler panics); held
/// by whoever holds the handler's lock.
pub(crate) struct Running(&'static AtomicBool);

impl Running {
    /// Marks the handler of `op` as running; nothing for an opcode below the users' (the plugin's
    /// own rehearsals, which no other call waits for).
    pub(crate) fn mark(op: u16) -> Option<Running> {
        let flag = &running()[usize::from(op.checked_sub(opcode::FIRST_USER)?)];
        flag.store(true, Ordering::Release);
        Some(Running(flag))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// The handler registered for `op`, if any.
pub fn registered(op: u16) -> Option<&'static Registered> {
    lock(&REGISTRY.handlers).get(&op).copied()
}
