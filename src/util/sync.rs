//! Locking that tolerates poison. A panic is caught at the C boundary and the process goes on, so a
//! lock may be poisoned; every update the plugin makes under a lock is a single step that leaves the
//! data consistent, so the data stays usable.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes `rwlock` shared.
pub fn read<T>(rwlock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    rwlock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Takes `rwlock` exclusively.
pub fn write<T>(rwlock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    rwlock.write().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `condvar`, giving `guard` back.
pub fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar.wait(guard).unwrap_or_else(PoisonError::into_inner)
}

/// Forks this process has gone through as a child (0 in the original process). Threads do not survive
/// `fork()`: whatever started a thread compares the generation it started it in with this one, and
/// starts another in a child.
pub fn fork_generation() -> u64 {
    watch_forks();
    FORK_GENERATION.load(std::sync::atomic::Ordering::Acquire)
}

static FORK_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Registers the child handler that counts forks, once.
fn watch_forks() {
    static WATCH: std::sync::Once = std::sync::Once::new();
    WATCH.call_once(|| {
        extern "C" fn in_child() {
            // Async-signal-safe: one atomic add.
            FORK_GENERATION.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        }
        // SAFETY: registers a handler that only touches an atomic; the plugin is never unmapped
        // (linked `-z nodelete`), so the handler's code stays for the life of the process.
        let status = unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
        if status != 0 {
            crate::util::log::error(format_args!(
                "pthread_atfork failed ({status}): a forked child's first host call may not be served"
            ));
        }
    });
}
