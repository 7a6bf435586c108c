//! The doorbell: how a client that can wake the host says "I wrote a request", so that the serving
//! threads sleep in the kernel instead of polling while device code computes.
//!
//! Two 32-bit words in host memory: `rings`, which every ring bumps and sleepers wait on (a futex), and
//! `sleepers`, the threads asleep or about to be. A ring is one atomic add, plus a `FUTEX_WAKE` only when
//! someone sleeps, so a busy server that never sleeps costs a client one uncontended atomic per request.
//!
//! No wake-up is lost. A client writes its request, then bumps `rings` and reads `sleepers` (both
//! sequentially consistent); a sleeper counts itself in `sleepers`, reads `rings`, looks for work,
//! and waits only while `rings` still holds what it read. Either the sleeper's look comes after the
//! client's bump in that single order (and sees the request, which the bump publishes), or the client's
//! read of `sleepers` comes after the sleeper counted itself (and it wakes the sleeper, whose wait
//! returns at once if the bump came first).
//!
//! Who rings: device code of the host device (`omprpc_device.h` on x86_64, a host thread) through
//! the address the plugin writes to the image's `__omprpc_rpc_doorbell`; on AMD, device code rings an HSA
//! signal and the runtime's signal handler rings this doorbell; the plugin itself when a kernel that may
//! call the host starts. NVIDIA device code cannot wake the host; its servers are looked at on a
//! backoff instead.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The two words shared with clients; the layout `omprpc_device.h` writes (`omprpc_doorbell_`).
#[repr(C)]
pub struct Doorbell {
    /// Bumped by every ring; the futex word sleepers wait on.
    rings: AtomicU32,
    /// Threads asleep, or about to sleep, on `rings`: a ring makes a system call only when one is.
    sleepers: AtomicU32,
}

impl Default for Doorbell {
    fn default() -> Self {
        Doorbell::new()
    }
}

impl Doorbell {
    /// A doorbell nobody sleeps on.
    pub const fn new() -> Doorbell {
        Doorbell {
            rings: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
        }
    }

    /// Says that work was published (before this call, by this thread): wakes every sleeper.
    pub fn ring(&self) {
        self.rings.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            futex_wake_all(&self.rings);
        }
    }

    /// Sleeps until the doorbell rings or `timeout` passes (`None`: until it rings), unless `has_work`
    /// (asked after this thread counts as a sleeper, so that a ring published before the question is
    /// either seen by it or wakes the sleep) says there is something to do. Returns what `has_work`
    /// said; a wake-up, spurious or not, is for the caller to look again.
    pub fn sleep_unless(&self, timeout: Option<Duration>, has_work: impl FnOnce() -> bool) -> bool {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let seen = self.rings.load(Ordering::SeqCst);
        let work = has_work();
        if !work {
            futex_wait(&self.rings, seen, timeout);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        work
    }

    /// Threads asleep on the doorbell now (tests).
    pub fn sleepers(&self) -> u32 {
        self.sleepers.load(Ordering::SeqCst)
    }

    /// The address device code of the host device rings through (`__omprpc_rpc_doorbell`).
    pub fn address(&self) -> u64 {
        self as *const Doorbell as u64
    }
}

/// Waits while `word` holds `expected`, at most `timeout`; returns on a wake, a timeout, a signal, or
/// at once when the word already differs.
fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    let limit = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let limit_ptr = limit.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a valid, aligned 32-bit atomic for the whole call; `limit_ptr` is null or
    // points at a timespec that outlives it. FUTEX_WAIT only reads both. Not private: the word may be
    // in memory a driver mapped for the device as well.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            limit_ptr,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wakes every thread waiting on `word`.
fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: `word` is a valid, aligned 32-bit atomic; FUTEX_WAKE reads nothing through the other
    // arguments.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn a_ring_wakes_a_sleeper_and_a_timeout_ends_a_sleep() {
        let bell = Arc::new(Doorbell::new());
        let started = Instant::now();
        assert!(!bell.sleep_unless(Some(Duration::from_millis(20)), || false));
        assert!(
            started.elapsed() >= Duration::from_millis(19),
            "slept {:?}",
            started.elapsed()
        );
        assert!(bell.sleep_unless(None, || true), "work found: no sleep");

        let sleeper = {
            let bell = Arc::clone(&bell);
            std::thread::spawn(move || bell.sleep_unless(None, || false))
        };
        while bell.sleepers() == 0 {
            std::thread::yield_now();
        }
        bell.ring();
        assert!(!sleeper.join().unwrap());
    }

    #[test]
    fn work_published_just_as_the_server_goes_to_sleep_is_never_slept_through() {
        // A client publishes a flag and rings while the server looks for it and sleeps without a
        // timeout: every round must end, or the test hangs (the harness's limit then fails it).
        let bell = Arc::new(Doorbell::new());
        let flag = Arc::new(AtomicBool::new(false));
        for _ in 0..20_000 {
            let client = {
                let (bell, flag) = (Arc::clone(&bell), Arc::clone(&flag));
                std::thread::spawn(move || {
                    flag.store(true, Ordering::Relaxed);
                    bell.ring();
                })
            };
            while !flag.load(Ordering::Acquire) {
                bell.sleep_unless(None, || flag.load(Ordering::Acquire));
            }
            client.join().unwrap();
            flag.store(false, Ordering::Relaxed);
        }
    }
}
