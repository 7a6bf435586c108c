//! The thread that serves every device with an RPC server. It polls while any kernel that may call the
//! host is running, backing off from spinning to short sleeps when nothing comes, and sleeps on a
//! condition variable, using no CPU, when no such kernel runs. It starts with the first server, so a
//! program that never uses host services never has it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, LazyLock, Mutex, Once};
use std::time::Duration;

use super::registry;
use crate::util::log;
use crate::util::sync::{lock, wait};

struct Service {
    /// Kernels in flight on devices with a server.
    active: AtomicUsize,
    sleep: Mutex<()>,
    wake: Condvar,
    started: Once,
}

static SERVICE: LazyLock<Service> = LazyLock::new(|| Service {
    active: AtomicUsize::new(0),
    sleep: Mutex::new(()),
    wake: Condvar::new(),
    started: Once::new(),
});

/// Spinning rounds with nothing to serve before the thread starts yielding, then sleeping.
const SPIN_ROUNDS: u32 = 4000;
const YIELD_ROUNDS: u32 = 8000;
/// Longest sleep between polls while kernels run, bounding the latency of a first call after a lull.
const MAX_NAP: Duration = Duration::from_micros(500);

/// Starts the serving thread unless it runs already.
pub(crate) fn ensure_started() {
    SERVICE.started.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("omprpc-rpc".into())
            .spawn(serve_forever);
        if let Err(e) = spawned {
            log::error(format_args!(
                "cannot start the RPC server thread: {e}; host calls are served only while the program \
                 waits for its target regions"
            ));
        }
    });
}

/// A kernel that may call the host has been launched: serve until [`kernels_finished`] says it ended.
pub fn kernel_started() {
    if SERVICE.active.fetch_add(1, Ordering::SeqCst) == 0 {
        let _lock = lock(&SERVICE.sleep);
        SERVICE.wake.notify_one();
    }
}

/// `count` kernels counted by [`kernel_started`] have ended.
pub fn kernels_finished(count: usize) {
    if count > 0 {
        SERVICE.active.fetch_sub(count, Ordering::SeqCst);
    }
}

fn serve_forever() {
    let mut quiet_rounds = 0u32;
    let mut nap = Duration::from_micros(20);
    let mut seen = registry::generation();
    let mut servers = registry::servers();
    loop {
        if SERVICE.active.load(Ordering::SeqCst) == 0 {
            // Hold no server while asleep, so that a device's teardown need not wait for this thread.
            drop(servers);
            let mut guard = lock(&SERVICE.sleep);
            while SERVICE.active.load(Ordering::SeqCst) == 0 {
                guard = wait(&SERVICE.wake, guard);
            }
            drop(guard);
            seen = registry::generation();
            servers = registry::servers();
            quiet_rounds = 0;
        }
        let generation = registry::generation();
        if generation != seen {
            seen = generation;
            servers = registry::servers();
        }
        let mut served = false;
        for server in servers.iter() {
            served |= server.serve_once();
        }
        if served {
            quiet_rounds = 0;
            nap = Duration::from_micros(20);
            continue;
        }
        quiet_rounds = quiet_rounds.saturating_add(1);
        if quiet_rounds < SPIN_ROUNDS {
            std::hint::spin_loop();
        } else if quiet_rounds < YIELD_ROUNDS {
            std::thread::yield_now();
        } else {
            std::thread::sleep(nap);
            nap = (nap * 2).min(MAX_NAP);
        }
    }
}

/// Serves every device once; whether any request was waiting.
pub fn serve_all_once() -> bool {
    let servers = registry::servers();
    let mut served = false;
    for server in servers.iter() {
        served |= server.serve_once();
    }
    served
}
