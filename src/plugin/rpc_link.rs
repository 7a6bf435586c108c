//! Host services wired to devices: when an image that defines `__llvm_libc_rpc_client` is loaded, its
//! device gets an RPC server (lanes and ports from the device's limits, the mailbox in host memory the
//! device can reach, device `malloc` from device memory) and the image's client pointer is aimed at the
//! device's one client object, which the server owns and all images of the device share so that their
//! port locks agree and no image's unloading takes it away from the others.

#[cfg(feature = "rpc")]
use std::ffi::c_void;

use super::device::Device;
#[cfg(feature = "rpc")]
use crate::backend::AllocKind;
use crate::backend::Backend;
use crate::util::error::Result;

/// The memory of one device as the RPC server needs it, through the backend's hooks.
#[cfg(feature = "rpc")]
pub struct BackendMemory<B: Backend> {
    backend: &'static B,
    device: usize,
}

#[cfg(feature = "rpc")]
impl<B: Backend> BackendMemory<B> {
    /// Memory of `device`.
    pub fn new(backend: &'static B, device: usize) -> BackendMemory<B> {
        BackendMemory { backend, device }
    }
}

#[cfg(feature = "rpc")]
impl<B: Backend> crate::rpc::DeviceMemory for BackendMemory<B> {
    fn alloc(&self, size: usize) -> Result<*mut c_void> {
        self.backend.alloc_for_kernels(self.device, size)
    }

    unsafe fn free(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: per the trait's contract, `ptr` came from `alloc` above.
        unsafe { self.backend.free_for_kernels(self.device, ptr) }
    }

    fn alloc_shared(&self, size: usize) -> Result<*mut c_void> {
        let ptr = self.backend.alloc(self.device, size, AllocKind::Host)?;
        // SAFETY: host memory from the backend is addressable by the host at `ptr` for `size` bytes
        // (the `Backend::alloc` contract); the mailbox must start zeroed.
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), 0, size) };
        Ok(ptr)
    }

    unsafe fn free_shared(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: per the trait's contract, `ptr` came from `alloc_shared` above with the host kind.
        unsafe { self.backend.free(self.device, ptr, AllocKind::Host) }
    }
}

/// Forgets the device's server (if any) after taking it out of service and shutting it down.
#[cfg(feature = "rpc")]
pub fn detach<B: Backend>(device: &Device<B>) -> Result<()> {
    use std::sync::atomic::Ordering;
    let server = crate::util::sync::lock(&device.rpc).take();
    device.has_rpc.store(false, Ordering::Release);
    match server {
        Some(server) => {
            crate::rpc::registry::remove_server(&server)?;
            server.shutdown()
        }
        None => Ok(()),
    }
}

/// Without host services there is never a server.
#[cfg(not(feature = "rpc"))]
pub fn detach<B: Backend>(_device: &Device<B>) -> Result<()> {
    Ok(())
}

/// Sets up host services for an image that defines `__llvm_libc_rpc_client`: the device's server (made
/// by the first such image) and the image's client pointer. Images without the symbol are left alone.
#[cfg(feature = "rpc")]
pub fn attach<B: Backend>(core: &super::core::Core<B>, device: &Device<B>, module: &B::Module) -> Result<()> {
    use crate::rpc::{registry, server::RpcServer, CLIENT_SYMBOL};
    use crate::util::error::{Context, Error};
    use crate::util::log;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    let backend = core.backend();
    let symbol = match backend.global(device.index, module, CLIENT_SYMBOL) {
        Ok(symbol) => symbol,
        Err(Error::MissingSymbol { .. }) => return Ok(()),
        Err(e) => return Err(e.context("looking up the RPC client")),
    };
    if symbol.size != 8 {
        return Err(Error::BadImage(format!(
            "{} has {} bytes; a pointer has 8",
            CLIENT_SYMBOL.to_string_lossy(),
            symbol.size
        )));
    }
    let limits = *device.limits()?;
    let mut slot = crate::util::sync::lock(&device.rpc);
    let server = match &*slot {
        Some(server) => Arc::clone(server),
        None => {
            let ports = core.config().rpc_ports.unwrap_or(limits.rpc_ports);
            let memory = Arc::new(BackendMemory::new(backend, device.index));
            let server = RpcServer::new(device.index, ports, limits.lane_size, memory)
                .context(|| format!("starting host services for device {}", device.index))?;
            log::device_info(
                device.index,
                format_args!(
                    "host services ready: {} RPC ports of {} lane(s)",
                    server.ports(),
                    server.lane_size()
                ),
            );
            *slot = Some(Arc::clone(&server));
            server
        }
    };
    let client = server.client_object(|address, bytes| core.write_device(device, address as *mut c_void, bytes))?;
    core.write_device(device, symbol.addr, &(client as u64).to_le_bytes())?;
    if !device.uses_rpc() {
        registry::add_server(Arc::clone(&server))?;
        device.has_rpc.store(true, Ordering::Release);
    }
    Ok(())
}

/// Without host services, an image that asks for them is loaded without a server, and says so.
#[cfg(not(feature = "rpc"))]
pub fn attach<B: Backend>(core: &super::core::Core<B>, device: &Device<B>, module: &B::Module) -> Result<()> {
    if core
        .backend()
        .global(device.index, module, crate::rpc::CLIENT_SYMBOL)
        .is_ok()
    {
        crate::util::log::device_info(
            device.index,
            "the image asks for host services, but this omprpc was built without them (feature `rpc`)",
        );
    }
    Ok(())
}
