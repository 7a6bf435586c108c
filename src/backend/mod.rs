//! What each device family must provide. The generic core in `plugin/` owns every rule that is not the
//! driver's — entry tables, launch geometry, the device environment, queues per async info, pinned
//! ranges, the memory manager, RPC wiring and teardown — and calls one hook of [`Backend`] per
//! operation. A backend never sees a libomptarget structure; device numbers are its own,
//! `0..device_count()`.
//!
//! Backend authors implement [`Backend`] in `backend/<name>/` and nothing else; see
//! `docs/internals.md`, "Writing a backend", for the contract in prose.

pub mod amdgpu;
pub mod cuda;
pub mod gpu;
pub mod host;
#[cfg(test)]
pub(crate) mod suite;

use std::ffi::{c_void, CStr};

use crate::util::config::BackendKind;
use crate::util::error::{Error, Result};

/// How many leading bytes of an image `is_compatible_image` is shown: enough for any header check.
pub const IMAGE_HEADER_BYTES: usize = 4096;

/// The allocation kinds of `__tgt_rtl_data_alloc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AllocKind {
    /// Memory only the device needs to see.
    Device,
    /// Pinned host memory the device can access.
    Host,
    /// Memory both sides access at the same address.
    Shared,
    /// Whatever the plugin prefers for mapped data.
    Default,
}

impl AllocKind {
    /// Decodes libomptarget's `TargetAllocTy` value; `None` for values it never sends.
    pub fn from_raw(raw: i32) -> Option<AllocKind> {
        match raw {
            0 => Some(AllocKind::Device),
            1 => Some(AllocKind::Host),
            2 => Some(AllocKind::Shared),
            3 => Some(AllocKind::Default),
            _ => None,
        }
    }
}

/// How a kernel's threads are organised, from the image's `<kernel>_exec_mode` byte. It decides how
/// many threads and teams the core launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecMode {
    /// One main thread per team runs sequential code; the rest wait as workers (value 1).
    Generic,
    /// Every thread runs the region (value 2).
    Spmd,
    /// Generic code that the compiler made SPMD-like (value 3).
    GenericSpmd,
}

impl ExecMode {
    /// Decodes the `_exec_mode` byte; `None` for values LLVM 16 never writes.
    pub fn from_byte(byte: u8) -> Option<ExecMode> {
        match byte {
            1 => Some(ExecMode::Generic),
            2 => Some(ExecMode::Spmd),
            3 => Some(ExecMode::GenericSpmd),
            _ => None,
        }
    }

    /// The name libomptarget prints for the mode.
    pub fn name(self) -> &'static str {
        match self {
            ExecMode::Generic => "Generic",
            ExecMode::Spmd => "SPMD",
            ExecMode::GenericSpmd => "Generic-SPMD",
        }
    }
}

/// One device's limits and defaults, reported once by [`Backend::init_device`]. Launch geometry, the
/// RPC server's lanes and ports, and the memory manager are derived from it in the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Threads that execute in lock step and share an RPC port: 1 on a CPU, the warp (32) or
    /// wavefront (32 or 64) size on a GPU.
    pub lane_size: u32,
    /// Most threads in one team (block, work-group).
    pub max_threads: u32,
    /// Most teams in one launch (grid size).
    pub max_teams: u32,
    /// Threads per team when the program does not say (`GV_Default_WG_Size`).
    pub default_threads: u32,
    /// Upper bound on teams derived from a trip count (`GV_Default_Num_Teams`).
    pub default_teams: u32,
    /// Streaming multiprocessors or compute units (1 for the host).
    pub multiprocessors: u32,
    /// Device memory in bytes (0 when unknown).
    pub memory_bytes: u64,
    /// Mode assumed for kernels whose image has no `_exec_mode` symbol.
    pub default_exec_mode: ExecMode,
    /// Most arguments one kernel launch can pass.
    pub max_kernel_args: usize,
    /// RPC ports when `OMPRPC_RPC_PORTS` does not say: one per unit of parallelism that can wait on a
    /// port at once, so that every waiting device thread finds one.
    pub rpc_ports: u32,
    /// Whether small device allocations are expensive enough to recycle through the core's memory
    /// manager (`LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD`).
    pub recycle_allocations: bool,
    /// Whether `OMP_NUM_TEAMS` and `OMP_TEAMS_THREAD_LIMIT` cap this device's launches. LLVM 16's stock
    /// AMDGPU plugin applies them and then overwrites them with the GPU's own limits when it
    /// initialises the device, so on AMDGPU they have no effect.
    pub team_caps_apply: bool,
    /// Whether kernels can read and write the host's ordinary (pageable) memory at its host address,
    /// which `requires unified_shared_memory` relies on: the host's own memory on a CPU, pageable
    /// memory access (HMM, ATS) on a GPU.
    pub reads_host_memory: bool,
}

/// The launch the core computed for one kernel: 1-D grid and block, dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchGeometry {
    /// Teams (blocks, work-groups).
    pub teams: u32,
    /// Threads per team.
    pub threads: u32,
    /// Dynamic shared (group) memory per team in bytes.
    pub dynamic_shared_bytes: u32,
}

/// A kernel's handle in a loaded module, with what limits it.
pub struct KernelSymbol<K> {
    /// The backend's handle on the kernel.
    pub kernel: K,
    /// Most threads per team this kernel can run with (registers, launch bounds), if it has a limit of
    /// its own below the device's.
    pub max_threads: Option<u32>,
}

/// A global variable of a loaded module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalSymbol {
    /// Its device address.
    pub addr: *mut c_void,
    /// Its size in bytes as the module defines it.
    pub size: usize,
}

/// The driver's own handles on a device, for OpenMP interop (`omp_get_interop_ptr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NativeDevice {
    /// A context handle (CUcontext; NULL where the family has none).
    pub context: *mut c_void,
    /// A device handle (CUdevice as an integer, hsa_agent_t; NULL where the family has none).
    pub device: *mut c_void,
}

/// One device family. Every hook that takes a `device` is called only for `0..device_count()` and, but
/// for `init_device` and image checks, only for an initialised device.
///
/// Queues are ordered streams of asynchronous work. The core takes one from its pool for every
/// `__tgt_async_info` that has work and gives it back when the work is done; the backend only says how
/// to submit to, wait for and query a queue. A backend may run work inline on the caller's thread when
/// that keeps the queue's order (the host backend does, when its queue is idle).
pub trait Backend: Send + Sync + Sized + 'static {
    /// A loaded image.
    type Module: Send + Sync + 'static;
    /// A kernel of a loaded image.
    type Kernel: Send + Sync + 'static;
    /// An ordered stream of asynchronous work (a CUDA stream, an HSA queue, a host worker thread).
    type Queue: Send + Sync + 'static;
    /// A marker in a queue that other queues and the host can wait for.
    type Event: Send + Sync + 'static;

    /// Which family this is.
    fn kind(&self) -> BackendKind;
    /// Number of usable devices.
    fn device_count(&self) -> usize;
    /// One sentence on why there are that many devices, for `LIBOMPTARGET_INFO`.
    fn device_count_reason(&self) -> String;
    /// Whether an image is code this family can run on one of its devices, judged from its first bytes
    /// (`header`, up to [`IMAGE_HEADER_BYTES`]), its size and the architecture libomptarget read from the
    /// offload wrapper (`sm_90`, `gfx90a`), when it has one. Must not fail loudly on foreign images.
    fn is_compatible_image(&self, header: &[u8], image_len: usize, arch: Option<&str>) -> bool;

    /// Prepares `device` and reports its limits. Called again after [`Backend::deinit_device`] when a
    /// later library uses the device.
    fn init_device(&self, device: usize) -> Result<DeviceLimits>;
    /// Releases what `init_device` acquired. Queues, events and modules are destroyed first.
    fn deinit_device(&self, device: usize) -> Result<()>;
    /// Releases what the backend holds beyond its devices (a runtime's own initialisation, which the
    /// stock plugin ends at teardown), once every device is torn down; a later `init_device` (a
    /// library registered again) must acquire it again. By default there is nothing to release.
    fn release(&self) -> Result<()> {
        Ok(())
    }

    /// Loads `image` onto `device`.
    fn load_module(&self, device: usize, image: &[u8]) -> Result<Self::Module>;
    /// Unloads a module; its kernels and globals are not used afterwards.
    fn unload_module(&self, device: usize, module: Self::Module) -> Result<()>;
    /// The kernel `name` of `module`.
    fn kernel(&self, device: usize, module: &Self::Module, name: &CStr) -> Result<KernelSymbol<Self::Kernel>>;
    /// The global `name` of `module`, with its size; [`Error::MissingSymbol`](crate::util::error::Error)
    /// when the module has none of that name (any other error is a failure of the driver).
    fn global(&self, device: usize, module: &Self::Module, name: &CStr) -> Result<GlobalSymbol>;

    /// Whether `[addr, addr + len)` lies inside writable memory of the loaded `module`, when the backend
    /// can tell from the module as loaded (the host device asks the dynamic loader for the library's
    /// writable segments), so that the core writes through a pointer read from an image only into
    /// that image (the RPC client object). `None`, the default, leaves the judgement to the image's
    /// ELF file ([`crate::util::elf::Image::pointee_is_writable`]): GPU drivers do not register local
    /// symbols (ROCr none that is not a kernel, the CUDA driver none for `cuModuleGetGlobal`), and a
    /// client object is local wherever it is hidden, as LLVM libc's is.
    fn module_contains(&self, _device: usize, _module: &Self::Module, _addr: usize, _len: usize) -> Option<bool> {
        None
    }

    /// Allocates `size` (> 0) bytes of `kind` memory. `Host` memory must be addressable by the host at
    /// the returned address and by the device. When the device (or host) has no room, the error must
    /// be [`Error::OutOfMemory`](crate::util::error::Error): the core then frees the small blocks it
    /// caches and tries once more; any other error kind fails the allocation at once.
    fn alloc(&self, device: usize, size: usize, kind: AllocKind) -> Result<*mut c_void>;
    /// Why device code on `device` cannot be given host services at all, if it cannot (a GPU in
    /// confidential-computing mode cannot read the mailbox): its images are then loaded without a
    /// server, and their host calls fail as with none, instead of waiting for ever.
    fn host_services_unavailable(&self, _device: usize) -> Option<String> {
        None
    }

    /// What device code on `device` is told to ring after writing a host call's request (the value
    /// written into an image's `__omprpc_rpc_doorbell`), arranging for that ring to ring `doorbell`,
    /// on which the serving threads sleep; `None` where the device cannot wake the host (its calls
    /// are then looked for on a backoff). Asked once per image with host services.
    fn device_doorbell(
        &self,
        _device: usize,
        _doorbell: &'static crate::util::doorbell::Doorbell,
    ) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Whether `error`, from waiting for `device`'s work, means the device is lost for good (a kernel
    /// faulted: CUDA's sticky errors, an HSA queue error): its host calls can never be completed by
    /// the device, so the core ends the ones in progress and takes its servers out of service.
    fn device_lost(&self, _device: usize, _error: &Error) -> bool {
        false
    }

    /// Whether device code's `malloc` (served by the host) must come from device memory reserved
    /// before kernels that may call the host run, because the driver cannot safely allocate or free
    /// while a kernel runs (true of GPUs, the default); the host device serves it with `alloc`.
    fn reserves_device_heap(&self) -> bool {
        true
    }
    /// Frees memory returned by `alloc` with the same kind.
    ///
    /// # Safety
    /// `ptr` came from `alloc` on `device` with `kind` and was not freed since; nothing uses it any more.
    unsafe fn free(&self, device: usize, ptr: *mut c_void, kind: AllocKind) -> Result<()>;

    /// Copies `size` (> 0) bytes from host memory `src` to device memory `dst`, ordered on `queue`.
    ///
    /// # Safety
    /// Both ranges are valid for `size` bytes until `queue` has been synchronised.
    unsafe fn copy_to_device(
        &self,
        device: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: &Self::Queue,
    ) -> Result<()>;
    /// Copies `size` (> 0) bytes from device memory `src` to host memory `dst`, ordered on `queue`.
    ///
    /// # Safety
    /// As for [`Backend::copy_to_device`].
    unsafe fn copy_to_host(
        &self,
        device: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: &Self::Queue,
    ) -> Result<()>;
    /// Whether [`Backend::copy_between_devices`] works from `src_device` to `dst_device`.
    fn can_exchange(&self, src_device: usize, dst_device: usize) -> bool;
    /// Copies `size` (> 0) bytes from `src` on `src_device` to `dst` on `dst_device`, ordered on
    /// `queue`, a queue of `src_device`. Called only when `can_exchange` says yes.
    ///
    /// # Safety
    /// As for [`Backend::copy_to_device`].
    unsafe fn copy_between_devices(
        &self,
        src_device: usize,
        src: *const c_void,
        dst_device: usize,
        dst: *mut c_void,
        size: usize,
        queue: &Self::Queue,
    ) -> Result<()>;

    /// Starts `kernel` with `args` and the geometry the core computed, ordered on `queue`.
    /// `asynchronous` is libomptarget's `nowait`: the caller will not wait for it soon, so a backend
    /// that could run it inline should not.
    ///
    /// # Safety
    /// `args` are what the kernel expects and the memory they point to stays valid until `queue` has
    /// been synchronised.
    unsafe fn launch(
        &self,
        device: usize,
        kernel: &Self::Kernel,
        args: &[*mut c_void],
        geometry: LaunchGeometry,
        asynchronous: bool,
        queue: &Self::Queue,
    ) -> Result<()>;

    /// Makes a new queue for `device`.
    fn create_queue(&self, device: usize) -> Result<Self::Queue>;
    /// Destroys a queue with no work outstanding.
    fn destroy_queue(&self, device: usize, queue: &Self::Queue) -> Result<()>;
    /// The driver's handle on `queue` (CUstream, hsa_queue_t*), which libomptarget holds in
    /// `__tgt_async_info::Queue` and interop hands to users. Unique among live queues, never NULL, and
    /// fixed for the queue's life.
    fn queue_handle(&self, queue: &Self::Queue) -> *mut c_void;
    /// Blocks until everything submitted to `queue` has finished; returns the first failure among it.
    fn synchronize(&self, device: usize, queue: &Self::Queue) -> Result<()>;
    /// Whether everything submitted to `queue` has finished, without blocking.
    fn is_idle(&self, device: usize, queue: &Self::Queue) -> Result<bool>;

    /// Makes a new event for `device`.
    fn create_event(&self, device: usize) -> Result<Self::Event>;
    /// Destroys an event nobody waits for.
    fn destroy_event(&self, device: usize, event: &Self::Event) -> Result<()>;
    /// The event's handle, as libomptarget holds it. As for [`Backend::queue_handle`].
    fn event_handle(&self, event: &Self::Event) -> *mut c_void;
    /// Marks `event` reached once the work submitted to `queue` so far has finished.
    fn record_event(&self, device: usize, event: &Self::Event, queue: &Self::Queue) -> Result<()>;
    /// Holds back later work on `queue` until `event`'s latest recording is reached.
    fn wait_event(&self, device: usize, event: &Self::Event, queue: &Self::Queue) -> Result<()>;
    /// Blocks the calling thread until `event`'s latest recording is reached.
    fn sync_event(&self, device: usize, event: &Self::Event) -> Result<()>;

    /// Pins `size` bytes of host memory at `ptr` for fast transfers and returns the address the device
    /// uses for them. The core keeps the ranges and their reference counts; this is called once per
    /// range.
    fn lock_host_memory(&self, device: usize, ptr: *mut c_void, size: usize) -> Result<*mut c_void>;
    /// Undoes `lock_host_memory` for the range that starts at `ptr`.
    fn unlock_host_memory(&self, device: usize, ptr: *mut c_void) -> Result<()>;

    /// The driver's handles on `device`, for interop.
    fn native_device(&self, device: usize) -> NativeDevice;
    /// Name-value lines describing `device` for `llvm-omp-device-info`.
    fn describe_device(&self, device: usize) -> Vec<(&'static str, String)>;
}
