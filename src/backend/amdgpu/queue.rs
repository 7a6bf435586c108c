//! Ordered work on an AMD GPU, as LLVM 16's stock AMDGPU plugin orders it: signals from a per-device
//! pool (1 while pending, 0 when done), HSA queues that streams share round robin, AQL packets written
//! slot by slot with the header stored last, and streams that chain each operation to the previous
//! one's signal (a barrier-AND packet before a kernel, a dependency of an async copy). Unlike the
//! stock plugin, a wait never blocks for ever: it looks at the device's health between waits, so a
//! queue error or a memory fault fails the operation instead of hanging or aborting the process.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::runtime::Api;
use super::sys::{
    self, fence_scope, packet_header, packet_type, BarrierAndPacket, HsaQueue, HsaSignal, HsaSignalValue, HsaStatus,
};
use crate::util::error::{Error, Result, HSA};
use crate::util::sync::lock;

/// How long one wait blocks before the device's health is looked at again.
const WAIT_SLICE_NS: u64 = 50_000_000;

/// What went wrong on a device, set by the runtime's callbacks (queue errors, memory faults), after
/// which every wait on the device fails with it.
#[derive(Default)]
pub struct Health {
    /// Whether `failure` holds one: what every launch and copy looks at, without a lock.
    failed: AtomicBool,
    failure: Mutex<Option<Error>>,
}

impl Health {
    /// Records the first failure.
    pub fn fail(&self, error: Error) {
        lock(&self.failure).get_or_insert(error);
        self.failed.store(true, Ordering::Release);
    }

    /// Forgets the recorded failure (the device is initialised again, with new queues).
    pub fn reset(&self) {
        let mut failure = lock(&self.failure);
        self.failed.store(false, Ordering::Release);
        failure.take();
    }

    /// The recorded failure, if any.
    pub fn check(&self) -> Result<()> {
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        match &*lock(&self.failure) {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

/// Called by the runtime when a queue fails (a kernel aborted, a bad packet).
///
/// # Safety
/// `data` is the [`Health`] the queue was created with, alive for as long as the queue.
pub unsafe extern "C" fn on_queue_error(status: HsaStatus, _queue: *mut HsaQueue, data: *mut c_void) {
    // SAFETY: `data` is the `Health` the queue was created with, which outlives the queue.
    let health = unsafe { &*data.cast::<Health>() };
    health.fail(Error::Driver {
        driver: HSA,
        call: "a kernel or packet on the device's queue",
        code: i64::from(status),
        name: sys::status_name(status)
            .unwrap_or("an unknown hsa_status_t")
            .to_string(),
    });
}

/// The signals of one device, each taken for an operation and free again when nothing refers to it
/// any more. A signal is handed out as a [`PooledSignal`], whose last share puts it back on the
/// pool's free list, so that taking one is O(1) and allocates nothing on the host (a launch must
/// not): the pool holds every signal it made, and its free list has room for all of them.
pub struct SignalPool {
    api: Api,
    /// The device's health, which waits on its signals watch (a wait from another device too).
    health: Arc<Health>,
    all: Mutex<Signals>,
}

/// The pool's signals, and the indexes of those nothing else refers to.
struct Signals {
    signals: Vec<Arc<Signal>>,
    free: Vec<usize>,
}

impl SignalPool {
    /// A pool with `initial` signals made up front. Those made before a failure are destroyed.
    pub fn new(api: Api, initial: usize, health: &Arc<Health>) -> Result<Arc<SignalPool>> {
        let pool = Arc::new(SignalPool {
            api,
            health: Arc::clone(health),
            all: Mutex::new(Signals {
                signals: Vec::with_capacity(initial),
                free: Vec::with_capacity(initial),
            }),
        });
        for index in 0..initial {
            match pool.make(0, index) {
                Ok(signal) => {
                    let mut all = lock(&pool.all);
                    all.free.push(index);
                    all.signals.push(signal);
                }
                Err(e) => {
                    let _ = pool.destroy_all();
                    return Err(e);
                }
            }
        }
        Ok(pool)
    }

    /// A new signal of this pool, to be its `index`th.
    fn make(self: &Arc<Self>, initial: HsaSignalValue, index: usize) -> Result<Arc<Signal>> {
        Ok(Arc::new(Signal {
            raw: self.api.signal_create(initial)?,
            api: self.api,
            health: Arc::clone(&self.health),
            pool: Arc::downgrade(self),
            index,
        }))
    }

    /// The runtime the signals belong to.
    pub fn api(&self) -> Api {
        self.api
    }

    /// A signal set to 1 (pending): a free one, else a new one (the pool grows).
    pub fn take(self: &Arc<Self>) -> Result<PooledSignal> {
        let mut all = lock(&self.all);
        // Under the lock, a free index names a signal only the pool refers to (see PooledSignal's drop).
        let signal = match all.free.pop() {
            Some(index) => Arc::clone(&all.signals[index]),
            None => {
                let signal = self.make(1, all.signals.len())?;
                all.signals.push(Arc::clone(&signal));
                // Room for every signal on the free list: giving one back never allocates.
                let room = all.signals.len();
                all.free.reserve(room);
                signal
            }
        };
        drop(all);
        self.api.signal_store(signal.raw, 1);
        Ok(PooledSignal(Some(signal)))
    }

    /// Destroys every signal nothing refers to any more; the first failure is reported, the rest
    /// still destroyed.
    pub fn destroy_all(&self) -> Result<()> {
        let signals = {
            let mut all = lock(&self.all);
            all.free.clear();
            std::mem::take(&mut all.signals)
        };
        let mut result = Ok(());
        for signal in signals {
            if let Some(signal) = Arc::into_inner(signal) {
                // SAFETY: nothing refers to the signal any more (this was its last reference), so no
                // packet or wait uses it.
                let destroyed = unsafe { self.api.signal_destroy(signal.raw) };
                result = result.and(destroyed);
            }
        }
        result
    }
}

/// A signal taken from a [`SignalPool`], shared (cloned) by everything that names or waits on it;
/// when the last share goes, the signal goes back on the pool's free list.
pub struct PooledSignal(Option<Arc<Signal>>);

impl Clone for PooledSignal {
    fn clone(&self) -> PooledSignal {
        PooledSignal(self.0.clone())
    }
}

impl std::ops::Deref for PooledSignal {
    type Target = Signal;
    fn deref(&self) -> &Signal {
        self.0.as_ref().expect("a pooled signal is only emptied by its drop")
    }
}

impl Drop for PooledSignal {
    /// Lets go of this share under the pool's lock, so that of shares dropped at once exactly one
    /// sees that only the pool is left; it puts the signal on the free list (unless the pool
    /// destroyed its signals meanwhile).
    fn drop(&mut self) {
        let Some(signal) = self.0.take() else { return };
        let Some(pool) = signal.pool.upgrade() else { return };
        let mut all = lock(&pool.all);
        let index = signal.index;
        let last_share = Arc::strong_count(&signal) == 2;
        let still_pooled = all.signals.get(index).is_some_and(|s| Arc::ptr_eq(s, &signal));
        drop(signal);
        if last_share && still_pooled {
            all.free.push(index);
        }
    }
}

/// A signal of a device's pool (see [`SignalPool`]).
pub struct Signal {
    raw: HsaSignal,
    api: Api,
    /// The health of the device whose operation it marks.
    health: Arc<Health>,
    /// The pool it goes back to, and its place there.
    pool: std::sync::Weak<SignalPool>,
    index: usize,
}

impl Signal {
    /// The runtime's handle.
    pub fn raw(&self) -> HsaSignal {
        self.raw
    }

    /// Whether the operation it marks has finished.
    pub fn is_done(&self) -> bool {
        self.api.signal_load(self.raw) == 0
    }

    /// Waits until the operation it marks has finished, or its device or the waiting one (`health`)
    /// has failed.
    pub fn wait(&self, health: &Health) -> Result<()> {
        loop {
            if self.api.signal_wait_zero(self.raw, WAIT_SLICE_NS) == 0 {
                return Ok(());
            }
            self.health.check()?;
            health.check()?;
        }
    }
}

/// One HSA queue of a device; streams share it, so packet slots are reserved under a lock.
pub struct AqlQueue {
    api: Api,
    /// The runtime's queue; null once destroyed.
    raw: AtomicPtr<HsaQueue>,
    slots: Mutex<()>,
    /// What the queue's error callback writes to, kept alive as long as the queue.
    _health: Arc<Health>,
}

// SAFETY: an HSA queue may be used from any thread; slot reservation is serialised by `slots`.
unsafe impl Send for AqlQueue {}
// SAFETY: as above.
unsafe impl Sync for AqlQueue {}

/// The header of an AQL packet of `kind`, with system-scope acquire and release fences and no
/// barrier bit, as the stock plugin writes it (0x1402 for a dispatch, 0x1403 for a barrier-AND).
pub const fn packet_header(kind: u16) -> u16 {
    kind << packet_header::TYPE
        | fence_scope::SYSTEM << packet_header::ACQUIRE_FENCE_SCOPE
        | fence_scope::SYSTEM << packet_header::RELEASE_FENCE_SCOPE
}

impl AqlQueue {
    /// A queue of `size` packets (a power of two within the agent's limits:
    /// `AgentFacts::queue_size`) on `agent`, whose errors go to `health`.
    pub fn create(api: Api, agent: sys::HsaAgent, size: u32, health: &Arc<Health>) -> Result<AqlQueue> {
        // SAFETY: `on_queue_error` reads a `Health`; the queue holds a reference to it until after it
        // is destroyed.
        let raw = unsafe { api.queue_create(agent, size, on_queue_error, Arc::as_ptr(health).cast_mut().cast()) }?;
        Ok(AqlQueue {
            api,
            raw: AtomicPtr::new(raw),
            slots: Mutex::new(()),
            _health: Arc::clone(health),
        })
    }

    /// Destroys the queue (once; later calls do nothing); nothing may be in flight on it, and later
    /// packets are refused.
    pub fn destroy(&self) -> Result<()> {
        let _slots = lock(&self.slots);
        let raw = self.raw.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if raw.is_null() {
            return Ok(());
        }
        // SAFETY: `raw` was created by `create`; the swap hands it to one caller only, and no packet is
        // being written (`slots` is held).
        unsafe { self.api.queue_destroy(raw) }
    }

    /// Writes one packet: `body` fills its 64 bytes but the first 4, then the header (and `setup`)
    /// are stored with release ordering, which hands the packet to the device, and the doorbell rung.
    fn push(&self, header: u16, setup: u16, body: impl FnOnce(*mut u8), health: &Health) -> Result<()> {
        let slots = lock(&self.slots);
        self.push_locked(&slots, header, setup, body, health)
    }

    /// [`AqlQueue::push`] with the slot lock already held (`_slots`), so that packets pushed under one
    /// hold of it are consecutive in the ring.
    fn push_locked(
        &self,
        _slots: &std::sync::MutexGuard<'_, ()>,
        header: u16,
        setup: u16,
        body: impl FnOnce(*mut u8),
        health: &Health,
    ) -> Result<()> {
        let raw = self.raw.load(Ordering::Acquire);
        if raw.is_null() {
            return Err(crate::util::error::Error::Unsupported(
                "the GPU's queue was destroyed (the device was released)".into(),
            ));
        }
        // SAFETY: `raw` is live: it is only destroyed with `slots` held.
        let (size, base, doorbell) = unsafe { ((*raw).size as u64, (*raw).base_address, (*raw).doorbell_signal) };
        // SAFETY: as above.
        let index = unsafe { self.api.queue_reserve(raw) };
        // Wait for the device to free the slot (the ring is full while index - read >= size).
        loop {
            // SAFETY: as above.
            let read = unsafe { self.api.queue_read_index(raw) };
            if index - read < size {
                break;
            }
            health.check()?;
            std::thread::yield_now();
        }
        // SAFETY: the slot `index % size` of the ring (64-byte packets) is reserved for this packet
        // and free; the header word is written last, atomically, as the AQL protocol requires.
        unsafe {
            let slot = base.cast::<u8>().add(((index % size) * 64) as usize);
            std::ptr::write_bytes(slot.add(4), 0, 60);
            body(slot);
            AtomicU32::from_ptr(slot.cast::<u32>())
                .store(u32::from(header) | u32::from(setup) << 16, Ordering::Release);
        }
        self.api.ring_doorbell(doorbell, index);
        Ok(())
    }

    /// Queues a kernel dispatch on a 1-D grid, behind a barrier on `after` when there is earlier work
    /// to wait for: both under one hold of the slot lock, as the stock plugin pushes them, so that no
    /// other stream's packet lands between them and waits behind a barrier that is not its own.
    pub fn dispatch(
        &self,
        after: Option<HsaSignal>,
        launch: &Dispatch,
        completion: HsaSignal,
        health: &Health,
    ) -> Result<()> {
        let slots = lock(&self.slots);
        if let Some(previous) = after {
            self.push_locked(
                &slots,
                packet_header(packet_type::BARRIER_AND),
                0,
                |slot| Self::write_barrier(slot, &[previous], HsaSignal::default()),
                health,
            )?;
        }
        self.push_locked(
            &slots,
            packet_header(packet_type::KERNEL_DISPATCH),
            1 << sys::KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS,
            |slot| {
                let packet = slot.cast::<sys::KernelDispatchPacket>();
                // SAFETY: `slot` is a reserved, 64-byte aligned packet slot (see `push`).
                unsafe {
                    (*packet).workgroup_size_x = launch.threads as u16;
                    (*packet).workgroup_size_y = 1;
                    (*packet).workgroup_size_z = 1;
                    (*packet).grid_size_x = launch.teams.saturating_mul(launch.threads);
                    (*packet).grid_size_y = 1;
                    (*packet).grid_size_z = 1;
                    (*packet).private_segment_size = launch.private_segment_size;
                    (*packet).group_segment_size = launch.group_segment_size;
                    (*packet).kernel_object = launch.kernel_object;
                    (*packet).kernarg_address = launch.kernargs;
                    (*packet).completion_signal = completion;
                }
            },
            health,
        )
    }

    /// Queues a barrier that holds back later packets until every signal of `deps` (at most 5) is 0.
    pub fn barrier(&self, deps: &[HsaSignal], completion: HsaSignal, health: &Health) -> Result<()> {
        self.push(
            packet_header(packet_type::BARRIER_AND),
            0,
            |slot| Self::write_barrier(slot, deps, completion),
            health,
        )
    }

    /// Fills a barrier-AND packet's body in a reserved slot (see [`AqlQueue::push`]).
    fn write_barrier(slot: *mut u8, deps: &[HsaSignal], completion: HsaSignal) {
        let packet = slot.cast::<BarrierAndPacket>();
        // SAFETY: `slot` is a reserved packet slot (see `push`).
        unsafe {
            for (dep, signal) in (*packet).dep_signal.iter_mut().zip(deps) {
                *dep = *signal;
            }
            (*packet).completion_signal = completion;
        }
    }
}

/// A kernel launch as the dispatch packet carries it.
pub struct Dispatch {
    /// The kernel descriptor's address.
    pub kernel_object: u64,
    /// The kernarg buffer (device-accessible host memory from the kernarg pool).
    pub kernargs: *mut c_void,
    /// Work-groups.
    pub teams: u32,
    /// Work-items per work-group.
    pub threads: u32,
    /// Static plus dynamic group (LDS) memory per work-group.
    pub group_segment_size: u32,
    /// Scratch per work-item.
    pub private_segment_size: u32,
}
