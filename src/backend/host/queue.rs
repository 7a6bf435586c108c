//! Asynchronous work on the host device: each queue is a worker thread that runs its operations in order.
//!
//! The core takes a queue for every `__tgt_async_info` with work, but most host work need not be
//! asynchronous: an operation on an idle queue runs inline on the caller's thread (what the stock
//! plugin does, at no extra cost), and only `nowait` kernels, and whatever follows them on the same
//! queue before it drains, go to the queue's thread.

use std::collections::{BTreeSet, VecDeque};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::invoke;
use crate::util::error::{Error, Result};
use crate::util::sync::{lock, wait};

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
    /// The fork generation in which the worker was started (threads do not survive `fork()`).
    worker_generation: Option<u64>,
    /// The worker sleeps on `work` and needs a wake-up.
    worker_sleeping: bool,
    /// Threads sleeping on `idle`.
    synchronizers: usize,
    /// The queue was destroyed: the worker ends once its operations are done.
    stopping: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Operations queued or running; 0 means idle. Read without the lock on every operation.
    pending: AtomicUsize,
    /// Signalled when work is added.
    work: Condvar,
    /// Signalled when the queue becomes idle.
    idle: Condvar,
}

/// A host queue: operations run in submission order, inline when the queue is idle, else on the
/// queue's own thread.
pub struct HostQueue {
    shared: Arc<Shared>,
    /// Stack of the queue's thread, which runs kernels as a program's main thread would.
    stack_bytes: usize,
}

impl HostQueue {
    /// Makes an empty queue whose thread, started with the first queued operation, has `stack_bytes`
    /// of stack.
    pub fn new(stack_bytes: usize) -> HostQueue {
        HostQueue {
            shared: Arc::new(Shared::default()),
            stack_bytes,
        }
    }

    /// The queue's handle for libomptarget: the address of its shared state, fixed for its life.
    pub fn handle(&self) -> *mut c_void {
        Arc::as_ptr(&self.shared).cast_mut().cast()
    }

    /// Whether everything submitted has finished.
    pub fn is_idle(&self) -> bool {
        self.shared.pending.load(Ordering::Acquire) == 0
    }

    fn push(&self, op: Op) -> Result<()> {
        let mut state = lock(&self.shared.state);
        let generation = crate::util::sync::fork_generation();
        if state.worker_generation != Some(generation) {
            // First work, or first work in a forked child, whose copy of the worker does not run.
            state.worker_sleeping = false;
            let shared = Arc::clone(&self.shared);
            std::thread::Builder::new()
                .name("omprpc-queue".into())
                .stack_size(self.stack_bytes)
                .spawn(move || worker(&shared))
                .map_err(|e| Error::Os {
                    call: "starting a host queue thread",
                    detail: e.to_string(),
                })?;
            state.worker_generation = Some(generation);
        }
        self.shared.pending.fetch_add(1, Ordering::AcqRel);
        state.ops.push_back(op);
        let wake = state.worker_sleeping;
        drop(state);
        if wake {
            self.shared.work.notify_one();
        }
        Ok(())
    }

    /// Runs a kernel with its (already offset) arguments: inline when the queue is idle and the launch
    /// is not `nowait`, else after the work already queued, on the queue's thread.
    ///
    /// # Safety
    /// As for [`invoke::call_with_pointer_args`]; the arguments stay valid until the queue is idle.
    pub unsafe fn launch(&self, function: *const c_void, args: &[*mut c_void], asynchronous: bool) -> Result<()> {
        if !asynchronous && self.is_idle() {
            // SAFETY: forwarded from this function's contract.
            unsafe { invoke::call_with_pointer_args(function, args) };
            return Ok(());
        }
        self.push(Op::Launch {
            function: SendPtr(function.cast_mut()),
            args: args.iter().map(|&p| SendPtr(p)).collect(),
        })
    }

    /// Copies `size` bytes, inline when the queue is idle.
    ///
    /// # Safety
    /// Both ranges are valid for `size` bytes until the queue is idle.
    pub unsafe fn copy(&self, dst: *mut c_void, src: *const c_void, size: usize) -> Result<()> {
        if self.is_idle() {
            // SAFETY: forwarded from this function's contract; `copy` is memmove and tolerates overlap.
            unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), size) };
            return Ok(());
        }
        self.push(Op::Copy {
            dst: SendPtr(dst),
            src: SendPtr(src.cast_mut()),
            size,
        })
    }

    /// Blocks until everything submitted so far has finished.
    pub fn synchronize(&self) {
        if self.is_idle() {
            return;
        }
        let mut state = lock(&self.shared.state);
        state.synchronizers += 1;
        while !self.is_idle() {
            state = wait(&self.shared.idle, state);
        }
        state.synchronizers -= 1;
    }

    /// Marks `event` as reached once the work submitted so far has finished.
    pub fn record(&self, event: &HostEvent) -> Result<()> {
        let generation = event.state.next_generation();
        if self.is_idle() {
            event.state.reach(generation);
            return Ok(());
        }
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

    /// Holds back later work until `event`'s latest recording is reached (on an idle queue, the caller
    /// waits).
    pub fn wait(&self, event: &HostEvent) -> Result<()> {
        let generation = event.state.latest_generation();
        if self.is_idle() {
            event.state.wait_for(generation);
            return Ok(());
        }
        self.push(Op::Wait {
            event: Arc::clone(&event.state),
            generation,
        })
    }

    /// Ends the queue's thread once its work is done (the queue is being destroyed).
    pub fn stop(&self) {
        let mut state = lock(&self.shared.state);
        state.stopping = true;
        let wake = state.worker_sleeping;
        drop(state);
        if wake {
            self.shared.work.notify_one();
        }
    }
}

fn worker(shared: &Shared) {
    let mut state = lock(&shared.state);
    loop {
        let Some(op) = state.ops.pop_front() else {
            if state.stopping {
                return;
            }
            state.worker_sleeping = true;
            state = wait(&shared.work, state);
            state.worker_sleeping = false;
            continue;
        };
        drop(state);
        run(op);
        shared.pending.fetch_sub(1, Ordering::AcqRel);
        state = lock(&shared.state);
        if state.synchronizers > 0 && shared.pending.load(Ordering::Acquire) == 0 {
            shared.idle.notify_all();
        }
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

impl HostEvent {
    /// The event's handle for libomptarget: the address of its state, fixed for its life.
    pub fn handle(&self) -> *mut c_void {
        Arc::as_ptr(&self.state).cast_mut().cast()
    }

    /// Marks the event reached now (recorded with no work outstanding).
    pub fn record_now(&self) {
        let generation = self.state.next_generation();
        self.state.reach(generation);
    }

    /// Blocks the calling thread until the latest recording is reached.
    pub fn synchronize(&self) {
        self.state.wait_for(self.state.latest_generation());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    /// A kernel that spins until its gate (its one argument) is opened.
    extern "C" fn wait_for_gate(gate: *const AtomicU32) {
        // SAFETY: the tests pass the address of a static AtomicU32.
        let gate = unsafe { &*gate };
        while gate.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn hold(queue: &HostQueue, gate: &'static AtomicU32) {
        let args = [gate as *const AtomicU32 as *mut c_void];
        // SAFETY: `wait_for_gate` takes one pointer argument, a static that outlives the queue's work.
        unsafe { queue.launch(wait_for_gate as *const c_void, &args, true) }.unwrap();
    }

    #[test]
    fn an_idle_queue_runs_work_inline() {
        static CALLS: AtomicU32 = AtomicU32::new(0);
        extern "C" fn count() {
            CALLS.fetch_add(1, Ordering::SeqCst);
        }
        let queue = HostQueue::new(1 << 20);
        let a = [1u8, 2, 3, 4];
        let mut b = [0u8; 4];
        // SAFETY: both arrays outlive the call, which completes inline.
        unsafe { queue.copy(b.as_mut_ptr().cast(), a.as_ptr().cast(), 4) }.unwrap();
        assert_eq!(b, a, "copied before returning");
        // SAFETY: `count` takes no arguments.
        unsafe { queue.launch(count as *const c_void, &[], false) }.unwrap();
        assert_eq!(CALLS.load(Ordering::SeqCst), 1, "ran before returning");
        assert!(
            lock(&queue.shared.state).worker_generation.is_none(),
            "no thread for inline work"
        );
        let event = HostEvent::default();
        queue.record(&event).unwrap();
        event.synchronize();
    }

    #[test]
    fn work_behind_a_nowait_kernel_runs_in_order_on_the_queue_thread() {
        static GATE: AtomicU32 = AtomicU32::new(0);
        let queue = HostQueue::new(1 << 20);
        hold(&queue, &GATE);
        let a = [1u8, 2, 3, 4];
        let mut b = [0u8; 4];
        let mut c = [0u8; 4];
        // SAFETY: the arrays outlive the queue's work, which is synchronised below.
        unsafe {
            queue.copy(b.as_mut_ptr().cast(), a.as_ptr().cast(), 4).unwrap();
            queue.copy(c.as_mut_ptr().cast(), b.as_ptr().cast(), 4).unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
        assert!(!queue.is_idle(), "queued behind the kernel");
        GATE.store(1, Ordering::SeqCst);
        queue.synchronize();
        assert!(queue.is_idle());
        assert_eq!(c, a);
        queue.stop();
    }

    #[test]
    fn events_order_work_across_queues() {
        static FIRST: AtomicU32 = AtomicU32::new(0);
        static SECOND: AtomicU32 = AtomicU32::new(0);
        let first = HostQueue::new(1 << 20);
        let second = HostQueue::new(1 << 20);
        let event = HostEvent::default();
        hold(&first, &FIRST);
        first.record(&event).unwrap();
        hold(&second, &SECOND);
        second.wait(&event).unwrap();
        let src = [7u8; 8];
        let mut dst = [0u8; 8];
        // SAFETY: the arrays outlive the queue's work, which is synchronised below.
        unsafe { second.copy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), 8) }.unwrap();
        SECOND.store(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(20));
        assert!(!first.is_idle());
        assert!(!second.is_idle(), "the copy must wait for the event");
        assert_eq!(dst, [0; 8]);
        FIRST.store(1, Ordering::SeqCst);
        second.synchronize();
        event.synchronize();
        assert_eq!(dst, src);
        first.synchronize();
    }

    #[test]
    fn a_wait_is_not_released_by_a_later_recording() {
        // Recording 1 is queued behind a kernel that waits on a gate; recording 2 happens at once.
        static SLOW: AtomicU32 = AtomicU32::new(0);
        static WAITING: AtomicU32 = AtomicU32::new(0);
        let slow = HostQueue::new(1 << 20);
        let waiting = HostQueue::new(1 << 20);
        let event = HostEvent::default();
        hold(&slow, &SLOW);
        slow.record(&event).unwrap();
        hold(&waiting, &WAITING);
        waiting.wait(&event).unwrap();
        WAITING.store(1, Ordering::SeqCst);
        event.record_now();
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiting.is_idle(), "the wait for recording 1 must outlast recording 2");
        SLOW.store(1, Ordering::SeqCst);
        waiting.synchronize();
        slow.synchronize();
        event.synchronize();
    }

    #[test]
    fn an_event_recorded_with_nothing_pending_is_reached_at_once() {
        let event = HostEvent::default();
        event.synchronize();
        event.record_now();
        event.synchronize();
    }
}
