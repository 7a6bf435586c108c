//! The interface between the ABI layer and the core: what the ABI layer hands over (an image's host
//! entries, an async info's queue field) and the object-safe [`PluginApi`] it calls, one operation per
//! entry point, so that one shared object can drive any backend chosen at run time.

use std::ffi::{c_void, CString};

use super::launch::LaunchRequest;
use crate::backend::{AllocKind, NativeDevice};
use crate::util::error::Result;

/// `__tgt_async_info::Queue` as the core sees it: the field, which holds a queue handle or NULL.
pub type QueueField<'a> = &'a mut *mut c_void;

/// One entry of an image's host table, read and copied out of the program's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostEntry {
    /// The symbol name shared by the host and the device image.
    pub name: CString,
    /// 0 for a kernel, else the size of the global.
    pub size: usize,
    /// The entry's flags (link, ctor, dtor).
    pub flags: i32,
    /// For a global, its host address (whose value is copied to the device's global under
    /// `requires unified_shared_memory`); for a kernel, the host region id.
    pub host_addr: usize,
}

#[cfg(test)]
impl HostEntry {
    /// The host entries of `c_tests/gpu/cuda_module.c`, the program behind the backends' test images:
    /// its `kernels`, then its global `counter`.
    pub fn cuda_module_entries(kernels: &[String]) -> Vec<HostEntry> {
        let kernel = |name: &String| HostEntry {
            name: CString::new(name.as_str()).unwrap(),
            size: 0,
            flags: 0,
            host_addr: 0,
        };
        let counter = HostEntry {
            name: CString::new("counter").unwrap(),
            size: 4,
            flags: 0,
            host_addr: 0,
        };
        kernels.iter().map(kernel).chain([counter]).collect()
    }

    /// The host entries of `cuda_module.c` as built into `image` (a cubin or an AMDGPU code object):
    /// its two kernels (the symbols with an `_exec_mode` byte), sorted by name, then its global; and the
    /// two kernels' names. By line number, the first is the SPMD loop (l15), the second the generic
    /// region (l20).
    pub fn cuda_module_entries_of(image: &[u8]) -> (Vec<HostEntry>, String, String) {
        let parsed = crate::util::elf::Image::parse(image).expect("an ELF image");
        let mut kernels: Vec<String> = parsed
            .symbols()
            .iter()
            .filter_map(|(name, _)| {
                std::str::from_utf8(name)
                    .ok()?
                    .strip_suffix("_exec_mode")
                    .map(String::from)
            })
            .collect();
        kernels.sort();
        assert_eq!(kernels.len(), 2, "the test program has two target regions");
        let entries = HostEntry::cuda_module_entries(&kernels);
        (entries, kernels[0].clone(), kernels[1].clone())
    }
}

/// What `load_image` produced: the device address of every entry, in the host table's order.
pub struct LoadedEntries {
    /// Device addresses, one per host entry.
    pub addresses: Vec<usize>,
    /// `true` when the image was already loaded on the device and these are the earlier addresses.
    pub already_loaded: bool,
}

/// The operations the ABI layer calls, one per entry point. Device numbers are plugin-local.
pub trait PluginApi: Send + Sync {
    /// Number of devices libomptarget may use.
    fn device_count(&self) -> usize;
    /// Whether an image is one this plugin can run (quiet on foreign images).
    fn is_valid_image(&self, header: &[u8], image_len: usize, arch: Option<&str>) -> bool;
    /// Records the program's `requires` flags.
    fn init_requires(&self, flags: i64) -> i64;
    /// Prepares device `id`.
    fn init_device(&self, id: i32) -> Result<()>;
    /// Loads an image and resolves its entries.
    fn load_image(&self, id: i32, image_start: usize, bytes: &[u8], entries: &[HostEntry]) -> Result<LoadedEntries>;
    /// A library was registered with libomptarget.
    fn register_library(&self);
    /// A library was unregistered: unloads the images that lie in `ranges` (the library's image
    /// ranges) from every device; returns the (device, image start) pairs unloaded.
    fn unregister_library(&self, ranges: &[(usize, usize)]) -> Result<Vec<(usize, usize)>>;
    /// Waits for outstanding work; when no library remains, tears everything down.
    fn deinit(&self) -> Result<bool>;
    /// Allocates `size` bytes of `kind` memory.
    fn alloc(&self, id: i32, size: usize, kind: AllocKind) -> Result<*mut c_void>;
    /// Frees an allocation of this device.
    fn free(&self, id: i32, addr: usize) -> Result<()>;
    /// Copies host to device, ordered on `queue` (a local queue, waited for, when `None`).
    ///
    /// # Safety
    /// `dst` is device memory and `src` host memory, both valid for `size` bytes until the copy is
    /// complete (for a queued copy, until the queue is synchronised).
    unsafe fn submit(
        &self,
        id: i32,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: Option<QueueField>,
    ) -> Result<()>;
    /// Copies device to host.
    ///
    /// # Safety
    /// As for `submit`, with `src` device memory and `dst` host memory.
    unsafe fn retrieve(
        &self,
        id: i32,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: Option<QueueField>,
    ) -> Result<()>;
    /// Whether `src` can copy to `dst` directly.
    fn can_exchange(&self, src: i32, dst: i32) -> Result<bool>;
    /// Copies between two devices, ordered on a queue of `src`.
    ///
    /// # Safety
    /// `src_ptr` is memory of `src` and `dst_ptr` of `dst`, both valid for `size` bytes until the copy
    /// is complete.
    unsafe fn exchange(
        &self,
        src: i32,
        src_ptr: *const c_void,
        dst: i32,
        dst_ptr: *mut c_void,
        size: usize,
        queue: Option<QueueField>,
    ) -> Result<()>;
    /// Launches the kernel whose entry address is `entry`.
    ///
    /// # Safety
    /// `args` are the kernel's arguments as libomptarget computed them; what they point to stays valid
    /// until the launch completes (for a queued launch, until the queue is synchronised).
    unsafe fn launch(
        &self,
        id: i32,
        entry: usize,
        args: &[*mut c_void],
        request: &LaunchRequest,
        queue: Option<QueueField>,
    ) -> Result<()>;
    /// Waits for the work on a queue and releases it (the field becomes NULL).
    fn synchronize(&self, id: i32, queue: QueueField) -> Result<()>;
    /// Releases the queue if its work is done; never blocks.
    fn query_async(&self, id: i32, queue: QueueField) -> Result<()>;
    /// A new event.
    fn create_event(&self, id: i32) -> Result<*mut c_void>;
    /// Records `event` after the work on `queue`.
    fn record_event(&self, id: i32, event: *mut c_void, queue: QueueField) -> Result<()>;
    /// Makes later work on `queue` wait for `event`.
    fn wait_event(&self, id: i32, event: *mut c_void, queue: QueueField) -> Result<()>;
    /// Blocks until `event` is reached.
    fn sync_event(&self, id: i32, event: *mut c_void) -> Result<()>;
    /// Gives `event` back.
    fn destroy_event(&self, id: i32, event: *mut c_void) -> Result<()>;
    /// Pins host memory for device `id`.
    fn lock_host(&self, id: i32, ptr: *mut c_void, size: usize) -> Result<*mut c_void>;
    /// Unpins host memory of device `id`.
    fn unlock_host(&self, id: i32, ptr: *mut c_void) -> Result<()>;
    /// A queue for interop: its native handle, which `synchronize` accepts and releases.
    fn interop_queue(&self, id: i32) -> Result<*mut c_void>;
    /// The driver's handles on device `id`.
    fn native_device(&self, id: i32) -> Result<NativeDevice>;
    /// Name-value lines describing device `id`.
    fn describe_device(&self, id: i32) -> Result<Vec<(&'static str, String)>>;
}
