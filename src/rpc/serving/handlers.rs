//! User handlers as the serving path runs them: the trait a handler implements, its registration
//! (one lock per opcode, so that a handler needs none of its own), and which opcodes' handlers are
//! running now (so that a second call of a busy opcode waits in its port, not on a serving thread).

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::rpc::protocol::ffi::{self, opcode};
use crate::rpc::protocol::port::{Finished, Port};
use crate::rpc::protocol::Owner;
use crate::util::log;
use crate::util::sync::{lock, PerProcess};

/// A host handler for a user opcode. It runs on whichever thread serves the port (a serving thread, or
/// a thread waiting for another device's work) while the device waits for it.
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
    /// serve them (serving threads, threads waiting for other devices' work), so that a handler
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
    /// Marks the handler of `op` as running; nothing for an opcode below the users'.
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

/// libc's callback data for one user opcode on one server: which handler, and whose calls (for
/// messages).
pub(crate) struct UserOpcode {
    pub(crate) registered: &'static Registered,
    pub(crate) owner: Owner,
}

/// libc's callback for every user opcode.
///
/// # Safety
/// Called by libc's server with the port it is serving and the data `install_user_opcode` registered.
pub(crate) unsafe extern "C" fn dispatch(raw: ffi::Port, data: *mut c_void) {
    // SAFETY: `install_user_opcode` registers a `UserOpcode` that the server owns and keeps until it is
    // shut down, after which libc calls no callback of it.
    let user = unsafe { &*data.cast::<UserOpcode>() };
    let (owner, opcode) = (user.owner, user.registered.opcode);
    // SAFETY: the port is the one libc is serving for this call; it does not outlive the call.
    let mut port = unsafe { Port::for_user_handler(raw, owner, opcode) };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let _one_at_a_time = user.registered.one_at_a_time();
        let _running = Running::mark(opcode);
        user.registered.handler.serve(&mut port);
    }));
    if let Err(panic) = outcome {
        let text = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        log::error(format_args!(
            "{owner}: the host handler of opcode {opcode:#06x} panicked: {text}"
        ));
    }
    let finished = port.finish();
    crate::rpc::calls::moved_through_port(port.moved());
    match finished {
        Finished::Complete => {}
        Finished::RepliedForHandler => log::error(format_args!(
            "{owner}: the host handler of opcode {opcode:#06x} did not reply; the device's call \
             got an empty reply"
        )),
        Finished::Untouched => log::error(format_args!(
            "{owner}: the host handler of opcode {opcode:#06x} did not receive the device's call; \
             the call got its own request back"
        )),
    }
}
