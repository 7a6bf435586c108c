//! The generic core: devices, images and their entry tables, kernels, memory bookkeeping, queues and
//! events. It validates everything libomptarget hands over, keeps the records that make bad handles
//! detectable, and calls one backend hook per operation.

pub mod address_map;
pub mod config;
pub mod error;
pub mod image;
pub mod log;
pub mod pool;
pub mod sync;

use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};

use crate::abi::types::{AsyncInfo, TargetTable};
use crate::backend::{self, AllocKind, Backend, Event, LaunchBounds, Queue};
use address_map::AddressMap;
use config::{BackendKind, Config};
use error::{Error, Result};
use image::{HostEntry, Kernel, LoadedImage};
use pool::Pool;
use sync::{lock, read, write};

/// A backend queue with the bookkeeping the core keeps for it; `__tgt_async_info::Queue` holds its
/// pool handle.
pub struct QueueSlot {
    queue: Box<dyn Queue>,
    /// Keeps the RPC service polling for kernels queued here until the queue is released.
    #[cfg(feature = "rpc")]
    rpc_kernels: Mutex<Vec<crate::rpc::service::KernelGuard>>,
}

impl QueueSlot {
    fn new(queue: Box<dyn Queue>) -> QueueSlot {
        QueueSlot {
            queue,
            #[cfg(feature = "rpc")]
            rpc_kernels: Mutex::new(Vec::new()),
        }
    }

    /// Called when libomptarget lets go of the queue: its kernels are done.
    fn finished(&self) {
        #[cfg(feature = "rpc")]
        lock(&self.rpc_kernels).clear();
    }
}

/// A backend event; libomptarget holds its pool handle as `void *`.
pub struct EventSlot {
    event: Box<dyn Event>,
}

/// One device's records.
pub struct Device {
    index: usize,
    initialized: OnceLock<()>,
    init_lock: Mutex<()>,
    images: Mutex<Vec<LoadedImage>>,
    kernels: RwLock<AddressMap<&'static Kernel>>,
    allocations: Mutex<AddressMap<AllocKind>>,
    queues: Pool<QueueSlot>,
    events: Pool<EventSlot>,
    /// The device's RPC server, set up by the first image that asks for host services.
    #[cfg(feature = "rpc")]
    rpc: Mutex<Option<std::sync::Arc<crate::rpc::server::RpcServer>>>,
    /// Whether `rpc` is set; read on every launch without taking the lock.
    #[cfg(feature = "rpc")]
    has_rpc: std::sync::atomic::AtomicBool,
}

impl Device {
    fn new(index: usize) -> Device {
        Device {
            index,
            initialized: OnceLock::new(),
            init_lock: Mutex::new(()),
            images: Mutex::new(Vec::new()),
            kernels: RwLock::new(AddressMap::default()),
            allocations: Mutex::new(AddressMap::default()),
            queues: Pool::new("queue"),
            events: Pool::new("event"),
            #[cfg(feature = "rpc")]
            rpc: Mutex::new(None),
            #[cfg(feature = "rpc")]
            has_rpc: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether kernels of this device may call the host.
    fn uses_rpc(&self) -> bool {
        #[cfg(feature = "rpc")]
        return self.has_rpc.load(Ordering::Acquire);
        #[cfg(not(feature = "rpc"))]
        false
    }

    fn queue(&self, async_info: &AsyncInfo) -> Result<Option<&'static QueueSlot>> {
        if async_info.queue.is_null() {
            return Ok(None);
        }
        self.queues.get(async_info.queue as usize).map(Some)
    }
}

/// The plugin: the selected backend and its devices.
pub struct Plugin {
    kind: BackendKind,
    backend: Option<Box<dyn Backend>>,
    devices: Vec<Device>,
    config: Config,
    requires_flags: AtomicI64,
}

impl Plugin {
    /// Selects the backend (`OMPRPC_BACKEND`, else the file name, else host) and opens it; a backend
    /// that cannot be opened leaves the plugin with zero devices and says why under `LIBOMPTARGET_INFO`.
    pub fn new(config: Config, loaded_as: Option<&str>) -> Plugin {
        log::set_info_level(config.info_level);
        let from_name = loaded_as.and_then(BackendKind::from_plugin_file_name);
        let shown_name = loaded_as.unwrap_or("an unknown file");
        let kind = match (config.backend_override, from_name) {
            (Some(kind), _) => {
                log::info(format_args!(
                    "{} backend selected by OMPRPC_BACKEND (plugin loaded as {shown_name})",
                    kind.name()
                ));
                kind
            }
            (None, Some(kind)) => {
                log::info(format_args!(
                    "{} backend selected: plugin loaded as {shown_name}",
                    kind.name()
                ));
                kind
            }
            (None, None) => {
                log::info(format_args!(
                    "host backend selected: plugin loaded as {shown_name}, which names no backend \
                     (set OMPRPC_BACKEND or install it as libomptarget.rtl.<x86_64|cuda|amdgpu>.nextgen.so)"
                ));
                BackendKind::Host
            }
        };
        let backend = match backend::open(kind, &config) {
            Ok(backend) => {
                log::info(backend.device_count_reason());
                Some(backend)
            }
            Err(e) => {
                log::info(e);
                None
            }
        };
        let count = backend.as_ref().map_or(0, |b| b.device_count());
        Plugin {
            kind,
            backend,
            devices: (0..count).map(Device::new).collect(),
            config,
            requires_flags: AtomicI64::new(0),
        }
    }

    /// The backend family this plugin drives.
    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// Number of devices libomptarget may use.
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    fn backend(&self) -> Result<&dyn Backend> {
        self.backend
            .as_deref()
            .ok_or_else(|| Error::Unsupported(format!("the {} backend has no devices", self.kind.name())))
    }

    /// The device `id`, checked against the device count.
    pub fn device(&self, id: i32) -> Result<&Device> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.devices.get(i))
            .ok_or(Error::InvalidDevice {
                id,
                count: self.devices.len(),
            })
    }

    fn ready_device(&self, id: i32) -> Result<&Device> {
        let device = self.device(id)?;
        if device.initialized.get().is_none() {
            return Err(Error::DeviceNotInitialized(id));
        }
        Ok(device)
    }

    /// Whether this plugin can load `image`; quiet, since libomptarget asks every plugin.
    pub fn is_valid_image(&self, header: &[u8], image_len: usize) -> bool {
        self.backend
            .as_ref()
            .is_some_and(|b| b.is_compatible_image(header, image_len))
    }

    /// Records the `requires` flags of the program.
    pub fn init_requires(&self, flags: i64) -> i64 {
        self.requires_flags.store(flags, Ordering::Relaxed);
        flags
    }

    /// Initialises device `id` once; later calls succeed at no cost.
    pub fn init_device(&self, id: i32) -> Result<()> {
        let device = self.device(id)?;
        let _guard = lock(&device.init_lock);
        if device.initialized.get().is_some() {
            return Ok(());
        }
        let backend = self.backend()?;
        backend.init_device(device.index)?;
        device.queues.prefill(self.config.initial_queues, || {
            Ok(QueueSlot::new(backend.create_queue(device.index)?))
        })?;
        device.events.prefill(self.config.initial_events, || {
            Ok(EventSlot {
                event: backend.create_event(device.index)?,
            })
        })?;
        let _ = device.initialized.set(());
        log::device_info(device.index, format_args!("initialised ({} backend)", self.kind.name()));
        Ok(())
    }

    /// Loads an image on device `id` and returns its entry table (the same table for a repeated load).
    pub fn load_image(
        &self,
        id: i32,
        image_start: usize,
        bytes: &[u8],
        host_entries: &[HostEntry],
    ) -> Result<*mut TargetTable> {
        let device = self.ready_device(id)?;
        let mut images = lock(&device.images);
        if let Some(loaded) = images.iter_mut().find(|i| i.image_start == image_start) {
            return Ok(&mut *loaded.table as *mut TargetTable);
        }
        let module = self.backend()?.load_module(device.index, bytes)?;
        let mut loaded = image::build(image_start, host_entries, module)?;
        self.attach_rpc(device, &*loaded.module)?;
        {
            let mut kernels = write(&device.kernels);
            for &kernel in &loaded.kernels {
                kernels.insert(kernel as *const Kernel as usize, kernel);
            }
        }
        log::device_info(
            device.index,
            format_args!(
                "loaded an image of {} bytes with {} kernels and {} globals",
                bytes.len(),
                loaded.kernels.len(),
                loaded.entries.len() - loaded.kernels.len()
            ),
        );
        let table: *mut TargetTable = &mut *loaded.table;
        images.push(loaded);
        Ok(table)
    }

    /// Allocates `size` bytes of `kind` memory on device `id`.
    pub fn alloc(&self, id: i32, size: usize, kind: AllocKind) -> Result<*mut c_void> {
        let device = self.ready_device(id)?;
        if size == 0 {
            return Err(Error::InvalidArg("cannot allocate 0 bytes".into()));
        }
        let ptr = self.backend()?.alloc(device.index, size, kind)?;
        lock(&device.allocations).insert(ptr as usize, kind);
        Ok(ptr)
    }

    /// Frees an allocation of device `id`; a pointer it did not allocate, or freed already, is refused.
    pub fn free(&self, id: i32, addr: usize) -> Result<()> {
        let device = self.ready_device(id)?;
        let kind = lock(&device.allocations).remove(&addr).ok_or(Error::UnknownHandle {
            what: "allocation",
            addr,
        })?;
        // SAFETY: `addr` was in this device's allocation records, so `alloc` returned it and it was not
        // freed since; it has just been removed, so it cannot be freed twice.
        unsafe { self.backend()?.free(device.index, addr as *mut c_void, kind) }
    }

    /// Copies `size` bytes on device `id`, ordered after the work already queued on `async_info`.
    ///
    /// # Safety
    /// `dst` and `src` are valid for `size` bytes until the copy completes (for a queued copy, until
    /// `async_info` is synchronised), as libomptarget guarantees.
    pub unsafe fn copy(
        &self,
        id: i32,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        async_info: Option<&mut AsyncInfo>,
    ) -> Result<()> {
        let device = self.ready_device(id)?;
        if size == 0 {
            return Ok(());
        }
        let queue = match async_info {
            Some(info) => device.queue(info)?,
            None => None,
        };
        let backend = self.backend()?;
        // SAFETY: forwarded from this function's contract.
        unsafe { backend.copy(device.index, dst, src, size, queue.map(|q| &*q.queue)) }
    }

    /// Whether devices `src` and `dst` can copy to each other directly.
    pub fn can_exchange(&self, src: i32, dst: i32) -> Result<bool> {
        self.device(src)?;
        self.device(dst)?;
        Ok(self.kind == BackendKind::Host)
    }

    /// Launches the kernel whose table entry `addr` is on device `id`.
    ///
    /// # Safety
    /// `args` are the kernel's arguments as libomptarget computed them, and the memory they point to
    /// stays valid until the launch completes (for a queued launch, until `async_info` is synchronised).
    pub unsafe fn launch(
        &self,
        id: i32,
        addr: usize,
        args: &[*mut c_void],
        bounds: LaunchBounds,
        nowait: bool,
        async_info: Option<&mut AsyncInfo>,
    ) -> Result<()> {
        let device = self.ready_device(id)?;
        let kernel = *read(&device.kernels).get(&addr).ok_or(Error::UnknownHandle {
            what: "kernel entry",
            addr,
        })?;
        let backend = self.backend()?;
        let queue = match async_info {
            Some(info) => match device.queue(info)? {
                Some(queue) => Some(queue),
                None if nowait => {
                    let (handle, queue) = device
                        .queues
                        .acquire(|| Ok(QueueSlot::new(backend.create_queue(device.index)?)))?;
                    info.queue = handle as *mut c_void;
                    Some(queue)
                }
                None => None,
            },
            None => None,
        };
        if log::info_enabled(log::INFO_PLUGIN) {
            let count = |n: u32, what: &str| {
                if n == 0 {
                    format!("default {what}")
                } else {
                    format!("{n} {what}")
                }
            };
            log::device_info(
                device.index,
                format_args!(
                    "Launching kernel {} with {} and {}{}",
                    kernel.name.to_string_lossy(),
                    count(bounds.teams, "teams"),
                    count(bounds.threads, "threads"),
                    if queue.is_some() { " (asynchronous)" } else { "" }
                ),
            );
        }
        #[cfg(feature = "rpc")]
        let _serving = if device.uses_rpc() {
            let guard = crate::rpc::service::kernel_running();
            match queue {
                Some(queue) => {
                    lock(&queue.rpc_kernels).push(guard);
                    None
                }
                None => Some(guard),
            }
        } else {
            None
        };
        // SAFETY: `kernel` is a registered kernel of this device, so `function` is its handle; the
        // arguments are forwarded from this function's contract.
        unsafe { backend.launch(device.index, kernel.function, args, bounds, queue.map(|q| &*q.queue)) }
    }

    /// Waits for everything queued on `async_info` and releases its queue.
    pub fn synchronize(&self, id: i32, async_info: &mut AsyncInfo) -> Result<()> {
        let device = self.ready_device(id)?;
        let Some(queue) = device.queue(async_info)? else {
            return Ok(());
        };
        if device.uses_rpc() {
            self.serve_while_waiting(queue)?;
        }
        let result = queue.queue.synchronize();
        queue.finished();
        device.queues.release(async_info.queue as usize)?;
        async_info.queue = std::ptr::null_mut();
        result
    }

    /// Releases the queue of `async_info` if its work is done; leaves it in place otherwise.
    pub fn query_async(&self, id: i32, async_info: &mut AsyncInfo) -> Result<()> {
        let device = self.ready_device(id)?;
        let Some(queue) = device.queue(async_info)? else {
            return Ok(());
        };
        if queue.queue.is_idle()? {
            queue.finished();
            device.queues.release(async_info.queue as usize)?;
            async_info.queue = std::ptr::null_mut();
        }
        Ok(())
    }

    /// A new event of device `id`.
    pub fn create_event(&self, id: i32) -> Result<*mut c_void> {
        let device = self.ready_device(id)?;
        let backend = self.backend()?;
        let (handle, _) = device.events.acquire(|| {
            Ok(EventSlot {
                event: backend.create_event(device.index)?,
            })
        })?;
        Ok(handle as *mut c_void)
    }

    /// Records `event` after the work queued on `async_info` (at once when nothing is queued).
    pub fn record_event(&self, id: i32, event: *mut c_void, async_info: &mut AsyncInfo) -> Result<()> {
        let device = self.ready_device(id)?;
        let event = device.events.get(event as usize)?;
        match device.queue(async_info)? {
            Some(queue) => queue.queue.record(&*event.event),
            None => event.event.record_now(),
        }
    }

    /// Makes later work on `async_info` wait for `event` (the caller waits when nothing is queued).
    pub fn wait_event(&self, id: i32, event: *mut c_void, async_info: &mut AsyncInfo) -> Result<()> {
        let device = self.ready_device(id)?;
        let event = device.events.get(event as usize)?;
        match device.queue(async_info)? {
            Some(queue) => queue.queue.wait(&*event.event),
            None => event.event.synchronize(),
        }
    }

    /// Blocks until `event` is reached.
    pub fn sync_event(&self, id: i32, event: *mut c_void) -> Result<()> {
        let device = self.ready_device(id)?;
        device.events.get(event as usize)?.event.synchronize()
    }

    /// Gives `event` back; using it afterwards is refused.
    pub fn destroy_event(&self, id: i32, event: *mut c_void) -> Result<()> {
        let device = self.ready_device(id)?;
        device.events.release(event as usize)
    }

    /// Prepares host memory for transfers; `global_id` is libomptarget's global device number.
    pub fn lock_host_memory(&self, global_id: i32, ptr: *mut c_void, size: usize) -> Result<*mut c_void> {
        if global_id < 0 {
            return Err(Error::InvalidArg(format!("device number {global_id} is negative")));
        }
        self.backend()?.lock_host_memory(ptr, size)
    }

    /// Undoes `lock_host_memory`.
    pub fn unlock_host_memory(&self, global_id: i32, ptr: *mut c_void) -> Result<()> {
        if global_id < 0 {
            return Err(Error::InvalidArg(format!("device number {global_id} is negative")));
        }
        self.backend()?.unlock_host_memory(ptr)
    }

    /// Name-value lines describing device `id`.
    pub fn describe_device(&self, id: i32) -> Result<Vec<(&'static str, String)>> {
        let device = self.device(id)?;
        let mut lines = self.backend()?.describe_device(device.index);
        let images = lock(&device.images).len();
        lines.push(("Images loaded", images.to_string()));
        Ok(lines)
    }

    /// Serves the device's host calls while `queue` still has work, as a thread waiting in
    /// `synchronize` should: the work may be waiting for one of them.
    fn serve_while_waiting(&self, queue: &QueueSlot) -> Result<()> {
        #[cfg(feature = "rpc")]
        {
            // The serving thread serves too, so back off to short naps rather than take a core from
            // the kernel.
            let mut nap = std::time::Duration::from_micros(1);
            while !queue.queue.is_idle()? {
                if crate::rpc::service::serve_all_once() {
                    nap = std::time::Duration::from_micros(1);
                } else {
                    std::thread::sleep(nap);
                    nap = (nap * 2).min(std::time::Duration::from_micros(200));
                }
            }
        }
        #[cfg(not(feature = "rpc"))]
        let _ = queue;
        Ok(())
    }

    /// Sets up host services for an image that exports `__llvm_libc_rpc_client`: the device's server
    /// (made by the first such image) and the image's client pointer, which all images of a device
    /// share so that their port locks agree.
    #[cfg(feature = "rpc")]
    fn attach_rpc(&self, device: &Device, module: &dyn backend::Module) -> Result<()> {
        use crate::rpc::{server::RpcServer, service, CLIENT_SYMBOL};
        let Ok(symbol) = module.global(CLIENT_SYMBOL) else {
            return Ok(());
        };
        let backend = self.backend()?;
        let mut slot = lock(&device.rpc);
        let server = match &*slot {
            Some(server) => std::sync::Arc::clone(server),
            None => {
                let ports = self
                    .config
                    .rpc_ports
                    .unwrap_or_else(|| backend.rpc_default_ports(device.index));
                let memory = backend.rpc_memory(device.index)?;
                let server = RpcServer::new(device.index, ports, backend.rpc_lane_size(), memory)?;
                log::device_info(
                    device.index,
                    format_args!(
                        "host services ready: {} RPC ports of {} lane(s)",
                        server.ports(),
                        server.lane_size()
                    ),
                );
                *slot = Some(std::sync::Arc::clone(&server));
                server
            }
        };
        match server.client_address() {
            None => {
                let mut client: u64 = 0;
                // SAFETY: `symbol` is the device address of an 8-byte pointer in the loaded image, and
                // `client` is 8 writable bytes.
                unsafe { backend.copy(device.index, (&mut client as *mut u64).cast(), symbol, 8, None)? };
                if client == 0 {
                    return Err(Error::BadImage(format!(
                        "{} in the image is NULL",
                        CLIENT_SYMBOL.to_string_lossy()
                    )));
                }
                let bytes = server.client_bytes();
                // SAFETY: the image's client object is where its `__llvm_libc_rpc_client` points, and is
                // the size of libc's client, which the same library reports.
                unsafe {
                    backend.copy(
                        device.index,
                        client as *mut c_void,
                        bytes.as_ptr().cast(),
                        bytes.len(),
                        None,
                    )?
                };
                server.set_client_address(client as usize);
            }
            Some(shared) => {
                let shared = shared as u64;
                // SAFETY: `symbol` is an 8-byte pointer in the loaded image.
                unsafe { backend.copy(device.index, symbol, (&shared as *const u64).cast(), 8, None)? };
            }
        }
        if !device.uses_rpc() {
            service::add_server(server);
            device.has_rpc.store(true, Ordering::Release);
        }
        Ok(())
    }

    #[cfg(not(feature = "rpc"))]
    fn attach_rpc(&self, device: &Device, module: &dyn backend::Module) -> Result<()> {
        if module.global(crate::rpc::CLIENT_SYMBOL).is_ok() {
            log::device_info(
                device.index,
                "the image asks for host services, but this omprpc was built without them (feature `rpc`)",
            );
        }
        Ok(())
    }

    /// Waits for all outstanding work on every device, so that nothing runs after the program's end.
    pub fn drain(&self) -> Result<()> {
        #[cfg(feature = "rpc")]
        if crate::rpc::server::this_thread_is_serving() {
            // A device called `exit`, and libc's server is ending the process from this thread; the
            // kernel that called it never returns, so waiting for it would hang.
            return Ok(());
        }
        let mut first_error = None;
        for device in &self.devices {
            for slot in device.queues.in_use() {
                if let Err(e) = slot.queue.synchronize() {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
