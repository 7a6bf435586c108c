//! Owned driver objects: each releases its handle exactly once, either explicitly (where the caller
//! wants the error) or, failing that, when dropped.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

use super::result::Api;
use super::sys::{CuDevice, CuHandle};
use crate::util::error::Result;

/// A retained primary context of one device.
pub struct PrimaryContext {
    api: Api,
    device: CuDevice,
    handle: CuHandle,
}

// SAFETY: a CUDA context handle may be used from any thread (each thread makes it current itself).
unsafe impl Send for PrimaryContext {}
// SAFETY: as above; the handle is never changed after retention.
unsafe impl Sync for PrimaryContext {}

impl PrimaryContext {
    /// Retains `device`'s primary context.
    pub fn retain(api: Api, device: CuDevice) -> Result<PrimaryContext> {
        let handle = api.retain_primary_context(device)?;
        Ok(PrimaryContext { api, device, handle })
    }

    /// The driver's handle.
    pub fn handle(&self) -> CuHandle {
        self.handle
    }

    /// Makes the context current on the calling thread.
    pub fn enter(&self) -> Result<()> {
        // SAFETY: the context is retained until `release` or drop, which take `self`.
        unsafe { self.api.set_current(self.handle) }
    }

    /// Releases the retention, reporting the driver's answer.
    pub fn release(self) -> Result<()> {
        let (api, device) = (self.api, self.device);
        std::mem::forget(self);
        api.release_primary_context(device)
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        let _ = self.api.release_primary_context(self.device);
    }
}

/// A loaded module.
pub struct Module {
    api: Api,
    handle: CuHandle,
}

// SAFETY: module handles may be used from any thread of the process.
unsafe impl Send for Module {}
// SAFETY: as above; the handle never changes.
unsafe impl Sync for Module {}

impl Module {
    /// Loads `image` (a cubin, or NUL-terminated PTX) into the current context.
    pub fn load(api: Api, image: &[u8]) -> Result<Module> {
        Ok(Module {
            api,
            handle: api.load_module(image)?,
        })
    }

    /// The driver's handle.
    pub fn handle(&self) -> CuHandle {
        self.handle
    }

    /// Unloads the module, reporting the driver's answer.
    pub fn unload(self) -> Result<()> {
        let (api, handle) = (self.api, self.handle);
        std::mem::forget(self);
        // SAFETY: the module was loaded by `load` and `self`, its only owner, is gone.
        unsafe { api.unload_module(handle) }
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: the module was loaded by `load`; dropping its only owner unloads it once.
        let _ = unsafe { self.api.unload_module(self.handle) };
    }
}

/// A stream or an event: kept in the core's pools, which destroy it explicitly at teardown. The handle
/// is taken out on destruction, so it is destroyed once whichever way comes first.
pub struct Handle {
    api: Api,
    handle: AtomicPtr<c_void>,
    /// Destroys the handle; called once, with a live handle of the right kind.
    destroy: unsafe fn(&Api, CuHandle) -> Result<()>,
}

impl Handle {
    /// A new stream in the current context.
    pub fn stream(api: Api) -> Result<Handle> {
        Ok(Handle {
            api,
            handle: AtomicPtr::new(api.create_stream()?),
            destroy: Api::destroy_stream,
        })
    }

    /// A new event in the current context.
    pub fn event(api: Api) -> Result<Handle> {
        Ok(Handle {
            api,
            handle: AtomicPtr::new(api.create_event()?),
            destroy: Api::destroy_event,
        })
    }

    /// The driver's handle (NULL once destroyed).
    #[inline]
    pub fn raw(&self) -> CuHandle {
        self.handle.load(Ordering::Acquire)
    }

    /// Destroys the stream or event now, reporting the driver's answer; later calls do nothing.
    pub fn destroy(&self) -> Result<()> {
        let handle = self.handle.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if handle.is_null() {
            return Ok(());
        }
        // SAFETY: the swap above hands the live handle to one caller only; `destroy` matches its kind.
        unsafe { (self.destroy)(&self.api, handle) }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.destroy();
    }
}
