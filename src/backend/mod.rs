//! What each device family must provide. The generic core in `plugin/` owns all bookkeeping and calls
//! one hook per operation; a backend never sees a libomptarget structure.

pub mod amdgpu;
pub mod cuda;
pub mod host;

use std::any::Any;
use std::ffi::{c_void, CStr};
use std::sync::Arc;

use crate::plugin::config::{BackendKind, Config};
use crate::plugin::error::Result;
use crate::rpc::DeviceMemory;

/// How many leading bytes of an image `is_compatible_image` is shown.
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

/// Teams and threads asked for by one launch, with the loop trip count when there is one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchBounds {
    /// Teams requested (`0` = unspecified).
    pub teams: u32,
    /// Threads per team requested (`0` = unspecified).
    pub threads: u32,
    /// Trip count of the distributed loop, 0 when unknown.
    pub tripcount: u64,
}

/// A loaded device image, from which kernels and globals are looked up by name.
pub trait Module: Send + Sync {
    /// The device-side handle of the kernel `name`.
    fn function(&self, name: &CStr) -> Result<*mut c_void>;
    /// The device address of the global `name`.
    fn global(&self, name: &CStr) -> Result<*mut c_void>;
}

/// An ordered stream of asynchronous device work (a CUDA stream, an HSA queue, a host worker thread).
pub trait Queue: Send + Sync {
    /// Blocks until everything submitted so far has finished; returns the first failure among it.
    fn synchronize(&self) -> Result<()>;
    /// Whether everything submitted so far has finished, without blocking.
    fn is_idle(&self) -> Result<bool>;
    /// Marks `event` as reached once the work submitted so far has finished.
    fn record(&self, event: &dyn Event) -> Result<()>;
    /// Holds back later work on this queue until `event`'s latest recording is reached.
    fn wait(&self, event: &dyn Event) -> Result<()>;
    /// For the backend's own downcasts.
    fn as_any(&self) -> &dyn Any;
}

/// A marker in a queue that other queues and the host can wait for.
pub trait Event: Send + Sync {
    /// Marks the event reached now (recorded with no work outstanding).
    fn record_now(&self) -> Result<()>;
    /// Blocks the calling thread until the latest recording is reached.
    fn synchronize(&self) -> Result<()>;
    /// For the backend's own downcasts.
    fn as_any(&self) -> &dyn Any;
}

/// One device family. Device numbers are the backend's own, `0..device_count()`.
pub trait Backend: Send + Sync {
    /// Which family this is.
    fn kind(&self) -> BackendKind;
    /// Number of usable devices.
    fn device_count(&self) -> usize;
    /// One sentence on why there are that many devices, for `LIBOMPTARGET_INFO`.
    fn device_count_reason(&self) -> String;
    /// Whether an image is code this backend can load, judged from its first bytes (`header`, up to
    /// [`IMAGE_HEADER_BYTES`]) and its size; must not fail loudly on foreign images.
    fn is_compatible_image(&self, header: &[u8], image_len: usize) -> bool;
    /// Prepares a device for use.
    fn init_device(&self, device: usize) -> Result<()>;
    /// Loads `image` onto `device`.
    fn load_module(&self, device: usize, image: &[u8]) -> Result<Box<dyn Module>>;
    /// Allocates `size` (> 0) bytes of `kind` memory.
    fn alloc(&self, device: usize, size: usize, kind: AllocKind) -> Result<*mut c_void>;
    /// Frees memory returned by `alloc` with the same kind.
    ///
    /// # Safety
    /// `ptr` came from `alloc` on `device` and was not freed since.
    unsafe fn free(&self, device: usize, ptr: *mut c_void, kind: AllocKind) -> Result<()>;
    /// Copies `size` bytes, on `queue` when one is given, else before returning.
    ///
    /// # Safety
    /// `dst` and `src` are valid for `size` bytes until the copy has completed (for a queued copy,
    /// until the queue is synchronised).
    unsafe fn copy(
        &self,
        device: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: Option<&dyn Queue>,
    ) -> Result<()>;
    /// Starts `function` with `args`, on `queue` when one is given, else to completion before returning.
    ///
    /// # Safety
    /// `function` is a kernel handle from a module of `device`, and `args` are what it expects, valid
    /// until the launch has completed.
    unsafe fn launch(
        &self,
        device: usize,
        function: *mut c_void,
        args: &[*mut c_void],
        bounds: LaunchBounds,
        queue: Option<&dyn Queue>,
    ) -> Result<()>;
    /// Makes a new queue for `device`.
    fn create_queue(&self, device: usize) -> Result<Box<dyn Queue>>;
    /// Makes a new event for `device`.
    fn create_event(&self, device: usize) -> Result<Box<dyn Event>>;
    /// Makes host memory ready for fast transfers and returns the address the device uses for it.
    fn lock_host_memory(&self, ptr: *mut c_void, size: usize) -> Result<*mut c_void>;
    /// Undoes `lock_host_memory`.
    fn unlock_host_memory(&self, ptr: *mut c_void) -> Result<()>;
    /// Lanes per RPC port: 1 for a CPU, the warp or wavefront size for a GPU.
    fn rpc_lane_size(&self) -> u32;
    /// RPC ports for `device` when `OMPRPC_RPC_PORTS` does not say: one per unit of parallelism that
    /// can wait on a port at once, so that every waiting device thread finds one.
    fn rpc_default_ports(&self, device: usize) -> u32;
    /// The memory `device`'s RPC server allocates from.
    fn rpc_memory(&self, device: usize) -> Result<Arc<dyn DeviceMemory>>;
    /// Name-value lines describing `device` for `llvm-omp-device-info`.
    fn describe_device(&self, device: usize) -> Vec<(&'static str, String)>;
}

/// Opens the backend `kind`; an error means zero devices, with the error as the reason.
pub fn open(kind: BackendKind, config: &Config) -> Result<Box<dyn Backend>> {
    match kind {
        BackendKind::Host => Ok(Box::new(host::HostBackend::new(
            config.host_devices,
            config.kernel_stack_bytes,
        ))),
        BackendKind::Cuda => cuda::open(),
        BackendKind::Amdgpu => amdgpu::open(),
    }
}
