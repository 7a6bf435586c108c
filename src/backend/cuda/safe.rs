//! Owned driver objects: each releases its handle exactly once, either explicitly (where the caller
//! wants the error) or, failing that, when dropped.

use super::result::Api;
use super::sys::{CuDevice, CuHandle};
use crate::backend::gpu::owned::OwnedHandle;
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

/// A non-blocking stream, kept in the core's queue pool, which destroys it explicitly at teardown.
pub struct Stream(OwnedHandle);

impl Stream {
    /// A new stream in the current context.
    pub fn create(api: Api) -> Result<Stream> {
        let stream = api.create_stream()?;
        Ok(Stream(OwnedHandle::new(
            stream as u64,
            // SAFETY: `OwnedHandle` passes back the live stream created above, once.
            Box::new(move |bits| unsafe { api.destroy_stream(bits as CuHandle) }),
        )))
    }

    /// The driver's handle (NULL once destroyed).
    #[inline]
    pub fn raw(&self) -> CuHandle {
        self.0.bits() as CuHandle
    }

    /// Destroys the stream now, reporting the driver's answer; later calls do nothing.
    pub fn destroy(&self) -> Result<()> {
        self.0.release()
    }
}

/// An event, kept in the core's event pool, which destroys it explicitly at teardown.
pub struct Event(OwnedHandle);

impl Event {
    /// A new event in the current context.
    pub fn create(api: Api) -> Result<Event> {
        let event = api.create_event()?;
        Ok(Event(OwnedHandle::new(
            event as u64,
            // SAFETY: `OwnedHandle` passes back the live event created above, once.
            Box::new(move |bits| unsafe { api.destroy_event(bits as CuHandle) }),
        )))
    }

    /// The driver's handle (NULL once destroyed).
    #[inline]
    pub fn raw(&self) -> CuHandle {
        self.0.bits() as CuHandle
    }

    /// Destroys the event now, reporting the driver's answer; later calls do nothing.
    pub fn destroy(&self) -> Result<()> {
        self.0.release()
    }
}
