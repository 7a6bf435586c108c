//! Host services wired to images, the way LLVM's plugins of 17–19 keep the `__llvm_libc_rpc_client`
//! contract: the image defines an 8-byte pointer to a client object *of its own* (LLVM libc's
//! `rpc_client.cpp` defines `static rpc::Client client` and points the symbol at it; every libc call
//! then uses `client` itself, never the pointer). The plugin reads the pointer, checks that it names a
//! writable object of that image big enough for a client, and copies libc's client bytes there. The
//! pointer itself is never written, so device code that follows the pointer (`omprpc_device.h`) and
//! device code that uses the object directly (LLVM libc) cannot be told apart.
//!
//! **One server per image.** A client object carries its own lock words (one bit per port), so two
//! images whose clients described the same ports would both take port 0 and corrupt each other's
//! calls. Each loaded image that asks for host services therefore gets a server of its own, with its
//! own mailbox, rather than a slice of one device-wide mailbox. Chosen over slicing because:
//! * forward progress needs a port for every device thread that may wait on one at once (the reason
//!   the port count tracks the device's parallelism); a slice would divide that count between
//!   images, and an image loaded later would have to take ports from ones already running;
//! * the image's lane count decides the server's (a wave32 and a wave64 image on one AMD GPU, or a
//!   host image built for a simulated warp), which a shared mailbox of one lane size cannot serve;
//! * unloading an image shuts down exactly its server and frees exactly its mailbox, while the
//!   device's other images keep calling their own (an unloaded library never leaves another's calls in freed memory:
//!   no image's client points into memory that another image owns), and the next image gets fresh
//!   ports.
//!
//! The price is one more mailbox to scan per live image: small beside a call, for the one to three
//! images a program has (`docs/measurements.md`, "One server per image").
//!
//! What the device's code gets from `malloc` is one heap per device ([`crate::rpc::DeviceHeap`]),
//! which every image's server shares, so memory that one library's code allocated may be freed by
//! another's.

use std::ffi::c_void;
use std::sync::Arc;

use super::device::Device;
use crate::backend::AllocKind;
use crate::backend::Backend;
use crate::rpc::{DeviceHeap, HostServices, ImageServer};
use crate::util::config::Config;
use crate::util::elf;
use crate::util::error::Result;

/// The symbol through which `omprpc_device.h` says how many lanes share a port in the image's code
/// (a `uint32_t`: 1 on the host, the warp or wavefront size on a GPU). LLVM libc's client exports no
/// such symbol; its images get the device's lane size.
pub const LANES_SYMBOL: &std::ffi::CStr = c"__omprpc_rpc_lanes";

/// The symbol through which `omprpc_device.h` learns what to ring after writing a request (a
/// `uint64_t`, 0 until the host writes it: the address of the serving threads' doorbell on the host
/// device, an HSA signal's handle on AMD GPUs). LLVM libc's client rings nothing.
pub const DOORBELL_SYMBOL: &std::ffi::CStr = c"__omprpc_rpc_doorbell";

/// The memory of one device as the RPC server needs it, through the backend's hooks.
pub struct BackendMemory<B: Backend> {
    backend: &'static B,
    device: usize,
}

impl<B: Backend> BackendMemory<B> {
    /// Memory of `device`.
    pub fn new(backend: &'static B, device: usize) -> BackendMemory<B> {
        BackendMemory { backend, device }
    }
}

impl<B: Backend> crate::rpc::DeviceMemory for BackendMemory<B> {
    fn alloc(&self, size: usize) -> Result<*mut c_void> {
        self.backend.alloc(self.device, size, AllocKind::Device)
    }

    unsafe fn free(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: per the trait's contract, `ptr` came from `alloc` above, device memory.
        unsafe { self.backend.free(self.device, ptr, AllocKind::Device) }
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

/// What the wiring needs of the core, so that it does not name the core (which calls it): the
/// backend, the settings, and copies to and from a device that wait.
pub trait CoreAccess<B: Backend> {
    /// The backend.
    fn backend(&self) -> &'static B;
    /// The settings.
    fn config(&self) -> &Config;
    /// Copies host bytes to the device's address `at` and waits.
    fn write_device(&self, device: &Device<B>, at: usize, bytes: &[u8]) -> Result<()>;
    /// Copies the device's bytes at `at` to `dst` and waits.
    fn read_device(&self, device: &Device<B>, dst: &mut [u8], at: usize) -> Result<()>;
}

/// Takes an image's server out of service and shuts it down; the device stops counting the image
/// among those whose kernels may call the host.
pub fn detach<B: Backend>(device: &Device<B>, server: Option<ImageServer>) -> Result<()> {
    let Some(server) = server else {
        return Ok(());
    };
    device.rpc_images.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    server.detach()
}

/// The servers of the images loaded on `device` now.
pub fn servers_of<B: Backend>(device: &Device<B>) -> Vec<ImageServer> {
    crate::util::sync::lock(&device.images)
        .iter()
        .filter_map(|image| image.server.clone())
        .collect()
}

/// How long the host calls a lost device was making are given to end once answered for it.
const LOST_CALLS_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// `device` is lost (`error`, a kernel's fault, says why): the host calls it was in the middle of are
/// ended and its servers taken out of service, so that no serving thread waits for it for ever; said
/// once. The servers themselves go with their images.
pub fn retire_servers_of_lost_device<B: Backend>(device: &Device<B>, error: &crate::util::error::Error) {
    let mut servers = servers_of(device);
    servers.retain(|server| !server.device_lost());
    if servers.is_empty() {
        return;
    }
    crate::util::log::error(format_args!(
        "device {} was lost ({error}); the host calls its code was making were ended and its host \
         services stopped",
        device.index
    ));
    for server in &servers {
        if let Err(e) = server.retire_lost_device(LOST_CALLS_WAIT) {
            crate::util::log::error(format_args!("device {}: {e}", device.index));
        }
    }
}

/// The device address and bytes of the image's global `name` when the image defines it with exactly
/// `N` bytes (`what` it holds, for the message when its size differs), `None` when it does not define
/// it.
fn optional_global<B: Backend, const N: usize>(
    core: &impl CoreAccess<B>,
    device: &Device<B>,
    module: &B::Module,
    name: &std::ffi::CStr,
    what: &str,
) -> Result<Option<(usize, [u8; N])>> {
    use crate::util::error::{Context, Error};
    let shown = name.to_string_lossy();
    let symbol = match core.backend().global(device.index, module, name) {
        Ok(symbol) => symbol,
        Err(Error::MissingSymbol { .. }) => return Ok(None),
        Err(e) => return Err(e.context(format!("looking up {shown}"))),
    };
    if symbol.size != N {
        return Err(Error::BadImage(format!(
            "{shown} has {} bytes; it is {what} of {N} bytes",
            symbol.size
        )));
    }
    let mut bytes = [0u8; N];
    core.read_device(device, &mut bytes, symbol.addr as usize)
        .context(|| format!("reading {shown}"))?;
    Ok(Some((symbol.addr as usize, bytes)))
}

/// Reads the image's `__llvm_libc_rpc_client` pointer and checks where it points: at a writable object
/// of the image that holds `client_size` bytes. Returns `None` when the image does not ask for host
/// services.
fn client_object<B: Backend>(
    core: &impl CoreAccess<B>,
    device: &Device<B>,
    module: &B::Module,
    elf_image: Option<&elf::Image>,
    client_size: usize,
) -> Result<Option<usize>> {
    use crate::rpc::CLIENT_SYMBOL;
    use crate::util::error::Error;
    let what = "LLVM libc's RPC client contract's pointer to the client object";
    let Some((pointer_at, pointer)) = optional_global::<B, 8>(core, device, module, CLIENT_SYMBOL, what)? else {
        return Ok(None);
    };
    let name = CLIENT_SYMBOL.to_string_lossy();
    let target = u64::from_le_bytes(pointer) as usize;
    if target == 0 {
        return Err(Error::BadImage(format!(
            "{name} is a null pointer; it must point at the image's RPC client object"
        )));
    }
    let inside = match core
        .backend()
        .module_contains(device.index, module, target, client_size)
    {
        Some(inside) => inside,
        None => elf_image.is_some_and(|image| {
            image.pointee_is_writable(
                CLIENT_SYMBOL.to_bytes(),
                pointer_at as u64,
                target as u64,
                client_size as u64,
            )
        }),
    };
    if !inside {
        return Err(Error::BadImage(format!(
            "{name} points at {target:#x}, which is not a writable object of {client_size} bytes in the \
             image; nothing was written there"
        )));
    }
    Ok(Some(target))
}

/// The lane count the image's code was built for, when it says ([`LANES_SYMBOL`]).
fn image_lanes<B: Backend>(core: &impl CoreAccess<B>, device: &Device<B>, module: &B::Module) -> Result<Option<u32>> {
    let lanes = optional_global::<B, 4>(core, device, module, LANES_SYMBOL, "a lane count")?;
    Ok(lanes.map(|(_, bytes)| u32::from_le_bytes(bytes)))
}

/// Sets up host services for an image that defines `__llvm_libc_rpc_client`: a server of its own
/// (its lane count the image's, else the device's), whose client bytes are copied to the object the
/// image's pointer names. Images without the symbol are left alone. An image whose code was built
/// for a lane count no server can serve is loaded without host services, and says so: its calls fail
/// as with no server, instead of corrupting the mailbox.
pub fn attach<B: Backend>(
    core: &impl CoreAccess<B>,
    device: &Device<B>,
    module: &B::Module,
    elf_image: Option<&elf::Image>,
) -> Result<Option<ImageServer>> {
    use crate::util::error::Context;
    use crate::util::log;

    if !crate::rpc::AVAILABLE {
        if core
            .backend()
            .global(device.index, module, crate::rpc::CLIENT_SYMBOL)
            .is_ok()
        {
            log::device_info(
                device.index,
                "the image asks for host services, but this omprpc was built without them (feature `rpc`)",
            );
        }
        return Ok(None);
    }
    let Some(target) = client_object(core, device, module, elf_image, HostServices::client_size())? else {
        return Ok(None);
    };
    if let Some(reason) = core.backend().host_services_unavailable(device.index) {
        log::error(format_args!(
            "device {}: host services are refused: {reason}; the image's host calls fail as with no \
             server",
            device.index
        ));
        return Ok(None);
    }
    let limits = *device.limits()?;
    let lanes = match image_lanes(core, device, module)? {
        Some(lanes) if HostServices::serves_lanes(lanes) => lanes,
        Some(lanes) => {
            log::error(format_args!(
                "device {}: the image's device code was built for RPC ports of {lanes} lanes, which no \
                 server serves (1, 32 or 64); its host calls will fail as with no server",
                device.index
            ));
            return Ok(None);
        }
        None => limits.lane_size,
    };
    let ports = core.config().rpc_ports.unwrap_or(limits.rpc_ports);
    let memory: Arc<dyn crate::rpc::DeviceMemory> = Arc::new(BackendMemory::new(core.backend(), device.index));
    let heap = device_heap(core, device, &memory, &limits)?;
    let server = HostServices::open_server(device.index, ports, lanes, memory, &heap)
        .context(|| format!("starting host services for device {}", device.index))?;
    let published = core
        .write_device(device, target, &server.client_bytes())
        .context(|| format!("writing the RPC client of device {}", device.index))
        .and_then(|()| connect_doorbell(core, device, module, &server))
        .and_then(|()| server.put_in_service());
    if let Err(e) = published {
        if let Err(shutdown) = server.shutdown() {
            log::device_info(
                device.index,
                format_args!("shutting down a server not used: {shutdown}"),
            );
        }
        return Err(e);
    }
    device.rpc_images.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    log::device_info(
        device.index,
        format_args!(
            "host services ready for the image: {} RPC ports of {} lane(s)",
            server.ports(),
            server.lane_size()
        ),
    );
    Ok(Some(server))
}

/// Tells the image's code what to ring after writing a request, when it asks ([`DOORBELL_SYMBOL`]) and
/// the device can wake the host; the server is then marked as rung, so that the serving threads sleep
/// until it rings instead of looking on a backoff.
fn connect_doorbell<B: Backend>(
    core: &impl CoreAccess<B>,
    device: &Device<B>,
    module: &B::Module,
    server: &ImageServer,
) -> Result<()> {
    use crate::util::error::Context;
    let what = "the doorbell device code rings";
    let Some((at, _)) = optional_global::<B, 8>(core, device, module, DOORBELL_SYMBOL, what)? else {
        return Ok(());
    };
    let Some(ring) = core.backend().device_doorbell(device.index, HostServices::doorbell())? else {
        return Ok(());
    };
    core.write_device(device, at, &ring.to_le_bytes())
        .context(|| format!("writing the doorbell of device {}", device.index))?;
    server.rings_doorbell();
    Ok(())
}

/// The heap of the device's code, made (and on a GPU reserved) by the first image with host services,
/// when no kernel that may call the host can be in flight on the device. Each reservation is
/// `OMPRPC_DEVICE_HEAP_SIZE` bytes, by default a sixteenth of the device's memory up to 256 MiB: 32
/// times the 8 MiB that CUDA gives a kernel's own `malloc` by default, and at most 1/16 of a small
/// GPU's memory (0.3% of an 80 GB one), reserved once per device.
fn device_heap<B: Backend>(
    core: &impl CoreAccess<B>,
    device: &Device<B>,
    memory: &Arc<dyn crate::rpc::DeviceMemory>,
    limits: &crate::backend::DeviceLimits,
) -> Result<DeviceHeap> {
    use crate::util::error::Context;
    let mut slot = crate::util::sync::lock(&device.rpc_heap);
    if let Some(heap) = &*slot {
        return Ok(heap.clone());
    }
    let chunk = core.backend().reserves_device_heap().then(|| {
        let default = match limits.memory_bytes {
            0 => DEFAULT_HEAP_BYTES,
            bytes => (bytes / 16).min(DEFAULT_HEAP_BYTES as u64) as usize,
        };
        core.config().rpc_heap_bytes.unwrap_or(default)
    });
    let heap = HostServices::heap(device.index, Arc::clone(memory), chunk)
        .context(|| format!("reserving device memory for device code's malloc ({chunk:?} bytes)"))?;
    *slot = Some(heap.clone());
    Ok(heap)
}

/// The most a device's heap reserves at a time by default (see [`device_heap`]).
const DEFAULT_HEAP_BYTES: usize = 256 << 20;

/// Gives the device heap's reservations back, at teardown, once the device's images are unloaded.
pub fn release_heap<B: Backend>(device: &Device<B>) -> Result<()> {
    match crate::util::sync::lock(&device.rpc_heap).take() {
        Some(heap) => heap.release(),
        None => Ok(()),
    }
}

/// Before a launch of a kernel that may call the host: if device code's `malloc` ran out of room,
/// reserves more, provided no such kernel is in flight on the device (else a later launch does).
pub fn before_host_calling_launch<B: Backend>(device: &Device<B>) -> Result<()> {
    use std::sync::atomic::Ordering;
    // On every host-calling launch: the heap's lock for a look at its flag; a reference only when the
    // heap must grow.
    let heap = match &*crate::util::sync::lock(&device.rpc_heap) {
        Some(heap) if heap.needs_more() => heap.clone(),
        _ => return Ok(()),
    };
    let _exclusive = crate::util::sync::write(&device.rpc_launch_gate);
    if device.rpc_kernels_in_flight.load(Ordering::Acquire) == 0 {
        heap.grow_if_exhausted()?;
    }
    Ok(())
}
