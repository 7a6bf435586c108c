//! The driver's entry points as functions that return `Result`: each one calls the raw entry point and
//! turns a failing `CUresult` into [`Error::Driver`] naming the call and the result by the driver's own
//! name (`CUDA_ERROR_OUT_OF_MEMORY (2)`). This is the one place where driver statuses become errors.

use std::ffi::{c_int, c_uint, c_void, CStr};

use super::sys::{self, CuDevice, CuDevicePtr, CuHandle, CuResult, Driver, CUDA_SUCCESS};
use crate::util::error::{Error, Result};

/// The opened driver, with checked calls grouped by API family.
#[derive(Clone, Copy)]
pub struct Api {
    driver: &'static Driver,
}

impl Api {
    /// Checked calls into `driver`.
    pub fn new(driver: &'static Driver) -> Api {
        Api { driver }
    }

    /// The library the driver came from.
    pub fn library(&self) -> &str {
        &self.driver.library
    }

    fn f(&self) -> &sys::Functions {
        &self.driver.functions
    }

    /// `Ok` for success, else the error naming `call` and the status.
    pub fn check(&self, call: &'static str, code: CuResult) -> Result<()> {
        if code == CUDA_SUCCESS {
            return Ok(());
        }
        Err(Error::Driver {
            driver: crate::util::error::CUDA,
            call,
            code: i64::from(code),
            name: self.driver.error_name(code),
        })
    }

    /// Like [`Api::check`] for an allocation of `bytes`, except that `CUDA_ERROR_OUT_OF_MEMORY` becomes
    /// [`Error::OutOfMemory`], which the core answers by freeing the blocks it caches and trying again.
    fn check_allocation(&self, call: &'static str, code: CuResult, bytes: usize) -> Result<()> {
        if code == sys::CUDA_ERROR_OUT_OF_MEMORY {
            return Err(Error::OutOfMemory { size: bytes });
        }
        self.check(call, code)
    }

    // Initialisation and devices.

    /// `cuInit(0)`.
    pub fn init(&self) -> Result<()> {
        // SAFETY: cuInit has no preconditions.
        self.check("cuInit", unsafe { (self.f().cuInit)(0) })
    }

    /// The driver's version (e.g. 12020).
    pub fn driver_version(&self) -> Result<i32> {
        let mut version = 0;
        // SAFETY: `version` is writable.
        self.check("cuDriverGetVersion", unsafe {
            (self.f().cuDriverGetVersion)(&mut version)
        })?;
        Ok(version)
    }

    /// Number of CUDA devices.
    pub fn device_count(&self) -> Result<usize> {
        let mut count = 0;
        // SAFETY: `count` is writable.
        self.check("cuDeviceGetCount", unsafe { (self.f().cuDeviceGetCount)(&mut count) })?;
        Ok(count.max(0) as usize)
    }

    /// The device of `ordinal`.
    pub fn device(&self, ordinal: usize) -> Result<CuDevice> {
        let mut device = 0;
        // SAFETY: `device` is writable.
        self.check("cuDeviceGet", unsafe {
            (self.f().cuDeviceGet)(&mut device, ordinal as c_int)
        })?;
        Ok(device)
    }

    /// The device's marketing name.
    pub fn device_name(&self, device: CuDevice) -> Result<String> {
        let mut name = [0u8; 256];
        // SAFETY: `name` is writable for its length, which is passed (the driver NUL-terminates).
        self.check("cuDeviceGetName", unsafe {
            (self.f().cuDeviceGetName)(name.as_mut_ptr().cast(), name.len() as c_int - 1, device)
        })?;
        Ok(CStr::from_bytes_until_nul(&name)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default())
    }

    /// One `CUdevice_attribute` of the device.
    pub fn attribute(&self, device: CuDevice, attribute: c_int) -> Result<i32> {
        let mut value = 0;
        // SAFETY: `value` is writable.
        self.check("cuDeviceGetAttribute", unsafe {
            (self.f().cuDeviceGetAttribute)(&mut value, attribute, device)
        })?;
        Ok(value)
    }

    /// The device's memory in bytes.
    pub fn total_memory(&self, device: CuDevice) -> Result<usize> {
        let mut bytes = 0;
        // SAFETY: `bytes` is writable.
        self.check("cuDeviceTotalMem_v2", unsafe {
            (self.f().cuDeviceTotalMem_v2)(&mut bytes, device)
        })?;
        Ok(bytes)
    }

    /// Whether `device` can address `peer`'s memory directly.
    pub fn can_access_peer(&self, device: CuDevice, peer: CuDevice) -> Result<bool> {
        let mut can = 0;
        // SAFETY: `can` is writable.
        self.check("cuDeviceCanAccessPeer", unsafe {
            (self.f().cuDeviceCanAccessPeer)(&mut can, device, peer)
        })?;
        Ok(can != 0)
    }

    // Contexts.

    /// The primary context's flags and whether it is active.
    pub fn primary_context_state(&self, device: CuDevice) -> Result<(c_uint, bool)> {
        let (mut flags, mut active) = (0, 0);
        // SAFETY: both outputs are writable.
        self.check("cuDevicePrimaryCtxGetState", unsafe {
            (self.f().cuDevicePrimaryCtxGetState)(device, &mut flags, &mut active)
        })?;
        Ok((flags, active != 0))
    }

    /// Sets the flags of an inactive primary context.
    pub fn set_primary_context_flags(&self, device: CuDevice, flags: c_uint) -> Result<()> {
        // SAFETY: plain values.
        self.check("cuDevicePrimaryCtxSetFlags_v2", unsafe {
            (self.f().cuDevicePrimaryCtxSetFlags_v2)(device, flags)
        })
    }

    /// Retains the device's primary context (released by [`Api::release_primary_context`]).
    pub fn retain_primary_context(&self, device: CuDevice) -> Result<CuHandle> {
        let mut context = std::ptr::null_mut();
        // SAFETY: `context` is writable.
        self.check("cuDevicePrimaryCtxRetain", unsafe {
            (self.f().cuDevicePrimaryCtxRetain)(&mut context, device)
        })?;
        Ok(context)
    }

    /// Releases one retention of the device's primary context.
    pub fn release_primary_context(&self, device: CuDevice) -> Result<()> {
        // SAFETY: plain value; the driver refuses a device it does not hold.
        self.check("cuDevicePrimaryCtxRelease_v2", unsafe {
            (self.f().cuDevicePrimaryCtxRelease_v2)(device)
        })
    }

    /// Makes `context` the calling thread's current context.
    ///
    /// # Safety
    /// `context` is a primary context this driver retained and has not released.
    pub unsafe fn set_current(&self, context: CuHandle) -> Result<()> {
        // SAFETY: `context` is a retained primary context (the callers' invariant).
        self.check("cuCtxSetCurrent", unsafe { (self.f().cuCtxSetCurrent)(context) })
    }

    /// Sets a limit (`CU_LIMIT_*`) of the current context.
    pub fn set_limit(&self, limit: c_int, value: usize) -> Result<()> {
        // SAFETY: plain values.
        self.check("cuCtxSetLimit", unsafe { (self.f().cuCtxSetLimit)(limit, value) })
    }

    /// Lets the current context reach `peer`'s memory; `Ok(false)` when the hardware has no room for
    /// another peer (the stock plugin then copies through the device instead).
    ///
    /// # Safety
    /// `peer` is a primary context this driver retained and has not released.
    pub unsafe fn enable_peer_access(&self, peer: CuHandle) -> Result<bool> {
        // SAFETY: `peer` is a retained primary context.
        let code = unsafe { (self.f().cuCtxEnablePeerAccess)(peer, 0) };
        match code {
            sys::CUDA_ERROR_TOO_MANY_PEERS => Ok(false),
            sys::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(true),
            _ => self.check("cuCtxEnablePeerAccess", code).map(|()| true),
        }
    }

    // Modules.

    /// Loads a cubin or PTX image into the current context.
    pub fn load_module(&self, image: &[u8]) -> Result<CuHandle> {
        let mut module = std::ptr::null_mut();
        // SAFETY: `image` is readable for its length; the driver reads the ELF or the NUL-terminated
        // PTX text it holds (the caller checked which) and copies what it keeps.
        self.check("cuModuleLoadDataEx", unsafe {
            (self.f().cuModuleLoadDataEx)(
                &mut module,
                image.as_ptr().cast(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        })?;
        Ok(module)
    }

    /// Unloads a module.
    ///
    /// # Safety
    /// `module` came from `load_module` and is unloaded once.
    pub unsafe fn unload_module(&self, module: CuHandle) -> Result<()> {
        // SAFETY: `module` was loaded by `load_module` and is unloaded once (the owner's invariant).
        self.check("cuModuleUnload", unsafe { (self.f().cuModuleUnload)(module) })
    }

    /// The kernel `name` of `module`.
    ///
    /// # Safety
    /// `module` is a loaded module of this driver.
    pub unsafe fn function(&self, module: CuHandle, name: &CStr) -> Result<CuHandle> {
        let mut function = std::ptr::null_mut();
        // SAFETY: `function` is writable, `name` NUL-terminated, `module` loaded.
        self.check("cuModuleGetFunction", unsafe {
            (self.f().cuModuleGetFunction)(&mut function, module, name.as_ptr())
        })?;
        Ok(function)
    }

    /// The address and size of the global `name` of `module`.
    ///
    /// # Safety
    /// `module` is a loaded module of this driver.
    pub unsafe fn global(&self, module: CuHandle, name: &CStr) -> Result<(CuDevicePtr, usize)> {
        let (mut ptr, mut size) = (0, 0);
        // SAFETY: outputs writable, `name` NUL-terminated, `module` loaded.
        self.check("cuModuleGetGlobal_v2", unsafe {
            (self.f().cuModuleGetGlobal_v2)(&mut ptr, &mut size, module, name.as_ptr())
        })?;
        Ok((ptr, size))
    }

    /// Most threads per block `function` can be launched with.
    ///
    /// # Safety
    /// `function` belongs to a loaded module of this driver.
    pub unsafe fn max_threads(&self, function: CuHandle) -> Result<u32> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.function_attribute(function, sys::FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) }
    }

    /// `function`'s attribute `which`, a count (negative values read as 0).
    ///
    /// # Safety
    /// `function` belongs to a loaded module of this driver.
    unsafe fn function_attribute(&self, function: CuHandle, which: c_int) -> Result<u32> {
        let mut value = 0;
        // SAFETY: `value` is writable, `function` belongs to a loaded module.
        self.check("cuFuncGetAttribute", unsafe {
            (self.f().cuFuncGetAttribute)(&mut value, which, function)
        })?;
        Ok(value.max(0) as u32)
    }

    /// The static shared memory `function` uses, in bytes.
    ///
    /// # Safety
    /// `function` belongs to a loaded module of this driver.
    pub unsafe fn static_shared_bytes(&self, function: CuHandle) -> Result<u32> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.function_attribute(function, sys::FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) }
    }

    /// Lets `function` be launched with up to `bytes` of dynamic shared memory.
    ///
    /// # Safety
    /// `function` belongs to a loaded module of this driver.
    pub unsafe fn allow_dynamic_shared_bytes(&self, function: CuHandle, bytes: u32) -> Result<()> {
        let value = c_int::try_from(bytes).unwrap_or(c_int::MAX);
        // SAFETY: `function` belongs to a loaded module.
        self.check("cuFuncSetAttribute", unsafe {
            (self.f().cuFuncSetAttribute)(function, sys::FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, value)
        })
    }

    /// Launches `function` on a 1-D grid.
    ///
    /// # Safety
    /// `params` holds one pointer per kernel parameter, each to a value of the parameter's type; what
    /// the values point to stays valid until `stream` has run the kernel.
    pub unsafe fn launch(
        &self,
        function: CuHandle,
        blocks: u32,
        threads: u32,
        shared_bytes: u32,
        stream: CuHandle,
        params: *mut *mut c_void,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        self.check("cuLaunchKernel", unsafe {
            (self.f().cuLaunchKernel)(
                function,
                blocks,
                1,
                1,
                threads,
                1,
                1,
                shared_bytes,
                stream,
                params,
                std::ptr::null_mut(),
            )
        })
    }

    // Memory.

    /// Device memory.
    pub fn alloc_device(&self, bytes: usize) -> Result<CuDevicePtr> {
        let mut ptr = 0;
        // SAFETY: `ptr` is writable.
        let code = unsafe { (self.f().cuMemAlloc_v2)(&mut ptr, bytes) };
        self.check_allocation("cuMemAlloc_v2", code, bytes)?;
        Ok(ptr)
    }

    /// Frees device or managed memory.
    ///
    /// # Safety
    /// `ptr` came from `alloc_device` or `alloc_managed` and nothing uses it any more.
    pub unsafe fn free_device(&self, ptr: CuDevicePtr) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        self.check("cuMemFree_v2", unsafe { (self.f().cuMemFree_v2)(ptr) })
    }

    /// Page-locked host memory the device can access.
    pub fn alloc_host(&self, bytes: usize) -> Result<*mut c_void> {
        let mut ptr = std::ptr::null_mut();
        self.check_allocation(
            "cuMemAllocHost_v2",
            // SAFETY: `ptr` is writable.
            unsafe { (self.f().cuMemAllocHost_v2)(&mut ptr, bytes) },
            bytes,
        )?;
        Ok(ptr)
    }

    /// Frees memory from `alloc_host`.
    ///
    /// # Safety
    /// `ptr` came from `alloc_host` and nothing uses it any more.
    pub unsafe fn free_host(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        self.check("cuMemFreeHost", unsafe { (self.f().cuMemFreeHost)(ptr) })
    }

    /// Managed memory, at one address for the host and every device.
    pub fn alloc_managed(&self, bytes: usize) -> Result<CuDevicePtr> {
        let mut ptr = 0;
        self.check_allocation(
            "cuMemAllocManaged",
            // SAFETY: `ptr` is writable.
            unsafe { (self.f().cuMemAllocManaged)(&mut ptr, bytes, sys::MEM_ATTACH_GLOBAL) },
            bytes,
        )?;
        Ok(ptr)
    }

    /// Pins a host range for every context; `Ok(false)` when it was pinned already (by another device
    /// of this process).
    ///
    /// The driver checks the range against the process's mappings (an unmapped one is
    /// `CUDA_ERROR_INVALID_VALUE`) and never touches its contents, so any pointer is safe to pass.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn register_host(&self, ptr: *mut c_void, bytes: usize) -> Result<bool> {
        let flags = sys::MEMHOSTREGISTER_PORTABLE | sys::MEMHOSTREGISTER_DEVICEMAP;
        // SAFETY: see above; the driver validates the range itself.
        let code = unsafe { (self.f().cuMemHostRegister_v2)(ptr, bytes, flags) };
        if code == sys::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED {
            return Ok(false);
        }
        self.check("cuMemHostRegister_v2", code).map(|()| true)
    }

    /// The device's address of pinned host memory at `ptr`, for devices that cannot use the host's.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn host_device_pointer(&self, ptr: *mut c_void) -> Result<CuDevicePtr> {
        let mut device = 0;
        // SAFETY: `device` is writable; the driver looks `ptr` up in its own table of pinned ranges
        // and never touches the memory.
        self.check("cuMemHostGetDevicePointer_v2", unsafe {
            (self.f().cuMemHostGetDevicePointer_v2)(&mut device, ptr, 0)
        })?;
        Ok(device)
    }

    /// Unpins a range pinned by `register_host`. The driver refuses a pointer it did not register
    /// (`CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED`) and never touches the memory, so any pointer is safe.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn unregister_host(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: see above; the driver looks the pointer up in its own table.
        self.check("cuMemHostUnregister", unsafe { (self.f().cuMemHostUnregister)(ptr) })
    }

    /// Queues a host-to-device copy.
    ///
    /// # Safety
    /// Both ranges are valid for `bytes` until `stream` has run the copy.
    pub unsafe fn copy_to_device(
        &self,
        dst: CuDevicePtr,
        src: *const c_void,
        bytes: usize,
        stream: CuHandle,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        self.check("cuMemcpyHtoDAsync_v2", unsafe {
            (self.f().cuMemcpyHtoDAsync_v2)(dst, src, bytes, stream)
        })
    }

    /// Queues a device-to-host copy.
    ///
    /// # Safety
    /// As for [`Api::copy_to_device`].
    pub unsafe fn copy_to_host(
        &self,
        dst: *mut c_void,
        src: CuDevicePtr,
        bytes: usize,
        stream: CuHandle,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        self.check("cuMemcpyDtoHAsync_v2", unsafe {
            (self.f().cuMemcpyDtoHAsync_v2)(dst, src, bytes, stream)
        })
    }

    /// Queues a copy between device addresses (one device, or two under unified addressing).
    ///
    /// # Safety
    /// As for [`Api::copy_to_device`].
    pub unsafe fn copy_device_to_device(
        &self,
        dst: CuDevicePtr,
        src: CuDevicePtr,
        bytes: usize,
        stream: CuHandle,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        self.check("cuMemcpyDtoDAsync_v2", unsafe {
            (self.f().cuMemcpyDtoDAsync_v2)(dst, src, bytes, stream)
        })
    }

    /// Queues a copy between two devices with peer access.
    ///
    /// # Safety
    /// As for [`Api::copy_to_device`]; the contexts are retained primary contexts.
    pub unsafe fn copy_peer(
        &self,
        dst: CuDevicePtr,
        dst_context: CuHandle,
        src: CuDevicePtr,
        src_context: CuHandle,
        bytes: usize,
        stream: CuHandle,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        self.check("cuMemcpyPeerAsync", unsafe {
            (self.f().cuMemcpyPeerAsync)(dst, dst_context, src, src_context, bytes, stream)
        })
    }

    // Streams and events.

    /// A non-blocking stream in the current context.
    pub fn create_stream(&self) -> Result<CuHandle> {
        let mut stream = std::ptr::null_mut();
        // SAFETY: `stream` is writable.
        self.check("cuStreamCreate", unsafe {
            (self.f().cuStreamCreate)(&mut stream, sys::STREAM_NON_BLOCKING)
        })?;
        Ok(stream)
    }

    /// Destroys a stream.
    ///
    /// # Safety
    /// `stream` came from `create_stream`, has no work left, and is destroyed once.
    pub unsafe fn destroy_stream(&self, stream: CuHandle) -> Result<()> {
        // SAFETY: `stream` came from `create_stream` and is destroyed once (the owner's invariant).
        self.check("cuStreamDestroy_v2", unsafe { (self.f().cuStreamDestroy_v2)(stream) })
    }

    /// Waits for a stream's work.
    ///
    /// # Safety
    /// `stream` is a live stream of this driver.
    pub unsafe fn synchronize_stream(&self, stream: CuHandle) -> Result<()> {
        // SAFETY: `stream` is live.
        self.check("cuStreamSynchronize", unsafe { (self.f().cuStreamSynchronize)(stream) })
    }

    /// Whether a stream's work is done (`CUDA_ERROR_NOT_READY` is "not yet", not a failure).
    ///
    /// # Safety
    /// `stream` is a live stream of this driver.
    pub unsafe fn stream_is_idle(&self, stream: CuHandle) -> Result<bool> {
        // SAFETY: `stream` is live.
        let code = unsafe { (self.f().cuStreamQuery)(stream) };
        if code == sys::CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        self.check("cuStreamQuery", code).map(|()| true)
    }

    /// Makes later work on `stream` wait for `event`.
    ///
    /// # Safety
    /// `stream` and `event` are live handles of this driver.
    pub unsafe fn stream_wait_event(&self, stream: CuHandle, event: CuHandle) -> Result<()> {
        // SAFETY: both are live.
        self.check("cuStreamWaitEvent", unsafe {
            (self.f().cuStreamWaitEvent)(stream, event, 0)
        })
    }

    /// An event in the current context.
    pub fn create_event(&self) -> Result<CuHandle> {
        let mut event = std::ptr::null_mut();
        // SAFETY: `event` is writable.
        self.check("cuEventCreate", unsafe {
            (self.f().cuEventCreate)(&mut event, sys::EVENT_DEFAULT)
        })?;
        Ok(event)
    }

    /// Destroys an event.
    ///
    /// # Safety
    /// `event` came from `create_event`, nothing waits for it, and it is destroyed once.
    pub unsafe fn destroy_event(&self, event: CuHandle) -> Result<()> {
        // SAFETY: `event` came from `create_event` and is destroyed once (the owner's invariant).
        self.check("cuEventDestroy_v2", unsafe { (self.f().cuEventDestroy_v2)(event) })
    }

    /// Records `event` on `stream`.
    ///
    /// # Safety
    /// `event` and `stream` are live handles of this driver.
    pub unsafe fn record_event(&self, event: CuHandle, stream: CuHandle) -> Result<()> {
        // SAFETY: both are live.
        self.check("cuEventRecord", unsafe { (self.f().cuEventRecord)(event, stream) })
    }

    /// Waits for `event`.
    ///
    /// # Safety
    /// `event` is a live event of this driver.
    pub unsafe fn synchronize_event(&self, event: CuHandle) -> Result<()> {
        // SAFETY: `event` is live.
        self.check("cuEventSynchronize", unsafe { (self.f().cuEventSynchronize)(event) })
    }
}
