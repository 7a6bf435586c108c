//! The CUDA driver as the plugin sees it: the few types and constants it uses, and one typed
//! function pointer per driver entry point, resolved at run time from `libcuda.so.1`. Nothing here
//! checks results; `result.rs` does.
//!
//! Hand-written from the CUDA driver API's documented ABI (the same one LLVM's `dynamic_cuda/cuda.h`
//! declares). Entry points that the driver versions with a `_v2` suffix are resolved by that name, as
//! the stock plugin's headers do.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use crate::backend::gpu::library::{entry_points, Opened};

/// A driver status; 0 is success.
pub type CuResult = c_int;
/// A device ordinal as the driver knows it.
pub type CuDevice = c_int;
/// A device address.
pub type CuDevicePtr = u64;
/// An opaque driver handle (context, module, function, stream, event).
pub type CuHandle = *mut c_void;

/// `CUDA_SUCCESS`.
pub const CUDA_SUCCESS: CuResult = 0;
/// `CUDA_ERROR_INVALID_VALUE`.
pub const CUDA_ERROR_INVALID_VALUE: CuResult = 1;
/// `CUDA_ERROR_OUT_OF_MEMORY`.
pub const CUDA_ERROR_OUT_OF_MEMORY: CuResult = 2;
/// `CUDA_ERROR_DEINITIALIZED`: the driver is shutting down.
pub const CUDA_ERROR_DEINITIALIZED: CuResult = 4;
/// `CUDA_ERROR_NO_DEVICE`: the driver works and there is no GPU.
pub const CUDA_ERROR_NO_DEVICE: CuResult = 100;
/// `CUDA_ERROR_INVALID_IMAGE`.
pub const CUDA_ERROR_INVALID_IMAGE: CuResult = 200;
/// `CUDA_ERROR_INVALID_CONTEXT`: no context is current on the calling thread, or it was destroyed.
pub const CUDA_ERROR_INVALID_CONTEXT: CuResult = 201;
/// `CUDA_ERROR_INVALID_HANDLE`: a handle of another context, or none.
pub const CUDA_ERROR_INVALID_HANDLE: CuResult = 400;
/// `CUDA_ERROR_ILLEGAL_ADDRESS`: a kernel faulted; sticky for its context.
pub const CUDA_ERROR_ILLEGAL_ADDRESS: CuResult = 700;
/// The errors that a fault on the device leaves sticky for its context: every later call in the
/// context fails with them until it is destroyed (NVIDIA's documentation of each): an illegal address,
/// a launch timeout, a device-side assert, a hardware stack error, an illegal instruction, a
/// misaligned address, an invalid address space, an invalid program counter, a failed launch.
pub const STICKY_ERRORS: [CuResult; 9] = [700, 702, 710, 714, 715, 716, 717, 718, 719];
/// `CUDA_ERROR_NOT_FOUND`: no such symbol in a module.
pub const CUDA_ERROR_NOT_FOUND: CuResult = 500;
/// `CUDA_ERROR_NOT_READY`: a queried stream or event has work left.
pub const CUDA_ERROR_NOT_READY: CuResult = 600;
/// `CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED`.
pub const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: CuResult = 704;
/// `CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED`: another device of this process pinned the range.
pub const CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: CuResult = 712;
/// `CUDA_ERROR_TOO_MANY_PEERS`.
pub const CUDA_ERROR_TOO_MANY_PEERS: CuResult = 711;
/// `CUDA_ERROR_UNKNOWN`.
pub const CUDA_ERROR_UNKNOWN: CuResult = 999;

/// `CUdevice_attribute` values the plugin reads.
pub mod attribute {
    use std::ffi::c_int;
    pub const MAX_THREADS_PER_BLOCK: c_int = 1;
    pub const MAX_BLOCK_DIM_X: c_int = 2;
    pub const MAX_BLOCK_DIM_Y: c_int = 3;
    pub const MAX_BLOCK_DIM_Z: c_int = 4;
    pub const MAX_GRID_DIM_X: c_int = 5;
    pub const MAX_GRID_DIM_Y: c_int = 6;
    pub const MAX_GRID_DIM_Z: c_int = 7;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: c_int = 8;
    pub const TOTAL_CONSTANT_MEMORY: c_int = 9;
    pub const WARP_SIZE: c_int = 10;
    pub const MAX_PITCH: c_int = 11;
    pub const MAX_REGISTERS_PER_BLOCK: c_int = 12;
    pub const CLOCK_RATE: c_int = 13;
    pub const TEXTURE_ALIGNMENT: c_int = 14;
    pub const GPU_OVERLAP: c_int = 15;
    pub const MULTIPROCESSOR_COUNT: c_int = 16;
    pub const KERNEL_EXEC_TIMEOUT: c_int = 17;
    pub const INTEGRATED: c_int = 18;
    pub const CAN_MAP_HOST_MEMORY: c_int = 19;
    pub const COMPUTE_MODE: c_int = 20;
    pub const CONCURRENT_KERNELS: c_int = 31;
    pub const ECC_ENABLED: c_int = 32;
    pub const MEMORY_CLOCK_RATE: c_int = 36;
    pub const GLOBAL_MEMORY_BUS_WIDTH: c_int = 37;
    pub const L2_CACHE_SIZE: c_int = 38;
    pub const MAX_THREADS_PER_MULTIPROCESSOR: c_int = 39;
    pub const ASYNC_ENGINE_COUNT: c_int = 40;
    pub const UNIFIED_ADDRESSING: c_int = 41;
    pub const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
    pub const COMPUTE_CAPABILITY_MINOR: c_int = 76;
    pub const MANAGED_MEMORY: c_int = 83;
    pub const MULTI_GPU_BOARD: c_int = 84;
    pub const PAGEABLE_MEMORY_ACCESS: c_int = 88;
    pub const CONCURRENT_MANAGED_ACCESS: c_int = 89;
    pub const COMPUTE_PREEMPTION_SUPPORTED: c_int = 90;
    pub const CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: c_int = 91;
    pub const COOPERATIVE_LAUNCH: c_int = 95;
    pub const MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: c_int = 97;
    pub const MEMORY_POOLS_SUPPORTED: c_int = 115;
}

/// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
pub const FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 0;
/// `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`: a kernel's static shared memory.
pub const FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: c_int = 1;
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`: the dynamic shared memory a kernel may be
/// launched with, which must be raised before a launch asks for more than [`DEFAULT_DYNAMIC_SHARED_LIMIT`].
pub const FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;
/// The dynamic shared memory every kernel may be launched with before its limit is raised (48 KiB on
/// every architecture since sm_35).
pub const DEFAULT_DYNAMIC_SHARED_LIMIT: u32 = 48 << 10;
/// `CU_LIMIT_STACK_SIZE`.
pub const LIMIT_STACK_SIZE: c_int = 0;
/// `CU_LIMIT_MALLOC_HEAP_SIZE`.
pub const LIMIT_MALLOC_HEAP_SIZE: c_int = 2;
/// `CU_CTX_SCHED_BLOCKING_SYNC`: a waiting host thread sleeps instead of spinning.
pub const CTX_SCHED_BLOCKING_SYNC: c_uint = 4;
/// `CU_CTX_SCHED_MASK`.
pub const CTX_SCHED_MASK: c_uint = 7;
/// `CU_STREAM_NON_BLOCKING`: no implicit ordering with the legacy default stream.
pub const STREAM_NON_BLOCKING: c_uint = 1;
/// `CU_EVENT_DEFAULT`.
pub const EVENT_DEFAULT: c_uint = 0;
/// `CU_MEM_ATTACH_GLOBAL`: managed memory any stream may use.
pub const MEM_ATTACH_GLOBAL: c_uint = 1;
/// `CU_MEMHOSTREGISTER_PORTABLE`: pinned for every context of the process.
pub const MEMHOSTREGISTER_PORTABLE: c_uint = 1;
/// `CU_MEMHOSTREGISTER_DEVICEMAP`: mapped into the device's address space, which
/// `cuMemHostGetDevicePointer` needs.
pub const MEMHOSTREGISTER_DEVICEMAP: c_uint = 2;

entry_points! {
    /// The driver's entry points the plugin uses, with the C signatures of the CUDA driver API.
    pub struct Functions, from the scope by cuda_functions_in_scope;
    cuInit: fn(flags: c_uint) -> CuResult;
    cuDriverGetVersion: fn(version: *mut c_int) -> CuResult;
    cuGetErrorName: fn(error: CuResult, name: *mut *const c_char) -> CuResult;
    cuDeviceGetCount: fn(count: *mut c_int) -> CuResult;
    cuDeviceGet: fn(device: *mut CuDevice, ordinal: c_int) -> CuResult;
    cuDeviceGetName: fn(name: *mut c_char, len: c_int, device: CuDevice) -> CuResult;
    cuDeviceGetAttribute: fn(value: *mut c_int, attribute: c_int, device: CuDevice) -> CuResult;
    cuDeviceTotalMem_v2: fn(bytes: *mut usize, device: CuDevice) -> CuResult;
    cuDeviceCanAccessPeer: fn(can: *mut c_int, device: CuDevice, peer: CuDevice) -> CuResult;
    cuDevicePrimaryCtxGetState: fn(device: CuDevice, flags: *mut c_uint, active: *mut c_int) -> CuResult;
    cuDevicePrimaryCtxSetFlags_v2: fn(device: CuDevice, flags: c_uint) -> CuResult;
    cuDevicePrimaryCtxRetain: fn(context: *mut CuHandle, device: CuDevice) -> CuResult;
    cuDevicePrimaryCtxRelease_v2: fn(device: CuDevice) -> CuResult;
    cuCtxSetCurrent: fn(context: CuHandle) -> CuResult;
    cuCtxSetLimit: fn(limit: c_int, value: usize) -> CuResult;
    cuCtxEnablePeerAccess: fn(peer: CuHandle, flags: c_uint) -> CuResult;
    cuModuleLoadDataEx: fn(
        module: *mut CuHandle,
        image: *const c_void,
        options: c_uint,
        option_keys: *mut c_int,
        option_values: *mut *mut c_void,
    ) -> CuResult;
    cuModuleUnload: fn(module: CuHandle) -> CuResult;
    cuModuleGetFunction: fn(function: *mut CuHandle, module: CuHandle, name: *const c_char) -> CuResult;
    cuModuleGetGlobal_v2: fn(
        ptr: *mut CuDevicePtr,
        bytes: *mut usize,
        module: CuHandle,
        name: *const c_char,
    ) -> CuResult;
    cuFuncGetAttribute: fn(value: *mut c_int, attribute: c_int, function: CuHandle) -> CuResult;
    cuFuncSetAttribute: fn(function: CuHandle, attribute: c_int, value: c_int) -> CuResult;
    cuLaunchKernel: fn(
        function: CuHandle,
        grid_x: c_uint,
        grid_y: c_uint,
        grid_z: c_uint,
        block_x: c_uint,
        block_y: c_uint,
        block_z: c_uint,
        shared_bytes: c_uint,
        stream: CuHandle,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> CuResult;
    cuMemAlloc_v2: fn(ptr: *mut CuDevicePtr, bytes: usize) -> CuResult;
    cuMemFree_v2: fn(ptr: CuDevicePtr) -> CuResult;
    cuMemAllocHost_v2: fn(ptr: *mut *mut c_void, bytes: usize) -> CuResult;
    cuMemFreeHost: fn(ptr: *mut c_void) -> CuResult;
    cuMemAllocManaged: fn(ptr: *mut CuDevicePtr, bytes: usize, flags: c_uint) -> CuResult;
    cuMemHostRegister_v2: fn(ptr: *mut c_void, bytes: usize, flags: c_uint) -> CuResult;
    cuMemHostUnregister: fn(ptr: *mut c_void) -> CuResult;
    cuMemHostGetDevicePointer_v2: fn(dptr: *mut CuDevicePtr, host: *mut c_void, flags: c_uint) -> CuResult;
    cuMemcpyHtoDAsync_v2: fn(dst: CuDevicePtr, src: *const c_void, bytes: usize, stream: CuHandle) -> CuResult;
    cuMemcpyDtoHAsync_v2: fn(dst: *mut c_void, src: CuDevicePtr, bytes: usize, stream: CuHandle) -> CuResult;
    cuMemcpyDtoDAsync_v2: fn(dst: CuDevicePtr, src: CuDevicePtr, bytes: usize, stream: CuHandle) -> CuResult;
    cuMemcpyPeerAsync: fn(
        dst: CuDevicePtr,
        dst_context: CuHandle,
        src: CuDevicePtr,
        src_context: CuHandle,
        bytes: usize,
        stream: CuHandle,
    ) -> CuResult;
    cuStreamCreate: fn(stream: *mut CuHandle, flags: c_uint) -> CuResult;
    cuStreamDestroy_v2: fn(stream: CuHandle) -> CuResult;
    cuStreamSynchronize: fn(stream: CuHandle) -> CuResult;
    cuStreamQuery: fn(stream: CuHandle) -> CuResult;
    cuStreamWaitEvent: fn(stream: CuHandle, event: CuHandle, flags: c_uint) -> CuResult;
    cuEventCreate: fn(event: *mut CuHandle, flags: c_uint) -> CuResult;
    cuEventDestroy_v2: fn(event: CuHandle) -> CuResult;
    cuEventRecord: fn(event: CuHandle, stream: CuHandle) -> CuResult;
    cuEventSynchronize: fn(event: CuHandle) -> CuResult;
}

/// An opened driver: its entry points and the library that holds them ("libcuda.so.1", a simulated
/// driver's name), which stays loaded for the life of the process.
pub type Driver = Opened<Functions>;

impl Driver {
    /// The driver's name for `code` ("CUDA_ERROR_NO_DEVICE"), or "an unknown CUresult" when the
    /// driver has none.
    pub fn error_name(&self, code: CuResult) -> String {
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: `name` is writable; the driver stores a pointer to a static string or fails.
        let status = unsafe { (self.functions.cuGetErrorName)(code, &mut name) };
        if status != CUDA_SUCCESS || name.is_null() {
            return "an unknown CUresult".into();
        }
        // SAFETY: on success the driver points `name` at a NUL-terminated static string.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    }
}
