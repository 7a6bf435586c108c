//! The exported entry points. Every function here has the same shape: check the raw arguments, call one
//! method of the generic core inside [`guard`], and let `guard` turn a failure into the entry point's
//! failure value and a one-line message.
//!
//! Device ids are plugin-local except for `data_lock`, `data_unlock`, `init_async_info` and
//! `init_device_info`, which libomptarget 16 calls with the global OpenMP device number.

use std::ffi::{c_char, c_void, CStr};

use super::memory::{read_bytes, read_c_string};
use super::types::{
    AsyncInfo, BinDesc, DeviceImage, DeviceInfo, ImageInfo, KernelArgs, OffloadEntry, TargetTable, OFFLOAD_SUCCESS,
};
use super::{guard, non_null, size_arg};
use crate::backend::{AllocKind, LaunchBounds, IMAGE_HEADER_BYTES};
use crate::plugin;
use crate::plugin::address_map::AddressSet;
use crate::plugin::error::{Error, Result};
use crate::plugin::image::HostEntry;
use crate::plugin::log;
use crate::plugin::sync::lock;
use std::sync::{LazyLock, Mutex};

/// Largest image accepted, far above real device images, so a corrupt end pointer is caught early.
const MAX_IMAGE_BYTES: usize = 1 << 32;
/// Largest entry count accepted in one image.
const MAX_ENTRIES: usize = 1 << 20;
/// Longest entry name accepted.
const MAX_NAME_BYTES: usize = 4096;
/// Launches with up to this many arguments build their argument list on the stack.
const INLINE_ARGS: usize = 16;

fn ok(_: ()) -> i32 {
    OFFLOAD_SUCCESS
}

/// Copies the image descriptor out of the caller's memory.
fn read_image_descriptor(image: *mut DeviceImage) -> Result<DeviceImage> {
    non_null(image, "the device image")?;
    let raw = read_bytes("the device image descriptor", image as usize, size_of::<DeviceImage>())?;
    // SAFETY: `raw` holds exactly size_of::<DeviceImage>() bytes and every bit pattern is valid for it.
    Ok(unsafe { std::ptr::read_unaligned(raw.as_ptr().cast::<DeviceImage>()) })
}

/// Start and size of the image's bytes, checked for plausibility.
fn image_range(desc: &DeviceImage) -> Result<(usize, usize)> {
    let start = desc.image_start as usize;
    let end = desc.image_end as usize;
    if start == 0 {
        return Err(Error::NullArg("the image's start"));
    }
    if end <= start || end - start > MAX_IMAGE_BYTES {
        return Err(Error::BadImage(format!(
            "its end {end:#x} does not follow its start {start:#x} by a plausible size"
        )));
    }
    Ok((start, end - start))
}

/// Copies the image's host entry table, names included.
fn read_entries(desc: &DeviceImage) -> Result<Vec<HostEntry>> {
    let (begin, end) = (desc.entries_begin as usize, desc.entries_end as usize);
    if begin == 0 && end == 0 {
        return Ok(Vec::new());
    }
    let entry_size = size_of::<OffloadEntry>();
    if begin == 0 || end < begin || (end - begin) % entry_size != 0 || (end - begin) / entry_size > MAX_ENTRIES {
        return Err(Error::BadImage(format!(
            "its entry table [{begin:#x}, {end:#x}) is not a whole number of entries"
        )));
    }
    let raw = read_bytes("the image's entry table", begin, end - begin)?;
    raw.chunks_exact(entry_size)
        .enumerate()
        .map(|(index, bytes)| {
            // SAFETY: `bytes` is one entry's worth of bytes; every bit pattern is valid for OffloadEntry.
            let entry = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<OffloadEntry>()) };
            let name = read_c_string(
                &format!("the name of entry {index}"),
                entry.name as usize,
                MAX_NAME_BYTES,
            )?;
            Ok(HostEntry {
                name,
                size: entry.size,
                flags: entry.flags,
                reserved: entry.reserved,
            })
        })
        .collect()
}

fn is_valid_image(image: *mut DeviceImage) -> Result<i32> {
    let desc = read_image_descriptor(image)?;
    let (start, len) = image_range(&desc)?;
    let header = read_bytes("the image", start, len.min(IMAGE_HEADER_BYTES))?;
    Ok(i32::from(plugin().is_valid_image(&header, len)))
}

/// Called once right after libomptarget loads the plugin: selects the backend and counts devices.
#[no_mangle]
pub extern "C" fn __tgt_rtl_init_plugin() -> i32 {
    guard("init_plugin", || {
        plugin();
        Ok(OFFLOAD_SUCCESS)
    })
}

/// Called at program exit, once per registered library: waits for outstanding work.
#[no_mangle]
pub extern "C" fn __tgt_rtl_deinit_plugin() -> i32 {
    guard("deinit_plugin", || plugin().drain().map(ok))
}

/// Whether this plugin can run `image`; non-zero means yes. Quiet for foreign images.
///
/// # Safety
/// `image` is null or points to a `__tgt_device_image` (bad pointers inside it are detected).
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_is_valid_binary(image: *mut DeviceImage) -> i32 {
    catch_quietly(|| is_valid_image(image))
}

/// As `is_valid_binary`; the architecture string does not matter to the host backend.
///
/// # Safety
/// As `__tgt_rtl_is_valid_binary`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_is_valid_binary_info(image: *mut DeviceImage, _info: *mut ImageInfo) -> i32 {
    catch_quietly(|| is_valid_image(image))
}

/// Image checks answer "no" without a message: libomptarget asks every plugin about every image.
fn catch_quietly(body: impl FnOnce() -> Result<i32>) -> i32 {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
        .ok()
        .and_then(|r| r.ok())
        .unwrap_or(0)
}

/// Number of devices; 0 makes libomptarget discard the plugin.
#[no_mangle]
pub extern "C" fn __tgt_rtl_number_of_devices() -> i32 {
    catch_quietly(|| Ok(i32::try_from(plugin().device_count()).unwrap_or(i32::MAX)))
}

/// Records the program's `requires` flags and returns them.
#[no_mangle]
pub extern "C" fn __tgt_rtl_init_requires(flags: i64) -> i64 {
    guard("init_requires", || Ok(plugin().init_requires(flags)))
}

/// Whether this plugin accepts images without entries (it does not need them).
#[no_mangle]
pub extern "C" fn __tgt_rtl_supports_empty_images() -> i32 {
    0
}

/// Prepares device `id`.
#[no_mangle]
pub extern "C" fn __tgt_rtl_init_device(id: i32) -> i32 {
    guard("init_device", || plugin().init_device(id).map(ok))
}

/// Never called by libomptarget 16; accepted for completeness.
#[no_mangle]
pub extern "C" fn __tgt_rtl_deinit_device(id: i32) -> i32 {
    guard("deinit_device", || plugin().device(id).map(|_| OFFLOAD_SUCCESS))
}

/// Loads `image` on device `id` and returns its entry table, or NULL.
///
/// # Safety
/// `image` is null or points to a `__tgt_device_image` (bad pointers inside it are detected).
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_load_binary(id: i32, image: *mut DeviceImage) -> *mut TargetTable {
    guard("load_binary", || {
        let desc = read_image_descriptor(image)?;
        let (start, len) = image_range(&desc)?;
        let entries = read_entries(&desc)?;
        let bytes = read_bytes("the image", start, len)?;
        plugin().load_image(id, start, &bytes, &entries)
    })
}

/// Allocates `size` bytes of memory of `kind` on device `id`; NULL on failure.
#[no_mangle]
pub extern "C" fn __tgt_rtl_data_alloc(id: i32, size: i64, _host_ptr: *mut c_void, kind: i32) -> *mut c_void {
    guard("data_alloc", || {
        let size = size_arg(size)?;
        let kind = AllocKind::from_raw(kind).ok_or_else(|| {
            Error::InvalidArg(format!(
                "allocation kind {kind} is not one of 0 (device), 1 (host), 2 (shared), 3 (default)"
            ))
        })?;
        plugin().alloc(id, size, kind)
    })
}

/// Frees memory from `data_alloc`.
#[no_mangle]
pub extern "C" fn __tgt_rtl_data_delete(id: i32, ptr: *mut c_void, _kind: i32) -> i32 {
    guard("data_delete", || {
        non_null(ptr, "the pointer to free")?;
        plugin().free(id, ptr as usize).map(ok)
    })
}

/// The async info behind a raw pointer, or `None` when libomptarget passed none.
///
/// # Safety
/// `async_info` is null or points to a live `__tgt_async_info` not used elsewhere during the call.
unsafe fn async_info<'a>(async_info: *mut AsyncInfo) -> Option<&'a mut AsyncInfo> {
    // SAFETY: per this function's contract.
    unsafe { async_info.as_mut() }
}

/// # Safety
/// `dst` and `src` are valid for `size` bytes until the copy completes.
unsafe fn copy(
    entry: &'static str,
    id: i32,
    dst: *mut c_void,
    src: *mut c_void,
    size: i64,
    info: Option<&mut AsyncInfo>,
) -> i32 {
    guard(entry, || {
        let size = size_arg(size)?;
        if size > 0 {
            non_null(dst, "the destination")?;
            non_null(src, "the source")?;
        }
        // SAFETY: forwarded from this function's contract.
        unsafe { plugin().copy(id, dst, src, size, info) }.map(ok)
    })
}

/// Copies `size` bytes from the host to device `id`.
///
/// # Safety
/// `tgt` and `hst` are valid for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_data_submit(id: i32, tgt: *mut c_void, hst: *mut c_void, size: i64) -> i32 {
    // SAFETY: per this function's contract.
    unsafe { copy("data_submit", id, tgt, hst, size, None) }
}

/// Copies host to device, ordered after the work queued on `info`.
///
/// # Safety
/// `tgt` and `hst` are valid for `size` bytes until `info` is synchronised; `info` is null or a live
/// `__tgt_async_info`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_data_submit_async(
    id: i32,
    tgt: *mut c_void,
    hst: *mut c_void,
    size: i64,
    info: *mut AsyncInfo,
) -> i32 {
    // SAFETY: per this function's contract.
    unsafe { copy("data_submit_async", id, tgt, hst, size, async_info(info)) }
}

/// Copies `size` bytes from device `id` to the host.
///
/// # Safety
/// `hst` and `tgt` are valid for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_data_retrieve(id: i32, hst: *mut c_void, tgt: *mut c_void, size: i64) -> i32 {
    // SAFETY: per this function's contract.
    unsafe { copy("data_retrieve", id, hst, tgt, size, None) }
}

/// Copies device to host, ordered after the work queued on `info`.
///
/// # Safety
/// `hst` and `tgt` are valid for `size` bytes until `info` is synchronised; `info` is null or a live
/// `__tgt_async_info`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_data_retrieve_async(
    id: i32,
    hst: *mut c_void,
    tgt: *mut c_void,
    size: i64,
    info: *mut AsyncInfo,
) -> i32 {
    // SAFETY: per this function's contract.
    unsafe { copy("data_retrieve_async", id, hst, tgt, size, async_info(info)) }
}

/// Whether devices `src` and `dst` can copy to each other directly.
#[no_mangle]
pub extern "C" fn __tgt_rtl_is_data_exchangable(src: i32, dst: i32) -> i32 {
    guard("is_data_exchangable", || plugin().can_exchange(src, dst).map(i32::from))
}

fn exchange(
    src: i32,
    src_ptr: *mut c_void,
    dst: i32,
    dst_ptr: *mut c_void,
    size: i64,
    info: Option<&mut AsyncInfo>,
) -> i32 {
    guard("data_exchange", || {
        if !plugin().can_exchange(src, dst)? {
            return Err(Error::Unsupported(format!(
                "device {src} cannot copy to device {dst} directly"
            )));
        }
        plugin().device(dst)?;
        let size = size_arg(size)?;
        if size > 0 {
            non_null(dst_ptr, "the destination")?;
            non_null(src_ptr, "the source")?;
        }
        // SAFETY: forwarded from this function's contract.
        unsafe { plugin().copy(src, dst_ptr, src_ptr, size, info) }.map(ok)
    })
}

/// Copies between two devices of this plugin.
#[no_mangle]
pub extern "C" fn __tgt_rtl_data_exchange(
    src: i32,
    src_ptr: *mut c_void,
    dst: i32,
    dst_ptr: *mut c_void,
    size: i64,
) -> i32 {
    exchange(src, src_ptr, dst, dst_ptr, size, None)
}

/// Copies between two devices, ordered after the work queued on `info` (a queue of `src`).
///
/// # Safety
/// `src_ptr` and `dst_ptr` are valid for `size` bytes until `info` is synchronised; `info` is null or a
/// live `__tgt_async_info`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_data_exchange_async(
    src: i32,
    src_ptr: *mut c_void,
    dst: i32,
    dst_ptr: *mut c_void,
    size: i64,
    info: *mut AsyncInfo,
) -> i32 {
    // SAFETY: per this function's contract.
    unsafe { exchange(src, src_ptr, dst, dst_ptr, size, async_info(info)) }
}

/// Runs the kernel `entry` (the `addr` of a kernel entry of a table we returned) with its arguments
/// `(char *)args[i] + offsets[i]`.
///
/// # Safety
/// `args` and `offsets` are null or hold `kernel_args->NumArgs` elements; `kernel_args` is null or a
/// live `KernelArgsTy`; `info` is null or a live `__tgt_async_info`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_launch_kernel(
    id: i32,
    entry: *mut c_void,
    args: *mut *mut c_void,
    offsets: *mut isize,
    kernel_args: *const KernelArgs,
    info: *mut AsyncInfo,
) -> i32 {
    guard("launch_kernel", || {
        // SAFETY: per this function's contract.
        let kernel_args = unsafe { kernel_args.as_ref() }.ok_or(Error::NullArg("the kernel arguments"))?;
        if !(1..=2).contains(&kernel_args.version) {
            return Err(Error::InvalidArg(format!(
                "kernel argument layout version {} is not 1 or 2 (libomptarget 16)",
                kernel_args.version
            )));
        }
        let count = kernel_args.num_args as usize;
        if count > crate::backend::host::invoke::MAX_KERNEL_ARGS {
            return Err(Error::InvalidArg(format!(
                "{count} kernel arguments is implausibly many"
            )));
        }
        if count > 0 && args.is_null() {
            return Err(Error::NullArg("the kernel argument array"));
        }
        let argument = |i: usize| -> *mut c_void {
            // SAFETY: `i < count` and both arrays hold `count` elements per the contract; a null
            // offsets array means no offsets.
            unsafe {
                let offset = if offsets.is_null() { 0 } else { *offsets.add(i) };
                (*args.add(i)).cast::<u8>().wrapping_offset(offset).cast()
            }
        };
        let bounds = LaunchBounds {
            teams: kernel_args.num_teams[0],
            threads: kernel_args.thread_limit[0],
            tripcount: kernel_args.tripcount,
        };
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info) };
        let mut inline = [std::ptr::null_mut(); INLINE_ARGS];
        let heap;
        let list: &[*mut c_void] = if count <= INLINE_ARGS {
            for (i, slot) in inline.iter_mut().enumerate().take(count) {
                *slot = argument(i);
            }
            &inline[..count]
        } else {
            heap = (0..count).map(argument).collect::<Vec<_>>();
            &heap
        };
        // SAFETY: the arguments are libomptarget's, valid until the launch completes (contract).
        unsafe { plugin().launch(id, entry as usize, list, bounds, kernel_args.is_nowait(), info) }.map(ok)
    })
}

/// Waits for the work queued on `info` and resets its queue to NULL.
///
/// # Safety
/// `info` is null or a live `__tgt_async_info`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_synchronize(id: i32, info: *mut AsyncInfo) -> i32 {
    guard("synchronize", || {
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info) }.ok_or(Error::NullArg("the async info"))?;
        plugin().synchronize(id, info).map(ok)
    })
}

/// Resets `info`'s queue to NULL if its work is done; never blocks.
///
/// # Safety
/// `info` is null or a live `__tgt_async_info`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_query_async(id: i32, info: *mut AsyncInfo) -> i32 {
    guard("query_async", || {
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info) }.ok_or(Error::NullArg("the async info"))?;
        plugin().query_async(id, info).map(ok)
    })
}

/// Creates an event on device `id` and stores it in `*event`.
///
/// # Safety
/// `event` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_create_event(id: i32, event: *mut *mut c_void) -> i32 {
    guard("create_event", || {
        let out = non_null(event, "the event out-pointer")?;
        let created = plugin().create_event(id)?;
        // SAFETY: non-null and writable per the contract.
        unsafe { *out = created };
        Ok(OFFLOAD_SUCCESS)
    })
}

/// Records `event` after the work queued on `info`.
///
/// # Safety
/// `info` is null or a live `__tgt_async_info`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_record_event(id: i32, event: *mut c_void, info: *mut AsyncInfo) -> i32 {
    guard("record_event", || {
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info) }.ok_or(Error::NullArg("the async info"))?;
        plugin().record_event(id, event, info).map(ok)
    })
}

/// Makes later work on `info` wait for `event`.
///
/// # Safety
/// `info` is null or a live `__tgt_async_info`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_wait_event(id: i32, event: *mut c_void, info: *mut AsyncInfo) -> i32 {
    guard("wait_event", || {
        // SAFETY: per this function's contract.
        let info = unsafe { async_info(info) }.ok_or(Error::NullArg("the async info"))?;
        plugin().wait_event(id, event, info).map(ok)
    })
}

/// Blocks until `event` is reached.
#[no_mangle]
pub extern "C" fn __tgt_rtl_sync_event(id: i32, event: *mut c_void) -> i32 {
    guard("sync_event", || plugin().sync_event(id, event).map(ok))
}

/// Releases `event`.
#[no_mangle]
pub extern "C" fn __tgt_rtl_destroy_event(id: i32, event: *mut c_void) -> i32 {
    guard("destroy_event", || plugin().destroy_event(id, event).map(ok))
}

/// Prepares `size` bytes of host memory for transfers; `global_id` is the OpenMP device number.
///
/// # Safety
/// `locked` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_data_lock(
    global_id: i32,
    ptr: *mut c_void,
    size: i64,
    locked: *mut *mut c_void,
) -> i32 {
    guard("data_lock", || {
        let out = non_null(locked, "the locked-pointer out-parameter")?;
        non_null(ptr, "the host pointer")?;
        let size = size_arg(size)?;
        let device_ptr = plugin().lock_host_memory(global_id, ptr, size)?;
        // SAFETY: non-null and writable per the contract.
        unsafe { *out = device_ptr };
        Ok(OFFLOAD_SUCCESS)
    })
}

/// Undoes `data_lock`; `global_id` is the OpenMP device number.
#[no_mangle]
pub extern "C" fn __tgt_rtl_data_unlock(global_id: i32, ptr: *mut c_void) -> i32 {
    guard("data_unlock", || {
        non_null(ptr, "the host pointer")?;
        plugin().unlock_host_memory(global_id, ptr).map(ok)
    })
}

/// Gives interop a `__tgt_async_info`; host work is synchronous, so its queue is NULL.
///
/// # Safety
/// `out` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_init_async_info(global_id: i32, out: *mut *mut AsyncInfo) -> i32 {
    guard("init_async_info", || {
        let out = non_null(out, "the async info out-pointer")?;
        if global_id < 0 {
            return Err(Error::InvalidArg(format!("device number {global_id} is negative")));
        }
        let info = Box::into_raw(Box::new(AsyncInfo {
            queue: std::ptr::null_mut(),
        }));
        lock(&INTEROP_ASYNC_INFOS).insert(info as usize);
        // SAFETY: non-null and writable per the contract.
        unsafe { *out = info };
        Ok(OFFLOAD_SUCCESS)
    })
}

/// Fills interop device information; the host backend has no context or device handles.
///
/// libomptarget 16 declares this entry as returning `int64_t`, so it returns a full 64-bit value.
///
/// # Safety
/// `info` is null or writable; `err` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_init_device_info(
    global_id: i32,
    info: *mut DeviceInfo,
    err: *mut *const c_char,
) -> i64 {
    let result = guard("init_device_info", || {
        let info = non_null(info, "the device info")?;
        if global_id < 0 {
            return Err(Error::InvalidArg(format!("device number {global_id} is negative")));
        }
        // SAFETY: non-null and writable per the contract.
        unsafe {
            (*info).context = std::ptr::null_mut();
            (*info).device = std::ptr::null_mut();
        }
        Ok(i64::from(OFFLOAD_SUCCESS))
    });
    if result != i64::from(OFFLOAD_SUCCESS) && !err.is_null() {
        static MESSAGE: &CStr = c"omprpc: cannot describe this device for interop";
        // SAFETY: non-null and writable per the contract; the message is static.
        unsafe { *err = MESSAGE.as_ptr() };
    }
    result
}

/// Async infos handed out by `init_async_info`, so that `release_async_info` frees only those.
static INTEROP_ASYNC_INFOS: LazyLock<Mutex<AddressSet>> = LazyLock::new(Default::default);

/// Frees an async info made by `init_async_info` after waiting for its work; anything else is refused.
///
/// # Safety
/// `info` is null or a pointer; only one from `__tgt_rtl_init_async_info` is used.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_release_async_info(id: i32, info: *mut AsyncInfo) -> i32 {
    guard("release_async_info", || {
        let info = non_null(info, "the async info")?;
        if !lock(&INTEROP_ASYNC_INFOS).remove(&(info as usize)) {
            return Err(Error::UnknownHandle {
                what: "async info",
                addr: info as usize,
            });
        }
        // SAFETY: the address was in the set, so it came from Box::into_raw in init_async_info and was
        // not released since (it has just been removed).
        let mut info = unsafe { Box::from_raw(info) };
        if !info.queue.is_null() {
            plugin().synchronize(id, &mut info)?;
        }
        Ok(OFFLOAD_SUCCESS)
    })
}

/// Sets the `LIBOMPTARGET_INFO` mask (from `__tgt_set_info_flag`).
#[no_mangle]
pub extern "C" fn __tgt_rtl_set_info_flag(level: u32) {
    log::set_info_level(level);
}

/// Prints what `llvm-omp-device-info` shows for device `id`.
#[no_mangle]
pub extern "C" fn __tgt_rtl_print_device_info(id: i32) {
    guard("print_device_info", || {
        let lines = plugin().describe_device(id)?;
        let mut text = String::new();
        for (name, value) in lines {
            text.push_str(&format!("    {name:<30}{value}\n"));
        }
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
        Ok(())
    })
}

/// Called for every library registered with libomptarget; nothing to do until an image is loaded.
///
/// # Safety
/// `desc` is null or a live `__tgt_bin_desc`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_register_lib(desc: *mut BinDesc) -> i32 {
    guard("register_lib", || {
        non_null(desc, "the library descriptor").map(|_| OFFLOAD_SUCCESS)
    })
}

/// Called for every library unregistered at exit; outstanding work was drained by `deinit_plugin`.
///
/// # Safety
/// `desc` is null or a live `__tgt_bin_desc`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_unregister_lib(desc: *mut BinDesc) -> i32 {
    guard("unregister_lib", || {
        non_null(desc, "the library descriptor").map(|_| OFFLOAD_SUCCESS)
    })
}
