//! [`Core`]: the generic plugin over one backend. Every entry point's bookkeeping lives here; the
//! backend is called once per operation.

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

use super::api::{HostEntry, LoadedEntries, PluginApi, QueueField};
use super::device::{Allocation, Device, DeviceState, EventSlot, LoadedImage, QueueSlot};
use super::image_loading::{self, DeviceEnvironment};
use super::launch::{self, LaunchRequest};
use super::memory_manager::MemoryManager;
use super::pinned::Unlock;
use super::pool::{Item, Pooled};
use super::rpc_link::{self, CoreAccess};
use crate::backend::{AllocKind, Backend, LaunchGeometry, NativeDevice};
use crate::rpc::{HostServices, ImageServer};
use crate::util::config::Config;
use crate::util::elf;
use crate::util::error::{Context, Error, Result};
use crate::util::log;
use crate::util::sync::{lock, write};

/// `OMP_REQ_UNIFIED_SHARED_MEMORY` of the flags `init_requires` passes.
const REQUIRES_UNIFIED_SHARED_MEMORY: i64 = 0x008;

/// The longest nap of a thread waiting for a queue whose kernels may call the host: a thousand looks a
/// second at a long kernel, under 0.5% of a core here, while a short one is seen within twice its
/// run time.
const QUEUE_NAP_MAX: std::time::Duration = std::time::Duration::from_millis(1);

/// The kernel LLVM's AMDGPU back end makes of an image's global constructors (`llvm.global_ctors`:
/// `[[gnu::constructor]]` functions, C++ globals outside `declare target`), run when the image is
/// loaded, as LLVM 17 and later plugins do; LLVM 16's stock plugin never runs it.
const IMAGE_CONSTRUCTORS: &CStr = c"amdgcn.device.init";
/// Its kernel of global destructors, run before the image is unloaded.
const IMAGE_DESTRUCTORS: &CStr = c"amdgcn.device.fini";

/// The generic plugin over backend `B`.
pub struct Core<B: Backend> {
    backend: &'static B,
    devices: Vec<Device<B>>,
    config: Config,
    requires_flags: AtomicI64,
    /// Libraries registered and not unregistered; teardown waits for the last.
    libraries: AtomicUsize,
}

/// Which way a copy between the host and a device goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Host memory to device memory (`data_submit`).
    ToDevice,
    /// Device memory to host memory (`data_retrieve`).
    ToHost,
}

/// Where an operation's queue comes from: the caller's async info, or a local one that is waited for
/// before the operation returns (what a synchronous entry point means).
enum QueueSource<'a> {
    Caller(QueueField<'a>),
    Local,
}

impl<B: Backend> Core<B> {
    /// The core over `backend`, leaked: libomptarget may call the plugin until the process ends.
    pub fn new_boxed(backend: B, config: Config) -> Box<dyn PluginApi> {
        log::info(backend.device_count_reason());
        let backend: &'static B = Box::leak(Box::new(backend));
        let devices = (0..backend.device_count()).map(Device::new).collect();
        Box::new(Core {
            backend,
            devices,
            config,
            requires_flags: AtomicI64::new(0),
            libraries: AtomicUsize::new(0),
        })
    }

    /// The device `id`, checked against the device count.
    fn device(&self, id: i32) -> Result<&Device<B>> {
        match usize::try_from(id).ok().and_then(|i| self.devices.get(i)) {
            Some(device) => Ok(device),
            None => Err(Error::InvalidDevice {
                id,
                count: self.devices.len(),
            }),
        }
    }

    /// The device `id`, initialised: an error before `init_device`, initialised again after a teardown.
    fn ready(&self, id: i32) -> Result<&Device<B>> {
        let device = self.device(id)?;
        match device.state() {
            DeviceState::Ready => Ok(device),
            DeviceState::Uninitialized => Err(Error::DeviceNotInitialized(id)),
            DeviceState::TornDown => {
                self.initialize(device)?;
                Ok(device)
            }
        }
    }

    fn initialize(&self, device: &Device<B>) -> Result<()> {
        let _lifecycle = lock(&device.lifecycle);
        if device.state() == DeviceState::Ready {
            return Ok(());
        }
        let limits = self
            .backend
            .init_device(device.index)
            .context(|| format!("initialising device {}", device.index))?;
        let limits = *device.limits.get_or_init(|| limits);
        if limits.recycle_allocations && self.config.memory_manager_threshold > 0 {
            device
                .memory_manager
                .get_or_init(|| MemoryManager::new(self.config.memory_manager_threshold));
        }
        let backend = self.backend;
        let prefilled = device
            .queues
            .prefill(self.config.initial_queues, || {
                Ok(QueueSlot::new(backend, backend.create_queue(device.index)?))
            })
            .and_then(|()| {
                device.events.prefill(self.config.initial_events, || {
                    Ok(EventSlot::new(backend, backend.create_event(device.index)?))
                })
            });
        if let Err(e) = prefilled {
            // Give back what was made, so that a later attempt starts clean and nothing leaks.
            let _ = device
                .events
                .teardown(|e| backend.destroy_event(device.index, &e.event));
            let _ = device
                .queues
                .teardown(|q| backend.destroy_queue(device.index, &q.queue));
            let _ = backend.deinit_device(device.index);
            return Err(e.context(format!("initialising device {}", device.index)));
        }
        device.set_state(DeviceState::Ready);
        Ok(())
    }

    /// Runs `op` on the queue `source` names, taking one from the pool when the caller's async info has
    /// none yet; a local queue is waited for and given back before returning.
    fn with_queue<R>(
        &self,
        device: &Device<B>,
        source: QueueSource,
        op: impl FnOnce(&QueueSlot<B>) -> Result<R>,
    ) -> Result<R> {
        match source {
            QueueSource::Caller(field) => {
                let slot = if field.is_null() {
                    let slot = self.acquire_queue(device)?;
                    *field = slot.handle() as *mut c_void;
                    slot
                } else {
                    device.queue(*field)?
                };
                op(&slot)
            }
            QueueSource::Local => {
                let slot = self.acquire_queue(device)?;
                let result = op(&slot);
                let finished = self.finish_queue(device, slot, true);
                let value = result?;
                finished.map(|()| value)
            }
        }
    }

    fn acquire_queue(&self, device: &Device<B>) -> Result<Item<QueueSlot<B>>> {
        let backend = self.backend;
        device
            .queues
            .acquire(|| Ok(QueueSlot::new(backend, backend.create_queue(device.index)?)))
    }

    /// Waits for a queue's work when `wait` (the serving threads serve the device's host calls
    /// meanwhile), then gives it back.
    fn finish_queue(&self, device: &Device<B>, slot: Item<QueueSlot<B>>, wait: bool) -> Result<()> {
        let waited = if wait {
            self.wait_without_blocking(device, &slot)
                .and_then(|()| self.backend.synchronize(device.index, &slot.queue))
                .map_err(|e| self.queue_failed(device, &slot, e))
        } else {
            Ok(())
        };
        slot.forget_last_kernel();
        slot.end_rpc_kernels(device);
        device.queues.release(slot)?;
        waited
    }

    /// Waiting for `slot`'s work failed with `error`: where the backend says the device is lost, the
    /// host calls its code was in the middle of are ended and its servers retired, before the queue's
    /// kernels are counted out (which would wait for those calls); the error names the queue's last
    /// kernel.
    fn queue_failed(&self, device: &Device<B>, slot: &QueueSlot<B>, error: Error) -> Error {
        if device.uses_rpc() && self.backend.device_lost(device.index, &error) {
            rpc_link::retire_servers_of_lost_device(device, &error);
        }
        slot.name_last_kernel(device, error)
    }

    /// Waits for a queue whose kernels may call the host without blocking inside the driver: it asks
    /// whether the queue is idle, napping between looks (from a microsecond, doubling up to
    /// [`QUEUE_NAP_MAX`]), so that a driver synchronisation never holds this thread while a kernel
    /// waits for the host, and a long kernel costs a wake-up a millisecond. It serves no calls: the
    /// serving threads do, and this thread is the one that sees a device fail
    /// ([`Core::queue_failed`]).
    fn wait_without_blocking(&self, device: &Device<B>, slot: &QueueSlot<B>) -> Result<()> {
        if !device.uses_rpc() || slot.rpc_kernels.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        let mut nap = std::time::Duration::from_micros(1);
        while !self.backend.is_idle(device.index, &slot.queue)? {
            std::thread::sleep(nap);
            nap = (nap * 2).min(QUEUE_NAP_MAX);
        }
        Ok(())
    }

    fn load(
        &self,
        device: &Device<B>,
        image_start: usize,
        bytes: &[u8],
        entries: &[HostEntry],
    ) -> Result<LoadedEntries> {
        let mut images = lock(&device.images);
        if let Some(loaded) = images.iter().find(|i| i.image_start == image_start) {
            return Ok(LoadedEntries {
                addresses: loaded.addresses.clone(),
                already_loaded: true,
            });
        }
        let limits = *device.limits()?;
        let module = self.backend.load_module(device.index, bytes)?;
        let elf_image = elf::Image::parse(bytes);
        let (resolved, services) = match self.prepare(device, &module, elf_image.as_ref(), entries, &limits) {
            Ok(prepared) => prepared,
            Err(e) => {
                if let Err(unload) = self.backend.unload_module(device.index, module) {
                    log::device_info(device.index, format_args!("unloading a failed image: {unload}"));
                }
                return Err(e);
            }
        };
        {
            let mut kernels = write(&device.kernels);
            for &kernel in &resolved.kernels {
                kernels.insert(kernel as *const _ as usize, kernel);
            }
        }
        log::device_info(
            device.index,
            format_args!(
                "loaded an image of {} bytes with {} kernels and {} globals",
                bytes.len(),
                resolved.kernels.len(),
                entries.len() - resolved.kernels.len()
            ),
        );
        let addresses = resolved.addresses.clone();
        // One pass over the image's symbols for both kernels (each lookup would read them all).
        let (mut constructors, mut destructors) = (false, false);
        for (name, _) in elf_image.as_ref().map(elf::Image::symbols).unwrap_or_default() {
            constructors |= name == IMAGE_CONSTRUCTORS.to_bytes();
            destructors |= name == IMAGE_DESTRUCTORS.to_bytes();
        }
        images.push(LoadedImage {
            image_start,
            addresses: resolved.addresses,
            kernels: resolved.kernels,
            module,
            server: services,
            destructors,
        });
        // The constructors run with the image in place (their host calls are served through its
        // server) and the list unlocked (a device lost meanwhile retires the servers it lists).
        drop(images);
        if constructors {
            if let Err(e) = self.run_image_kernel(device, image_start, IMAGE_CONSTRUCTORS) {
                let image = {
                    let mut images = lock(&device.images);
                    let at = images.iter().position(|i| i.image_start == image_start);
                    at.map(|at| images.remove(at))
                };
                if let Some(mut image) = image {
                    image.destructors = false; // nothing was constructed
                    if let Err(unload) = self.unload(device, image) {
                        log::device_info(device.index, format_args!("unloading a failed image: {unload}"));
                    }
                }
                return Err(e);
            }
        }
        Ok(LoadedEntries {
            addresses,
            already_loaded: false,
        })
    }

    /// Runs the kernel `name` of the loaded image at `image_start` (its global constructors or
    /// destructors) as LLVM 17 and later plugins do: one team of one thread, waited for, its host
    /// calls served meanwhile.
    fn run_image_kernel(&self, device: &Device<B>, image_start: usize, name: &CStr) -> Result<()> {
        let kernel = {
            let images = lock(&device.images);
            let image = images
                .iter()
                .find(|i| i.image_start == image_start)
                .ok_or_else(|| Error::InvalidArg("the image is no longer loaded".into()))?;
            self.backend.kernel(device.index, &image.module, name)?
        };
        self.run_one_thread(device, &kernel.kernel, name)
    }

    /// Runs `kernel` (`name`, for messages) with no arguments on one thread and waits for it.
    fn run_one_thread(&self, device: &Device<B>, kernel: &B::Kernel, name: &CStr) -> Result<()> {
        let geometry = LaunchGeometry {
            teams: 1,
            threads: 1,
            dynamic_shared_bytes: 0,
        };
        self.with_queue(device, QueueSource::Local, |slot| {
            // SAFETY: the kernels of global constructors and destructors take no arguments.
            unsafe { self.start_kernel(device, slot, kernel, name, &[], geometry, false) }
        })
        .context(|| format!("running the image's {}", name.to_string_lossy()))
    }

    /// Starts `kernel` (`name`, for messages) on `slot`'s queue, counting it in flight first when its
    /// device serves host calls.
    ///
    /// # Safety
    /// As for [`Backend::launch`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn start_kernel(
        &self,
        device: &Device<B>,
        slot: &QueueSlot<B>,
        kernel: &B::Kernel,
        name: &CStr,
        args: &[*mut c_void],
        geometry: LaunchGeometry,
        nowait: bool,
    ) -> Result<()> {
        // Host-calling launches hold the gate shared until their kernel is counted in flight, so
        // that the device heap grows (holding it exclusively) only while none is in flight.
        let _gate = if device.uses_rpc() {
            rpc_link::before_host_calling_launch(device)?;
            let gate = crate::util::sync::read(&device.rpc_launch_gate);
            HostServices::kernel_started()?;
            slot.start_rpc_kernel(device, name);
            Some(gate)
        } else {
            None
        };
        // SAFETY: forwarded from this function's contract.
        unsafe {
            self.backend
                .launch(device.index, kernel, args, geometry, nowait, &slot.queue)
        }
        .context(|| format!("launching kernel {}", name.to_string_lossy()))
    }

    /// Everything between loading a module and publishing its kernels: device environment, entries,
    /// host services.
    fn prepare(
        &self,
        device: &Device<B>,
        module: &B::Module,
        elf_image: Option<&elf::Image>,
        entries: &[HostEntry],
        limits: &crate::backend::DeviceLimits,
    ) -> Result<(image_loading::Resolved<B>, Option<ImageServer>)> {
        match image_loading::device_environment_target(self.backend, device.index, module)
            .context(|| "looking up the device environment")?
        {
            Some(Ok(addr)) => {
                let env = DeviceEnvironment::new(&self.config, self.devices.len(), device.index);
                self.write_device(device, addr as usize, &env.to_bytes())
                    .context(|| "writing the device environment")?;
            }
            Some(Err(size)) => log::device_info(
                device.index,
                format_args!(
                    "the image's {} has {size} bytes, not LLVM 16's 16; not written",
                    image_loading::DEVICE_ENVIRONMENT_SYMBOL.to_string_lossy()
                ),
            ),
            None => {}
        }
        let resolved = image_loading::resolve_entries(
            self.backend,
            device.index,
            module,
            elf_image,
            entries,
            limits,
            &self.config,
        )?;
        if self.requires_flags.load(Ordering::Relaxed) & REQUIRES_UNIFIED_SHARED_MEMORY != 0 {
            self.share_globals_with_the_host(device, entries, &resolved.addresses, limits)?;
        }
        let services = rpc_link::attach(self, device, module, elf_image)?;
        Ok((resolved, services))
    }

    /// Under `requires unified_shared_memory`, device code uses the host's copy of every global, as
    /// libomptarget 16's generic plugin arranges (`registerGlobalOffloadEntry`): each global of the
    /// image gets the host global's current bytes, which for clang's `<name>_decl_tgt_ref_ptr` of a
    /// `declare target` variable is the host variable's address. A device that cannot read the host's
    /// memory is named in an error at each such image's load, since its kernels would fault on the first
    /// host address.
    fn share_globals_with_the_host(
        &self,
        device: &Device<B>,
        entries: &[HostEntry],
        addresses: &[usize],
        limits: &crate::backend::DeviceLimits,
    ) -> Result<()> {
        if !limits.reads_host_memory {
            log::error(format_args!(
                "device {}: the program requires unified_shared_memory, but this device cannot read the \
                 host's memory (no pageable memory access); its target regions will fault on host \
                 addresses. Run it on a device that offers it, or drop the requires directive.",
                device.index
            ));
        }
        for (entry, &address) in entries.iter().zip(addresses).filter(|(e, _)| e.size > 0) {
            let what = || format!("the host's value of global '{}'", entry.name.to_string_lossy());
            let bytes = crate::util::foreign_memory::read_bytes(&what(), entry.host_addr, entry.size)?;
            self.write_device(device, address, &bytes)
                .context(|| format!("writing {} (unified shared memory)", what()))?;
        }
        Ok(())
    }

    /// Unloads one image: its kernels leave the kernel map first, so that a stale entry address is
    /// refused rather than launched; its global destructors run; its RPC server goes before its module
    /// (whose memory holds the server's client). Tries each step; returns the first failure.
    fn unload(&self, device: &Device<B>, image: LoadedImage<B>) -> Result<()> {
        {
            let mut kernels = write(&device.kernels);
            for &kernel in &image.kernels {
                kernels.remove(&(kernel as *const _ as usize));
            }
        }
        // Its global destructors first, while its host services still serve them.
        let destroyed = if image.destructors {
            self.backend
                .kernel(device.index, &image.module, IMAGE_DESTRUCTORS)
                .and_then(|kernel| self.run_one_thread(device, &kernel.kernel, IMAGE_DESTRUCTORS))
        } else {
            Ok(())
        };
        let detached = rpc_link::detach(device, image.server);
        let unloaded = self.backend.unload_module(device.index, image.module);
        destroyed.and(detached).and(unloaded)
    }

    /// Waits for all outstanding work on every device.
    fn drain(&self) -> Result<()> {
        let mut first_error = None;
        for device in self.devices.iter().filter(|d| d.state() == DeviceState::Ready) {
            for slot in device.queues.in_use() {
                if let Err(e) = self.backend.synchronize(device.index, &slot.queue) {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Releases everything a device holds, in order: its images (each with its RPC server), cached and
    /// pinned memory, its events and queues, then the device itself. Tries every step; returns the first
    /// failure.
    fn teardown(&self, device: &Device<B>) -> Result<()> {
        let _lifecycle = lock(&device.lifecycle);
        if device.state() != DeviceState::Ready {
            return Ok(());
        }
        let mut first_error: Option<Error> = None;
        let mut note = |r: Result<()>| {
            if let Err(e) = r {
                first_error.get_or_insert(e);
            }
        };
        let images = std::mem::take(&mut *lock(&device.images));
        for image in images {
            note(self.unload(device, image));
        }
        note(rpc_link::release_heap(device));
        if let Some(manager) = device.memory_manager.get() {
            manager.release_all(|ptr| {
                // SAFETY: cached blocks were allocated by the backend as device memory, and were freed
                // by the program (so nothing uses them).
                note(unsafe { self.backend.free(device.index, ptr, AllocKind::Device) });
            });
        }
        for start in device.pinned.drain_locked() {
            note(self.backend.unlock_host_memory(device.index, start));
        }
        note(
            device
                .events
                .teardown(|e| self.backend.destroy_event(device.index, &e.event)),
        );
        note(device.queues.teardown(|q| {
            q.end_rpc_kernels(device);
            self.backend.destroy_queue(device.index, &q.queue)
        }));
        note(self.backend.deinit_device(device.index));
        device.set_state(DeviceState::TornDown);
        log::device_info(device.index, "released (its images, queues, events and host services)");
        first_error.map_or(Ok(()), Err)
    }

    /// A copy between the host and device `id`, on the queue `queue` names.
    ///
    /// # Safety
    /// `dst` and `src` are valid for `size` bytes, on the sides `direction` says, until the copy is done
    /// (for a queued copy, until the queue is synchronised).
    #[inline(always)]
    unsafe fn copy(
        &self,
        direction: Direction,
        id: i32,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: Option<QueueField>,
    ) -> Result<()> {
        let device = self.ready(id)?;
        if size == 0 {
            return Ok(());
        }
        let source = queue.map_or(QueueSource::Local, QueueSource::Caller);
        self.with_queue(device, source, |slot| {
            // SAFETY: forwarded from this function's contract; a local queue is waited for.
            unsafe {
                match direction {
                    Direction::ToDevice => self.backend.copy_to_device(device.index, dst, src, size, &slot.queue),
                    Direction::ToHost => self.backend.copy_to_host(device.index, dst, src, size, &slot.queue),
                }
            }
        })
    }

    fn event(&self, device: &Device<B>, handle: *mut c_void) -> Result<Item<EventSlot<B>>> {
        device.events.get(handle as usize)
    }
}

impl<B: Backend> PluginApi for Core<B> {
    fn device_count(&self) -> usize {
        self.devices.len()
    }

    fn is_valid_image(&self, header: &[u8], image_len: usize, arch: Option<&str>) -> bool {
        self.backend.is_compatible_image(header, image_len, arch)
    }

    fn init_requires(&self, flags: i64) -> i64 {
        self.requires_flags.store(flags, Ordering::Relaxed);
        flags
    }

    fn init_device(&self, id: i32) -> Result<()> {
        let device = self.device(id)?;
        self.initialize(device)
    }

    fn load_image(&self, id: i32, image_start: usize, bytes: &[u8], entries: &[HostEntry]) -> Result<LoadedEntries> {
        let device = self.ready(id)?;
        self.load(device, image_start, bytes, entries)
    }

    fn register_library(&self) {
        self.libraries.fetch_add(1, Ordering::AcqRel);
    }

    fn unregister_library(&self, ranges: &[(usize, usize)]) -> Result<Vec<(usize, usize)>> {
        let _ = self
            .libraries
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| Some(n.saturating_sub(1)));
        let inside = |start: usize| ranges.iter().any(|&(begin, end)| (begin..end).contains(&start));
        let mut unloaded = Vec::new();
        let mut first_error = None;
        for device in &self.devices {
            let gone: Vec<LoadedImage<B>> = {
                let mut images = lock(&device.images);
                let (gone, kept) = std::mem::take(&mut *images)
                    .into_iter()
                    .partition(|i| inside(i.image_start));
                *images = kept;
                gone
            };
            for image in gone {
                unloaded.push((device.index, image.image_start));
                if let Err(e) = self.unload(device, image) {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(unloaded), Err)
    }

    fn deinit(&self) -> Result<bool> {
        if HostServices::this_thread_is_serving() {
            // A device called `exit`, and libc's server is ending the process from this thread; the
            // kernel that called it never returns, so waiting for it would hang.
            return Ok(false);
        }
        // libomptarget calls this once per library it unregisters, before `unregister_lib`: only the
        // last library's call waits for the devices and tears down.
        if self.libraries.load(Ordering::Acquire) > 1 {
            return Ok(false);
        }
        // Teardown goes ahead even if waiting failed: the process is ending either way.
        let mut first_error = self.drain().err();
        HostServices::report_at_exit();
        for device in &self.devices {
            if let Err(e) = self.teardown(device) {
                first_error.get_or_insert(e);
            }
        }
        if let Err(e) = self.backend.release() {
            first_error.get_or_insert(e);
        }
        first_error.map_or(Ok(true), Err)
    }

    fn alloc(&self, id: i32, size: usize, kind: AllocKind) -> Result<*mut c_void> {
        let device = self.ready(id)?;
        if size == 0 {
            return Err(Error::InvalidArg("cannot allocate 0 bytes".into()));
        }
        let backend = self.backend;
        let manager = device
            .memory_manager
            .get()
            .filter(|m| matches!(kind, AllocKind::Device | AllocKind::Default) && m.manages(size));
        let ptr = match manager {
            Some(manager) => manager.allocate(
                size,
                |size| backend.alloc(device.index, size, AllocKind::Device),
                |cached| {
                    // SAFETY: a cached block was allocated as device memory and freed by the program.
                    let _ = unsafe { backend.free(device.index, cached, AllocKind::Device) };
                },
            )?,
            None => backend.alloc(device.index, size, kind)?,
        };
        if kind == AllocKind::Host {
            device.pinned.add_allocation(ptr, size);
        }
        lock(&device.allocations).insert(
            ptr as usize,
            Allocation {
                kind: if manager.is_some() { AllocKind::Device } else { kind },
                size,
                recycled: manager.is_some(),
            },
        );
        Ok(ptr)
    }

    fn free(&self, id: i32, addr: usize) -> Result<()> {
        let device = self.ready(id)?;
        let ptr = addr as *mut c_void;
        let allocation = {
            let mut records = lock(&device.allocations);
            let Some(&allocation) = records.get(&addr) else {
                return Err(Error::UnknownHandle {
                    what: "allocation",
                    addr,
                });
            };
            if allocation.kind == AllocKind::Host {
                device.pinned.remove_allocation(ptr)?;
            }
            records.remove(&addr);
            allocation
        };
        match device.memory_manager.get() {
            Some(manager) if allocation.recycled => {
                manager.recycle(ptr, allocation.size);
                Ok(())
            }
            // SAFETY: `addr` was in this device's allocation records, so `alloc` returned it with this
            // kind and it was not freed since; it has just been removed, so it cannot be freed twice.
            _ => unsafe { self.backend.free(device.index, ptr, allocation.kind) },
        }
    }

    unsafe fn submit(
        &self,
        id: i32,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: Option<QueueField>,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.copy(Direction::ToDevice, id, dst, src, size, queue) }
    }

    unsafe fn retrieve(
        &self,
        id: i32,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: Option<QueueField>,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.copy(Direction::ToHost, id, dst, src, size, queue) }
    }

    fn can_exchange(&self, src: i32, dst: i32) -> Result<bool> {
        let (s, d) = (self.device(src)?, self.device(dst)?);
        Ok(self.backend.can_exchange(s.index, d.index))
    }

    unsafe fn exchange(
        &self,
        src: i32,
        src_ptr: *const c_void,
        dst: i32,
        dst_ptr: *mut c_void,
        size: usize,
        queue: Option<QueueField>,
    ) -> Result<()> {
        let source_device = self.ready(src)?;
        let destination = self.ready(dst)?;
        if !self.backend.can_exchange(source_device.index, destination.index) {
            return Err(Error::Unsupported(format!(
                "device {src} cannot copy to device {dst} directly"
            )));
        }
        if size == 0 {
            return Ok(());
        }
        let source = queue.map_or(QueueSource::Local, QueueSource::Caller);
        self.with_queue(source_device, source, |slot| {
            // SAFETY: forwarded from this function's contract; a local queue is waited for.
            unsafe {
                self.backend.copy_between_devices(
                    source_device.index,
                    src_ptr,
                    destination.index,
                    dst_ptr,
                    size,
                    &slot.queue,
                )
            }
        })
    }

    unsafe fn launch(
        &self,
        id: i32,
        entry: usize,
        args: &[*mut c_void],
        request: &LaunchRequest,
        queue: Option<QueueField>,
    ) -> Result<()> {
        let device = self.ready(id)?;
        let kernel = device.kernel(entry)?;
        let limits = device.limits()?;
        if args.len() > limits.max_kernel_args {
            return Err(Error::InvalidArg(format!(
                "kernel {} gets {} arguments; the device takes at most {}",
                kernel.name.to_string_lossy(),
                args.len(),
                limits.max_kernel_args
            )));
        }
        let geometry = launch::geometry(kernel.mode, &kernel.limits, request);
        let source = queue.map_or(QueueSource::Local, QueueSource::Caller);
        self.with_queue(device, source, |slot| {
            if log::info_enabled(log::INFO_PLUGIN) {
                log::device_info(
                    device.index,
                    format_args!(
                        "Launching kernel {} with {} blocks and {} threads in {} mode{}",
                        kernel.name.to_string_lossy(),
                        geometry.teams,
                        geometry.threads,
                        kernel.mode.name(),
                        if request.nowait { " (nowait)" } else { "" }
                    ),
                );
            }
            slot.note_launch(entry);
            // SAFETY: `kernel` is a registered kernel of this device; the arguments are forwarded from
            // this function's contract.
            unsafe {
                self.start_kernel(
                    device,
                    slot,
                    &kernel.kernel,
                    &kernel.name,
                    args,
                    geometry,
                    request.nowait,
                )
            }
        })
    }

    fn synchronize(&self, id: i32, queue: QueueField) -> Result<()> {
        let device = self.ready(id)?;
        if queue.is_null() {
            return Ok(());
        }
        let slot = device.queue(*queue)?;
        let result = self.finish_queue(device, slot, true);
        *queue = std::ptr::null_mut();
        result
    }

    fn query_async(&self, id: i32, queue: QueueField) -> Result<()> {
        let device = self.ready(id)?;
        if queue.is_null() {
            return Ok(());
        }
        let slot = device.queue(*queue)?;
        match self.backend.is_idle(device.index, &slot.queue) {
            // Idle: collect the outcome of its work, as synchronising would.
            Ok(true) => {
                let result = self.finish_queue(device, slot, true);
                *queue = std::ptr::null_mut();
                result
            }
            Ok(false) => Ok(()),
            // The driver reports the queue's work failed: as the stock plugin does, the queue goes
            // back and the async info forgets it, so that libomptarget does not query it for ever.
            Err(e) => {
                let e = self.queue_failed(device, &slot, e);
                if let Err(release) = self.finish_queue(device, slot, false) {
                    log::device_info(device.index, format_args!("releasing a failed queue: {release}"));
                }
                *queue = std::ptr::null_mut();
                Err(e)
            }
        }
    }

    fn create_event(&self, id: i32) -> Result<*mut c_void> {
        let device = self.ready(id)?;
        let backend = self.backend;
        let event = device
            .events
            .acquire(|| Ok(EventSlot::new(backend, backend.create_event(device.index)?)))?;
        Ok(event.handle() as *mut c_void)
    }

    fn record_event(&self, id: i32, event: *mut c_void, queue: QueueField) -> Result<()> {
        let device = self.ready(id)?;
        let event = self.event(device, event)?;
        self.with_queue(device, QueueSource::Caller(queue), |slot| {
            self.backend.record_event(device.index, &event.event, &slot.queue)
        })
    }

    fn wait_event(&self, id: i32, event: *mut c_void, queue: QueueField) -> Result<()> {
        let device = self.ready(id)?;
        let event = self.event(device, event)?;
        self.with_queue(device, QueueSource::Caller(queue), |slot| {
            self.backend.wait_event(device.index, &event.event, &slot.queue)
        })
    }

    fn sync_event(&self, id: i32, event: *mut c_void) -> Result<()> {
        let device = self.ready(id)?;
        let event = self.event(device, event)?;
        self.backend.sync_event(device.index, &event.event)
    }

    fn destroy_event(&self, id: i32, event: *mut c_void) -> Result<()> {
        let device = self.ready(id)?;
        device.events.release_handle(event as usize)
    }

    fn lock_host(&self, id: i32, ptr: *mut c_void, size: usize) -> Result<*mut c_void> {
        let device = self.ready(id)?;
        device
            .pinned
            .lock(ptr, size, || self.backend.lock_host_memory(device.index, ptr, size))
    }

    fn unlock_host(&self, id: i32, ptr: *mut c_void) -> Result<()> {
        let device = self.ready(id)?;
        match device.pinned.unlock(ptr)? {
            Unlock::StillUsed => Ok(()),
            Unlock::Unpin(start) => self.backend.unlock_host_memory(device.index, start),
        }
    }

    fn interop_queue(&self, id: i32) -> Result<*mut c_void> {
        let device = self.ready(id)?;
        Ok(self.acquire_queue(device)?.handle() as *mut c_void)
    }

    fn native_device(&self, id: i32) -> Result<NativeDevice> {
        let device = self.ready(id)?;
        Ok(self.backend.native_device(device.index))
    }

    fn describe_device(&self, id: i32) -> Result<Vec<(&'static str, String)>> {
        let device = self.device(id)?;
        let mut lines = self.backend.describe_device(device.index);
        lines.push(("Images loaded", lock(&device.images).len().to_string()));
        Ok(lines)
    }
}

/// The RPC wiring's view of the core: its backend, its settings and its own waited-for copies.
impl<B: Backend> CoreAccess<B> for Core<B> {
    /// Copies host bytes to the device and waits, for the core's own writes (device environment, RPC
    /// client).
    fn write_device(&self, device: &Device<B>, at: usize, bytes: &[u8]) -> Result<()> {
        self.with_queue(device, QueueSource::Local, |slot| {
            // SAFETY: `at` is a device address of at least `bytes.len()` bytes (the caller's symbol),
            // and `bytes` outlives the local queue, which is waited for before this returns.
            unsafe {
                self.backend.copy_to_device(
                    device.index,
                    at as *mut c_void,
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    &slot.queue,
                )
            }
        })
    }

    /// Copies device bytes to the host and waits, for the core's own reads (the RPC client pointer).
    fn read_device(&self, device: &Device<B>, dst: &mut [u8], at: usize) -> Result<()> {
        self.with_queue(device, QueueSource::Local, |slot| {
            // SAFETY: `at` is a device address of at least `dst.len()` bytes (the caller's symbol),
            // and `dst` outlives the local queue, which is waited for before this returns.
            unsafe {
                self.backend.copy_to_host(
                    device.index,
                    dst.as_mut_ptr().cast(),
                    at as *mut c_void,
                    dst.len(),
                    &slot.queue,
                )
            }
        })
    }

    /// The backend, for the RPC wiring.
    fn backend(&self) -> &'static B {
        self.backend
    }

    /// The settings.
    fn config(&self) -> &Config {
        &self.config
    }
}
