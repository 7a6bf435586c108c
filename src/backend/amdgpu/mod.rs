//! AMD GPUs through the HSA runtime, loaded at run time (`libhsa-runtime64.so.1`, then
//! `libhsa-runtime64.so`, the name the stock plugin opens, or `OMPRPC_HSA_LIBRARY`), so that the plugin
//! loads, and reports zero devices, on a machine without it.
//!
//! Layers, as for CUDA: [`sys`] (the runtime's types and entry points), [`runtime`] (the opened
//! runtime and its checked calls), [`code_object`] (what an image says about itself), [`device`] (a
//! GPU agent and its queues, signals and buffers), [`doorbell`] (the signal device code rings after a
//! host call's request), [`queue`] (signals, HSA queues, AQL packets),
//! [`stream`] (streams and events over signals, copies) and [`memory`] (host buffers and directly
//! reachable host ranges). [`AmdgpuBackend`] maps the core's hooks onto them the way LLVM 16's stock
//! AMDGPU plugin does: one device per GPU agent, device memory from its first coarse-grained pool,
//! host memory from the CPU's first fine-grained pool, kernels dispatched as AQL packets with the
//! 8-byte arguments followed by 56 zero bytes of implicit arguments, or, for a kernel of code object
//! v5, by the hidden arguments its metadata lists (block counts, group sizes, grid dimensions, dynamic
//! LDS), as LLVM's later plugins fill them — a kernel launch on AMDGPU is `AmdgpuBackend::launch`.

pub mod code_object;
pub mod device;
pub mod doorbell;
#[cfg(test)]
pub(crate) mod harness;
pub mod memory;
pub mod queue;
#[cfg(test)]
pub(crate) mod rocr_harness;
pub mod runtime;
#[cfg(test)]
pub(crate) mod simulated;
pub mod stream;
pub mod sys;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::ffi::{c_void, CStr};
use std::sync::Mutex;

use self::code_object::TargetId;
use self::device::{AgentFacts, AmdDevice, HostPools};
use self::memory::DirectRanges;
use self::queue::Dispatch;
use self::runtime::{Api, KernelSymbolInfo};
use self::stream::{AmdEvent, AmdStream};
use self::sys::{HsaAgent, HsaCodeObjectReader, HsaExecutable, HsaStatus, HSA_STATUS_SUCCESS};
use super::{
    gpu, AllocKind, Backend, DeviceLimits, ExecMode, GlobalSymbol, KernelSymbol, LaunchGeometry, NativeDevice,
};
use crate::backend::gpu::library::open_driver;
use crate::util::config::{BackendKind, Config};
use crate::util::error::{Error, Result};
use crate::util::sync::lock;

/// The runtime's file names tried in turn: the soname the runtime package installs, then the
/// unversioned name that only its development package provides (and the stock plugin opens).
pub const RUNTIME_NAMES: [&str; 2] = ["libhsa-runtime64.so.1", "libhsa-runtime64.so"];

/// Threads per work-group when the program does not say (LLVM 16's `GV_Default_WG_Size` for AMDGPU).
pub const DEFAULT_THREADS: u32 = 256;

/// Most arguments one launch passes (their kernarg buffer is 8 bytes each, plus 56).
pub const MAX_KERNEL_ARGS: usize = 4096;

/// The AMDGPU backend.
pub struct AmdgpuBackend {
    api: Api,
    config: Config,
    reason: String,
    /// Whether the runtime is initialised, and its handles.
    runtime: Mutex<RuntimeState>,
    devices: Vec<AmdDevice>,
    /// Host ranges the devices reach directly.
    direct: DirectRanges,
    /// Device allocations by address, each with the peers it has been opened to: memory is opened to a
    /// peer when the peer first copies into it, not to every peer when it is allocated.
    peer_access: Mutex<BTreeMap<usize, PeerAccess>>,
}

/// A device allocation and the peer GPUs that may reach it.
struct PeerAccess {
    size: usize,
    agents: Vec<HsaAgent>,
}

/// The runtime's initialisation and the handles that change when it is started again.
struct RuntimeState {
    /// Whether `hsa_init` is in force (the backend shuts the runtime down at teardown).
    started: bool,
    /// The host's pools.
    host: HostPools,
    /// Every GPU agent, for access to host memory.
    gpu_agents: Vec<HsaAgent>,
    /// For each device, the other GPUs that may be given access to its memory (its peers): a device
    /// allocation is opened to one when it first copies into it.
    peers: Vec<Vec<HsaAgent>>,
    /// What the running runtime's memory-fault handler delivers to; freed once the runtime is shut
    /// down, which forgets the handler.
    fault_sink: Option<Box<FaultSink>>,
}

/// A loaded code object.
pub struct AmdModule {
    executable: HsaExecutable,
    reader: HsaCodeObjectReader,
    /// Its kernels as its metadata describes them (their hidden arguments).
    kernels: Vec<code_object::KernelMetadata>,
    /// The image's bytes, which the reader reads from until it is destroyed.
    _image: Vec<u8>,
}

/// A kernel of a loaded code object.
pub struct AmdKernel {
    info: KernelSymbolInfo,
    /// The hidden arguments its metadata lists, which each launch fills.
    hidden: Vec<code_object::HiddenArg>,
}

/// Memory faults reported by the runtime, delivered to the device whose agent faulted. One per start
/// of the runtime, kept in [`RuntimeState`] until that runtime is shut down.
struct FaultSink {
    devices: Vec<(HsaAgent, std::sync::Arc<queue::Health>)>,
}

/// Called by the runtime with system events; a GPU memory fault fails the device it happened on.
///
/// # Safety
/// `data` is the [`FaultSink`] registered with the running runtime, which lives until that runtime is
/// shut down; `event` is the runtime's event.
unsafe extern "C" fn on_system_event(event: *const sys::AmdEvent, data: *mut c_void) -> HsaStatus {
    // SAFETY: per this function's contract.
    let (event, sink) = unsafe { (&*event, &*data.cast::<FaultSink>()) };
    if event.event_type == sys::event_type::GPU_MEMORY_FAULT {
        let fault = event.memory_fault;
        for (agent, health) in &sink.devices {
            if *agent == fault.agent {
                health.fail(Error::Unsupported(format!(
                    "the GPU reported a memory fault at address {:#x} (reasons {:#x})",
                    fault.virtual_address, fault.fault_reason_mask
                )));
            }
        }
    }
    HSA_STATUS_SUCCESS
}

impl AmdgpuBackend {
    /// Opens the runtime named by `OMPRPC_HSA_LIBRARY`, else [`RUNTIME_NAMES`], initialises it and
    /// finds its GPU agents. Fails, with the reason in words, when there is no runtime, it lacks an entry
    /// point, `hsa_init` fails (no `/dev/kfd`: `HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)`), or it
    /// shows no GPU.
    pub fn open(config: &Config) -> Result<AmdgpuBackend> {
        let runtime = open_driver(
            config.hsa_library.as_deref(),
            &RUNTIME_NAMES,
            "HSA runtime",
            sys::Functions::resolve,
        )?;
        AmdgpuBackend::with_runtime(Api::new(runtime), config)
    }

    /// The backend over an opened runtime (the real one, or a simulated one in tests).
    pub fn with_runtime(api: Api, config: &Config) -> Result<AmdgpuBackend> {
        let zero = |e: Error| Error::Unsupported(format!("{e} from {}; reporting 0 devices", api.library()));
        api.init().map_err(zero)?;
        let opened = AmdgpuBackend::discover(api, config);
        if opened.is_err() {
            let _ = api.shut_down();
        }
        opened.map_err(|e| match e {
            Error::Unsupported(_) => e,
            e => zero(e),
        })
    }

    fn discover(api: Api, config: &Config) -> Result<AmdgpuBackend> {
        let (host, gpus) = AmdgpuBackend::agents(api)?;
        let devices: Vec<AmdDevice> = gpus.into_iter().map(AmdDevice::new).collect();
        let peers = AmdgpuBackend::peers(api, &devices)?;
        // Last: nothing may fail once the runtime holds the sink.
        let fault_sink = Some(AmdgpuBackend::watch_faults(api, &devices)?);
        let reason = format!(
            "{} AMD GPU(s) ({}) found by {}",
            devices.len(),
            devices
                .iter()
                .map(|d| d.facts.target.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            api.library()
        );
        Ok(AmdgpuBackend {
            api,
            config: config.clone(),
            reason,
            runtime: Mutex::new(RuntimeState {
                started: true,
                host,
                gpu_agents: devices.iter().map(|d| d.facts.agent()).collect(),
                peers,
                fault_sink,
            }),
            devices,
            direct: DirectRanges::default(),
            peer_access: Mutex::new(BTreeMap::new()),
        })
    }

    /// The host's pools and what the plugin reads of every GPU agent, from an initialised runtime.
    fn agents(api: Api) -> Result<(HostPools, Vec<AgentFacts>)> {
        let agents = api.agents()?;
        let mut host_pools = Vec::new();
        for cpu in agents.iter().filter(|a| a.device_type == sys::device_type::CPU) {
            host_pools.extend(api.pools(cpu.agent)?);
        }
        let gpus: Vec<_> = agents.into_iter().filter(runtime::is_gpu).collect();
        if gpus.is_empty() {
            return Err(Error::Unsupported(format!(
                "the HSA runtime {} found no GPU agent; reporting 0 devices",
                api.library()
            )));
        }
        let host = HostPools::choose(&host_pools)?;
        let gpus = gpus
            .into_iter()
            .map(|gpu| AgentFacts::read(api, gpu.agent, gpu.name))
            .collect::<Result<Vec<_>>>()?;
        Ok((host, gpus))
    }

    /// For each device, the other GPUs the runtime lets reach its device memory once given access
    /// (not `NEVER_ALLOWED`).
    fn peers(api: Api, devices: &[AmdDevice]) -> Result<Vec<Vec<HsaAgent>>> {
        devices
            .iter()
            .enumerate()
            .map(|(index, device)| {
                let mut peers = Vec::new();
                for (other_index, other) in devices.iter().enumerate() {
                    if other_index != index
                        && api.pool_access(other.facts.agent(), device.facts.device_pool())?
                            != sys::pool_access::NEVER_ALLOWED
                    {
                        peers.push(other.facts.agent());
                    }
                }
                Ok(peers)
            })
            .collect()
    }

    /// Opens the device allocation that holds `addr` to `peer`, unless it is open to it already (or is
    /// no allocation of the backend's, such as an image's global, which the copy then reaches or not
    /// as the runtime decides).
    fn open_to_peer(&self, addr: usize, peer: HsaAgent) -> Result<()> {
        let mut allocations = lock(&self.peer_access);
        let Some((&base, access)) = allocations.range_mut(..=addr).next_back() else {
            return Ok(());
        };
        if addr >= base + access.size || access.agents.contains(&peer) {
            return Ok(());
        }
        // Every peer at once: the runtime maps the allocation for exactly the agents named.
        let mut agents = access.agents.clone();
        agents.push(peer);
        // SAFETY: `base` starts a live device allocation (freeing it removes it from the map first).
        unsafe { self.api.allow_access(&agents, base as *const c_void) }?;
        access.agents = agents;
        Ok(())
    }

    /// Sends the runtime's memory-fault events to the devices' health, through the sink returned,
    /// which must live until the runtime is shut down.
    fn watch_faults(api: Api, devices: &[AmdDevice]) -> Result<Box<FaultSink>> {
        let sink = Box::new(FaultSink {
            devices: devices
                .iter()
                .map(|d| (d.facts.agent(), std::sync::Arc::clone(&d.health)))
                .collect(),
        });
        // SAFETY: the sink's heap address stays put when the box moves; the caller keeps it until the
        // runtime is shut down (a refused registration keeps nothing).
        unsafe { api.on_system_event(on_system_event, (&*sink as *const FaultSink).cast_mut().cast()) }?;
        Ok(sink)
    }

    /// Starts the runtime again after [`Backend::release`] shut it down, and finds the same GPUs in
    /// it: their handles change, the GPUs must not.
    fn restart(&self, state: &mut RuntimeState) -> Result<()> {
        self.api.init()?;
        // Every step that can fail comes before the state changes: a failure shuts the runtime down
        // again and leaves the backend as it was, not started.
        let found = AmdgpuBackend::agents(self.api).and_then(|(host, gpus)| {
            let same = gpus.len() == self.devices.len()
                && gpus
                    .iter()
                    .zip(&self.devices)
                    .all(|(fresh, device)| fresh.name == device.facts.name && fresh.target == device.facts.target);
            if !same {
                return Err(Error::Unsupported(
                    "the HSA runtime shows other GPUs after it was shut down and started again".into(),
                ));
            }
            for (fresh, device) in gpus.iter().zip(&self.devices) {
                device.facts.rebind(fresh);
            }
            let peers = AmdgpuBackend::peers(self.api, &self.devices)?;
            let sink = AmdgpuBackend::watch_faults(self.api, &self.devices)?;
            Ok((host, peers, sink))
        });
        match found {
            Ok((host, peers, sink)) => {
                state.host = host;
                state.gpu_agents = self.devices.iter().map(|d| d.facts.agent()).collect();
                state.peers = peers;
                // A sink left by a runtime whose shutdown failed may still be called: it stays.
                if let Some(old) = state.fault_sink.replace(sink) {
                    Box::leak(old);
                }
                state.started = true;
                Ok(())
            }
            Err(e) => {
                let _ = self.api.shut_down();
                Err(e)
            }
        }
    }

    /// The runtime's state, starting the runtime again if it was shut down.
    fn started(&self) -> Result<std::sync::MutexGuard<'_, RuntimeState>> {
        let mut state = lock(&self.runtime);
        if !state.started {
            self.restart(&mut state)?;
        }
        Ok(state)
    }

    /// The target an image was built for: the arch string when libomptarget has one, else its header;
    /// `None` for anything but an AMDGPU code object.
    fn image_target(header: &[u8], arch: Option<&str>) -> Option<TargetId> {
        if !code_object::is_code_object(header) {
            return None;
        }
        match arch {
            Some(arch) => TargetId::parse(arch),
            None => crate::util::elf::header(header).and_then(|h| TargetId::from_header(&h)),
        }
    }

    /// The one copy between host memory at `host` and device memory at `device_ptr` that both
    /// [`Backend::copy_to_device`] (`to_device`) and [`Backend::copy_to_host`] are.
    ///
    /// # Safety
    /// Both ranges are valid for `size` bytes until `queue` is synchronised.
    unsafe fn copy_with_host(
        &self,
        device: usize,
        to_device: bool,
        host: *mut c_void,
        device_ptr: *mut c_void,
        size: usize,
        queue: &AmdStream,
    ) -> Result<()> {
        let max = self.config.amdgpu.max_async_copy_bytes;
        let device = &self.devices[device];
        // SAFETY: forwarded from this function's contract.
        unsafe { queue.copy_host(device, &self.direct, max, to_device, host, device_ptr, size) }
    }
}

/// What a symbol lookup that found nothing means.
fn missing(name: &CStr) -> Error {
    Error::MissingSymbol {
        image: "the AMDGPU code object".into(),
        symbol: name.to_string_lossy().into_owned(),
    }
}

impl Backend for AmdgpuBackend {
    type Module = AmdModule;
    type Kernel = AmdKernel;
    type Queue = AmdStream;
    type Event = AmdEvent;

    fn kind(&self) -> BackendKind {
        BackendKind::Amdgpu
    }

    fn device_count(&self) -> usize {
        self.devices.len()
    }

    fn device_count_reason(&self) -> String {
        self.reason.clone()
    }

    fn is_compatible_image(&self, header: &[u8], _image_len: usize, arch: Option<&str>) -> bool {
        let Some(image) = AmdgpuBackend::image_target(header, arch) else {
            return false;
        };
        !self.devices.is_empty() && self.devices.iter().all(|d| d.facts.runs(&image))
    }

    fn init_device(&self, device: usize) -> Result<DeviceLimits> {
        let amd = &self.devices[device];
        let host = self.started()?.host;
        amd.init(self.api, host, &self.config.amdgpu)?;
        let facts = &amd.facts;
        Ok(DeviceLimits {
            lane_size: facts.wavefront_size,
            max_threads: facts.max_threads,
            max_teams: facts.max_grid / facts.max_threads.max(1),
            default_threads: DEFAULT_THREADS.min(facts.max_threads),
            default_teams: facts
                .compute_units
                .saturating_mul(self.config.amdgpu.teams_per_cu as u32),
            multiprocessors: facts.compute_units,
            memory_bytes: facts.memory_bytes,
            default_exec_mode: ExecMode::Spmd,
            max_kernel_args: MAX_KERNEL_ARGS,
            rpc_ports: gpu::default_rpc_ports(facts.compute_units),
            recycle_allocations: true,
            team_caps_apply: false,
            reads_host_memory: false,
        })
    }

    fn deinit_device(&self, device: usize) -> Result<()> {
        self.devices[device].release(self.api)
    }

    /// `hsa_shut_down`, as the stock plugin does at teardown; the next `init_device` starts the
    /// runtime again.
    fn release(&self) -> Result<()> {
        let mut state = lock(&self.runtime);
        if !state.started {
            return Ok(());
        }
        state.started = false;
        // Pinned ranges, host allocations and device allocations do not outlive the runtime.
        self.direct.clear();
        lock(&self.peer_access).clear();
        self.api.shut_down()?;
        // The runtime is gone, and its handler with it.
        state.fault_sink = None;
        Ok(())
    }

    fn load_module(&self, device: usize, image: &[u8]) -> Result<AmdModule> {
        let amd = &self.devices[device];
        amd.ready(device)?;
        let read = code_object::read(image).map_err(Error::BadImage)?;
        if !amd.facts.runs(&read.target) {
            return Err(Error::BadImage(format!(
                "a code object for {} does not run on this {}",
                read.target, amd.facts.target
            )));
        }
        // The kernels' wavefront size is not checked against the GPU's: RDNA parts (gfx10 and later)
        // run wave64 kernels as well as wave32 ones, and the stock plugin loads either.
        let image = image.to_vec();
        let (executable, reader) = self.api.load_executable(amd.facts.agent(), &image)?;
        Ok(AmdModule {
            executable,
            reader,
            kernels: read.kernels,
            _image: image,
        })
    }

    fn unload_module(&self, _device: usize, module: AmdModule) -> Result<()> {
        // SAFETY: the core unloads a module once, after the work that used it.
        unsafe { self.api.destroy_executable(module.executable, module.reader) }
    }

    fn kernel(&self, device: usize, module: &AmdModule, name: &CStr) -> Result<KernelSymbol<AmdKernel>> {
        let mut descriptor = name.to_bytes().to_vec();
        descriptor.extend_from_slice(b".kd");
        let descriptor = std::ffi::CString::new(descriptor).map_err(|_| missing(name))?;
        let symbol = self
            .api
            .symbol(module.executable, self.devices[device].facts.agent(), &descriptor)?
            .ok_or_else(|| missing(name))?;
        if self.api.symbol_kind(symbol)? != sys::symbol_kind::KERNEL {
            return Err(missing(name));
        }
        let hidden = module
            .kernels
            .iter()
            .find(|k| k.symbol.as_bytes() == descriptor.to_bytes())
            .map(|k| k.hidden.clone())
            .unwrap_or_default();
        Ok(KernelSymbol {
            kernel: AmdKernel {
                info: self.api.kernel_info(symbol)?,
                hidden,
            },
            max_threads: None,
        })
    }

    fn global(&self, device: usize, module: &AmdModule, name: &CStr) -> Result<GlobalSymbol> {
        let symbol = self
            .api
            .symbol(module.executable, self.devices[device].facts.agent(), name)?
            .ok_or_else(|| missing(name))?;
        if self.api.symbol_kind(symbol)? != sys::symbol_kind::VARIABLE {
            return Err(missing(name));
        }
        let (addr, size) = self.api.variable_info(symbol)?;
        Ok(GlobalSymbol {
            addr: addr as usize as *mut c_void,
            size: size as usize,
        })
    }

    fn alloc(&self, device: usize, size: usize, kind: AllocKind) -> Result<*mut c_void> {
        let amd = &self.devices[device];
        match kind {
            // Peers may copy into it (exchange between GPUs).
            AllocKind::Device | AllocKind::Default => {
                let ptr = self.api.pool_allocate(amd.facts.device_pool(), size)?;
                let access = PeerAccess {
                    size,
                    agents: Vec::new(),
                };
                lock(&self.peer_access).insert(ptr as usize, access);
                Ok(ptr)
            }
            // Shared memory is host memory every GPU may access, at the same address on both sides
            // (the stock plugin of LLVM 16 refuses shared allocations).
            AllocKind::Host | AllocKind::Shared => {
                let state = self.started()?;
                let ptr = self.api.pool_allocate_for(state.host.fine, size, &state.gpu_agents)?;
                self.direct.add_allocation(ptr, size);
                Ok(ptr)
            }
        }
    }

    unsafe fn free(&self, _device: usize, ptr: *mut c_void, kind: AllocKind) -> Result<()> {
        if matches!(kind, AllocKind::Host | AllocKind::Shared) {
            self.direct.remove_allocation(ptr);
        } else {
            lock(&self.peer_access).remove(&(ptr as usize));
        }
        // SAFETY: per this function's contract, `ptr` came from `alloc`, which allocates from pools.
        unsafe { self.api.pool_free(ptr) }
    }

    unsafe fn copy_to_device(
        &self,
        device: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: &AmdStream,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.copy_with_host(device, true, src.cast_mut(), dst, size, queue) }
    }

    unsafe fn copy_to_host(
        &self,
        device: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: &AmdStream,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.copy_with_host(device, false, dst, src.cast_mut(), size, queue) }
    }

    fn can_exchange(&self, src_device: usize, dst_device: usize) -> bool {
        // Within one device a copy is a device-to-device copy; between GPUs the source copies into the
        // destination's memory, which its device allocations open to their peers (the stock plugin
        // of LLVM 16 does not exchange at all).
        let src_agent = self.devices[src_device].facts.agent();
        src_device == dst_device || lock(&self.runtime).peers[dst_device].contains(&src_agent)
    }

    unsafe fn copy_between_devices(
        &self,
        src_device: usize,
        src: *const c_void,
        dst_device: usize,
        dst: *mut c_void,
        size: usize,
        queue: &AmdStream,
    ) -> Result<()> {
        let dst_agent = self.devices[dst_device].facts.agent();
        if src_device != dst_device {
            self.open_to_peer(dst as usize, self.devices[src_device].facts.agent())?;
        }
        // SAFETY: forwarded from this function's contract; `dst` is open to this device when it is
        // another's (above).
        unsafe { queue.copy_to_peer(&self.devices[src_device], dst_agent, dst, src, size) }
    }

    unsafe fn launch(
        &self,
        device: usize,
        kernel: &AmdKernel,
        args: &[*mut c_void],
        geometry: LaunchGeometry,
        _asynchronous: bool,
        queue: &AmdStream,
    ) -> Result<()> {
        let info = kernel.info;
        if (info.kernarg_segment_size as usize) < args.len() * 8 {
            return Err(Error::InvalidArg(format!(
                "the kernel takes {} bytes of arguments, fewer than the {} passed",
                info.kernarg_segment_size,
                args.len() * 8
            )));
        }
        let dispatch = Dispatch {
            kernel_object: info.object,
            kernargs: std::ptr::null_mut(),
            teams: geometry.teams,
            threads: geometry.threads,
            group_segment_size: info.group_segment_size.saturating_add(geometry.dynamic_shared_bytes),
            private_segment_size: info.private_segment_size,
        };
        let arguments = stream::KernelArguments {
            explicit: args,
            segment_bytes: info.kernarg_segment_size as usize,
            hidden: &kernel.hidden,
            values: code_object::HiddenValues {
                teams: geometry.teams,
                threads: geometry.threads,
                dynamic_lds_bytes: geometry.dynamic_shared_bytes,
            },
        };
        // SAFETY: forwarded from this function's contract.
        unsafe { queue.launch(&self.devices[device], dispatch, &arguments) }
    }

    fn create_queue(&self, device: usize) -> Result<AmdStream> {
        let amd = &self.devices[device];
        Ok(AmdStream::new(amd, amd.ready(device)?))
    }

    fn destroy_queue(&self, device: usize, queue: &AmdStream) -> Result<()> {
        // A stream owns no runtime object of its own, only what its operations kept.
        queue.retire(&self.devices[device])
    }

    fn queue_handle(&self, queue: &AmdStream) -> *mut c_void {
        queue.handle()
    }

    /// A signal of the device's that device code stores to after writing a request (as ROCm's hostcall
    /// does); the runtime's handler thread, woken by its interrupt, rings `doorbell`.
    fn device_doorbell(
        &self,
        device: usize,
        doorbell: &'static crate::util::doorbell::Doorbell,
    ) -> Result<Option<u64>> {
        self.devices[device].rpc_doorbell(self.api, doorbell).map(Some)
    }

    fn device_lost(&self, device: usize, _error: &Error) -> bool {
        // A queue error or memory fault fails the device's health for good (until it is initialised
        // again); a failed call of the runtime's does not.
        self.devices[device].health.check().is_err()
    }

    fn synchronize(&self, device: usize, queue: &AmdStream) -> Result<()> {
        queue.synchronize(&self.devices[device])
    }

    fn is_idle(&self, device: usize, queue: &AmdStream) -> Result<bool> {
        queue.is_idle(&self.devices[device])
    }

    fn create_event(&self, device: usize) -> Result<AmdEvent> {
        self.devices[device].ready(device)?;
        Ok(AmdEvent::new())
    }

    fn destroy_event(&self, _device: usize, event: &AmdEvent) -> Result<()> {
        // The event may outlive the device in the core's hands; the signal it recorded goes back now.
        event.forget();
        Ok(())
    }

    fn event_handle(&self, event: &AmdEvent) -> *mut c_void {
        event.handle()
    }

    fn record_event(&self, _device: usize, event: &AmdEvent, queue: &AmdStream) -> Result<()> {
        queue.record(event);
        Ok(())
    }

    fn wait_event(&self, device: usize, event: &AmdEvent, queue: &AmdStream) -> Result<()> {
        queue.wait_event(&self.devices[device], event)
    }

    fn sync_event(&self, device: usize, event: &AmdEvent) -> Result<()> {
        event.synchronize(&self.devices[device])
    }

    // The range is libomptarget's mapped host memory (the core checked it is not null); the runtime
    // checks the rest and fails cleanly.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn lock_host_memory(&self, _device: usize, ptr: *mut c_void, size: usize) -> Result<*mut c_void> {
        self.direct.lock(ptr, size, || {
            // SAFETY: libomptarget locks mapped host memory and keeps it mapped until it unlocks it.
            unsafe { self.api.memory_lock(ptr, size) }
        })
    }

    // Only a range `lock_host_memory` locked reaches the runtime.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn unlock_host_memory(&self, _device: usize, ptr: *mut c_void) -> Result<()> {
        self.direct.unlock(ptr, || {
            // SAFETY: the range was locked by `lock_host_memory` and no copy uses it any more.
            unsafe { self.api.memory_unlock(ptr) }
        })
    }

    fn native_device(&self, device: usize) -> NativeDevice {
        NativeDevice {
            context: std::ptr::null_mut(),
            device: self.devices[device].facts.agent().handle as usize as *mut c_void,
        }
    }

    fn describe_device(&self, device: usize) -> Vec<(&'static str, String)> {
        let facts = &self.devices[device].facts;
        vec![
            ("HSA Runtime:", self.api.library().to_string()),
            ("HSA Agent Number:", device.to_string()),
            ("Device Name:", facts.name.clone()),
            ("Target ID:", facts.target.to_string()),
            ("Compute Units:", facts.compute_units.to_string()),
            ("Wavefront Size:", format!("{} Threads", facts.wavefront_size)),
            ("Maximum Threads per Work-group:", facts.max_threads.to_string()),
            ("Maximum Grid Size:", facts.max_grid.to_string()),
            ("Global Memory Size:", format!("{} bytes", facts.memory_bytes)),
            (
                "HSA Queues:",
                format!(
                    "{} of {} packets",
                    self.config.amdgpu.hsa_queues.min(facts.queues_max.max(1) as usize),
                    facts.queue_size(self.config.amdgpu.hsa_queue_size)
                ),
            ),
        ]
    }
}
