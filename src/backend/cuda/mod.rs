//! NVIDIA GPUs through the CUDA driver API, loaded at run time (`libcuda.so.1`, then `libcuda.so`, or
//! `OMPRPC_CUDA_LIBRARY`), so that the plugin loads and reports zero devices on a machine without it.
//!
//! Layers: [`sys`] (the driver's types and entry points), [`result`] (checked calls), [`safe`] (owned
//! contexts, modules, streams and events); [`cubin`] decides which cubins a device runs. The backend
//! below maps the core's hooks onto them one to one, the way LLVM 16's stock CUDA plugin does: one
//! retained primary context per device, made current on the calling thread before each call;
//! non-blocking streams; kernels launched on a 1-D grid.

pub mod cubin;
#[cfg(test)]
pub(crate) mod harness;
mod nvml;
pub mod result;
pub mod safe;
#[cfg(test)]
pub(crate) mod simulated;
pub mod sys;
#[cfg(test)]
mod tests;

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use self::cubin::{Capability, NvidiaImage};
use self::result::Api;
use self::safe::{Event, Module, PrimaryContext, Stream};
use self::sys::{attribute, CuDevice, CuDevicePtr, Driver};
use super::gpu::library::open_driver;
use super::gpu::peers::PeerAccess;
use super::gpu::pinned::PinnedByDevice;
use super::{
    gpu, AllocKind, Backend, DeviceLimits, ExecMode, GlobalSymbol, KernelSymbol, LaunchGeometry, NativeDevice,
};
use crate::util::config::{BackendKind, Config};
use crate::util::error::{Context, Error, Result};
use crate::util::log;
use crate::util::sync::lock;

/// The driver library names tried in turn, as the stock plugin (which opens `libcuda.so`) and the
/// driver's own packaging (which always has `.so.1`) name it.
pub const DRIVER_NAMES: [&str; 2] = ["libcuda.so.1", "libcuda.so"];

/// Most arguments one launch passes: the driver's 4 KiB parameter space holds 512 pointers. The
/// pointers to them are built on the stack, so a launch allocates nothing.
pub const MAX_KERNEL_ARGS: usize = 512;

/// Threads per block when the program does not say (LLVM 16's `GV_Default_WG_Size` for NVPTX).
pub const DEFAULT_THREADS: u32 = 128;
/// Cap on blocks derived from a trip count (LLVM 16's `GV_Default_Num_Teams` for NVPTX).
pub const DEFAULT_TEAMS: u32 = 3200;

/// One CUDA device as the backend keeps it.
struct CudaDevice {
    /// The driver's device.
    device: CuDevice,
    /// Its compute capability, read at open for image checks.
    capability: Capability,
    /// The retained primary context while the device is initialised.
    context: Mutex<Option<PrimaryContext>>,
    /// The context's handle (NULL when not initialised), read on every call without a lock.
    current: AtomicPtr<c_void>,
    /// Peer access towards each other device.
    peers: PeerAccess,
    /// Host ranges this device pinned itself.
    pinned: PinnedByDevice,
    /// Whether kernels reach pinned memory at its host address (read when the device is prepared).
    uses_host_pointers: AtomicBool,
    /// Most shared memory a block may have once a kernel opts in (0 until a launch first needs it).
    shared_opt_in_bytes: AtomicU32,
}

/// What releasing something came to when the driver has begun shutting down (at exit, before
/// libomptarget tears the plugin down): the driver frees it all itself, and the stock plugin says
/// nothing, so neither does this one. Any other failure is kept.
fn released(result: Result<()>) -> Result<()> {
    match result {
        Err(e) if e.driver_code() == Some(i64::from(sys::CUDA_ERROR_DEINITIALIZED)) => Ok(()),
        other => other,
    }
}

/// The CUDA backend.
pub struct CudaBackend {
    api: Api,
    devices: Vec<CudaDevice>,
    config: Config,
    /// Why there are as many devices as there are, for `LIBOMPTARGET_INFO`.
    reason: String,
    /// Whether the GPUs run in confidential-computing mode (see `nvml`), where host services cannot
    /// work: asked of NVML when an image first wants host services.
    confidential_computing: OnceLock<bool>,
}

/// A kernel of a loaded module.
pub struct CudaKernel {
    function: AtomicPtr<c_void>,
    /// Its name, for the error that refuses a launch.
    name: std::ffi::CString,
    /// The dynamic shared memory it may be launched with now: the driver's default until a launch
    /// asks for more (`LIBOMPTARGET_SHARED_MEMORY_SIZE` above 48 KiB) and the limit is raised.
    dynamic_shared_allowed: AtomicU32,
}

/// Global variables and kernels of a module are looked up by name; the module owns the driver handle.
pub type CudaModule = Module;

impl CudaBackend {
    /// Opens the driver named by `OMPRPC_CUDA_LIBRARY`, else `libcuda.so.1` or `libcuda.so`, and finds
    /// its devices. Fails, with the reason in words, when there is no driver or `cuInit` fails.
    pub fn open(config: &Config) -> Result<CudaBackend> {
        let driver = open_driver(
            config.cuda_library.as_deref(),
            &DRIVER_NAMES,
            "CUDA driver",
            sys::Functions::resolve,
        )?;
        CudaBackend::with_driver(driver, config)
    }

    /// The backend over an opened driver (the real one, or a simulated one in tests).
    pub fn with_driver(driver: &'static Driver, config: &Config) -> Result<CudaBackend> {
        let api = Api::new(driver);
        api.init()
            .map_err(|e| Error::Unsupported(format!("{e} from {}; reporting 0 devices", api.library())))?;
        let count = api.device_count()?;
        let mut devices = Vec::with_capacity(count);
        for ordinal in 0..count {
            let device = api.device(ordinal)?;
            let capability = Capability {
                major: api.attribute(device, attribute::COMPUTE_CAPABILITY_MAJOR)?.max(0) as u32,
                minor: api.attribute(device, attribute::COMPUTE_CAPABILITY_MINOR)?.max(0) as u32,
            };
            devices.push(CudaDevice {
                device,
                capability,
                context: Mutex::new(None),
                current: AtomicPtr::new(std::ptr::null_mut()),
                peers: PeerAccess::new(count),
                pinned: PinnedByDevice::default(),
                uses_host_pointers: AtomicBool::new(false),
                shared_opt_in_bytes: AtomicU32::new(0),
            });
        }
        let version = api.driver_version().unwrap_or(0);
        let reason = format!(
            "{count} CUDA device(s) ({}) found by {} (driver API {}.{})",
            devices
                .iter()
                .map(|d| d.capability.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            api.library(),
            version / 1000,
            version % 1000 / 10
        );
        Ok(CudaBackend {
            api,
            devices,
            config: config.clone(),
            reason,
            confidential_computing: OnceLock::new(),
        })
    }

    /// Marks the GPUs as running in confidential-computing mode, for tests.
    #[cfg(all(test, feature = "rpc"))]
    pub(crate) fn set_confidential_computing(&mut self) {
        self.confidential_computing = OnceLock::from(true);
    }

    /// Makes `device`'s context current on this thread and returns its handle.
    #[inline]
    fn enter(&self, device: usize) -> Result<*mut c_void> {
        let context = self.devices[device].current.load(Ordering::Acquire);
        if context.is_null() {
            return Err(Error::DeviceNotInitialized(device as i32));
        }
        // SAFETY: a non-null `current` is the device's retained primary context (cleared before it is
        // released).
        unsafe { self.api.set_current(context) }?;
        Ok(context)
    }

    fn attribute_or_zero(&self, device: CuDevice, which: i32) -> i32 {
        self.api.attribute(device, which).unwrap_or(0)
    }

    /// Retains the primary context (blocking synchronisation, as the stock plugin sets it when it is
    /// inactive), applies the stack and heap settings, and reads the limits.
    fn prepare(&self, index: usize, context: &PrimaryContext) -> Result<DeviceLimits> {
        context.enter()?;
        if let Some(bytes) = self.config.device_stack_bytes {
            self.api
                .set_limit(sys::LIMIT_STACK_SIZE, bytes)
                .context(|| format!("setting LIBOMPTARGET_STACK_SIZE={bytes}"))?;
        }
        if let Some(bytes) = self.config.device_heap_bytes {
            self.api
                .set_limit(sys::LIMIT_MALLOC_HEAP_SIZE, bytes)
                .context(|| format!("setting LIBOMPTARGET_HEAP_SIZE={bytes}"))?;
        }
        let device = self.devices[index].device;
        let read = |which| self.api.attribute(device, which).map(|v| v.max(0) as u32);
        let multiprocessors = read(attribute::MULTIPROCESSOR_COUNT)?;
        let host_pointers = read(attribute::CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM)? != 0;
        self.devices[index]
            .uses_host_pointers
            .store(host_pointers, Ordering::Release);
        Ok(DeviceLimits {
            lane_size: read(attribute::WARP_SIZE)?,
            max_threads: read(attribute::MAX_BLOCK_DIM_X)?,
            max_teams: read(attribute::MAX_GRID_DIM_X)?,
            default_threads: DEFAULT_THREADS,
            default_teams: DEFAULT_TEAMS,
            multiprocessors,
            memory_bytes: self.api.total_memory(device)? as u64,
            default_exec_mode: ExecMode::Spmd,
            max_kernel_args: MAX_KERNEL_ARGS,
            rpc_ports: gpu::default_rpc_ports(multiprocessors),
            recycle_allocations: true,
            team_caps_apply: true,
            reads_host_memory: read(attribute::PAGEABLE_MEMORY_ACCESS)? != 0,
        })
    }

    /// Raises `kernel`'s dynamic shared memory limit to `bytes`, which the driver requires before a
    /// launch with more than 48 KiB; refused, naming the setting, where the kernel's static shared
    /// memory and `bytes` together exceed what a block of the device may have.
    fn allow_dynamic_shared(&self, device: usize, kernel: &CudaKernel, bytes: u32) -> Result<()> {
        let function = kernel.function.load(Ordering::Relaxed);
        let opt_in = match self.devices[device].shared_opt_in_bytes.load(Ordering::Relaxed) {
            0 => {
                let read = self.api.attribute(
                    self.devices[device].device,
                    attribute::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                )?;
                let read = read.max(0) as u32;
                self.devices[device].shared_opt_in_bytes.store(read, Ordering::Relaxed);
                read
            }
            known => known,
        };
        // SAFETY: `function` belongs to a module that stays loaded while its kernels are launched.
        let static_bytes = unsafe { self.api.static_shared_bytes(function) }?;
        if u64::from(static_bytes) + u64::from(bytes) > u64::from(opt_in) {
            return Err(Error::InvalidArg(format!(
                "kernel {} cannot have {bytes} bytes of dynamic shared memory \
                 (LIBOMPTARGET_SHARED_MEMORY_SIZE or the region's request): it uses {static_bytes} bytes of \
                 static shared memory and a block of device {device} may have {opt_in} in all; ask for at \
                 most {}",
                kernel.name.to_string_lossy(),
                opt_in.saturating_sub(static_bytes)
            )));
        }
        // SAFETY: as above.
        unsafe { self.api.allow_dynamic_shared_bytes(function, bytes) }?;
        kernel.dynamic_shared_allowed.fetch_max(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Whether `src` reaches `dst`'s memory directly, asking the driver (and enabling it) once.
    fn peer_access(&self, src: usize, dst: usize) -> Result<bool> {
        let (from, to) = (&self.devices[src], &self.devices[dst]);
        from.peers.get_or_decide(dst, || {
            if !self.api.can_access_peer(from.device, to.device)? {
                return Ok(false);
            }
            let peer = to.current.load(Ordering::Acquire);
            // SAFETY: a non-null `current` is a retained primary context.
            Ok(!peer.is_null() && unsafe { self.api.enable_peer_access(peer) }?)
        })
    }
}

/// `CUDA_ERROR_NOT_FOUND` from a symbol lookup means the module has no such symbol.
fn missing(e: Error, name: &CStr) -> Error {
    match e {
        Error::Driver { code, .. } if code == i64::from(sys::CUDA_ERROR_NOT_FOUND) => Error::MissingSymbol {
            image: "the CUDA module".into(),
            symbol: name.to_string_lossy().into_owned(),
        },
        e => e,
    }
}

fn device_ptr(ptr: *const c_void) -> CuDevicePtr {
    ptr as usize as CuDevicePtr
}

impl Backend for CudaBackend {
    type Module = CudaModule;
    type Kernel = CudaKernel;
    type Queue = Stream;
    type Event = Event;

    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn device_count(&self) -> usize {
        self.devices.len()
    }

    fn device_count_reason(&self) -> String {
        self.reason.clone()
    }

    fn is_compatible_image(&self, header: &[u8], _image_len: usize, arch: Option<&str>) -> bool {
        let Some(mut image) = NvidiaImage::detect(header) else {
            return false;
        };
        // The offload wrapper's arch string, when there is one, is what the stock plugin judges by.
        if let (NvidiaImage::Cubin(_), Some(capability)) = (image, arch.and_then(Capability::parse)) {
            image = NvidiaImage::Cubin(capability);
        }
        !self.devices.is_empty() && self.devices.iter().all(|d| image.runs_on(d.capability))
    }

    fn init_device(&self, device: usize) -> Result<DeviceLimits> {
        let cuda = &self.devices[device];
        let (flags, active) = self.api.primary_context_state(cuda.device)?;
        if !active {
            self.api
                .set_primary_context_flags(cuda.device, sys::CTX_SCHED_BLOCKING_SYNC)?;
        } else if flags & sys::CTX_SCHED_MASK != sys::CTX_SCHED_BLOCKING_SYNC {
            log::device_info(
                device,
                "the primary context is already active with other flags than CU_CTX_SCHED_BLOCKING_SYNC",
            );
        }
        let context = PrimaryContext::retain(self.api, cuda.device)?;
        let limits = self.prepare(device, &context)?;
        cuda.current.store(context.handle(), Ordering::Release);
        *lock(&cuda.context) = Some(context);
        Ok(limits)
    }

    fn deinit_device(&self, device: usize) -> Result<()> {
        let cuda = &self.devices[device];
        cuda.current.store(std::ptr::null_mut(), Ordering::Release);
        cuda.peers.forget();
        cuda.pinned.clear();
        released(match lock(&cuda.context).take() {
            Some(context) => context.release(),
            None => Ok(()),
        })
    }

    fn load_module(&self, device: usize, bytes: &[u8]) -> Result<CudaModule> {
        self.enter(device)?;
        match NvidiaImage::detect(bytes) {
            Some(NvidiaImage::Cubin(_)) => Module::load(self.api, bytes),
            Some(NvidiaImage::Ptx(_)) => {
                // The driver reads PTX up to a NUL, which an image's bytes need not end with.
                let mut text = bytes.to_vec();
                text.push(0);
                Module::load(self.api, &text)
            }
            None => Err(Error::BadImage("neither a cubin (ELF machine 190) nor PTX text".into())),
        }
    }

    fn unload_module(&self, device: usize, module: CudaModule) -> Result<()> {
        released(self.enter(device).and_then(|_| module.unload()))
    }

    fn kernel(&self, device: usize, module: &CudaModule, name: &CStr) -> Result<KernelSymbol<CudaKernel>> {
        self.enter(device)?;
        // SAFETY: `module` is loaded (it is only unloaded by value), and `function` belongs to it.
        let (function, max_threads) = unsafe {
            let function = self.api.function(module.handle(), name).map_err(|e| missing(e, name))?;
            (function, self.api.max_threads(function)?)
        };
        Ok(KernelSymbol {
            kernel: CudaKernel {
                function: AtomicPtr::new(function),
                name: name.to_owned(),
                dynamic_shared_allowed: AtomicU32::new(sys::DEFAULT_DYNAMIC_SHARED_LIMIT),
            },
            max_threads: Some(max_threads),
        })
    }

    fn global(&self, device: usize, module: &CudaModule, name: &CStr) -> Result<GlobalSymbol> {
        self.enter(device)?;
        // SAFETY: `module` is loaded (it is only unloaded by value).
        let (addr, size) = unsafe { self.api.global(module.handle(), name) }.map_err(|e| missing(e, name))?;
        Ok(GlobalSymbol {
            addr: addr as usize as *mut c_void,
            size,
        })
    }

    fn alloc(&self, device: usize, size: usize, kind: AllocKind) -> Result<*mut c_void> {
        self.enter(device)?;
        let ptr = match kind {
            AllocKind::Device | AllocKind::Default => self.api.alloc_device(size)? as usize as *mut c_void,
            AllocKind::Host => self.api.alloc_host(size)?,
            AllocKind::Shared => self.api.alloc_managed(size)? as usize as *mut c_void,
        };
        Ok(ptr)
    }

    unsafe fn free(&self, device: usize, ptr: *mut c_void, kind: AllocKind) -> Result<()> {
        released(self.enter(device).and_then(|_| match kind {
            // SAFETY: per this function's contract, `ptr` came from `alloc` with this kind.
            AllocKind::Host => unsafe { self.api.free_host(ptr) },
            // SAFETY: as above.
            _ => unsafe { self.api.free_device(device_ptr(ptr)) },
        }))
    }

    unsafe fn copy_to_device(
        &self,
        device: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: &Stream,
    ) -> Result<()> {
        self.enter(device)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { self.api.copy_to_device(device_ptr(dst), src, size, queue.raw()) }
    }

    unsafe fn copy_to_host(
        &self,
        device: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: &Stream,
    ) -> Result<()> {
        self.enter(device)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { self.api.copy_to_host(dst, device_ptr(src), size, queue.raw()) }
    }

    fn can_exchange(&self, _src_device: usize, _dst_device: usize) -> bool {
        // Any two CUDA devices exchange: directly with peer access, else through a device copy under
        // unified addressing, as the stock plugin does.
        true
    }

    unsafe fn copy_between_devices(
        &self,
        src_device: usize,
        src: *const c_void,
        dst_device: usize,
        dst: *mut c_void,
        size: usize,
        queue: &Stream,
    ) -> Result<()> {
        let src_context = self.enter(src_device)?;
        if src_device != dst_device && self.peer_access(src_device, dst_device)? {
            let dst_context = self.devices[dst_device].current.load(Ordering::Acquire);
            // SAFETY: forwarded from this function's contract; both contexts are retained.
            return unsafe {
                self.api.copy_peer(
                    device_ptr(dst),
                    dst_context,
                    device_ptr(src),
                    src_context,
                    size,
                    queue.raw(),
                )
            };
        }
        // SAFETY: forwarded from this function's contract.
        unsafe {
            self.api
                .copy_device_to_device(device_ptr(dst), device_ptr(src), size, queue.raw())
        }
    }

    unsafe fn launch(
        &self,
        device: usize,
        kernel: &CudaKernel,
        args: &[*mut c_void],
        geometry: LaunchGeometry,
        _asynchronous: bool,
        queue: &Stream,
    ) -> Result<()> {
        self.enter(device)?;
        if geometry.dynamic_shared_bytes > kernel.dynamic_shared_allowed.load(Ordering::Relaxed) {
            self.allow_dynamic_shared(device, kernel, geometry.dynamic_shared_bytes)?;
        }
        // The driver takes a pointer to each argument's value; the values are `args` themselves.
        let mut params = [std::ptr::null_mut::<c_void>(); MAX_KERNEL_ARGS];
        for (param, arg) in params.iter_mut().zip(args) {
            *param = (arg as *const *mut c_void).cast_mut().cast();
        }
        // SAFETY: the core checked `args.len() <= MAX_KERNEL_ARGS`; each parameter points at an
        // argument value in `args`, which the driver copies before returning; what the values point to
        // stays valid per this function's contract.
        unsafe {
            self.api.launch(
                kernel.function.load(Ordering::Relaxed),
                geometry.teams,
                geometry.threads,
                geometry.dynamic_shared_bytes,
                queue.raw(),
                params.as_mut_ptr(),
            )
        }
    }

    fn create_queue(&self, device: usize) -> Result<Stream> {
        self.enter(device)?;
        Stream::create(self.api)
    }

    fn destroy_queue(&self, device: usize, queue: &Stream) -> Result<()> {
        released(self.enter(device).and_then(|_| queue.destroy()))
    }

    fn queue_handle(&self, queue: &Stream) -> *mut c_void {
        queue.raw()
    }

    fn synchronize(&self, device: usize, queue: &Stream) -> Result<()> {
        self.enter(device)?;
        // SAFETY: the core hands over only live queues of its pool (stale handles are refused there).
        unsafe { self.api.synchronize_stream(queue.raw()) }
    }

    fn is_idle(&self, device: usize, queue: &Stream) -> Result<bool> {
        self.enter(device)?;
        // SAFETY: as in `synchronize`.
        unsafe { self.api.stream_is_idle(queue.raw()) }
    }

    fn create_event(&self, device: usize) -> Result<Event> {
        self.enter(device)?;
        Event::create(self.api)
    }

    fn destroy_event(&self, device: usize, event: &Event) -> Result<()> {
        released(self.enter(device).and_then(|_| event.destroy()))
    }

    fn event_handle(&self, event: &Event) -> *mut c_void {
        event.raw()
    }

    fn record_event(&self, device: usize, event: &Event, queue: &Stream) -> Result<()> {
        self.enter(device)?;
        // SAFETY: the core hands over only live events and queues of its pools.
        unsafe { self.api.record_event(event.raw(), queue.raw()) }
    }

    fn wait_event(&self, device: usize, event: &Event, queue: &Stream) -> Result<()> {
        self.enter(device)?;
        // SAFETY: as in `record_event`.
        unsafe { self.api.stream_wait_event(queue.raw(), event.raw()) }
    }

    fn sync_event(&self, device: usize, event: &Event) -> Result<()> {
        self.enter(device)?;
        // SAFETY: as in `record_event`.
        unsafe { self.api.synchronize_event(event.raw()) }
    }

    fn device_lost(&self, _device: usize, error: &Error) -> bool {
        error
            .driver_code()
            .is_some_and(|code| sys::STICKY_ERRORS.contains(&(code as sys::CuResult)))
    }

    fn host_services_unavailable(&self, _device: usize) -> Option<String> {
        self.confidential_computing
            .get_or_init(nvml::confidential_computing)
            .then(|| {
                "the GPUs run in confidential-computing mode (NVML says so), where kernels cannot read the \
             host memory that host services use"
                    .to_string()
            })
    }

    fn lock_host_memory(&self, device: usize, ptr: *mut c_void, size: usize) -> Result<*mut c_void> {
        self.enter(device)?;
        // The core calls this once per range, which libomptarget keeps mapped until it unlocks it.
        if self.api.register_host(ptr, size)? {
            self.devices[device].pinned.insert(ptr as usize);
        }
        // The device reaches pinned memory at its host address when it says it can; otherwise at the
        // address the driver gives, as the stock plugin hands it over.
        if self.devices[device].uses_host_pointers.load(Ordering::Acquire) {
            return Ok(ptr);
        }
        Ok(self.api.host_device_pointer(ptr)? as usize as *mut c_void)
    }

    fn unlock_host_memory(&self, device: usize, ptr: *mut c_void) -> Result<()> {
        self.enter(device)?;
        if self.devices[device].pinned.take(ptr as usize) {
            released(self.api.unregister_host(ptr))?;
        }
        Ok(())
    }

    fn native_device(&self, device: usize) -> NativeDevice {
        let cuda = &self.devices[device];
        NativeDevice {
            context: cuda.current.load(Ordering::Acquire),
            device: cuda.device as isize as *mut c_void,
        }
    }

    fn describe_device(&self, device: usize) -> Vec<(&'static str, String)> {
        let d = self.devices[device].device;
        let attr = |which| self.attribute_or_zero(d, which);
        let yes_no = |which| if attr(which) != 0 { "Yes" } else { "No" }.to_string();
        let compute_mode = match attr(attribute::COMPUTE_MODE) {
            0 => "DEFAULT",
            2 => "PROHIBITED",
            3 => "EXCLUSIVE PROCESS",
            _ => "unknown",
        };
        vec![
            (
                "CUDA Driver Version:",
                self.api.driver_version().unwrap_or(0).to_string(),
            ),
            ("CUDA Device Number:", device.to_string()),
            ("Device Name:", self.api.device_name(d).unwrap_or_default()),
            (
                "Global Memory Size:",
                format!("{} bytes", self.api.total_memory(d).unwrap_or(0)),
            ),
            (
                "Number of Multiprocessors:",
                attr(attribute::MULTIPROCESSOR_COUNT).to_string(),
            ),
            ("Concurrent Copy and Execution:", yes_no(attribute::GPU_OVERLAP)),
            (
                "Total Constant Memory:",
                format!("{} bytes", attr(attribute::TOTAL_CONSTANT_MEMORY)),
            ),
            (
                "Max Shared Memory per Block:",
                format!("{} bytes", attr(attribute::MAX_SHARED_MEMORY_PER_BLOCK)),
            ),
            (
                "Registers per Block:",
                attr(attribute::MAX_REGISTERS_PER_BLOCK).to_string(),
            ),
            ("Warp Size:", format!("{} Threads", attr(attribute::WARP_SIZE))),
            (
                "Maximum Threads per Block:",
                attr(attribute::MAX_THREADS_PER_BLOCK).to_string(),
            ),
            (
                "Maximum Block Dimensions:",
                format!(
                    "{}, {}, {}",
                    attr(attribute::MAX_BLOCK_DIM_X),
                    attr(attribute::MAX_BLOCK_DIM_Y),
                    attr(attribute::MAX_BLOCK_DIM_Z)
                ),
            ),
            (
                "Maximum Grid Dimensions:",
                format!(
                    "{} x {} x {}",
                    attr(attribute::MAX_GRID_DIM_X),
                    attr(attribute::MAX_GRID_DIM_Y),
                    attr(attribute::MAX_GRID_DIM_Z)
                ),
            ),
            ("Maximum Memory Pitch:", format!("{} bytes", attr(attribute::MAX_PITCH))),
            (
                "Texture Alignment:",
                format!("{} bytes", attr(attribute::TEXTURE_ALIGNMENT)),
            ),
            ("Clock Rate:", format!("{} kHz", attr(attribute::CLOCK_RATE))),
            ("Execution Timeout:", yes_no(attribute::KERNEL_EXEC_TIMEOUT)),
            ("Integrated Device:", yes_no(attribute::INTEGRATED)),
            ("Can Map Host Memory:", yes_no(attribute::CAN_MAP_HOST_MEMORY)),
            ("Compute Mode:", compute_mode.to_string()),
            ("Concurrent Kernels:", yes_no(attribute::CONCURRENT_KERNELS)),
            ("ECC Enabled:", yes_no(attribute::ECC_ENABLED)),
            (
                "Memory Clock Rate:",
                format!("{} kHz", attr(attribute::MEMORY_CLOCK_RATE)),
            ),
            (
                "Memory Bus Width:",
                format!("{} bits", attr(attribute::GLOBAL_MEMORY_BUS_WIDTH)),
            ),
            ("L2 Cache Size:", format!("{} bytes", attr(attribute::L2_CACHE_SIZE))),
            (
                "Max Threads Per SMP:",
                attr(attribute::MAX_THREADS_PER_MULTIPROCESSOR).to_string(),
            ),
            (
                "Async Engines:",
                format!(
                    "{} ({})",
                    yes_no(attribute::ASYNC_ENGINE_COUNT),
                    attr(attribute::ASYNC_ENGINE_COUNT)
                ),
            ),
            ("Unified Addressing:", yes_no(attribute::UNIFIED_ADDRESSING)),
            ("Managed Memory:", yes_no(attribute::MANAGED_MEMORY)),
            (
                "Concurrent Managed Memory:",
                yes_no(attribute::CONCURRENT_MANAGED_ACCESS),
            ),
            ("Preemption Supported:", yes_no(attribute::COMPUTE_PREEMPTION_SUPPORTED)),
            ("Cooperative Launch:", yes_no(attribute::COOPERATIVE_LAUNCH)),
            ("Multi-Device Boards:", yes_no(attribute::MULTI_GPU_BOARD)),
            ("Compute Capabilities:", self.devices[device].capability.to_string()),
        ]
    }
}
