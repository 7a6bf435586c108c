//! The exported `__tgt_rtl_*` entry points. Every function here has the same shape: check the raw
//! arguments, call one method of the generic core inside [`guard`], and let `guard` turn a failure into
//! the entry point's failure value and a one-line message. Synchronous entry points are the
//! asynchronous ones with no async info.
//!
//! Device ids are plugin-local except for `data_lock`, `data_unlock`, `init_async_info` and
//! `init_device_info`, which libomptarget 16 calls with the global OpenMP device number
//! ([`device_numbers`] maps it).

use std::ffi::{c_char, c_void, CStr};

use super::types::{AsyncInfo, BinDesc, DeviceImage, DeviceInfo, ImageInfo, KernelArgs, TargetTable, OFFLOAD_SUCCESS};
use super::{device_numbers, guard, image_descriptors, interop, non_null, size_arg};
use crate::backend::{AllocKind, IMAGE_HEADER_BYTES};
use crate::plugin::{LaunchRequest, PluginApi};
use crate::util::error::{Error, Result};
use crate::util::foreign_memory::{read_bytes, read_c_string};
use crate::util::log;

/// Most kernel arguments read from libomptarget's arrays, a bound on what a corrupt count can make us
/// read; the device's own limit is checked by the core.
const MAX_ARGS_READ: usize = 1 << 16;
/// Launches with up to this many arguments build their argument list on the stack.
const INLINE_ARGS: usize = 16;
/// Longest architecture string read from `__tgt_image_info`.
const MAX_ARCH_BYTES: usize = 256;

fn ok(_: ()) -> i32 {
    OFFLOAD_SUCCESS
}

/// The core, or why this plugin has none (zero devices).
fn api() -> Result<&'static dyn PluginApi> {
    crate::plugin().api()
}

/// The async info's queue field, or `None` when libomptarget passed no async info.
///
/// # Safety
/// `info` is null or points to a live `__tgt_async_info` not used elsewhere during the call.
unsafe fn queue_field<'a>(info: *mut AsyncInfo) -> Option<&'a mut *mut c_void> {
    // SAFETY: per this function's contract.
    unsafe { info.as_mut() }.map(|info| &mut info.queue)
}

/// Whether `image` is one of ours, judged from its first bytes and the architecture in `info`.
///
/// # Safety
/// `info` is null or points to a `__tgt_image_info`.
unsafe fn is_valid_image(image: *mut DeviceImage, info: *mut ImageInfo) -> Result<i32> {
    let desc = image_descriptors::read_image_descriptor(image)?;
    let (start, len) = image_descriptors::image_range(&desc)?;
    let header = read_bytes("the image", start, len.min(IMAGE_HEADER_BYTES))?;
    let arch = if info.is_null() {
        None
    } else {
        let info: ImageInfo = {
            let raw = read_bytes("the image info", info as usize, size_of::<ImageInfo>())?;
            // SAFETY: `raw` holds one ImageInfo's bytes; every bit pattern is valid for it.
            unsafe { std::ptr::read_unaligned(raw.as_ptr().cast::<ImageInfo>()) }
        };
        if info.arch.is_null() {
            None
        } else {
            Some(read_c_string(
                "the image's architecture",
                info.arch as usize,
                MAX_ARCH_BYTES,
            )?)
        }
    };
    let arch = arch.as_deref().map(CStr::to_string_lossy);
    Ok(i32::from(api()?.is_valid_image(&header, len, arch.as_deref())))
}

/// Image checks answer "no" without a message: libomptarget asks every plugin about every image.
fn catch_quietly(body: impl FnOnce() -> Result<i32>) -> i32 {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
        .ok()
        .and_then(|r| r.ok())
        .unwrap_or(0)
}

/// Called once right after libomptarget loads the plugin: selects the backend and counts devices.
#[no_mangle]
pub extern "C" fn __tgt_rtl_init_plugin() -> i32 {
    guard("init_plugin", || {
        crate::plugin();
        Ok(OFFLOAD_SUCCESS)
    })
}

/// Called once per library libomptarget unregisters (at exit, or when a library is closed): waits
/// for outstanding work, and after the last library releases every device's resources.
#[no_mangle]
pub extern "C" fn __tgt_rtl_deinit_plugin() -> i32 {
    guard("deinit_plugin", || {
        if api()?.deinit()? {
            image_descriptors::forget_all_tables();
        }
        Ok(OFFLOAD_SUCCESS)
    })
}

/// Whether this plugin can run `image`; non-zero means yes. Quiet for foreign images.
///
/// # Safety
/// `image` is null or points to a `__tgt_device_image` (bad pointers inside it are detected).
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_is_valid_binary(image: *mut DeviceImage) -> i32 {
    // SAFETY: no image info is passed.
    catch_quietly(|| unsafe { is_valid_image(image, std::ptr::null_mut()) })
}

/// As `is_valid_binary`, also checking the architecture the image was built for against the devices.
///
/// # Safety
/// As `__tgt_rtl_is_valid_binary`; `info` is null or points to a `__tgt_image_info`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_is_valid_binary_info(image: *mut DeviceImage, info: *mut ImageInfo) -> i32 {
    // SAFETY: forwarded from this function's contract.
    catch_quietly(|| unsafe { is_valid_image(image, info) })
}

/// Number of devices; 0 makes libomptarget discard the plugin.
#[no_mangle]
pub extern "C" fn __tgt_rtl_number_of_devices() -> i32 {
    catch_quietly(|| Ok(i32::try_from(crate::plugin().device_count()).unwrap_or(i32::MAX)))
}

/// Records the program's `requires` flags and returns them.
#[no_mangle]
pub extern "C" fn __tgt_rtl_init_requires(flags: i64) -> i64 {
    guard("init_requires", || Ok(api()?.init_requires(flags)))
}

/// Whether this plugin accepts images without entries (it does not need them).
#[no_mangle]
pub extern "C" fn __tgt_rtl_supports_empty_images() -> i32 {
    0
}

/// Prepares device `id`.
#[no_mangle]
pub extern "C" fn __tgt_rtl_init_device(id: i32) -> i32 {
    guard("init_device", || api()?.init_device(id).map(ok))
}

/// Never called by libomptarget 16 (`deinit_plugin` releases devices); accepted for completeness.
#[no_mangle]
pub extern "C" fn __tgt_rtl_deinit_device(id: i32) -> i32 {
    guard("deinit_device", || {
        let count = api()?.device_count();
        if usize::try_from(id).is_ok_and(|i| i < count) {
            Ok(OFFLOAD_SUCCESS)
        } else {
            Err(Error::InvalidDevice { id, count })
        }
    })
}

/// Loads `image` on device `id` and returns its entry table, or NULL.
///
/// # Safety
/// `image` is null or points to a `__tgt_device_image` (bad pointers inside it are detected).
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_load_binary(id: i32, image: *mut DeviceImage) -> *mut TargetTable {
    guard("load_binary", || {
        let desc = image_descriptors::read_image_descriptor(image)?;
        let (start, len) = image_descriptors::image_range(&desc)?;
        let (raw_entries, entries) = image_descriptors::read_entries(&desc)?;
        let bytes = read_bytes("the image", start, len)?;
        let loaded = api()?.load_image(id, start, &bytes, &entries)?;
        let names = entries.into_iter().map(|e| e.name).collect();
        Ok(image_descriptors::table_for(
            id,
            start,
            &raw_entries,
            names,
            &loaded.addresses,
        ))
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
        api()?.alloc(id, size, kind)
    })
}

/// Frees memory from `data_alloc`; a pointer this device did not allocate, or freed already, is refused.
#[no_mangle]
pub extern "C" fn __tgt_rtl_data_delete(id: i32, ptr: *mut c_void, _kind: i32) -> i32 {
    guard("data_delete", || {
        non_null(ptr, "the pointer to free")?;
        api()?.free(id, ptr as usize).map(ok)
    })
}

/// Checks a copy's arguments and converts its size.
fn copy_args(dst: *mut c_void, src: *const c_void, size: i64) -> Result<usize> {
    let size = size_arg(size)?;
    if size > 0 {
        non_null(dst, "the destination")?;
        non_null(src.cast_mut(), "the source")?;
    }
    Ok(size)
}

/// Copies `size` bytes from the host to device `id`.
///
/// # Safety
/// `tgt` is device memory and `hst` host memory, both valid for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_data_submit(id: i32, tgt: *mut c_void, hst: *mut c_void, size: i64) -> i32 {
    // SAFETY: per this function's contract.
    unsafe { __tgt_rtl_data_submit_async(id, tgt, hst, size, std::ptr::null_mut()) }
}

/// Copies host to device, ordered on `info`'s queue.
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
    guard("data_submit", || {
        let size = copy_args(tgt, hst, size)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { api()?.submit(id, tgt, hst, size, queue_field(info)) }.map(ok)
    })
}

/// Copies `size` bytes from device `id` to the host.
///
/// # Safety
/// `hst` is host memory and `tgt` device memory, both valid for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_data_retrieve(id: i32, hst: *mut c_void, tgt: *mut c_void, size: i64) -> i32 {
    // SAFETY: per this function's contract.
    unsafe { __tgt_rtl_data_retrieve_async(id, hst, tgt, size, std::ptr::null_mut()) }
}

/// Copies device to host, ordered on `info`'s queue.
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
    guard("data_retrieve", || {
        let size = copy_args(hst, tgt, size)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { api()?.retrieve(id, hst, tgt, size, queue_field(info)) }.map(ok)
    })
}

/// Whether devices `src` and `dst` can copy to each other directly.
#[no_mangle]
pub extern "C" fn __tgt_rtl_is_data_exchangable(src: i32, dst: i32) -> i32 {
    guard("is_data_exchangable", || api()?.can_exchange(src, dst).map(i32::from))
}

/// Copies between two devices of this plugin.
///
/// # Safety
/// `src_ptr` is memory of device `src` and `dst_ptr` of device `dst`, both valid for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_data_exchange(
    src: i32,
    src_ptr: *mut c_void,
    dst: i32,
    dst_ptr: *mut c_void,
    size: i64,
) -> i32 {
    // SAFETY: per this function's contract.
    unsafe { __tgt_rtl_data_exchange_async(src, src_ptr, dst, dst_ptr, size, std::ptr::null_mut()) }
}

/// Copies between two devices, ordered on `info`'s queue (a queue of `src`).
///
/// # Safety
/// As `__tgt_rtl_data_exchange`, valid until `info` is synchronised; `info` is null or a live
/// `__tgt_async_info`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_data_exchange_async(
    src: i32,
    src_ptr: *mut c_void,
    dst: i32,
    dst_ptr: *mut c_void,
    size: i64,
    info: *mut AsyncInfo,
) -> i32 {
    guard("data_exchange", || {
        let size = copy_args(dst_ptr, src_ptr, size)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { api()?.exchange(src, src_ptr, dst, dst_ptr, size, queue_field(info)) }.map(ok)
    })
}

/// Runs the kernel `entry` (the `addr` of a kernel entry of a table we returned) with its arguments
/// `(char *)args[i] + offsets[i]`.
///
/// # Safety
/// `args` and `offsets` are null or hold `kernel_args->NumArgs` elements; `kernel_args` is null or a
/// live `KernelArgsTy`; `info` is null or a live `__tgt_async_info`; what the arguments point to stays
/// valid until the launch completes.
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
        let Some(kernel_args) = (unsafe { kernel_args.as_ref() }) else {
            return Err(Error::NullArg("the kernel arguments"));
        };
        if !(1..=2).contains(&kernel_args.version) {
            return Err(Error::InvalidArg(format!(
                "kernel argument layout version {} is not 1 or 2 (libomptarget 16)",
                kernel_args.version
            )));
        }
        let count = kernel_args.num_args as usize;
        if count > MAX_ARGS_READ {
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
        let request = LaunchRequest {
            teams: kernel_args.num_teams[0],
            thread_limit: kernel_args.thread_limit[0],
            tripcount: kernel_args.tripcount,
            dynamic_shared_bytes: kernel_args.dyn_cgroup_mem,
            nowait: kernel_args.is_nowait(),
        };
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
        unsafe { api()?.launch(id, entry as usize, list, &request, queue_field(info)) }.map(ok)
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
        let Some(queue) = (unsafe { queue_field(info) }) else {
            return Err(Error::NullArg("the async info"));
        };
        api()?.synchronize(id, queue).map(ok)
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
        let Some(queue) = (unsafe { queue_field(info) }) else {
            return Err(Error::NullArg("the async info"));
        };
        api()?.query_async(id, queue).map(ok)
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
        let created = api()?.create_event(id)?;
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
        let Some(queue) = (unsafe { queue_field(info) }) else {
            return Err(Error::NullArg("the async info"));
        };
        api()?.record_event(id, event, queue).map(ok)
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
        let Some(queue) = (unsafe { queue_field(info) }) else {
            return Err(Error::NullArg("the async info"));
        };
        api()?.wait_event(id, event, queue).map(ok)
    })
}

/// Blocks until `event` is reached.
#[no_mangle]
pub extern "C" fn __tgt_rtl_sync_event(id: i32, event: *mut c_void) -> i32 {
    guard("sync_event", || api()?.sync_event(id, event).map(ok))
}

/// Releases `event`.
#[no_mangle]
pub extern "C" fn __tgt_rtl_destroy_event(id: i32, event: *mut c_void) -> i32 {
    guard("destroy_event", || api()?.destroy_event(id, event).map(ok))
}

/// The plugin-local number of OpenMP device `global`.
fn local(api: &dyn PluginApi, global: i32) -> Result<i32> {
    device_numbers::local_device(global, api.device_count())
}

/// Pins `size` bytes of host memory for the device `global_id` (the OpenMP device number).
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
        let api = api()?;
        let device_ptr = api.lock_host(local(api, global_id)?, ptr, size)?;
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
        let api = api()?;
        api.unlock_host(local(api, global_id)?, ptr).map(ok)
    })
}

/// Gives interop a `__tgt_async_info` whose queue is the backend's stream on the device `global_id`.
///
/// # Safety
/// `out` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_init_async_info(global_id: i32, out: *mut *mut AsyncInfo) -> i32 {
    guard("init_async_info", || {
        let out = non_null(out, "the async info out-pointer")?;
        let api = api()?;
        let info = interop::new_async_info(api, local(api, global_id)?)?;
        // SAFETY: non-null and writable per the contract.
        unsafe { *out = info };
        Ok(OFFLOAD_SUCCESS)
    })
}

/// Fills interop device information: the backend's context and device handles.
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
        let api = api()?;
        let native = api.native_device(local(api, global_id)?)?;
        // SAFETY: non-null and writable per the contract.
        unsafe {
            (*info).context = native.context;
            (*info).device = native.device;
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

/// Frees an async info made by `init_async_info` after waiting for its work; anything else is refused.
///
/// # Safety
/// `info` is null or a pointer; only one from `__tgt_rtl_init_async_info` is used.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_release_async_info(id: i32, info: *mut AsyncInfo) -> i32 {
    guard("release_async_info", || {
        let info = non_null(info, "the async info")?;
        // SAFETY: forwarded from this function's contract.
        unsafe { interop::release_async_info(api()?, id, info) }.map(ok)
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
    if device_numbers::answer_probe(id) {
        return;
    }
    guard("print_device_info", || {
        let lines = api()?.describe_device(id)?;
        let mut text = String::new();
        for (name, value) in lines {
            text.push_str(&format!("    {name:<30}{value}\n"));
        }
        // The caller (llvm-omp-device-info) prints its heading with C's buffered stdio; flush it
        // first so that the lines stay in order when stdout is a pipe or a file.
        // SAFETY: fflush(NULL) flushes every open C output stream; it takes no pointer of ours.
        unsafe { libc::fflush(std::ptr::null_mut()) };
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
        Ok(())
    })
}

/// Called for every library registered with libomptarget.
///
/// # Safety
/// `desc` is null or a live `__tgt_bin_desc`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_register_lib(desc: *mut BinDesc) -> i32 {
    guard("register_lib", || {
        non_null(desc, "the library descriptor")?;
        api()?.register_library();
        Ok(OFFLOAD_SUCCESS)
    })
}

/// Called for every library unregistered (after `deinit_plugin`): unloads its images from every device,
/// so that a library opened later, even at the same address, is loaded afresh.
///
/// # Safety
/// `desc` is null or a live `__tgt_bin_desc`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_unregister_lib(desc: *mut BinDesc) -> i32 {
    guard("unregister_lib", || {
        let ranges = image_descriptors::library_image_ranges(desc)?;
        let unloaded = api()?.unregister_library(&ranges)?;
        image_descriptors::forget_tables(&unloaded);
        Ok(OFFLOAD_SUCCESS)
    })
}
