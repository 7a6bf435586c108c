//! Asynchronous work on the host device: each queue is a worker thread that runs its operations in order.
//!
//! Only `nowait` regions and the work that follows them on the same `__tgt_async_info` come here; every
//! other operation runs inline on the caller's thread, which is what the stock plugin does and costs
//! nothing extra.

use std::any::Any;
use std::collections::{BTreeSet, VecDeque};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::invoke;
use crate::backend::{Event, Queue};
use crate::plugin::error::{Error, Result};
use crate::plugin::sync::{lock, wait};

/// Raw device pointers carried from the submitting thread to the worker.
#[derive(Clone, Copy)]
struct SendPtr(*mut c_void);

// SAFETY: on the host device these are plain addresses in this process; libomptarget keeps the memory
// they point to alive until it has synchronised the queue, which happens after the worker used them.
unsafe impl Send for SendPtr {}

enum Op {
    Launch { function: SendPtr, args: Vec<SendPtr> },
    Copy { dst: SendPtr, src: SendPtr, size: usize },
    Record { event: Arc<EventState>, generation: u64 },
    Wait { event: Arc<EventState>, generation: u64 },
}

#[derive(Default)]
struct State {
    ops: VecDeque<Op>,
    /// The worker is executing an operation it already took off `ops`.
    running: bool,
    worker_started: bool,
    /// The worker sleeps on `work` and needs a wake-up.
    worker_sleeping: bool,
    /// Threads sleeping on `idle`.
    synchronizers: usize,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Signalled when work is added.
    work: Condvar,
    /// Signalled when the queue becomes idle.
    idle: Condvar,
}

/// A host queue: operations run in submission order on the queue's own thread.
pub struct HostQueue {
    shared: Arc<Shared>,
    /// Stack of the queue's thread, which runs kernels as a program's main thread would.
    stack_bytes: usize,
}

impl HostQueue {
    /// Makes an empty queue whose thread, started with the first operation, has `stack_bytes` of stack.
    pub fn new(stack_bytes: usize) -> HostQueue {
        HostQueue {
            shared: Arc::new(Shared::default()),
            stack_bytes,
        }
    }

    fn push(&self, op: Op) -> Result<()> {
        let mut state = lock(&self.shared.state);
        if !state.worker_started {
            let shared = Arc::clone(&self.shared);
            std::thread::Builder::new()
                .name("omprpc-queue".into())
                .stack_size(self.stack_bytes)
                .spawn(move || worker(&shared))
                .map_err(|e| Error::Os {
                    call: "starting a host queue thread",
                    detail: e.to_string(),
                })?;
            state.worker_started = true;
        }
        state.ops.push_back(op);
        let wake = state.worker_sleeping;
        drop(state);
        if wake {
            self.shared.work.notify_one();
        }
        Ok(())
    }

    /// Queues a kernel call with its (already offset) arguments.
    pub fn push_launch(&self, function: *mut c_void, args: &[*mut c_void]) -> Result<()> {
        self.push(Op::Launch {
            function: SendPtr(function),
            args: args.iter().map(|&p| SendPtr(p)).collect(),
        })
    }

    /// Queues a copy.
    pub fn push_copy(&self, dst: *mut c_void, src: *const c_void, size: usize) -> Result<()> {
        self.push(Op::Copy {
            dst: SendPtr(dst),
            src: SendPtr(src.cast_mut()),
            size,
        })
    }
}

fn worker(shared: &Shared) {
    let mut state = lock(&shared.state);
    loop {
        let Some(op) = state.ops.pop_front() else {
            state.running = false;
            if state.synchronizers > 0 {
                shared.idle.notify_all();
            }
            state.worker_sleeping = true;
            state = wait(&shared.work, state);
            state.worker_sleeping = false;
            continue;
        };
        state.running = true;
        drop(state);
        run(op);
        state = lock(&shared.state);
    }
}

fn run(op: Op) {
    match op {
        Op::Launch { function, args } => {
            let args: Vec<*mut c_void> = args.into_iter().map(|p| p.0).collect();
            // SAFETY: the kernel address came from the loaded image's symbol for this entry, and the
            // argument count from the launch, as for an inline launch.
            unsafe { invoke::call_with_pointer_args(function.0, &args) };
        }
        Op::Copy { dst, src, size } => {
            // SAFETY: libomptarget passes ranges of `size` bytes that it owns and keeps alive until the
            // queue is synchronised; `copy` tolerates overlap.
            unsafe { std::ptr::copy(src.0.cast::<u8>(), dst.0.cast::<u8>(), size) };
        }
        Op::Record { event, generation } => event.reach(generation),
        Op::Wait { event, generation } => event.wait_for(generation),
    }
}

impl Queue for HostQueue {
    fn synchronize(&self) -> Result<()> {
        let mut state = lock(&self.shared.state);
        state.synchronizers += 1;
        while state.running || !state.ops.is_empty() {
            state = wait(&self.shared.idle, state);
        }
        state.synchronizers -= 1;
        Ok(())
    }

    fn is_idle(&self) -> Result<bool> {
        let state = lock(&self.shared.state);
        Ok(!state.running && state.ops.is_empty())
    }

    fn record(&self, event: &dyn Event) -> Result<()> {
        let event = host_event(event)?;
        let generation = event.state.next_generation();
        let pushed = self.push(Op::Record {
            event: Arc::clone(&event.state),
            generation,
        });
        if pushed.is_err() {
            // The recording will never run; count it reached so that waiters do not hang.
            event.state.reach(generation);
        }
        pushed
    }

    fn wait(&self, event: &dyn Event) -> Result<()> {
        let event = host_event(event)?;
        let generation = event.state.latest_generation();
        self.push(Op::Wait {
            event: Arc::clone(&event.state),
            generation,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn host_event(event: &dyn Event) -> Result<&HostEvent> {
    event
        .as_any()
        .downcast_ref::<HostEvent>()
        .ok_or_else(|| Error::InvalidArg("an event of another backend was passed to a host queue".into()))
}

/// An event's progress: recordings are numbered 1, 2, ...; `reached` says that every recording up to
/// it has been reached, so a wait for recording g ends only when g itself (and all before it) is done,
/// even if a later recording on a faster queue finished first. In the usual case — recordings reached
/// in order, nobody waiting — this costs two atomic operations and no lock.
#[derive(Default)]
struct EventState {
    /// How many times the event was recorded.
    recorded: AtomicU64,
    /// Every recording up to this one has been reached.
    reached: AtomicU64,
    /// Recordings reached while an earlier one was outstanding, guarded by `lock`.
    early: Mutex<BTreeSet<u64>>,
    /// Entries in `early`, readable without the lock.
    early_count: AtomicUsize,
    /// Threads blocked in `wait_for`.
    waiters: AtomicUsize,
    changed: Condvar,
}

impl EventState {
    fn next_generation(&self) -> u64 {
        self.recorded.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn latest_generation(&self) -> u64 {
        self.recorded.load(Ordering::SeqCst)
    }

    fn reach(&self, generation: u64) {
        let in_order = self
            .reached
            .compare_exchange(generation - 1, generation, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if !in_order {
            let mut early = lock(&self.early);
            early.insert(generation);
            self.early_count.fetch_add(1, Ordering::SeqCst);
            self.advance(&mut early);
        } else if self.early_count.load(Ordering::SeqCst) > 0 {
            self.advance(&mut lock(&self.early));
        }
        // Pairs with the waiter's increment-then-check: either it sees the new value, or we see it.
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let _guard = lock(&self.early);
            self.changed.notify_all();
        }
    }

    /// Moves `reached` over recordings that finished early and now follow it. Holds the `early` lock.
    fn advance(&self, early: &mut BTreeSet<u64>) {
        loop {
            let reached = self.reached.load(Ordering::SeqCst);
            if !early.remove(&(reached + 1)) {
                return;
            }
            self.early_count.fetch_sub(1, Ordering::SeqCst);
            // Each recording is reached once, so nobody else can move `reached` from here.
            self.reached.store(reached + 1, Ordering::SeqCst);
        }
    }

    fn wait_for(&self, generation: u64) {
        if self.reached.load(Ordering::SeqCst) >= generation {
            return;
        }
        let mut guard = lock(&self.early);
        self.waiters.fetch_add(1, Ordering::SeqCst);
        while self.reached.load(Ordering::SeqCst) < generation {
            guard = wait(&self.changed, guard);
        }
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A host event: a counter of recordings and of recordings reached.
#[derive(Default)]
pub struct HostEvent {
    state: Arc<EventState>,
}

impl Event for HostEvent {
    fn record_now(&self) -> Result<()> {
        let generation = self.state.next_generation();
        self.state.reach(generation);
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        self.state.wait_for(self.state.latest_generation());
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    #[test]
    fn copies_run_in_order_and_synchronize_waits() {
        let queue = HostQueue::new(1 << 20);
        let a = [1u8, 2, 3, 4];
        let mut b = [0u8; 4];
        let mut c = [0u8; 4];
        queue.push_copy(b.as_mut_ptr().cast(), a.as_ptr().cast(), 4).unwrap();
        queue.push_copy(c.as_mut_ptr().cast(), b.as_ptr().cast(), 4).unwrap();
        queue.synchronize().unwrap();
        assert!(queue.is_idle().unwrap());
        assert_eq!(c, a);
    }

    static GATE: AtomicU32 = AtomicU32::new(0);
    extern "C" fn spin_until_gate_opens() {
        while GATE.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn events_order_work_across_queues() {
        let first = HostQueue::new(1 << 20);
        let second = HostQueue::new(1 << 20);
        let event = HostEvent::default();
        first.push_launch(spin_until_gate_opens as *mut c_void, &[]).unwrap();
        first.record(&event).unwrap();
        second.wait(&event).unwrap();
        let src = [7u8; 8];
        let mut dst = [0u8; 8];
        second
            .push_copy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), 8)
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(!first.is_idle().unwrap());
        assert!(!second.is_idle().unwrap(), "the copy must wait for the event");
        GATE.store(1, Ordering::SeqCst);
        second.synchronize().unwrap();
        event.synchronize().unwrap();
        assert_eq!(dst, src);
        first.synchronize().unwrap();
    }

    #[test]
    fn a_wait_is_not_released_by_a_later_recording() {
        // Recording 1 is queued behind a kernel that waits on a gate; recording 2 happens at once.
        static GATE2: AtomicU32 = AtomicU32::new(0);
        extern "C" fn spin_until_gate2_opens() {
            while GATE2.load(Ordering::SeqCst) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let slow = HostQueue::new(1 << 20);
        let waiting = HostQueue::new(1 << 20);
        let event = HostEvent::default();
        slow.push_launch(spin_until_gate2_opens as *mut c_void, &[]).unwrap();
        slow.record(&event).unwrap();
        waiting.wait(&event).unwrap();
        event.record_now().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            !waiting.is_idle().unwrap(),
            "the wait for recording 1 must outlast recording 2"
        );
        GATE2.store(1, Ordering::SeqCst);
        waiting.synchronize().unwrap();
        slow.synchronize().unwrap();
        event.synchronize().unwrap();
    }

    #[test]
    fn an_event_recorded_with_nothing_pending_is_reached_at_once() {
        let event = HostEvent::default();
        event.synchronize().unwrap();
        event.record_now().unwrap();
        event.synchronize().unwrap();
    }
}
