//! A simulated HSA runtime, substituted for `libhsa-runtime64` in-process so that the AMDGPU backend's
//! own logic runs in tests without a GPU. It behaves as ROCm 5.2.3 does where the plugin can tell:
//! one CPU agent (listed first) with fine-grained, kernarg and coarse-grained pools, GPU agents with a
//! coarse-grained pool and their LDS, memory that is host memory it tracks (with the agents each block was opened to),
//! signals that block their waiters, user-mode AQL queues whose packets a thread per queue processes
//! once the doorbell is rung, asynchronous copies done by a copy engine thread once their dependencies
//! reach 0, and executables loaded from real code objects (segments, relocations, kernel descriptors
//! and variables). Kernels run as Rust closures registered by name. Every entry point counts its calls
//! and can be made to fail once ([`fail_next`]), so that fault handling is tested call by call; misuse
//! the real runtime would not report (a load of a destroyed signal, say) is collected in
//! [`World::misuse`] for tests to check.
//!
//! Debian's real ROCr 5.2.3 over the fake kernel driver of `tests/fake_kfd` runs the backend suite
//! (`rocr_harness.rs`), and a test there asks both runtimes the same questions (agents, ISAs,
//! pools and access, a copy round trip, a code object's symbols, a foreign ELF file) and wants the
//! same answers; it showed this runtime listing a fine-grained GPU pool ROCr 5.2 does not, lacking the
//! CPU's coarse-grained pool, refusing a foreign file at reader creation rather than at loading, and an
//! MI250 without its `sramecc+` feature. One known difference stays: this loader refuses an image whose
//! section headers are cut off, which ROCr loads from its program headers (the plugin reads the section
//! headers itself before loading, so it never passes one). This runtime stays for what
//! the real one cannot give: misuse the hardware would only show as a wrong result or a hang (memory
//! reached by an agent it was never opened to, a kernel reading kernel arguments outside the buffer it
//! was given, a destroyed signal used), GPUs and runtimes other than Debian's ROCr and the fake's two
//! models (generic ISAs, RDNA 3, many GPUs, odd queue limits), every entry point failing once without a
//! process per case, and tests that need no runtime binaries at all. The backend suite runs on the
//! real runtime only (`rocr_harness.rs`); the tests of `amdgpu/tests.rs` run here.

use std::alloc::Layout;
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::code_object::TargetId;
use super::runtime::Runtime;
use super::sys::{
    self, agent_info, agent_pool_info, device_type, isa_info, packet_type, pool_access, pool_global_flag, pool_info,
    segment, signal_condition, symbol_info, symbol_kind, AgentCallback, AmdEvent, ExecutableSymbolCallback, Functions,
    GpuMemoryFaultInfo, HsaAgent, HsaCodeObject, HsaCodeObjectReader, HsaDim3, HsaExecutable, HsaExecutableSymbol,
    HsaIsa, HsaLoadedCodeObject, HsaMemoryPool, HsaQueue, HsaSignal, HsaSignalValue, HsaStatus, IsaCallback,
    KernelDispatchPacket, MemoryPoolCallback, PointerInfo, PointerInfoAlloc, QueueErrorCallback, SignalHandler,
    SystemEventCallback, HSA_STATUS_SUCCESS,
};
use crate::backend::gpu::sim_calls::CallRecord;
use crate::util::elf;

/// A kernel's behaviour: called with the values of its explicit arguments (the first
/// `kernarg_segment_size / 8` words of its kernarg memory); an `Err` is a GPU fault, reported to the
/// queue's error callback with that status.
pub type KernelBody = Arc<dyn Fn(&[u64]) -> Result<(), HsaStatus> + Send + Sync>;

/// One simulated GPU agent.
#[derive(Clone, Copy, Debug)]
pub struct SimAgent {
    /// The target, as `HSA_AGENT_INFO_NAME` gives it ("gfx90a"); a target id with features
    /// ("gfx90a:sramecc+:xnack-") keeps them for the ISA name only, as ROCm does.
    pub name: &'static str,
    /// `HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT`.
    pub compute_units: u32,
    /// `HSA_AGENT_INFO_WAVEFRONT_SIZE` (64, or 32 for RDNA).
    pub wavefront_size: u32,
    /// A generic ISA listed after the specific one, as ROCm 6.2 and later do (an MI300X:
    /// "gfx942:sramecc+:xnack-", then "gfx9-4-generic:sramecc+:xnack-").
    pub generic_isa: Option<&'static str>,
}

impl SimAgent {
    /// The processor alone ("gfx90a"), which names its test code objects.
    pub fn processor(&self) -> &'static str {
        self.name.split(':').next().unwrap_or(self.name)
    }

    /// The agent's ISA names as target ids, its own first.
    fn isa_names(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.name).chain(self.generic_isa)
    }
}

/// A kernel dispatch as the packet processor saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The kernel's name (its descriptor's name without ".kd").
    pub kernel: String,
    /// Work-items in x.
    pub grid_size_x: u32,
    /// Work-items per work-group in x.
    pub workgroup_size_x: u32,
    /// Group (LDS) bytes asked for by the packet.
    pub group_segment_size: u32,
    /// Private bytes per work-item asked for by the packet.
    pub private_segment_size: u32,
    /// The explicit argument words.
    pub args: Vec<u64>,
    /// The id of the queue it ran on.
    pub queue: u64,
    /// The kernel's own (static) group bytes, which the packet's group size includes.
    pub static_group_segment_size: u32,
}

/// Which memory an asynchronous copy moved between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyKind {
    /// Host memory (a CPU pool's block or a locked range) to device memory.
    HostToDevice,
    /// Device memory to host memory.
    DeviceToHost,
    /// Device to device, within one GPU's memory.
    DeviceToDevice,
    /// One GPU's memory to another's.
    PeerToPeer,
    /// Host to host.
    HostToHost,
}

/// An asynchronous copy as `hsa_amd_memory_async_copy` was asked for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsyncCopy {
    /// Destination address.
    pub dst: usize,
    /// Source address.
    pub src: usize,
    /// Bytes.
    pub size: usize,
    /// Direction, by whether each side is device memory.
    pub kind: CopyKind,
    /// Dependency signal handles it waited for.
    pub deps: Vec<u64>,
    /// Its completion signal's handle.
    pub completion: u64,
}

/// What is still allocated or alive (signals not counting queue doorbells).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Live {
    /// Blocks from `hsa_amd_memory_pool_allocate`.
    pub memory: usize,
    /// Executables.
    pub executables: usize,
    /// Code object readers and deserialised code objects.
    pub readers: usize,
    /// Queues.
    pub queues: usize,
    /// Signals.
    pub signals: usize,
    /// Locked host ranges.
    pub locked: usize,
}

/// The memory pools an agent offers, in the order ROCm lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PoolKind {
    /// The CPU's fine-grained system memory.
    HostFine,
    /// The CPU's fine-grained system memory that kernel arguments may live in.
    HostKernarg,
    /// The CPU's coarse-grained system memory, which ROCr lists after the other two.
    HostCoarse,
    /// A GPU's own memory (ROCr 5.2 lists no fine-grained pool of it).
    DeviceCoarse,
    /// A GPU's LDS: listed, never allocatable.
    DeviceGroup,
}

impl PoolKind {
    fn segment(self) -> u32 {
        match self {
            PoolKind::DeviceGroup => segment::GROUP,
            _ => segment::GLOBAL,
        }
    }

    fn flags(self) -> u32 {
        match self {
            PoolKind::HostFine => pool_global_flag::FINE_GRAINED,
            PoolKind::HostKernarg => pool_global_flag::FINE_GRAINED | pool_global_flag::KERNARG_INIT,
            PoolKind::HostCoarse | PoolKind::DeviceCoarse => pool_global_flag::COARSE_GRAINED,
            PoolKind::DeviceGroup => 0,
        }
    }

    fn device(self) -> bool {
        self == PoolKind::DeviceCoarse
    }
}

/// Bytes of a GPU's memory, as its pools report it.
const DEVICE_MEMORY: usize = 64 << 30;
/// Bytes of host memory the CPU pools report.
const HOST_MEMORY: usize = 128 << 30;
/// Bytes of LDS per work-group.
const GROUP_MEMORY: usize = 64 << 10;
/// Allocation granule and alignment of every pool.
const GRANULE: usize = 4096;
/// `HSA_AGENT_INFO_QUEUE_MIN_SIZE` / `QUEUE_MAX_SIZE` / `QUEUES_MAX` of a GPU agent.
const QUEUE_MIN: u32 = 64;
const QUEUE_MAX: u32 = 131072;
const QUEUES_MAX: u32 = 128;
/// ELF relocation types of AMDGPU code objects the loader applies.
const R_AMDGPU_ABS64: u32 = 3;
const R_AMDGPU_RELATIVE64: u32 = 13;

struct Agent {
    handle: u64,
    gpu: Option<SimAgent>,
    /// The agent's ISAs, the specific one first.
    isas: Vec<u64>,
    pools: Vec<u64>,
}

struct Pool {
    agent: usize,
    kind: PoolKind,
}

/// A block from a pool: host memory the simulation owns.
struct Block {
    agent: usize,
    size: usize,
    /// Bytes reserved (the size rounded up to the granule), for the layout.
    reserved: usize,
    device: bool,
    /// Agents given access with `hsa_amd_agents_allow_access`.
    allowed: Vec<u64>,
}

struct Lock {
    size: usize,
    /// The agents named at lock time; empty: every GPU.
    agents: Vec<u64>,
    count: u32,
}

struct Signal {
    value: i64,
    doorbell: bool,
}

struct QueueState {
    id: u64,
    agent: usize,
    ring: usize,
    size: u32,
    read: u64,
    write: u64,
    doorbell: u64,
    callback: Option<QueueErrorCallback>,
    data: usize,
    failed: bool,
    worker: Option<JoinHandle<()>>,
}

#[derive(Clone)]
struct Kernel {
    name: String,
    object: u64,
    kernarg_size: u32,
    group: u32,
    private: u32,
    dynamic_stack: bool,
}

#[derive(Clone)]
enum SymbolKind {
    Kernel(Kernel),
    Variable { address: u64, size: u32 },
}

#[derive(Clone)]
struct Symbol {
    executable: u64,
    agent: usize,
    name: String,
    kind: SymbolKind,
}

struct Loaded {
    agent: usize,
    base: usize,
    size: usize,
}

struct Executable {
    frozen: bool,
    loaded: Vec<Loaded>,
    symbols: Vec<u64>,
}

struct PendingCopy {
    dst: usize,
    src: usize,
    size: usize,
    deps: Vec<u64>,
    completion: u64,
}

struct Handler {
    signal: u64,
    condition: u32,
    value: i64,
    handler: SignalHandler,
    arg: usize,
}

/// Everything the simulated runtime holds.
pub struct World {
    agents: Vec<Agent>,
    init_status: HsaStatus,
    /// `hsa_init` calls not yet matched by `hsa_shut_down`.
    pub initialized: u32,
    /// Calls per entry point, in order, and the one armed to fail.
    pub record: CallRecord<HsaStatus>,
    pools: HashMap<u64, Pool>,
    isas: HashMap<u64, String>,
    memory: HashMap<usize, Block>,
    locked: HashMap<usize, Lock>,
    signals: HashMap<u64, Signal>,
    queues: HashMap<usize, QueueState>,
    readers: HashMap<u64, Vec<u8>>,
    executables: HashMap<u64, Executable>,
    symbols: HashMap<u64, Symbol>,
    kernel_objects: HashMap<u64, u64>,
    bodies: HashMap<String, KernelBody>,
    /// Every kernel dispatch, in the order the queues ran them.
    pub launches: Vec<Launch>,
    /// Every asynchronous copy, in the order it was asked for.
    pub copies: Vec<AsyncCopy>,
    pending: VecDeque<PendingCopy>,
    handlers: Vec<Handler>,
    system_handlers: Vec<(SystemEventCallback, usize)>,
    /// Misuse the real runtime would not report (or would crash on): each a sentence.
    pub misuse: Vec<String>,
    /// Queue errors, as (queue id, status) in the order they were raised.
    pub faults: Vec<(u64, HsaStatus)>,
    /// While set, the device starts no packet and no copy (as a busy GPU would not yet): queued work
    /// stays queued until [`hold`] lets it go.
    pub held: bool,
    generation: u64,
    engine: Option<JoinHandle<()>>,
    handler_thread: Option<JoinHandle<()>>,
}

static WORLD: Mutex<Option<World>> = Mutex::new(None);
/// Notified whenever the world changes, for whoever waits on a signal, a packet or a dependency.
static CHANGED: Condvar = Condvar::new();
/// Handles are unique across resets, so that a thread left from an earlier world never names an
/// object of the current one.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(0x5a00_0000);
/// Tests that use the simulated runtime run one at a time.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// The simulated runtime's state.
pub fn world() -> MutexGuard<'static, Option<World>> {
    WORLD.lock().unwrap_or_else(|e| e.into_inner())
}

fn wait(guard: MutexGuard<'static, Option<World>>) -> MutexGuard<'static, Option<World>> {
    CHANGED.wait(guard).unwrap_or_else(|e| e.into_inner())
}

fn wait_for(guard: MutexGuard<'static, Option<World>>, time: Duration) -> MutexGuard<'static, Option<World>> {
    CHANGED
        .wait_timeout(guard, time)
        .map(|(g, _)| g)
        .unwrap_or_else(|e| e.into_inner().0)
}

fn with<R>(f: impl FnOnce(&mut World) -> R) -> R {
    let _not_the_plugins = crate::util::alloc_count::pause();
    let result = f(world().as_mut().expect("the simulated runtime is reset first"));
    CHANGED.notify_all();
    result
}

fn handle() -> u64 {
    NEXT_HANDLE.fetch_add(0x40, Ordering::Relaxed)
}

impl World {
    fn new(gpus: &[SimAgent], init_status: HsaStatus) -> World {
        let mut world = World {
            agents: Vec::new(),
            init_status,
            initialized: 0,
            record: CallRecord::default(),
            pools: HashMap::new(),
            isas: HashMap::new(),
            memory: HashMap::new(),
            locked: HashMap::new(),
            signals: HashMap::new(),
            queues: HashMap::new(),
            readers: HashMap::new(),
            executables: HashMap::new(),
            symbols: HashMap::new(),
            kernel_objects: HashMap::new(),
            bodies: HashMap::new(),
            launches: Vec::new(),
            copies: Vec::new(),
            pending: VecDeque::new(),
            handlers: Vec::new(),
            system_handlers: Vec::new(),
            misuse: Vec::new(),
            faults: Vec::new(),
            held: false,
            generation: handle(),
            engine: None,
            handler_thread: None,
        };
        let cpu = [PoolKind::HostFine, PoolKind::HostKernarg, PoolKind::HostCoarse];
        let gpu = [PoolKind::DeviceCoarse, PoolKind::DeviceGroup];
        for (index, sim) in std::iter::once(None).chain(gpus.iter().copied().map(Some)).enumerate() {
            let kinds: &[PoolKind] = if sim.is_some() { &gpu } else { &cpu };
            let pools = kinds
                .iter()
                .map(|&kind| {
                    let h = handle();
                    world.pools.insert(h, Pool { agent: index, kind });
                    h
                })
                .collect();
            let isas = sim
                .iter()
                .flat_map(SimAgent::isa_names)
                .map(|name| {
                    let h = handle();
                    world.isas.insert(h, format!("amdgcn-amd-amdhsa--{name}"));
                    h
                })
                .collect();
            world.agents.push(Agent {
                handle: handle(),
                gpu: sim,
                isas,
                pools,
            });
        }
        world
    }

    fn agent(&self, agent: HsaAgent) -> Option<usize> {
        self.agents.iter().position(|a| a.handle == agent.handle)
    }

    /// Counts a call and fails it when armed.
    fn enter(&mut self, call: &'static str) -> Result<(), HsaStatus> {
        self.record.enter(call)
    }

    fn note(&mut self, what: String) {
        self.misuse.push(what);
    }

    /// Whether `[ptr, ptr + len)` lies in memory the simulation knows, and if so whether it is device
    /// memory, which agent owns it and which agents may access it besides its owner.
    fn region(&self, ptr: usize, len: usize) -> Option<Region> {
        let end = ptr.checked_add(len)?;
        for (&start, block) in &self.memory {
            if ptr >= start && end <= start + block.size.max(1) {
                return Some(Region {
                    device: block.device,
                    owner: block.agent,
                    allowed: block.allowed.clone(),
                    all_gpus: false,
                });
            }
        }
        for executable in self.executables.values() {
            for loaded in &executable.loaded {
                if ptr >= loaded.base && end <= loaded.base + loaded.size {
                    return Some(Region {
                        device: true,
                        owner: loaded.agent,
                        allowed: Vec::new(),
                        all_gpus: false,
                    });
                }
            }
        }
        for (&start, lock) in &self.locked {
            if ptr >= start && end <= start + lock.size {
                return Some(Region {
                    device: false,
                    owner: 0,
                    allowed: lock.agents.clone(),
                    all_gpus: lock.agents.is_empty(),
                });
            }
        }
        None
    }

    fn signal_value(&self, signal: u64) -> Option<i64> {
        self.signals.get(&signal).map(|s| s.value)
    }

    fn live(&self) -> Live {
        Live {
            memory: self.memory.len(),
            executables: self.executables.len(),
            readers: self.readers.len(),
            queues: self.queues.len(),
            signals: self.signals.values().filter(|s| !s.doorbell).count(),
            locked: self.locked.len(),
        }
    }
}

struct Region {
    device: bool,
    owner: usize,
    allowed: Vec<u64>,
    all_gpus: bool,
}

impl Region {
    fn accessible_by(&self, agents: &[Agent], agent: usize) -> bool {
        self.owner == agent
            || self.allowed.contains(&agents[agent].handle)
            || (self.all_gpus && agents[agent].gpu.is_some())
    }
}

/// Starts afresh with one CPU agent and `gpus` (and `hsa_init` answering `init_status`). The threads
/// of the previous world (queue packet processors, the copy engine, the signal handler thread) are
/// stopped and joined first; what a failed test left allocated is leaked, not freed: a thread of the
/// plugin it left running may still read it.
pub fn reset(gpus: &[SimAgent], init_status: HsaStatus) {
    let old = {
        let _paused = crate::util::alloc_count::pause();
        let mut slot = world();
        slot.replace(World::new(gpus, init_status))
    };
    CHANGED.notify_all();
    if let Some(mut old) = old {
        let mut threads: Vec<JoinHandle<()>> = old.queues.values_mut().filter_map(|q| q.worker.take()).collect();
        threads.extend(old.engine.take());
        threads.extend(old.handler_thread.take());
        for thread in threads {
            let _ = thread.join();
        }
        // Leaked on purpose (see above).
        std::mem::forget(old);
    }
}

/// The next call of `call` fails with `status` (once). Panics for a name that is not an entry point or
/// one that returns no status.
pub fn fail_next(call: &'static str, status: HsaStatus) {
    let returns = Functions::RETURNS
        .iter()
        .find(|(name, _)| *name == call)
        .map(|(_, returns)| *returns);
    assert!(returns.is_some(), "{call} is not an entry point of sys::Functions");
    assert_eq!(returns, Some("HsaStatus"), "{call} returns no status and cannot fail");
    with(|w| w.record.arm(call, status));
}

/// Runs `body` for every dispatch of the kernel named `name` (its descriptor's name, with or without
/// ".kd").
pub fn register_kernel(name: &str, body: KernelBody) {
    let name = name.strip_suffix(".kd").unwrap_or(name).to_string();
    with(|w| w.bodies.insert(name, body));
}

/// Forgets every kernel body (and what their closures hold).
pub fn clear_kernels() {
    with(|w| w.bodies.clear());
}

/// Holds the device's work back (`true`: no packet or copy starts) or lets it go (`false`), as a GPU
/// busy with other work would; tests use it to see what is queued before it runs.
pub fn hold(on: bool) {
    with(|w| w.held = on);
}

/// The packets each live queue holds, in no particular order.
pub fn queue_sizes() -> Vec<u32> {
    with(|w| w.queues.values().map(|q| q.size).collect())
}

/// What is still allocated or alive.
pub fn live() -> Live {
    with(|w| w.live())
}

/// Every kernel dispatch so far, in order.
pub fn launches() -> Vec<Launch> {
    with(|w| w.launches.clone())
}

/// Every asynchronous copy so far, in the order it was asked for.
pub fn copies() -> Vec<AsyncCopy> {
    with(|w| w.copies.clone())
}

/// Calls of entry point `name` so far.
pub fn calls(name: &str) -> usize {
    with(|w| w.record.count(name))
}

/// Misuse noted so far (see [`World::misuse`]).
pub fn misuse() -> Vec<String> {
    with(|w| w.misuse.clone())
}

/// The agents, CPU first.
pub fn agents() -> Vec<HsaAgent> {
    with(|w| w.agents.iter().map(|a| HsaAgent { handle: a.handle }).collect())
}

/// The agents given access to the block that starts at `ptr` with `hsa_amd_agents_allow_access`;
/// `None` when no pool block starts there.
pub fn allowed_agents(ptr: *const c_void) -> Option<Vec<HsaAgent>> {
    with(|w| {
        w.memory
            .get(&(ptr as usize))
            .map(|b| b.allowed.iter().map(|&handle| HsaAgent { handle }).collect())
    })
}

/// Raises a GPU memory fault event on `agent`, as the kernel driver would: every registered system
/// event handler is called (on this thread). Returns how many were.
pub fn fire_memory_fault(agent: HsaAgent, address: u64, reason: u32) -> usize {
    let handlers = with(|w| w.system_handlers.clone());
    let event = AmdEvent {
        event_type: sys::event_type::GPU_MEMORY_FAULT,
        memory_fault: GpuMemoryFaultInfo {
            agent,
            virtual_address: address,
            fault_reason_mask: reason,
        },
    };
    for &(callback, data) in &handlers {
        // SAFETY: the handler was registered for exactly this call, with this data pointer.
        unsafe { callback(&event, data as *mut c_void) };
    }
    handlers.len()
}

/// Runs `f` on the world after counting `name`; a failure armed for it is returned instead, and a call
/// before `hsa_init` gets `HSA_STATUS_ERROR_NOT_INITIALIZED`.
fn call(name: &'static str, f: impl FnOnce(&mut World) -> HsaStatus) -> HsaStatus {
    with(|w| match w.enter(name) {
        Err(status) => status,
        Ok(()) if w.initialized == 0 => sys::HSA_STATUS_ERROR_NOT_INITIALIZED,
        Ok(()) => f(w),
    })
}

/// For the entry points without a status: counts `name` and runs `f`, noting misuse before `hsa_init`.
fn peek<R>(name: &'static str, f: impl FnOnce(&mut World) -> R) -> R {
    with(|w| {
        let _ = w.enter(name);
        if w.initialized == 0 {
            w.note(format!("{name} before hsa_init"));
        }
        f(w)
    })
}

/// Writes `value` where the caller asked for an attribute.
///
/// # Safety
/// `out` is writable for `size_of::<T>()` bytes (the attribute's documented type).
unsafe fn put<T: Copy>(out: *mut c_void, value: T) {
    // SAFETY: per this function's contract; the caller's buffer need not be aligned.
    unsafe { out.cast::<T>().write_unaligned(value) }
}

/// Writes `text` NUL-padded into a `char[len]` attribute.
///
/// # Safety
/// `out` is writable for `len` bytes.
unsafe fn put_text(out: *mut c_void, text: &str, len: usize) {
    let mut bytes = vec![0u8; len];
    let n = text.len().min(len - 1);
    bytes[..n].copy_from_slice(&text.as_bytes()[..n]);
    // SAFETY: per this function's contract.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), len) }
}

fn check(condition: u32, value: i64, compare: i64) -> bool {
    match condition {
        signal_condition::EQ => value == compare,
        signal_condition::NE => value != compare,
        signal_condition::LT => value < compare,
        signal_condition::GTE => value >= compare,
        _ => false,
    }
}

unsafe extern "C" fn hsa_init() -> HsaStatus {
    with(|w| {
        if let Err(status) = w.enter("hsa_init") {
            return status;
        }
        if w.init_status != HSA_STATUS_SUCCESS {
            return w.init_status;
        }
        w.initialized += 1;
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_shut_down() -> HsaStatus {
    call("hsa_shut_down", |w| {
        w.initialized -= 1;
        HSA_STATUS_SUCCESS
    })
}

/// An entry point the backend resolves, as LLVM 16's plugin does, but never calls: a call is noted
/// as misuse and fails. (These are not simulated: the suite runs on the real runtime too.)
fn unused(name: &'static str) -> HsaStatus {
    with(|w| {
        let _ = w.enter(name);
        w.note(format!("{name} was called, which the backend does not use"));
        sys::HSA_STATUS_ERROR
    })
}

unsafe extern "C" fn hsa_status_string(_status: HsaStatus, _text: *mut *const c_char) -> HsaStatus {
    unused("hsa_status_string")
}

unsafe extern "C" fn hsa_system_get_info(_attribute: u32, _value: *mut c_void) -> HsaStatus {
    unused("hsa_system_get_info")
}

mod agents;
mod loader;
mod memory;
mod queues;
mod signals;
#[cfg(test)]
mod tests;

use agents::*;
use loader::*;
use memory::*;
use queues::*;
use signals::*;

/// The simulated runtime, as `Runtime::open` would have made it from a library.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<&'static Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        Box::leak(Box::new(Runtime {
            library: "simulated libhsa-runtime64".into(),
            functions: sys::hsa_functions_in_scope!(),
        }))
    })
}
