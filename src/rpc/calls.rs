//! The host calls being served right now, one slot per serving thread: what a stand-by serving thread
//! looks at to take over from one held up by a slow call, and what the watchdog reports.
//!
//! A slot is written only by its own thread: the call's fields with relaxed stores, published by the
//! release store of `serial`, which is odd while a call is served and even between calls; readers on
//! other threads see a call (a call that ends while it is read may show fields of the next one, which
//! only affects a message) or an idle slot. Slots carry no clock reading (serving reads the clock only
//! when statistics or a trace are asked for): whoever needs a call's age (the stand-by thread, the
//! watchdog) notes when it first saw that serial.
//!
//! The calling thread's own view of its call (which device it serves, the bytes the call moved) lives
//! in one thread-local, `SERVING`, that [`begin`] sets and [`end`] restores.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::util::sync::{lock, PerProcess};

/// What one thread is serving.
#[derive(Default)]
pub struct CallSlot {
    device: AtomicUsize,
    port: AtomicU32,
    opcode: AtomicU32,
    /// Whether a thread owns the slot (slots of threads that ended are reused).
    taken: AtomicBool,
    /// Odd while a call is served; goes up by one at each start and end, so that a call is named by
    /// its serial once.
    serial: AtomicU64,
    /// When the call was seen ([`crate::util::clock::now_ns`]), or 0 when the clock was not read.
    began_ns: AtomicU64,
}

/// A call in progress, as read from a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// The device that made it.
    pub device: usize,
    /// Its port.
    pub port: u32,
    /// Its opcode.
    pub opcode: u16,
    /// Distinguishes it from the slot's other calls.
    pub serial: u64,
    /// When it was seen, when the clock was read for it (statistics, trace or watchdog asked).
    pub began_ns: Option<u64>,
}

impl CallSlot {
    /// The call in progress, if any.
    pub fn current(&self) -> Option<Call> {
        let serial = self.serial.load(Ordering::Acquire);
        (serial % 2 == 1).then(|| Call {
            device: self.device.load(Ordering::Relaxed),
            port: self.port.load(Ordering::Relaxed),
            opcode: self.opcode.load(Ordering::Relaxed) as u16,
            serial,
            began_ns: Some(self.began_ns.load(Ordering::Relaxed)).filter(|&ns| ns != 0),
        })
    }

    /// Marks the end of whatever call the slot shows.
    fn idle(&self) {
        let serial = self.serial.load(Ordering::Relaxed);
        if serial % 2 == 1 {
            self.serial.store(serial + 1, Ordering::Release);
        }
    }
}

/// Every slot of this process's threads. A forked child lists its own threads' slots (a lock a
/// parent's thread held at the fork stays with the parent's list).
fn all_slots() -> &'static Mutex<Vec<&'static CallSlot>> {
    static SLOTS: PerProcess<Mutex<Vec<&'static CallSlot>>> = PerProcess::new();
    SLOTS.get_or_make(|| Mutex::new(Vec::new()), |_| {})
}

/// Gives the slot back when its thread ends.
struct Owned(&'static CallSlot);

impl Drop for Owned {
    fn drop(&mut self) {
        self.0.idle();
        self.0.taken.store(false, Ordering::Release);
    }
}

/// What the calling thread is serving, as the thread itself sees it.
#[derive(Clone, Copy)]
struct Serving {
    /// The device whose call the thread is serving, if any.
    device: Option<usize>,
    /// Whether the call's bytes are counted: only the statistics read them, so when they are off the
    /// sums and string lengths are not even computed.
    counting: bool,
    /// Bytes the call moved to the host and to the device, so far.
    moved: (u64, u64),
}

/// A thread that serves nothing.
const IDLE: Serving = Serving {
    device: None,
    counting: false,
    moved: (0, 0),
};

thread_local! {
    static MINE: Owned = Owned(take_slot());
    /// What this thread is serving, while it is inside a call [`begin`] marked. libc's server calls
    /// `exit` from the serving thread for a device `exit`, so teardown code can ask this (through
    /// [`device_being_served`]) to avoid waiting on work that will never finish; and the checks of
    /// what libc's handlers pass to the host's C library name the device in their messages.
    static SERVING: Cell<Serving> = const { Cell::new(IDLE) };
}

/// The device whose call the calling thread is serving right now, if any: teardown code asks, so
/// that it does not wait on a serving thread for work that will never finish.
pub fn device_being_served() -> Option<usize> {
    SERVING.with(Cell::get).device
}

/// Whether the calling thread is serving a host call right now.
pub fn this_thread_is_serving() -> bool {
    device_being_served().is_some()
}

/// How an error line names the device being served: `device 3`, or `a device` off a serving thread.
pub fn served_device_label() -> String {
    device_being_served().map_or_else(|| "a device".to_string(), |d| format!("device {d}"))
}

/// The call being served on this thread delivered `bytes()` bytes to the host (a write, a handler's
/// receive); `bytes` runs only when the call's bytes are counted.
pub fn moved_to_host(bytes: impl FnOnce() -> u64) {
    SERVING.with(|s| {
        let mut serving = s.get();
        if serving.counting {
            serving.moved.0 += bytes();
            s.set(serving);
        }
    });
}

/// The call being served on this thread got `bytes()` bytes from the host (a read, a handler's
/// reply); `bytes` runs only when the call's bytes are counted.
pub fn moved_to_device(bytes: impl FnOnce() -> u64) {
    SERVING.with(|s| {
        let mut serving = s.get();
        if serving.counting {
            serving.moved.1 += bytes();
            s.set(serving);
        }
    });
}

/// The call being served on this thread moved `bytes` through its port: to the host and to the
/// device (what [`crate::rpc::protocol::port::Port::moved`] counted).
pub fn moved_through_port(bytes: (u64, u64)) {
    moved_to_host(|| bytes.0);
    moved_to_device(|| bytes.1);
}

/// What a finished call moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    /// Bytes it delivered to the host.
    pub to_host: u64,
    /// Bytes it got from the host.
    pub to_device: u64,
    /// When it ended, when the clock was read when it began.
    pub ended_ns: Option<u64>,
}

/// A call that lasted at least the watchdog's limit (`OMPRPC_WATCHDOG_MS`), as it ended: the watchdog
/// says when it finished, with the time the statistics count, even when it ended just before exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlowCall {
    /// The slot that showed it (its address), with the call's serial: the watchdog's name for it.
    pub slot: usize,
    /// The call, as its slot showed it.
    pub call: Call,
    /// When it ended.
    pub ended_ns: u64,
}

/// The slow calls that ended since the watchdog last asked. A forked child keeps its own.
fn finished_slow() -> &'static Mutex<Vec<SlowCall>> {
    static FINISHED: PerProcess<Mutex<Vec<SlowCall>>> = PerProcess::new();
    FINISHED.get_or_make(|| Mutex::new(Vec::new()), |_| {})
}

/// Takes the slow calls that ended since the last time, in the order they ended.
pub fn take_finished_slow() -> Vec<SlowCall> {
    std::mem::take(&mut *lock(finished_slow()))
}

fn take_slot() -> &'static CallSlot {
    let mut slots = lock(all_slots());
    if let Some(free) = slots.iter().find(|s| {
        s.taken
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }) {
        return free;
    }
    let slot: &'static CallSlot = Box::leak(Box::default());
    slot.taken.store(true, Ordering::Relaxed);
    slots.push(slot);
    slot
}

/// The calling thread's slot.
pub fn my_slot() -> &'static CallSlot {
    MINE.with(|owned| owned.0)
}

/// Every slot (idle ones included).
pub fn slots() -> Vec<&'static CallSlot> {
    lock(all_slots()).clone()
}

/// What a thread was serving when it began serving another call (a handler that waits for the
/// device serves again on its thread), given back to [`end`] to be shown again.
pub struct Outer {
    call: Option<Call>,
    serving: Serving,
}

/// Marks the start of serving `opcode` on `port` of `device` on this thread, seen at `began_ns` (when
/// the clock was read for it), counting the bytes the call moves when `count_bytes` (the statistics
/// are on); returns what the thread was serving, for [`end`].
pub fn begin(device: usize, port: u32, opcode: u16, count_bytes: bool, began_ns: Option<u64>) -> Outer {
    let serving = SERVING
        .try_with(|s| {
            s.replace(Serving {
                device: Some(device),
                counting: count_bytes,
                moved: (0, 0),
            })
        })
        .unwrap_or(IDLE);
    let call = with_slot(|slot| {
        let outer = slot.current();
        show(slot, device, port, opcode, began_ns);
        outer
    })
    .flatten();
    Outer { call, serving }
}

/// Marks the end of this thread's call; shows again what `outer` was serving; returns what the
/// call moved (nothing, unless [`begin`] was asked to count) and when it ended (when the clock was
/// read when it began). A call that lasted the watchdog's limit or longer is kept for the watchdog.
pub fn end(outer: Outer) -> Moved {
    let (to_host, to_device) = SERVING.try_with(|s| s.replace(outer.serving).moved).unwrap_or_default();
    let ended_ns = with_slot(|slot| {
        let call = slot.current();
        let ended_ns = call
            .and_then(|call| call.began_ns)
            .map(|_| crate::util::clock::now_ns());
        if let (Some(call), Some(ended_ns)) = (call, ended_ns) {
            keep_if_slow(slot, call, ended_ns);
        }
        match outer.call {
            Some(call) => show(slot, call.device, call.port, call.opcode, call.began_ns),
            None => slot.idle(),
        }
        ended_ns
    })
    .flatten();
    Moved {
        to_host,
        to_device,
        ended_ns,
    }
}

/// Keeps `call`, which ended at `ended_ns`, for the watchdog when it lasted its limit or longer.
fn keep_if_slow(slot: &'static CallSlot, call: Call, ended_ns: u64) {
    let Some(limit) = crate::util::config::host_services().watchdog else {
        return;
    };
    let lasted = call.began_ns.map_or(0, |began| ended_ns.saturating_sub(began));
    if u128::from(lasted) >= limit.as_nanos() {
        lock(finished_slow()).push(SlowCall {
            slot: slot as *const CallSlot as usize,
            call,
            ended_ns,
        });
    }
}

/// Shows a new call in `slot` (only its own thread writes it: no read-modify-write needed).
fn show(slot: &CallSlot, device: usize, port: u32, opcode: u16, began_ns: Option<u64>) {
    slot.device.store(device, Ordering::Relaxed);
    slot.port.store(port, Ordering::Relaxed);
    slot.opcode.store(u32::from(opcode), Ordering::Relaxed);
    slot.began_ns.store(began_ns.unwrap_or(0), Ordering::Relaxed);
    let serial = slot.serial.load(Ordering::Relaxed);
    // Odd: a call; a new serial even if the slot showed one already (an outer call shown again).
    slot.serial.store((serial + 1) | 1, Ordering::Release);
}

/// Runs `f` with this thread's slot, unless the thread is ending (its slot already given back).
fn with_slot<T>(f: impl FnOnce(&'static CallSlot) -> T) -> Option<T> {
    MINE.try_with(|owned| f(owned.0)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_shows_its_call_to_other_threads_and_is_reused_after_its_thread_ends() {
        let (slot, seen) = std::thread::spawn(|| {
            let slot = my_slot() as *const CallSlot as usize;
            let outer = begin(4, 17, 0x8001, true, None);
            assert_eq!(device_being_served(), Some(4));
            moved_to_host(|| 64);
            moved_to_device(|| 8);
            let seen = slots()
                .into_iter()
                .find(|s| *s as *const CallSlot as usize == slot)
                .and_then(CallSlot::current)
                .unwrap();
            let moved = end(outer);
            assert_eq!((moved.to_host, moved.to_device), (64, 8));
            assert_eq!(my_slot().current(), None);
            let first = begin(4, 17, 0x8001, true, None);
            moved_to_host(|| 1);
            let serial = my_slot().current().unwrap().serial;
            assert_ne!(serial, seen.serial, "a new call has a new serial");
            // A handler that serves again on its thread: the inner call shows, then the outer again.
            let inner = begin(5, 2, 0x8002, true, None);
            moved_to_host(|| 10);
            assert_eq!(my_slot().current().unwrap().device, 5);
            assert_eq!(end(inner).to_host, 10);
            let again = my_slot().current().unwrap();
            assert_eq!((again.device, again.port, again.opcode), (4, 17, 0x8001));
            assert_eq!(device_being_served(), Some(4), "the outer call's device is shown again");
            assert_eq!(end(first).to_host, 1, "the outer call's bytes are its own");
            assert_eq!(my_slot().current(), None);
            assert_eq!(device_being_served(), None);
            let uncounted = begin(4, 17, 0x8001, false, None);
            moved_to_host(|| unreachable!("bytes are not counted"));
            assert_eq!(
                end(uncounted),
                Moved {
                    to_host: 0,
                    to_device: 0,
                    ended_ns: None
                }
            );
            (slot, seen)
        })
        .join()
        .unwrap();
        assert_eq!((seen.device, seen.port, seen.opcode), (4, 17, 0x8001));
        assert!(slots().iter().any(|s| *s as *const CallSlot as usize == slot));
    }

    #[test]
    fn a_thread_that_ends_gives_its_slot_back() {
        let slot: &'static CallSlot = Box::leak(Box::default());
        slot.taken.store(true, Ordering::Relaxed);
        slot.serial.store(5, Ordering::Relaxed);
        drop(Owned(slot));
        assert!(!slot.taken.load(Ordering::Relaxed));
        assert_eq!(slot.current(), None);
    }
}
