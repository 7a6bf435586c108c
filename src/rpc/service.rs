//! The thread that serves every device with an RPC server. It polls while any kernel that may call the
//! host is running, backing off from spinning to short sleeps when nothing comes, and sleeps on a
//! condition variable, using no CPU, when no such kernel runs. It starts with the first server, so a
//! program that never uses host services never has it.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use super::registry;
use crate::util::error::{Error, Result};
use crate::util::sync::{fork_generation, lock, wait};
use crate::util::{fault, log};

struct Service {
    /// Kernels in flight on devices with a server.
    active: AtomicUsize,
    sleep: Mutex<()>,
    wake: Condvar,
    /// Whether the serving thread runs; a failed start is tried again by the next kernel.
    running: AtomicBool,
    /// Held while starting the thread.
    starting: Mutex<()>,
    /// The fork generation of the process this service (and its thread) belongs to.
    generation: u64,
}

impl Service {
    fn new(generation: u64) -> Service {
        Service {
            active: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
            running: AtomicBool::new(false),
            starting: Mutex::new(()),
            generation,
        }
    }
}

/// The service of this process. A forked child, whose serving thread did not survive the fork, gets a
/// new one (the old one, whose locks may have been held by threads that are gone, is leaked).
static SERVICE: AtomicPtr<Service> = AtomicPtr::new(std::ptr::null_mut());
/// Serialises replacing the service.
static REPLACE: Mutex<()> = Mutex::new(());

fn service() -> &'static Service {
    let current = SERVICE.load(Ordering::Acquire);
    // SAFETY: a non-null pointer is a leaked `Service`, never freed.
    if let Some(service) = unsafe { current.as_ref() } {
        if service.generation == fork_generation() {
            return service;
        }
    }
    replace_service()
}

#[cold]
fn replace_service() -> &'static Service {
    let _replacing = lock(&REPLACE);
    let generation = fork_generation();
    // SAFETY: as in `service`.
    if let Some(service) = unsafe { SERVICE.load(Ordering::Acquire).as_ref() } {
        if service.generation == generation {
            return service;
        }
    }
    let fresh: &'static Service = Box::leak(Box::new(Service::new(generation)));
    let forked = !SERVICE
        .swap((fresh as *const Service).cast_mut(), Ordering::AcqRel)
        .is_null();
    if forked {
        // The servers were registered before the fork; serve them in this process too. If the thread
        // cannot start now, the child's first kernel that may call the host tries again (and fails
        // its launch if it still cannot).
        if let Err(e) = start_thread(fresh) {
            log::error(format_args!("in a forked child: {e}"));
        }
    }
    fresh
}

/// Spinning rounds with nothing to serve before the thread starts yielding, then sleeping.
const SPIN_ROUNDS: u32 = 4000;
const YIELD_ROUNDS: u32 = 8000;
/// Longest sleep between polls while kernels run, bounding the latency of a first call after a lull.
const MAX_NAP: Duration = Duration::from_micros(500);

/// Starts the serving thread unless it runs already. Without it a kernel that calls the host would
/// wait for ever (on the host device the kernel runs on the thread that launched it), so a failure is
/// an error for the caller, and the next call tries again.
pub(crate) fn ensure_started() -> Result<()> {
    start_thread(service())
}

fn start_thread(service: &'static Service) -> Result<()> {
    if service.running.load(Ordering::Acquire) {
        return Ok(());
    }
    let _starting = lock(&service.starting);
    if service.running.load(Ordering::Acquire) {
        return Ok(());
    }
    let no_threads_left = Err(std::io::Error::from_raw_os_error(libc::EAGAIN));
    let spawned = fault::call_or("pthread_create", no_threads_left, || {
        std::thread::Builder::new()
            .name("omprpc-rpc".into())
            .spawn(move || serve_forever(service))
    });
    match spawned {
        Ok(_) => {
            service.running.store(true, Ordering::Release);
            Ok(())
        }
        Err(e) => Err(Error::Os {
            call: "pthread_create of the RPC serving thread",
            detail: e.to_string(),
        }),
    }
}

/// A kernel that may call the host is about to be launched: serve until [`kernels_finished`] says it
/// ended. Fails, counting nothing, when the serving thread cannot be started.
pub fn kernel_started() -> Result<()> {
    let service = service();
    start_thread(service)?;
    if service.active.fetch_add(1, Ordering::SeqCst) == 0 {
        let _lock = lock(&service.sleep);
        service.wake.notify_one();
    }
    Ok(())
}

/// `count` kernels counted by [`kernel_started`] have ended.
pub fn kernels_finished(count: usize) {
    if count > 0 {
        // Saturating: kernels counted before a fork belong to the parent's service.
        let _ = service()
            .active
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| Some(n.saturating_sub(count)));
    }
}

fn serve_forever(service: &'static Service) {
    let mut quiet_rounds = 0u32;
    let mut nap = Duration::from_micros(20);
    let mut seen = registry::generation();
    let mut servers = registry::servers();
    loop {
        if service.active.load(Ordering::SeqCst) == 0 {
            // Hold no server while asleep, so that a device's teardown need not wait for this thread.
            drop(servers);
            let mut guard = lock(&service.sleep);
            while service.active.load(Ordering::SeqCst) == 0 {
                guard = wait(&service.wake, guard);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_serving_thread_that_cannot_start_is_an_error_and_is_tried_again() {
        // A service of its own, so that the process's serving thread (which other tests start) does
        // not count; its thread sleeps until the test process ends.
        let service: &'static Service = Box::leak(Box::new(Service::new(fork_generation())));
        fault::arm("pthread_create");
        let err = start_thread(service).unwrap_err().to_string();
        assert_eq!(
            err,
            "pthread_create of the RPC serving thread failed: Resource temporarily unavailable (os error 11)"
        );
        assert!(!service.running.load(Ordering::Acquire));
        start_thread(service).unwrap();
        assert!(service.running.load(Ordering::Acquire));
        start_thread(service).unwrap();
    }
}
