//! One device's records in the core: its state, limits, loaded images and kernels, allocations, queue
//! and event pools, pinned ranges, memory manager and RPC server.

use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};

use super::launch::KernelLimits;
use super::memory_manager::MemoryManager;
use super::pinned::PinnedRanges;
use super::pool::{Item, Pool, Pooled};
use crate::backend::{AllocKind, Backend, DeviceLimits, ExecMode};
use crate::rpc::{HostServices, ImageServer, TracedKernel};
use crate::util::address_map::AddressMap;
use crate::util::error::{Error, Result};
use crate::util::sync::read;

/// How long the end of a queue's host-calling kernels waits for calls they left behind that another
/// thread is serving (a handler that hangs must not hang the program's synchronisation).
const LAST_CALLS_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// A backend queue with what the core keeps for it.
pub struct QueueSlot<B: Backend> {
    /// The backend's queue.
    pub queue: B::Queue,
    handle: usize,
    /// Kernels that may call the host, launched on this queue since it was last finished; the RPC
    /// service polls while any are in flight.
    pub rpc_kernels: AtomicUsize,
    /// Those kernels' names and launch times, kept only while a trace is written (`OMPRPC_TRACE`), so
    /// that they show as spans from launch to the end the host saw.
    traced_kernels: std::sync::Mutex<Vec<TracedKernel>>,
    /// The entry address of the last kernel launched on this queue since it was last finished (0 for
    /// none), so that a failure of the queue's work names the kernel a user looks at first.
    last_kernel: AtomicUsize,
}

impl<B: Backend> QueueSlot<B> {
    /// Wraps a new queue of `backend`.
    pub fn new(backend: &B, queue: B::Queue) -> QueueSlot<B> {
        QueueSlot {
            handle: backend.queue_handle(&queue) as usize,
            queue,
            rpc_kernels: AtomicUsize::new(0),
            traced_kernels: std::sync::Mutex::new(Vec::new()),
            last_kernel: AtomicUsize::new(0),
        }
    }

    /// Notes the kernel at `entry` as the last launched on this queue.
    pub fn note_launch(&self, entry: usize) {
        // Only the queue's owner launches on it: a plain store, no read-modify-write.
        self.last_kernel.store(entry, Ordering::Relaxed);
    }

    /// `error`, from waiting for this queue's work, with the name of the last kernel launched on it
    /// (when one was and is still loaded on `device`), which is then forgotten.
    pub fn name_last_kernel(&self, device: &Device<B>, error: Error) -> Error {
        match self.last_kernel.swap(0, Ordering::Relaxed) {
            0 => error,
            entry => match device.kernel(entry) {
                Ok(kernel) => error.context(format!(
                    "the queue's work (its last kernel {})",
                    kernel.name.to_string_lossy()
                )),
                Err(_) => error,
            },
        }
    }

    /// The queue's work is over: its last kernel is forgotten (a plain load first, so that finishing
    /// a queue that launched nothing writes nothing).
    pub fn forget_last_kernel(&self) {
        if self.last_kernel.load(Ordering::Relaxed) != 0 {
            self.last_kernel.store(0, Ordering::Relaxed);
        }
    }

    /// A kernel that may call the host was launched on this queue of `device`: counts it here and in
    /// the device's count, and notes it for the trace when one is written.
    pub fn start_rpc_kernel(&self, device: &Device<B>, name: &std::ffi::CStr) {
        self.rpc_kernels.fetch_add(1, Ordering::AcqRel);
        device.rpc_kernels_in_flight.fetch_add(1, Ordering::AcqRel);
        if let Some(launched) = HostServices::launch_time_if_tracing() {
            crate::util::sync::lock(&self.traced_kernels).push((name.to_string_lossy().into_owned(), launched));
        }
    }

    /// The queue's kernels that may call the host are over (waited for, or abandoned at teardown):
    /// they stop keeping the serving thread awake, and leave their device's count.
    pub fn end_rpc_kernels(&self, device: &Device<B>) {
        // Only this queue's owner launches on it, so a plain load finds the count without an atomic
        // read-modify-write on every synchronisation of a program that never calls the host.
        if self.rpc_kernels.load(Ordering::Acquire) == 0 {
            return;
        }
        let kernels = self.rpc_kernels.swap(0, Ordering::AcqRel);
        // A kernel does not wait for its one-way calls (free, say): serve what is left before the
        // kernel is reported done, so that their effects and messages precede the program's next
        // statement (a call another thread is serving is waited for, a bounded time). Only this
        // device's servers: another device's slow call must not hold up this synchronisation.
        HostServices::serve_what_is_waiting(device.index, LAST_CALLS_WAIT);
        device.rpc_kernels_in_flight.fetch_sub(kernels, Ordering::AcqRel);
        HostServices::kernels_finished(kernels);
        HostServices::trace_kernels(device.index, &self.traced_kernels);
    }
}

impl<B: Backend> Pooled for QueueSlot<B> {
    fn handle(&self) -> usize {
        self.handle
    }
}

/// A backend event with its handle.
pub struct EventSlot<B: Backend> {
    /// The backend's event.
    pub event: B::Event,
    handle: usize,
}

impl<B: Backend> EventSlot<B> {
    /// Wraps a new event of `backend`.
    pub fn new(backend: &B, event: B::Event) -> EventSlot<B> {
        EventSlot {
            handle: backend.event_handle(&event) as usize,
            event,
        }
    }
}

impl<B: Backend> Pooled for EventSlot<B> {
    fn handle(&self) -> usize {
        self.handle
    }
}

/// A kernel as libomptarget sees it: the `addr` of its table entry points here.
pub struct KernelRecord<B: Backend> {
    /// The entry's symbol name, for messages.
    pub name: CString,
    /// The backend's handle on the kernel.
    pub kernel: B::Kernel,
    /// From the image's `<name>_exec_mode`.
    pub mode: ExecMode,
    /// What bounds its launches.
    pub limits: KernelLimits,
}

/// An image loaded on a device.
pub struct LoadedImage<B: Backend> {
    /// `ImageStart` of the image, to recognise a second `load_binary` of it and to find the images of
    /// a library being unregistered.
    pub image_start: usize,
    /// Device addresses of the image's entries, in the host table's order.
    pub addresses: Vec<usize>,
    /// Its kernels (leaked: libomptarget holds their addresses; a stale one is refused by the kernel
    /// map, never dereferenced).
    pub kernels: Vec<&'static KernelRecord<B>>,
    /// The backend's module.
    pub module: B::Module,
    /// Its host services (a server of its own), if it asked for them.
    pub server: Option<ImageServer>,
    /// Whether it has a kernel of global destructors to run before it is unloaded.
    pub destructors: bool,
}

/// What the core remembers of an allocation.
#[derive(Clone, Copy)]
pub struct Allocation {
    /// As allocated.
    pub kind: AllocKind,
    /// Bytes asked for.
    pub size: usize,
    /// Handed out by the memory manager (goes back to it when freed).
    pub recycled: bool,
}

/// Lifecycle of a device.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceState {
    /// `init_device` has not been called.
    Uninitialized = 0,
    /// Usable.
    Ready = 1,
    /// Torn down by `deinit_plugin`; initialised again on next use, since libomptarget will not call
    /// `init_device` a second time.
    TornDown = 2,
}

/// One device's records.
pub struct Device<B: Backend> {
    /// The backend's number for it.
    pub index: usize,
    state: AtomicU8,
    /// Serialises initialisation and teardown.
    pub lifecycle: Mutex<()>,
    /// Set by the first successful initialisation.
    pub limits: OnceLock<DeviceLimits>,
    /// Loaded images; also serialises loads and unloads.
    pub images: Mutex<Vec<LoadedImage<B>>>,
    /// Kernels by the address libomptarget holds for them.
    pub kernels: RwLock<AddressMap<&'static KernelRecord<B>>>,
    /// Live allocations by address.
    pub allocations: Mutex<AddressMap<Allocation>>,
    /// Queues, by native handle.
    pub queues: Pool<QueueSlot<B>>,
    /// Events, by native handle.
    pub events: Pool<EventSlot<B>>,
    /// Pinned host ranges.
    pub pinned: PinnedRanges,
    /// Recycles small device allocations, when the backend asks for it.
    pub memory_manager: OnceLock<MemoryManager>,
    /// What the device's code gets from `malloc`, shared by the servers of all its images; made by
    /// the first image that asks for host services.
    pub rpc_heap: Mutex<Option<crate::rpc::DeviceHeap>>,
    /// Kernels that may call the host in flight on the device (all its queues).
    pub rpc_kernels_in_flight: AtomicUsize,
    /// Held shared by a launch of a kernel that may call the host until the kernel is counted in
    /// `rpc_kernels_in_flight`, and exclusively while the device heap reserves more memory.
    pub rpc_launch_gate: RwLock<()>,
    /// Loaded images with a server of their own; read on every launch without a lock.
    pub rpc_images: AtomicUsize,
}

impl<B: Backend> Device<B> {
    /// The records of backend device `index`, before initialisation.
    pub fn new(index: usize) -> Device<B> {
        Device {
            index,
            state: AtomicU8::new(DeviceState::Uninitialized as u8),
            lifecycle: Mutex::new(()),
            limits: OnceLock::new(),
            images: Mutex::new(Vec::new()),
            kernels: RwLock::new(AddressMap::default()),
            allocations: Mutex::new(AddressMap::default()),
            queues: Pool::new("queue"),
            events: Pool::new("event"),
            pinned: PinnedRanges::default(),
            memory_manager: OnceLock::new(),
            rpc_heap: Mutex::new(None),
            rpc_kernels_in_flight: AtomicUsize::new(0),
            rpc_launch_gate: RwLock::new(()),
            rpc_images: AtomicUsize::new(0),
        }
    }

    /// The device's lifecycle state.
    pub fn state(&self) -> DeviceState {
        match self.state.load(Ordering::Acquire) {
            1 => DeviceState::Ready,
            2 => DeviceState::TornDown,
            _ => DeviceState::Uninitialized,
        }
    }

    /// Moves the device to `state`.
    pub fn set_state(&self, state: DeviceState) {
        self.state.store(state as u8, Ordering::Release);
    }

    /// The limits reported at initialisation.
    pub fn limits(&self) -> Result<&DeviceLimits> {
        match self.limits.get() {
            Some(limits) => Ok(limits),
            None => Err(Error::DeviceNotInitialized(self.index as i32)),
        }
    }

    /// Whether kernels of this device may call the host.
    pub fn uses_rpc(&self) -> bool {
        self.rpc_images.load(Ordering::Acquire) > 0
    }

    /// The kernel whose table entry address is `addr`.
    pub fn kernel(&self, addr: usize) -> Result<&'static KernelRecord<B>> {
        match read(&self.kernels).get(&addr) {
            Some(&kernel) => Ok(kernel),
            None => Err(Error::UnknownHandle {
                what: "kernel entry",
                addr,
            }),
        }
    }

    /// The queue behind a handle libomptarget passed.
    pub fn queue(&self, handle: *mut c_void) -> Result<Item<QueueSlot<B>>> {
        self.queues.get(handle as usize)
    }
}
