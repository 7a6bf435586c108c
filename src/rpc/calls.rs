//! The host calls being served right now, one slot per serving thread: what a stand-by serving thread
//! looks at to take over from one held up by a slow call, and what the watchdog reports.
//!
//! A slot is written only by its own thread: the call's fields with relaxed stores, published by the
//! release store of `serial`, which is odd while a call is served and even between calls; readers on
//! other threads see a call (a call that ends while it is read may show fields of the next one, which
//! only affects a message) or an idle slot. Serving reads no clock: whoever needs a call's age (the
//! stand-by thread, the watchdog) notes when it first saw that serial.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::util::sync::lock;

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

/// Nanoseconds on the trace's clock ([`super::trace::now_ns`]), never 0.
pub fn now_ns() -> u64 {
    super::trace::now_ns().max(1)
}

static SLOTS: Mutex<Vec<&'static CallSlot>> = Mutex::new(Vec::new());

/// Gives the slot back when its thread ends.
struct Owned(&'static CallSlot);

impl Drop for Owned {
    fn drop(&mut self) {
        self.0.idle();
        self.0.taken.store(false, Ordering::Release);
    }
}

thread_local! {
    static MINE: Owned = Owned(take_slot());
    /// Bytes the call this thread serves moved to the host and to the device, so far.
    static MOVED: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// The call being served on this thread delivered `bytes` to the host (a write, a handler's receive).
pub fn moved_to_host(bytes: u64) {
    MOVED.with(|m| m.set((m.get().0 + bytes, m.get().1)));
}

/// The call being served on this thread got `bytes` from the host (a read, a handler's reply).
pub fn moved_to_device(bytes: u64) {
    MOVED.with(|m| m.set((m.get().0, m.get().1 + bytes)));
}

/// What a finished call moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    /// Bytes it delivered to the host.
    pub to_host: u64,
    /// Bytes it got from the host.
    pub to_device: u64,
}

fn take_slot() -> &'static CallSlot {
    let mut slots = lock(&SLOTS);
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
    lock(&SLOTS).clone()
}

/// What a thread was serving when it began serving another call (a handler that waits for the
/// device serves again on its thread), given back to [`end`] to be shown again.
pub struct Outer {
    call: Option<Call>,
    moved: (u64, u64),
}

/// Marks the start of serving `opcode` on `port` of `device` on this thread; returns what the
/// thread was serving, for [`end`].
pub fn begin(device: usize, port: u32, opcode: u16) -> Outer {
    let moved = MOVED.try_with(|m| m.replace((0, 0))).unwrap_or_default();
    let call = with_slot(|slot| {
        let outer = slot.current();
        show(slot, device, port, opcode);
        outer
    })
    .flatten();
    Outer { call, moved }
}

/// Marks the end of this thread's call; shows again what `outer` was serving; returns what the
/// call moved.
pub fn end(outer: Outer) -> Moved {
    with_slot(|slot| match outer.call {
        Some(call) => show(slot, call.device, call.port, call.opcode),
        None => slot.idle(),
    });
    let (to_host, to_device) = MOVED.try_with(|m| m.replace(outer.moved)).unwrap_or_default();
    Moved { to_host, to_device }
}

/// Shows a new call in `slot` (only its own thread writes it: no read-modify-write needed).
fn show(slot: &CallSlot, device: usize, port: u32, opcode: u16) {
    slot.device.store(device, Ordering::Relaxed);
    slot.port.store(port, Ordering::Relaxed);
    slot.opcode.store(u32::from(opcode), Ordering::Relaxed);
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
            let outer = begin(4, 17, 0x8001);
            moved_to_host(64);
            moved_to_device(8);
            let seen = slots()
                .into_iter()
                .find(|s| *s as *const CallSlot as usize == slot)
                .and_then(CallSlot::current)
                .unwrap();
            let moved = end(outer);
            assert_eq!((moved.to_host, moved.to_device), (64, 8));
            assert_eq!(my_slot().current(), None);
            let first = begin(4, 17, 0x8001);
            moved_to_host(1);
            let serial = my_slot().current().unwrap().serial;
            assert_ne!(serial, seen.serial, "a new call has a new serial");
            // A handler that serves again on its thread: the inner call shows, then the outer again.
            let inner = begin(5, 2, 0x8002);
            moved_to_host(10);
            assert_eq!(my_slot().current().unwrap().device, 5);
            assert_eq!(end(inner).to_host, 10);
            let again = my_slot().current().unwrap();
            assert_eq!((again.device, again.port, again.opcode), (4, 17, 0x8001));
            assert_eq!(end(first).to_host, 1, "the outer call's bytes are its own");
            assert_eq!(my_slot().current(), None);
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
