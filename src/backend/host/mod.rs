//! The host CPU as an offload device (`libomptarget.rtl.x86_64`): images are x86-64 shared objects
//! loaded into this process, memory is the process heap, and a kernel is a plain function call.

pub mod elf;
pub mod invoke;
pub mod queue;

use std::ffi::{c_void, CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use self::queue::{HostEvent, HostQueue};
use super::{AllocKind, Backend, Event, LaunchBounds, Module, Queue};
use crate::plugin::config::BackendKind;
use crate::plugin::error::{Error, Result};
use crate::rpc::DeviceMemory;

/// The host backend: `devices` independent copies of every image in one address space.
pub struct HostBackend {
    devices: usize,
    /// Stack of the threads that run queued (`nowait`) kernels.
    kernel_stack_bytes: usize,
}

impl HostBackend {
    /// A backend with `devices` host devices whose queued kernels run on stacks of `kernel_stack_bytes`.
    pub fn new(devices: usize, kernel_stack_bytes: usize) -> HostBackend {
        HostBackend {
            devices,
            kernel_stack_bytes,
        }
    }
}

fn host_queue(queue: &dyn Queue) -> Result<&HostQueue> {
    queue
        .as_any()
        .downcast_ref::<HostQueue>()
        .ok_or_else(|| Error::InvalidArg("a queue of another backend was passed to the host backend".into()))
}

impl Backend for HostBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Host
    }

    fn device_count(&self) -> usize {
        self.devices
    }

    fn device_count_reason(&self) -> String {
        // The count came from the settings; only OMPRPC_HOST_DEVICES makes it differ from the default.
        if self.devices != crate::plugin::config::DEFAULT_HOST_DEVICES {
            format!("{} host devices, as OMPRPC_HOST_DEVICES asks", self.devices)
        } else {
            format!(
                "{} host devices, the stock plugin's number (OMPRPC_HOST_DEVICES changes it)",
                self.devices
            )
        }
    }

    fn is_compatible_image(&self, header: &[u8], image_len: usize) -> bool {
        elf::check_x86_64_shared_object(header, image_len).is_ok()
    }

    fn init_device(&self, _device: usize) -> Result<()> {
        Ok(())
    }

    fn load_module(&self, device: usize, image: &[u8]) -> Result<Box<dyn Module>> {
        elf::check_x86_64_shared_object(image, image.len()).map_err(|why| Error::BadImage(why.into()))?;
        Ok(Box::new(HostModule::load(device, image)?))
    }

    fn alloc(&self, _device: usize, size: usize, _kind: AllocKind) -> Result<*mut c_void> {
        // SAFETY: malloc has no preconditions; a null result is handled below.
        let ptr = unsafe { libc::malloc(size) };
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

    unsafe fn copy(
        &self,
        _device: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: Option<&dyn Queue>,
    ) -> Result<()> {
        match queue {
            Some(queue) => host_queue(queue)?.push_copy(dst, src, size),
            None => {
                // SAFETY: both ranges are valid for `size` bytes (this trait method's contract);
                // `copy` is memmove and tolerates overlap.
                unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), size) };
                Ok(())
            }
        }
    }

    unsafe fn launch(
        &self,
        _device: usize,
        function: *mut c_void,
        args: &[*mut c_void],
        _bounds: LaunchBounds,
        queue: Option<&dyn Queue>,
    ) -> Result<()> {
        if args.len() > invoke::MAX_KERNEL_ARGS {
            return Err(Error::InvalidArg(format!(
                "{} kernel arguments is more than the {} supported",
                args.len(),
                invoke::MAX_KERNEL_ARGS
            )));
        }
        match queue {
            Some(queue) => host_queue(queue)?.push_launch(function, args),
            None => {
                // SAFETY: `function` is the image's symbol for an outlined region, which takes one
                // pointer-sized argument per mapped variable (this trait method's contract).
                unsafe { invoke::call_with_pointer_args(function, args) };
                Ok(())
            }
        }
    }

    fn create_queue(&self, _device: usize) -> Result<Box<dyn Queue>> {
        Ok(Box::new(HostQueue::new(self.kernel_stack_bytes)))
    }

    fn create_event(&self, _device: usize) -> Result<Box<dyn Event>> {
        Ok(Box::new(HostEvent::default()))
    }

    fn lock_host_memory(&self, ptr: *mut c_void, _size: usize) -> Result<*mut c_void> {
        // The device shares the host's memory: nothing to pin, and the address is unchanged.
        Ok(ptr)
    }

    fn unlock_host_memory(&self, _ptr: *mut c_void) -> Result<()> {
        Ok(())
    }

    fn rpc_lane_size(&self) -> u32 {
        1
    }

    fn rpc_default_ports(&self, _device: usize) -> u32 {
        // Every hardware thread may run a device thread that waits on a port; twice that leaves room,
        // and the server's pass over the ports stays short.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        (threads * 2).next_power_of_two().clamp(16, 256)
    }

    fn rpc_memory(&self, _device: usize) -> Result<Arc<dyn DeviceMemory>> {
        Ok(Arc::new(HostMemory))
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
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let memory = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map(|kib| format!("{} MiB", kib / 1024))
            .unwrap_or_else(|| "unknown".into());
        vec![
            ("Device", format!("host device {device} of {}", self.devices)),
            ("Backend", "host (x86_64), kernels run in this process".into()),
            ("CPU", model),
            ("Hardware threads", threads.to_string()),
            ("Memory", memory),
            ("Memory shared with the host", "yes (same address space)".into()),
        ]
    }
}

/// Host memory for the RPC server: the device is this process, so every allocation is shared.
struct HostMemory;

impl DeviceMemory for HostMemory {
    fn alloc(&self, size: usize) -> Result<*mut c_void> {
        // SAFETY: malloc has no preconditions; null is handled.
        let ptr = unsafe { libc::malloc(size) };
        if ptr.is_null() {
            return Err(Error::OutOfMemory { size });
        }
        Ok(ptr)
    }

    unsafe fn free(&self, ptr: *mut c_void) {
        // SAFETY: per the trait's contract, `ptr` came from `alloc`.
        unsafe { libc::free(ptr) }
    }

    fn alloc_shared(&self, size: usize) -> Result<*mut c_void> {
        // SAFETY: calloc has no preconditions and returns zeroed memory, as the mailbox must be.
        let ptr = unsafe { libc::calloc(1, size) };
        if ptr.is_null() {
            return Err(Error::OutOfMemory { size });
        }
        Ok(ptr)
    }

    unsafe fn free_shared(&self, ptr: *mut c_void) {
        // SAFETY: per the trait's contract, `ptr` came from `alloc_shared`.
        unsafe { libc::free(ptr) }
    }
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
        // SAFETY: `name` is a valid C string; the flags are defined by the kernel.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::last_os("memfd_create"));
        }
        // SAFETY: `fd` was just returned by memfd_create and nothing else owns it.
        let memfd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut file = std::fs::File::from(memfd.try_clone().map_err(|e| Error::Os {
            call: "dup",
            detail: e.to_string(),
        })?);
        std::io::Write::write_all(&mut file, image).map_err(|e| Error::Os {
            call: "writing the image to a memfd",
            detail: e.to_string(),
        })?;
        drop(file);
        let path = format!("/proc/self/fd/{}", memfd.as_raw_fd());
        let c_path = CString::new(path.clone()).expect("no NUL in path");
        // SAFETY: `c_path` is a valid C string naming the memfd; the image's constructors run here, as
        // they do under the stock plugin.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(Error::BadImage(dl_error()));
        }
        Ok(HostModule {
            handle,
            _memfd: memfd,
            path,
        })
    }

    fn symbol(&self, name: &CStr) -> Result<*mut c_void> {
        // SAFETY: `handle` is a live dlopen handle (never closed) and `name` a valid C string.
        let addr = unsafe { libc::dlsym(self.handle, name.as_ptr()) };
        if addr.is_null() {
            return Err(Error::MissingSymbol {
                image: self.path.clone(),
                symbol: name.to_string_lossy().into_owned(),
            });
        }
        Ok(addr)
    }
}

impl Drop for HostModule {
    /// Only a module whose load failed half-way is dropped (loaded images live as long as the
    /// process). It must be closed before its memfd: the next image would get the same descriptor
    /// number, hence the same path, and glibc would hand back this object instead of loading it.
    fn drop(&mut self) {
        // SAFETY: `handle` came from dlopen and nothing else holds it; the memfd closes after this.
        unsafe { libc::dlclose(self.handle) };
    }
}

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl* call here.
    let text = unsafe { libc::dlerror() };
    if text.is_null() {
        "dlopen failed without a reason".into()
    } else {
        // SAFETY: non-null, NUL-terminated, see above.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    }
}

impl Module for HostModule {
    fn function(&self, name: &CStr) -> Result<*mut c_void> {
        self.symbol(name)
    }

    fn global(&self, name: &CStr) -> Result<*mut c_void> {
        self.symbol(name)
    }
}
