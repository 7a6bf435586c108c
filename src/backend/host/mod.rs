//! The host CPU as an offload device (`libomptarget.rtl.x86_64`): images are x86-64 shared objects
//! loaded into this process, memory is the process heap, and a kernel is a plain function call.

pub mod elf_check;
pub mod invoke;
pub mod queue;
#[cfg(test)]
mod tests;

use std::ffi::{c_void, CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use self::queue::HostHandle;
use super::{AllocKind, Backend, DeviceLimits, ExecMode, GlobalSymbol, KernelSymbol, LaunchGeometry, NativeDevice};
use crate::util::config::{BackendKind, Config};
use crate::util::error::{Error, Result};
use crate::util::fault;

/// The host backend: `devices` independent copies of every image in one address space.
pub struct HostBackend {
    devices: usize,
    /// Lanes per RPC port: 1, or a simulated warp's 32 or 64 for testing the GPU client on the host.
    rpc_lanes: u32,
}

impl HostBackend {
    /// The backend the settings ask for: `OMPRPC_HOST_DEVICES` devices and `OMPRPC_HOST_RPC_LANES`
    /// lanes per RPC port.
    pub fn from_config(config: &Config) -> HostBackend {
        HostBackend {
            devices: config.host_devices,
            rpc_lanes: config.host_rpc_lanes,
        }
    }
}

/// Every copy on the host device, in any direction: memory is shared, and work runs when submitted.
///
/// # Safety
/// Both ranges are valid for `size` bytes (they may overlap).
unsafe fn copy_now(dst: *mut c_void, src: *const c_void, size: usize) -> Result<()> {
    // SAFETY: forwarded from this function's contract; `copy` is memmove.
    unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), size) };
    Ok(())
}

/// A kernel of a host image: the outlined region's address.
pub struct HostKernel(*const c_void);

// SAFETY: a function address in a loaded image; calling it from any thread is what OpenMP does.
unsafe impl Send for HostKernel {}
// SAFETY: as above; never mutated.
unsafe impl Sync for HostKernel {}

fn hardware_threads() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as u32
}

fn memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

impl Backend for HostBackend {
    type Module = HostModule;
    type Kernel = HostKernel;
    type Queue = HostHandle;
    type Event = HostHandle;

    fn kind(&self) -> BackendKind {
        BackendKind::Host
    }

    fn device_count(&self) -> usize {
        self.devices
    }

    fn device_count_reason(&self) -> String {
        // The count came from the settings; only OMPRPC_HOST_DEVICES makes it differ from the default.
        if self.devices != crate::util::config::DEFAULT_HOST_DEVICES {
            format!("{} host devices, as OMPRPC_HOST_DEVICES asks", self.devices)
        } else {
            format!(
                "{} host devices, the stock plugin's number (OMPRPC_HOST_DEVICES changes it)",
                self.devices
            )
        }
    }

    fn is_compatible_image(&self, header: &[u8], image_len: usize, _arch: Option<&str>) -> bool {
        elf_check::check_x86_64_shared_object(header, image_len).is_ok()
    }

    fn init_device(&self, _device: usize) -> Result<DeviceLimits> {
        // Like the stock plugin: a kernel is one call on one thread, which starts OpenMP's teams and
        // threads itself through libomp.
        Ok(DeviceLimits {
            lane_size: self.rpc_lanes,
            max_threads: 1,
            max_teams: 1,
            default_threads: 1,
            default_teams: 1,
            multiprocessors: hardware_threads(),
            memory_bytes: memory_bytes(),
            default_exec_mode: ExecMode::Generic,
            max_kernel_args: invoke::MAX_KERNEL_ARGS,
            // Every hardware thread may run a device thread that waits on a port; twice that leaves
            // room, and the server's pass over the ports stays short.
            rpc_ports: (hardware_threads() * 2).next_power_of_two().clamp(16, 256),
            recycle_allocations: false,
            team_caps_apply: true,
            reads_host_memory: true,
        })
    }

    fn deinit_device(&self, _device: usize) -> Result<()> {
        Ok(())
    }

    fn load_module(&self, device: usize, image: &[u8]) -> Result<HostModule> {
        elf_check::check_x86_64_shared_object(image, image.len()).map_err(|why| Error::BadImage(why.into()))?;
        HostModule::load(device, image)
    }

    fn unload_module(&self, _device: usize, module: HostModule) -> Result<()> {
        module.unload()
    }

    fn kernel(&self, _device: usize, module: &HostModule, name: &CStr) -> Result<KernelSymbol<HostKernel>> {
        Ok(KernelSymbol {
            kernel: HostKernel(module.symbol(name)?),
            max_threads: None,
        })
    }

    fn global(&self, _device: usize, module: &HostModule, name: &CStr) -> Result<GlobalSymbol> {
        let addr = module.symbol(name)?;
        Ok(GlobalSymbol {
            addr,
            size: symbol_size(addr).unwrap_or(0),
        })
    }

    fn module_contains(&self, _device: usize, module: &HostModule, addr: usize, len: usize) -> Option<bool> {
        Some(module.writable_segment_contains(addr, len))
    }

    fn reserves_device_heap(&self) -> bool {
        false
    }

    /// The host device's code runs on host threads of this process: it rings the serving threads'
    /// doorbell itself (an atomic add, and a futex wake when a thread sleeps).
    fn device_doorbell(
        &self,
        _device: usize,
        doorbell: &'static crate::util::doorbell::Doorbell,
    ) -> Result<Option<u64>> {
        Ok(Some(doorbell.address()))
    }

    fn alloc(&self, _device: usize, size: usize, _kind: AllocKind) -> Result<*mut c_void> {
        // SAFETY: malloc has no preconditions; a null result is handled below.
        let ptr = fault::call_or("malloc", std::ptr::null_mut(), || unsafe { libc::malloc(size) });
        if ptr.is_null() {
            return Err(Error::OutOfMemory { size });
        }
        Ok(ptr)
    }

    unsafe fn free(&self, _device: usize, ptr: *mut c_void, _kind: AllocKind) -> Result<()> {
        // SAFETY: the caller passes a pointer from `alloc` not freed since (this trait method's contract).
        unsafe { libc::free(ptr) };
        Ok(())
    }

    unsafe fn copy_to_device(
        &self,
        _device: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        _queue: &HostHandle,
    ) -> Result<()> {
        // SAFETY: forwarded from the trait method's contract.
        unsafe { copy_now(dst, src, size) }
    }

    unsafe fn copy_to_host(
        &self,
        _device: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        _queue: &HostHandle,
    ) -> Result<()> {
        // SAFETY: as in `copy_to_device`.
        unsafe { copy_now(dst, src, size) }
    }

    fn can_exchange(&self, _src_device: usize, _dst_device: usize) -> bool {
        // Every host device lives in this process's memory.
        true
    }

    unsafe fn copy_between_devices(
        &self,
        _src_device: usize,
        src: *const c_void,
        _dst_device: usize,
        dst: *mut c_void,
        size: usize,
        _queue: &HostHandle,
    ) -> Result<()> {
        // SAFETY: as in `copy_to_device`.
        unsafe { copy_now(dst, src, size) }
    }

    unsafe fn launch(
        &self,
        _device: usize,
        kernel: &HostKernel,
        args: &[*mut c_void],
        _geometry: LaunchGeometry,
        _asynchronous: bool,
        _queue: &HostHandle,
    ) -> Result<()> {
        // SAFETY: `kernel` is the image's symbol for an outlined region, which takes one pointer-sized
        // argument per mapped variable; the core checked the count against `max_kernel_args`.
        // It runs now, on the calling thread, `nowait` or not (see the queue module).
        unsafe { invoke::call_with_pointer_args(kernel.0, args) };
        Ok(())
    }

    fn create_queue(&self, _device: usize) -> Result<HostHandle> {
        Ok(HostHandle::new())
    }

    fn destroy_queue(&self, _device: usize, _queue: &HostHandle) -> Result<()> {
        Ok(())
    }

    fn queue_handle(&self, queue: &HostHandle) -> *mut c_void {
        queue.handle()
    }

    // Work ran when it was submitted (see the queue module): there is never anything to wait for.
    fn synchronize(&self, _device: usize, _queue: &HostHandle) -> Result<()> {
        Ok(())
    }

    fn is_idle(&self, _device: usize, _queue: &HostHandle) -> Result<bool> {
        Ok(true)
    }

    fn create_event(&self, _device: usize) -> Result<HostHandle> {
        Ok(HostHandle::new())
    }

    fn destroy_event(&self, _device: usize, _event: &HostHandle) -> Result<()> {
        Ok(())
    }

    fn event_handle(&self, event: &HostHandle) -> *mut c_void {
        event.handle()
    }

    fn record_event(&self, _device: usize, _event: &HostHandle, _queue: &HostHandle) -> Result<()> {
        Ok(())
    }

    fn wait_event(&self, _device: usize, _event: &HostHandle, _queue: &HostHandle) -> Result<()> {
        Ok(())
    }

    fn sync_event(&self, _device: usize, _event: &HostHandle) -> Result<()> {
        Ok(())
    }

    fn lock_host_memory(&self, _device: usize, ptr: *mut c_void, _size: usize) -> Result<*mut c_void> {
        // The device shares the host's memory: nothing to pin, and the address is unchanged.
        Ok(ptr)
    }

    fn unlock_host_memory(&self, _device: usize, _ptr: *mut c_void) -> Result<()> {
        Ok(())
    }

    fn native_device(&self, _device: usize) -> NativeDevice {
        // The host has no driver context or device handle, as with the stock plugin.
        NativeDevice {
            context: std::ptr::null_mut(),
            device: std::ptr::null_mut(),
        }
    }

    fn describe_device(&self, device: usize) -> Vec<(&'static str, String)> {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let memory = match memory_bytes() {
            0 => "unknown".to_string(),
            bytes => format!("{} MiB", bytes >> 20),
        };
        vec![
            ("Device", format!("host device {device} of {}", self.devices)),
            ("Backend", "host (x86_64), kernels run in this process".into()),
            ("CPU", model),
            ("Hardware threads", hardware_threads().to_string()),
            ("Memory", memory),
            ("Memory shared with the host", "yes (same address space)".into()),
        ]
    }
}

/// glibc's `RTLD_DL_SYMENT`: `dladdr1` returns the symbol's ELF entry.
const RTLD_DL_SYMENT: libc::c_int = 1;

/// The size of the symbol at `addr` in a loaded object, from its dynamic symbol table.
fn symbol_size(addr: *mut c_void) -> Option<usize> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let mut sym: *mut c_void = std::ptr::null_mut();
    // SAFETY: `info` and `sym` are writable; dladdr1 only inspects the loader's tables.
    let found = unsafe { libc::dladdr1(addr, info.as_mut_ptr(), &mut sym, RTLD_DL_SYMENT) };
    if found == 0 || sym.is_null() {
        return None;
    }
    // SAFETY: dladdr1 succeeded with RTLD_DL_SYMENT, so `sym` points to the symbol's Elf64_Sym in the
    // object's (mapped) dynamic symbol table.
    let sym = unsafe { &*sym.cast::<libc::Elf64_Sym>() };
    usize::try_from(sym.st_size).ok()
}

/// An image loaded from memory: a memfd holding the bytes, `dlopen`ed through `/proc/self/fd/N`.
///
/// The memfd stays open for the module's life. glibc recognises an already loaded object by its path,
/// so closing it would let the next image reuse the number, the path and the *old* object, and the
/// per-device copies of globals would silently alias.
pub struct HostModule {
    handle: *mut c_void,
    _memfd: OwnedFd,
    path: String,
}

// SAFETY: a dlopen handle may be used from any thread; dlsym is thread-safe.
unsafe impl Send for HostModule {}
// SAFETY: as above; the module is never mutated after loading.
unsafe impl Sync for HostModule {}

impl HostModule {
    fn load(device: usize, image: &[u8]) -> Result<HostModule> {
        let name = CString::new(format!("omprpc-host-image-device{device}")).expect("no NUL in name");
        let fd = if fault::injected("memfd_create") {
            // What the call does when the process has no descriptor left.
            // SAFETY: errno is this thread's.
            unsafe { *libc::__errno_location() = libc::EMFILE };
            -1
        } else {
            // SAFETY: `name` is a valid C string; the flags are defined by the kernel.
            unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) }
        };
        if fd < 0 {
            return Err(Error::last_os("memfd_create"));
        }
        // SAFETY: `fd` was just returned by memfd_create and nothing else owns it.
        let memfd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut file = std::fs::File::from(memfd.try_clone().map_err(|e| Error::Os {
            call: "dup",
            detail: e.to_string(),
        })?);
        let full_disk = Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        fault::call_or("write", full_disk, || std::io::Write::write_all(&mut file, image)).map_err(|e| Error::Os {
            call: "writing the image to a memfd",
            detail: e.to_string(),
        })?;
        drop(file);
        let path = format!("/proc/self/fd/{}", memfd.as_raw_fd());
        // An injected fault opens a path that does not exist, so that dlopen fails for real.
        let open_path = if fault::injected("dlopen") {
            "/proc/self/fd/-1"
        } else {
            &path
        };
        let c_path = CString::new(open_path).expect("no NUL in path");
        // SAFETY: `c_path` is a valid C string naming the memfd; the image's constructors run here, as
        // they do under the stock plugin.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(Error::BadImage(format!("dlopen: {}", dl_error())));
        }
        Ok(HostModule {
            handle,
            _memfd: memfd,
            path,
        })
    }

    /// Closes the image (its destructors run). It must be closed before its memfd: the next image would
    /// get the same descriptor number, hence the same path, and glibc would hand back this object
    /// instead of loading the new one.
    fn unload(mut self) -> Result<()> {
        let handle = std::mem::replace(&mut self.handle, std::ptr::null_mut());
        // An injected fault leaves the object open, as a real failure does.
        // SAFETY: `handle` came from dlopen and is closed once (it is replaced by null above).
        let closed = fault::call_or("dlclose", -1, || unsafe { libc::dlclose(handle) });
        if closed != 0 {
            return Err(Error::Os {
                call: "dlclose of a host image",
                detail: dl_error(),
            });
        }
        Ok(())
    }

    fn symbol(&self, name: &CStr) -> Result<*mut c_void> {
        let addr = if fault::injected_for("dlsym", name.to_bytes()) {
            std::ptr::null_mut()
        } else {
            // SAFETY: `handle` is a live dlopen handle (closed only by `unload`, which consumes the
            // module) and `name` a valid C string.
            unsafe { libc::dlsym(self.handle, name.as_ptr()) }
        };
        if addr.is_null() {
            return Err(Error::MissingSymbol {
                image: self.path.clone(),
                symbol: name.to_string_lossy().into_owned(),
            });
        }
        Ok(addr)
    }
}

/// What `dl_iterate_phdr`'s callback looks for: a loaded object by name, and a range in it.
struct SegmentQuery<'a> {
    path: &'a [u8],
    start: usize,
    end: usize,
    found: bool,
}

/// `dl_iterate_phdr`'s callback: stops (returns 1) at the object named `query.path`, noting whether
/// one of its writable loaded segments holds the range.
unsafe extern "C" fn find_writable_segment(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> libc::c_int {
    // SAFETY: `data` is the `SegmentQuery` that `writable_segment_contains` passed; `info` is the
    // loader's description of one object, valid during the callback.
    let (query, info) = unsafe { (&mut *data.cast::<SegmentQuery>(), &*info) };
    if info.dlpi_name.is_null() {
        return 0;
    }
    // SAFETY: a non-null `dlpi_name` is a NUL-terminated string of the loader's.
    if unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes() != query.path {
        return 0;
    }
    let headers = if info.dlpi_phdr.is_null() {
        &[][..]
    } else {
        // SAFETY: `dlpi_phdr` points at the object's `dlpi_phnum` program headers, mapped while loaded.
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
    };
    query.found = headers.iter().any(|h| {
        let start = (info.dlpi_addr as usize).wrapping_add(h.p_vaddr as usize);
        h.p_type == libc::PT_LOAD
            && h.p_flags & libc::PF_W != 0
            && query.start >= start
            && query.end <= start.wrapping_add(h.p_memsz as usize)
    });
    1
}

impl HostModule {
    /// Whether `[addr, addr + len)` lies in one writable loaded segment (data or bss) of this image.
    fn writable_segment_contains(&self, addr: usize, len: usize) -> bool {
        let Some(end) = addr.checked_add(len) else { return false };
        let mut query = SegmentQuery {
            path: self.path.as_bytes(),
            start: addr,
            end,
            found: false,
        };
        // SAFETY: the callback matches the type and only reads the loader's descriptions; `query`
        // outlives the call.
        unsafe { libc::dl_iterate_phdr(Some(find_writable_segment), (&mut query as *mut SegmentQuery).cast()) };
        query.found
    }
}

impl Drop for HostModule {
    /// A module dropped without `unload` (a load that failed half-way) is closed here, before its memfd,
    /// for the reason `unload` gives.
    fn drop(&mut self) {
        if !self.handle.is_null() {
            // SAFETY: `handle` came from dlopen and was not closed (`unload` nulls it).
            unsafe { libc::dlclose(self.handle) };
        }
    }
}

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl* call here.
    let text = unsafe { libc::dlerror() };
    if text.is_null() {
        "the loader gave no reason".into()
    } else {
        // SAFETY: non-null, NUL-terminated, see above.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    }
}
