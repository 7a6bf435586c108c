//! The thread that serves every device with an RPC server. It polls while any kernel that may call
//! the host is running, backing off from spinning to short sleeps when nothing comes, and sleeps on a
//! condition variable, using no CPU, when no such kernel runs. It starts with the first server, so a
//! program that never uses host services never has it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, Once, RwLock};
use std::time::Duration;

use super::server::RpcServer;
use crate::plugin::log;
use crate::plugin::sync::{lock, read, wait, write};

struct Service {
    servers: RwLock<Arc<Vec<Arc<RpcServer>>>>,
    /// Bumped when `servers` changes, so the serving thread re-reads it only then.
    generation: AtomicUsize,
    /// Kernels running on devices with a server.
    active: AtomicUsize,
    sleep: Mutex<()>,
    wake: Condvar,
    started: Once,
}

static SERVICE: LazyLock<Service> = LazyLock::new(|| Service {
    servers: RwLock::new(Arc::new(Vec::new())),
    generation: AtomicUsize::new(0),
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

/// Adds `server` to those served, starting the thread on first use.
pub fn add_server(server: Arc<RpcServer>) {
    {
        let mut servers = write(&SERVICE.servers);
        let mut list = Vec::clone(&servers);
        list.push(server);
        *servers = Arc::new(list);
        SERVICE.generation.fetch_add(1, Ordering::SeqCst);
    }
    SERVICE.started.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("omprpc-rpc".into())
            .spawn(serve_forever);
        if let Err(e) = spawned {
            log::error(format_args!(
                "cannot start the RPC server thread: {e}; device host calls will hang"
            ));
        }
    });
}

/// Marks a kernel that may call the host as running until the guard is dropped.
pub fn kernel_running() -> KernelGuard {
    if SERVICE.active.fetch_add(1, Ordering::SeqCst) == 0 {
        let _lock = lock(&SERVICE.sleep);
        SERVICE.wake.notify_one();
    }
    KernelGuard(())
}

/// See [`kernel_running`].
pub struct KernelGuard(());

impl Drop for KernelGuard {
    fn drop(&mut self) {
        SERVICE.active.fetch_sub(1, Ordering::SeqCst);
    }
}

fn servers() -> Arc<Vec<Arc<RpcServer>>> {
    Arc::clone(&read(&SERVICE.servers))
}

fn serve_forever() {
    let mut quiet_rounds = 0u32;
    let mut nap = Duration::from_micros(20);
    let mut seen_generation = SERVICE.generation.load(Ordering::SeqCst);
    let mut servers = servers();
    loop {
        let generation = SERVICE.generation.load(Ordering::SeqCst);
        if generation != seen_generation {
            seen_generation = generation;
            servers = self::servers();
        }
        if SERVICE.active.load(Ordering::SeqCst) == 0 {
            let mut lock = lock(&SERVICE.sleep);
            while SERVICE.active.load(Ordering::SeqCst) == 0 {
                lock = wait(&SERVICE.wake, lock);
            }
            quiet_rounds = 0;
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
    let servers = servers();
    let mut served = false;
    for server in servers.iter() {
        served |= server.serve_once();
    }
    served
}
