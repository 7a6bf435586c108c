//! Locking that tolerates poison, and statics of which each process has its own.
//!
//! A panic is caught at the C boundary and the process goes on, so a lock may be poisoned; every
//! update the plugin makes under a lock is a single step that leaves the data consistent, so the data
//! stays usable.
//!
//! # Which statics are per process
//!
//! A forked child has only the thread that called `fork`. A static is a [`PerProcess`] when what it
//! holds belongs to the threads or to the process that made it:
//! * a thread, or what only threads that did not survive the fork update (the serving threads' owner,
//!   the watchdog, the call slots of serving threads);
//! * a lock that a thread may hold across a wait or across code not ours (a user handler's lock, the
//!   statistics' shards, the trace's ring);
//! * what only the process that made it should report (statistics, trace).
//!
//! A static stays shared with a child when the child needs the parent's contents to go on and its
//! lock is held only for a short update that calls out to nothing that waits for another thread:
//! * the registry of servers and handlers (`rpc::serving::registry`): the child serves the mailboxes
//!   it inherited, with the handlers registered before the fork;
//! * the table of C streams handed to devices (`rpc::services::streams`): the child inherits the
//!   streams themselves.
//!
//! A fork that lands inside one of those updates (a load, an unload, a handler registration, a
//! device's `fopen` or `fclose` on another thread at that instant) leaves the child's copy locked;
//! POSIX allows a child of a threaded program only async-signal-safe calls before `exec` anyway.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, Ordering};
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

/// A value of which every process has its own: a forked child, whose other threads did not survive the
/// fork and may have left the value's locks held for ever, gets a fresh one the first time it asks,
/// and the parent's is leaked. No lock is taken to replace it, so a fork at any moment is safe.
/// Dropping it drops the value of the process that drops it.
///
/// `T` must be `Send`: the value is made on whichever thread asks first and dropped on another.
pub struct PerProcess<T: Send + 'static> {
    current: AtomicPtr<OfGeneration<T>>,
    /// Sendable and shareable exactly as `T` is.
    _owns: PhantomData<Box<T>>,
}

struct OfGeneration<T> {
    fork: u64,
    value: T,
}

impl<T: Send + 'static> PerProcess<T> {
    /// None made yet.
    pub const fn new() -> PerProcess<T> {
        PerProcess {
            current: AtomicPtr::new(std::ptr::null_mut()),
            _owns: PhantomData,
        }
    }

    /// This process's value, made by `make` on its first use here. When it replaces the value of the
    /// process this one was forked from, `after_fork` runs on it once (e.g. to start a thread again).
    pub fn get_or_make<'a>(&'a self, make: impl FnOnce() -> T, after_fork: impl FnOnce(&'a T)) -> &'a T {
        self.get_or_make_in(fork_generation(), make, after_fork)
    }

    /// [`PerProcess::get_or_make`] in the process of fork generation `fork`.
    fn get_or_make_in<'a>(&'a self, fork: u64, make: impl FnOnce() -> T, after_fork: impl FnOnce(&'a T)) -> &'a T {
        let current = self.current.load(Ordering::Acquire);
        // SAFETY: a non-null pointer is a box of `replace`, freed only when `self` is dropped (which
        // the returned borrow prevents) or never (values of earlier processes).
        match unsafe { current.as_ref() } {
            Some(of) if of.fork == fork => &of.value,
            _ => self.replace(current, fork, make, after_fork),
        }
    }

    #[cold]
    fn replace<'a>(
        &'a self,
        stale: *mut OfGeneration<T>,
        fork: u64,
        make: impl FnOnce() -> T,
        after_fork: impl FnOnce(&'a T),
    ) -> &'a T {
        let fresh = Box::into_raw(Box::new(OfGeneration { fork, value: make() }));
        match self
            .current
            .compare_exchange(stale, fresh, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(replaced) => {
                // SAFETY: `fresh` is now published; it is freed only when `self` is dropped.
                let value = unsafe { &(*fresh).value };
                if !replaced.is_null() {
                    after_fork(value);
                }
                value
            }
            Err(winner) => {
                // Another thread made one first: ours was never published.
                // SAFETY: `fresh` came from `Box::into_raw` above and nobody else saw it.
                drop(unsafe { Box::from_raw(fresh) });
                // SAFETY: `winner` is non-null (it differs from `stale` only by a publication), a box
                // of `replace` freed only when `self` is dropped.
                unsafe { &(*winner).value }
            }
        }
    }
}

impl<T: Send + 'static> Drop for PerProcess<T> {
    fn drop(&mut self) {
        let current = *self.current.get_mut();
        if !current.is_null() {
            // SAFETY: a non-null pointer is a box of `replace`; `&mut self` means nobody borrows from it
            // any more (values of earlier processes stay leaked).
            drop(unsafe { Box::from_raw(current) });
        }
    }
}

impl<T: Send + 'static> Default for PerProcess<T> {
    fn default() -> Self {
        PerProcess::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_value_is_made_once_per_process_and_again_after_a_fork() {
        static VALUE: PerProcess<Mutex<usize>> = PerProcess::new();
        let made = AtomicUsize::new(0);
        let after_fork = AtomicUsize::new(0);
        let get = |fork: u64| {
            VALUE.get_or_make_in(
                fork,
                || Mutex::new(made.fetch_add(1, Ordering::Relaxed)),
                |_| {
                    after_fork.fetch_add(1, Ordering::Relaxed);
                },
            )
        };
        let first = get(0);
        assert!(std::ptr::eq(first, get(0)));
        assert_eq!(*lock(first), 0);
        // A lock held at the fork stays held in the parent's value; the child's is a fresh one.
        let _held = lock(first);
        let child = get(1);
        assert!(!std::ptr::eq(first, child));
        assert_eq!(*lock(child), 1);
        assert!(std::ptr::eq(child, get(1)));
        assert_eq!(made.load(Ordering::Relaxed), 2);
        assert_eq!(
            after_fork.load(Ordering::Relaxed),
            1,
            "only a replacement runs after_fork"
        );
    }

    #[test]
    fn threads_racing_to_make_it_all_get_the_one_published() {
        static VALUE: PerProcess<usize> = PerProcess::new();
        let seen: Vec<usize> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..8)
                .map(|i| scope.spawn(move || VALUE.get_or_make_in(0, || i, |_| {}) as *const usize as usize))
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(seen.iter().all(|&p| p == seen[0]), "{seen:?}");
    }
}
