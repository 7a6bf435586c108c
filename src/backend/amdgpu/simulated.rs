//! A simulated HSA runtime, substituted for `libhsa-runtime64` in-process so that the AMDGPU backend's
//! own logic runs in tests without a GPU. It behaves as ROCm 5.2.3 does where the plugin can tell:
//! one CPU agent (listed first) with a fine-grained and a kernarg pool, GPU agents with coarse- and
//! fine-grained pools, memory that is host memory it tracks (with the agents each block was opened to),
//! signals that block their waiters, user-mode AQL queues whose packets a thread per queue processes
//! once the doorbell is rung, asynchronous copies done by a copy engine thread once their dependencies
//! reach 0, and executables loaded from real code objects (segments, relocations, kernel descriptors
//! and variables). Kernels run as Rust closures registered by name. Every entry point counts its calls
//! and can be made to fail once ([`fail_next`]), so that fault handling is tested call by call; misuse
//! the real runtime would not report (a load of a destroyed signal, say) is collected in
//! [`World::misuse`] for tests to check.
//!
//! Debian's real ROCr 5.2.3 over the fake kernel driver of `tests/fake_kfd` runs the same backend
//! suite (`rocr_harness.rs`), and a test there asks both runtimes the same questions (agents, ISAs,
//! pools and access, a copy round trip, a code object's symbols, a foreign ELF file) and wants the
//! same answers; it showed this runtime listing a fine-grained GPU pool ROCr 5.2 does not, lacking the
//! CPU's coarse-grained pool, refusing a foreign file at reader creation rather than at loading, and an
//! MI250 without its `sramecc+` feature. One known difference stays: this loader refuses an image whose
//! section headers are cut off, which ROCr loads from its program headers (the plugin reads the section
//! headers itself before loading, so it never passes one). This runtime stays for what
//! the real one cannot give: misuse the hardware would only show as a wrong result or a hang (memory
//! reached by an agent it was never opened to, a kernel reading kernel arguments outside the buffer it
//! was given, a destroyed signal used), GPUs and runtimes other than Debian's ROCr and the fake's two
//! models (generic ISAs, RDNA 3, many GPUs, odd queue limits, a capped pool), every entry point failing
//! once without a process per case, and tests that need no runtime binaries at all.

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

/// Which pool a `hsa_amd_memory_pool_allocate` or `_free` call was about, for tests that tell device
/// memory from host memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolUse {
    /// A GPU's pool.
    Device,
    /// The CPU's fine-grained pool.
    Host,
    /// The CPU's kernarg pool.
    Kernarg,
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

impl From<PoolKind> for PoolUse {
    fn from(kind: PoolKind) -> PoolUse {
        match kind {
            PoolKind::HostFine | PoolKind::HostCoarse => PoolUse::Host,
            PoolKind::HostKernarg => PoolUse::Kernarg,
            _ => PoolUse::Device,
        }
    }
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

/// Bytes of a GPU's memory when no capacity is set, as its pools report it.
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
    pool: u64,
    agent: usize,
    size: usize,
    /// Bytes reserved (the size rounded up to the granule), for the layout and capacity.
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
    /// Objects of local binding: loaded, but not symbols the runtime answers for (name, address,
    /// size), kept so that tests can see where the loader put them.
    locals: Vec<(String, u64, u32)>,
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
    /// Bytes each GPU's pools can hold at once, when a test sets a limit; past it allocations fail with
    /// `HSA_STATUS_ERROR_OUT_OF_RESOURCES`.
    pub capacity: Option<usize>,
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
    /// For each pool allocate or free call that named a known pool or block, its index in `record.log`
    /// and the pool it was about.
    pub pool_calls: HashMap<usize, PoolUse>,
    /// For each asynchronous copy accepted, its index in `record.log` and its direction.
    pub copy_calls: HashMap<usize, CopyKind>,
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
            capacity: None,
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
            pool_calls: HashMap::new(),
            copy_calls: HashMap::new(),
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

    /// Records which pool the call just logged was about.
    fn note_pool_call(&mut self, kind: PoolKind) {
        self.pool_calls.insert(self.record.log.len() - 1, kind.into());
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

/// Bytes each GPU's pools can hold at once (`None`: no limit).
pub fn set_capacity(bytes: Option<usize>) {
    with(|w| w.capacity = bytes);
}

/// Bytes reserved in GPU pools (every GPU together).
pub fn device_reserved() -> usize {
    with(|w| w.memory.values().filter(|b| b.device).map(|b| b.reserved).sum())
}

/// Which pool the block that starts at `ptr` came from; `None` when no block starts there.
pub fn block_pool(ptr: usize) -> Option<PoolUse> {
    with(|w| {
        let block = w.memory.get(&ptr)?;
        Some(w.pools.get(&block.pool)?.kind.into())
    })
}

/// The packets each live queue holds, in no particular order.
pub fn queue_sizes() -> Vec<u32> {
    with(|w| w.queues.values().map(|q| q.size).collect())
}

/// Every pool block, as (address, size).
pub fn blocks() -> Vec<(usize, usize)> {
    with(|w| w.memory.iter().map(|(&a, b)| (a, b.size)).collect())
}

/// What device code's store to a signal does (ockl's `__ockl_hsa_signal_store`, which also raises the
/// signal's interrupt): sets the value and wakes whoever waits on it, async handlers included.
pub fn device_signal_store(handle: u64, value: HsaSignalValue) {
    with(|w| match w.signals.get_mut(&handle) {
        Some(signal) => signal.value = value,
        None => w.note(format!(
            "device code stored to signal {handle:#x}, which does not exist"
        )),
    })
}

/// Address and size of the variable `name` of any loaded executable, local ones included (which the
/// runtime does not answer for).
pub fn variable(name: &str) -> Option<(usize, usize)> {
    with(|w| {
        let registered = w.symbols.values().find_map(|s| match s.kind {
            SymbolKind::Variable { address, size } if s.name == name => Some((address as usize, size as usize)),
            _ => None,
        });
        let local = || {
            w.executables
                .values()
                .flat_map(|e| &e.locals)
                .find_map(|(n, address, size)| (n == name).then_some((*address as usize, *size as usize)))
        };
        registered.or_else(local)
    })
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

/// Calls `callback` for each of `items` outside the world's lock (it may call back into the runtime),
/// stopping at the first status other than success, which is returned.
fn iterate<T: Copy>(items: Result<Vec<T>, HsaStatus>, mut callback: impl FnMut(T) -> HsaStatus) -> HsaStatus {
    match items {
        Err(status) => status,
        Ok(items) => {
            for item in items {
                let status = callback(item);
                if status != HSA_STATUS_SUCCESS {
                    return status;
                }
            }
            HSA_STATUS_SUCCESS
        }
    }
}

/// Like [`call`], for the iterations: the items to visit, or the status that stops them before the
/// first.
fn listed<T>(name: &'static str, f: impl FnOnce(&mut World) -> Result<Vec<T>, HsaStatus>) -> Result<Vec<T>, HsaStatus> {
    with(|w| match w.enter(name) {
        Err(status) => Err(status),
        Ok(()) if w.initialized == 0 => Err(sys::HSA_STATUS_ERROR_NOT_INITIALIZED),
        Ok(()) => f(w),
    })
}

unsafe extern "C" fn hsa_iterate_agents(callback: AgentCallback, data: *mut c_void) -> HsaStatus {
    let agents = listed("hsa_iterate_agents", |w| {
        Ok(w.agents.iter().map(|a| HsaAgent { handle: a.handle }).collect())
    });
    // SAFETY: the callback and its data are the caller's, called as the API promises.
    iterate(agents, |agent| unsafe { callback(agent, data) })
}

unsafe extern "C" fn hsa_agent_get_info(agent: HsaAgent, attribute: u32, value: *mut c_void) -> HsaStatus {
    call("hsa_agent_get_info", |w| {
        let Some(index) = w.agent(agent) else {
            return sys::HSA_STATUS_ERROR_INVALID_AGENT;
        };
        if value.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let a = &w.agents[index];
        let gpu = a.gpu;
        let is_gpu = gpu.is_some();
        let name = gpu.map_or("Simulated x86-64 CPU", |g| g.name.split(':').next().unwrap_or(g.name));
        let pick = |cpu: u32, gpu: u32| if is_gpu { gpu } else { cpu };
        use agent_info as i;
        // SAFETY: in every arm, `value` is writable for the attribute's documented type.
        unsafe {
            match attribute {
                i::NAME => put_text(value, name, 64),
                i::VENDOR_NAME => put_text(value, if is_gpu { "AMD" } else { "CPU" }, 64),
                i::FEATURE => put(value, pick(0, sys::agent_feature::KERNEL_DISPATCH)),
                i::MACHINE_MODEL => put(value, 1u32),
                i::PROFILE => put(value, pick(sys::profile::FULL, sys::profile::BASE)),
                i::DEFAULT_FLOAT_ROUNDING_MODE => put(value, sys::float_rounding_mode::NEAR),
                i::BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES => put(value, 3u32),
                i::FAST_F16_OPERATION => put(value, is_gpu),
                i::WAVEFRONT_SIZE => put(value, gpu.map_or(0, |g| g.wavefront_size)),
                i::WORKGROUP_MAX_DIM => put(value, if is_gpu { [1024u16; 3] } else { [0u16; 3] }),
                i::WORKGROUP_MAX_SIZE => put(value, pick(0, 1024)),
                i::GRID_MAX_DIM => {
                    let m = pick(0, u32::MAX);
                    put(value, HsaDim3 { x: m, y: m, z: m })
                }
                i::GRID_MAX_SIZE => put(value, pick(0, u32::MAX)),
                i::FBARRIER_MAX_SIZE => put(value, pick(0, 32)),
                i::QUEUES_MAX => put(value, pick(0, QUEUES_MAX)),
                i::QUEUE_MIN_SIZE => put(value, pick(0, QUEUE_MIN)),
                i::QUEUE_MAX_SIZE => put(value, pick(0, QUEUE_MAX)),
                i::QUEUE_TYPE => put(value, sys::queue_type::MULTI),
                i::NODE | i::DRIVER_NODE_ID => put(value, index as u32),
                i::DEVICE => put(value, pick(device_type::CPU, device_type::GPU)),
                i::CACHE_SIZE => put(
                    value,
                    if is_gpu {
                        [16u32 << 10, 8 << 20, 0, 0]
                    } else {
                        [32 << 10, 512 << 10, 32 << 20, 0]
                    },
                ),
                i::ISA => put(
                    value,
                    HsaIsa {
                        handle: a.isas.first().copied().unwrap_or(0),
                    },
                ),
                i::EXTENSIONS => put(value, [0u8; 128]),
                i::VERSION_MAJOR | i::VERSION_MINOR => put(value, 1u16),
                i::CHIP_ID => put(value, pick(0, 0x740f)),
                i::CACHELINE_SIZE => put(value, 64u32),
                i::COMPUTE_UNIT_COUNT => put(value, gpu.map_or(16, |g| g.compute_units)),
                i::MAX_CLOCK_FREQUENCY => put(value, pick(2450, 1700)),
                i::MAX_ADDRESS_WATCH_POINTS => put(value, pick(0, 4)),
                i::BDFID => put(value, pick(0, (index as u32 + 2) << 8)),
                i::MEMORY_MAX_FREQUENCY => put(value, pick(0, 1600)),
                i::PRODUCT_NAME => put_text(
                    value,
                    &gpu.map_or_else(|| name.to_string(), |_| format!("Simulated AMD GPU ({name})")),
                    64,
                ),
                i::MAX_WAVES_PER_CU => put(value, pick(0, 32)),
                i::NUM_SIMDS_PER_CU => put(value, pick(0, 4)),
                i::NUM_SHADER_ENGINES => put(value, pick(0, 8)),
                i::NUM_SHADER_ARRAYS_PER_SE => put(value, pick(0, 1)),
                i::DOMAIN => put(value, 0u32),
                i::COOPERATIVE_QUEUES => put(value, is_gpu),
                i::UUID => put_text(
                    value,
                    &if is_gpu {
                        format!("GPU-{:016x}", 0x5111_0000_0000_0000u64 + index as u64)
                    } else {
                        "CPU-XX".into()
                    },
                    21,
                ),
                i::ASIC_REVISION => put(value, pick(0, 1)),
                _ => return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
            }
        }
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_agent_iterate_isas(agent: HsaAgent, callback: IsaCallback, data: *mut c_void) -> HsaStatus {
    let isas = listed("hsa_agent_iterate_isas", |w| {
        let index = w.agent(agent).ok_or(sys::HSA_STATUS_ERROR_INVALID_AGENT)?;
        Ok(w.agents[index].isas.iter().map(|&handle| HsaIsa { handle }).collect())
    });
    // SAFETY: the callback and its data are the caller's, called as the API promises.
    iterate(isas, |isa| unsafe { callback(isa, data) })
}

unsafe extern "C" fn hsa_isa_get_info_alt(isa: HsaIsa, attribute: u32, value: *mut c_void) -> HsaStatus {
    call("hsa_isa_get_info_alt", |w| {
        let Some(name) = w.isas.get(&isa.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_ISA;
        };
        if value.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        match attribute {
            // SAFETY: a u32 attribute.
            isa_info::NAME_LENGTH => unsafe { put(value, name.len() as u32) },
            // SAFETY: the caller provides NAME_LENGTH bytes; the name is written without a NUL.
            isa_info::NAME => unsafe { std::ptr::copy_nonoverlapping(name.as_ptr(), value.cast(), name.len()) },
            _ => return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
        }
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_amd_register_system_event_handler(
    callback: SystemEventCallback,
    data: *mut c_void,
) -> HsaStatus {
    call("hsa_amd_register_system_event_handler", |w| {
        w.system_handlers.push((callback, data as usize));
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_amd_agent_iterate_memory_pools(
    agent: HsaAgent,
    callback: MemoryPoolCallback,
    data: *mut c_void,
) -> HsaStatus {
    let pools = listed("hsa_amd_agent_iterate_memory_pools", |w| {
        let index = w.agent(agent).ok_or(sys::HSA_STATUS_ERROR_INVALID_AGENT)?;
        Ok(w.agents[index]
            .pools
            .iter()
            .map(|&handle| HsaMemoryPool { handle })
            .collect())
    });
    // SAFETY: the callback and its data are the caller's, called as the API promises.
    iterate(pools, |pool| unsafe { callback(pool, data) })
}

fn pool_size(w: &World, kind: PoolKind) -> usize {
    match kind {
        PoolKind::HostFine | PoolKind::HostKernarg | PoolKind::HostCoarse => HOST_MEMORY,
        PoolKind::DeviceCoarse => w.capacity.unwrap_or(DEVICE_MEMORY),
        PoolKind::DeviceGroup => GROUP_MEMORY,
    }
}

unsafe extern "C" fn hsa_amd_memory_pool_get_info(
    pool: HsaMemoryPool,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    call("hsa_amd_memory_pool_get_info", |w| {
        let Some(p) = w.pools.get(&pool.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
        };
        if value.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let kind = p.kind;
        let allocatable = kind != PoolKind::DeviceGroup;
        // SAFETY: in every arm, `value` is writable for the attribute's documented type.
        unsafe {
            match attribute {
                pool_info::SEGMENT => put(value, kind.segment()),
                pool_info::GLOBAL_FLAGS => put(value, kind.flags()),
                pool_info::SIZE | pool_info::ALLOC_MAX_SIZE => put(value, pool_size(w, kind)),
                pool_info::RUNTIME_ALLOC_ALLOWED => put(value, allocatable),
                pool_info::RUNTIME_ALLOC_GRANULE | pool_info::RUNTIME_ALLOC_ALIGNMENT => {
                    put(value, if allocatable { GRANULE } else { 0 })
                }
                pool_info::ACCESSIBLE_BY_ALL => put(value, false),
                _ => return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
            }
        }
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_amd_agent_memory_pool_get_info(
    agent: HsaAgent,
    pool: HsaMemoryPool,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    call("hsa_amd_agent_memory_pool_get_info", |w| {
        let Some(index) = w.agent(agent) else {
            return sys::HSA_STATUS_ERROR_INVALID_AGENT;
        };
        let Some(p) = w.pools.get(&pool.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
        };
        if value.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let own = p.agent == index;
        let access = if own {
            pool_access::ALLOWED_BY_DEFAULT
        } else if p.kind == PoolKind::DeviceGroup {
            pool_access::NEVER_ALLOWED
        } else {
            pool_access::DISALLOWED_BY_DEFAULT
        };
        match attribute {
            // SAFETY: a u32 attribute.
            agent_pool_info::ACCESS => unsafe { put(value, access) },
            // SAFETY: a u32 attribute.
            agent_pool_info::NUM_LINK_HOPS => unsafe { put(value, u32::from(!own)) },
            _ => return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
        }
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_amd_memory_pool_allocate(
    pool: HsaMemoryPool,
    size: usize,
    flags: u32,
    ptr: *mut *mut c_void,
) -> HsaStatus {
    call("hsa_amd_memory_pool_allocate", |w| {
        let Some(p) = w.pools.get(&pool.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
        };
        if ptr.is_null() || size == 0 || flags != 0 {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let (agent, kind) = (p.agent, p.kind);
        w.note_pool_call(kind);
        if kind == PoolKind::DeviceGroup || size > pool_size(w, kind) {
            return sys::HSA_STATUS_ERROR_INVALID_ALLOCATION;
        }
        let reserved = size.div_ceil(GRANULE) * GRANULE;
        if kind.device() {
            let used: usize = w.memory.values().filter(|b| b.agent == agent).map(|b| b.reserved).sum();
            if w.capacity.is_some_and(|capacity| used + reserved > capacity) {
                return sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES;
            }
        }
        let Ok(layout) = Layout::from_size_align(reserved, GRANULE) else {
            return sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        };
        // SAFETY: the layout's size is non-zero.
        let block = unsafe { std::alloc::alloc_zeroed(layout) } as usize;
        if block == 0 {
            return sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        }
        w.memory.insert(
            block,
            Block {
                pool: pool.handle,
                agent,
                size,
                reserved,
                device: kind.device(),
                allowed: Vec::new(),
            },
        );
        // SAFETY: writable per the API.
        unsafe { *ptr = block as *mut c_void };
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> HsaStatus {
    call("hsa_amd_memory_pool_free", |w| match w.memory.remove(&(ptr as usize)) {
        Some(block) => {
            if let Some(kind) = w.pools.get(&block.pool).map(|p| p.kind) {
                w.note_pool_call(kind);
            }
            // SAFETY: allocated in hsa_amd_memory_pool_allocate with this layout.
            unsafe { std::alloc::dealloc(ptr.cast(), Layout::from_size_align_unchecked(block.reserved, GRANULE)) };
            HSA_STATUS_SUCCESS
        }
        None => sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
    })
}

/// The agents of a C array, or the status for an invalid one.
///
/// # Safety
/// `agents` points to `count` agents when it is not null.
unsafe fn agent_list(w: &World, count: usize, agents: *const HsaAgent) -> Result<Vec<u64>, HsaStatus> {
    if count == 0 || agents.is_null() {
        return Err(sys::HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }
    // SAFETY: per this function's contract.
    let agents = unsafe { std::slice::from_raw_parts(agents, count) };
    agents
        .iter()
        .map(|a| w.agent(*a).map(|_| a.handle).ok_or(sys::HSA_STATUS_ERROR_INVALID_AGENT))
        .collect()
}

unsafe extern "C" fn hsa_amd_agents_allow_access(
    num_agents: u32,
    agents: *const HsaAgent,
    _flags: *const u32,
    ptr: *const c_void,
) -> HsaStatus {
    call("hsa_amd_agents_allow_access", |w| {
        // SAFETY: the caller passes `num_agents` agents.
        let list = match unsafe { agent_list(w, num_agents as usize, agents) } {
            Ok(list) => list,
            Err(status) => return status,
        };
        let Some(block) = w.memory.get_mut(&(ptr as usize)) else {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        for agent in list {
            if !block.allowed.contains(&agent) {
                block.allowed.push(agent);
            }
        }
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_amd_memory_lock(
    host_ptr: *mut c_void,
    size: usize,
    agents: *mut HsaAgent,
    num_agent: c_int,
    agent_ptr: *mut *mut c_void,
) -> HsaStatus {
    call("hsa_amd_memory_lock", |w| {
        if size == 0 || host_ptr.is_null() || agent_ptr.is_null() || agents.is_null() != (num_agent == 0) {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let list = if agents.is_null() {
            Vec::new()
        } else {
            // SAFETY: the caller passes `num_agent` agents.
            match unsafe { agent_list(w, num_agent.max(0) as usize, agents) } {
                Ok(list) => list,
                Err(status) => return status,
            }
        };
        let at = host_ptr as usize;
        if let Some(lock) = w.locked.get_mut(&at) {
            lock.count += 1;
            lock.size = lock.size.max(size);
        } else {
            w.locked.insert(
                at,
                Lock {
                    size,
                    agents: list,
                    count: 1,
                },
            );
        }
        // SAFETY: writable per the API. Agents see locked memory at its host address here.
        unsafe { *agent_ptr = host_ptr };
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_amd_memory_unlock(host_ptr: *mut c_void) -> HsaStatus {
    call("hsa_amd_memory_unlock", |w| {
        let at = host_ptr as usize;
        match w.locked.get_mut(&at) {
            Some(lock) if lock.count > 1 => lock.count -= 1,
            Some(_) => {
                w.locked.remove(&at);
            }
            // The real runtime says nothing either.
            None => w.note(format!("hsa_amd_memory_unlock of {at:#x}, which is not locked")),
        }
        HSA_STATUS_SUCCESS
    })
}

/// Starts the copy engine thread of the current world if it has none.
fn ensure_engine(w: &mut World) {
    if w.engine.is_none() {
        let generation = w.generation;
        w.engine = Some(
            std::thread::Builder::new()
                .name("sim-hsa-copy".into())
                .spawn(move || copy_engine(generation))
                .expect("a thread for the simulated copy engine"),
        );
    }
}

/// Performs the pending copies, each once its dependencies are 0, in the order they were asked for
/// among those ready; then decrements its completion signal.
fn copy_engine(generation: u64) {
    loop {
        let job = {
            let mut guard = world();
            loop {
                let Some(w) = guard.as_mut().filter(|w| w.generation == generation) else {
                    return;
                };
                let ready = w
                    .pending
                    .iter()
                    .position(|c| !w.held && c.deps.iter().all(|d| w.signal_value(*d).is_none_or(|v| v == 0)));
                if let Some(i) = ready {
                    break w.pending.remove(i).expect("a pending copy");
                }
                guard = wait(guard);
            }
        };
        // SAFETY: both ranges were checked to be simulated memory when the copy was asked for; the
        // plugin keeps them alive until the completion signal says the copy is done.
        unsafe { std::ptr::copy(job.src as *const u8, job.dst as *mut u8, job.size) };
        let mut guard = world();
        if let Some(w) = guard.as_mut().filter(|w| w.generation == generation) {
            match w.signals.get_mut(&job.completion) {
                Some(s) => s.value -= 1,
                None => w.note(format!(
                    "the completion signal {:#x} of a copy was destroyed before the copy finished",
                    job.completion
                )),
            }
        }
        drop(guard);
        CHANGED.notify_all();
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn hsa_amd_memory_async_copy(
    dst: *mut c_void,
    dst_agent: HsaAgent,
    src: *const c_void,
    src_agent: HsaAgent,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const HsaSignal,
    completion_signal: HsaSignal,
) -> HsaStatus {
    call("hsa_amd_memory_async_copy", |w| {
        if w.agent(dst_agent).is_none() || w.agent(src_agent).is_none() {
            return sys::HSA_STATUS_ERROR_INVALID_AGENT;
        }
        if dst.is_null() || src.is_null() || (num_dep_signals > 0 && dep_signals.is_null()) {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let deps: Vec<u64> = if num_dep_signals == 0 {
            Vec::new()
        } else {
            // SAFETY: the caller passes `num_dep_signals` signals.
            unsafe { std::slice::from_raw_parts(dep_signals, num_dep_signals as usize) }
                .iter()
                .map(|s| s.handle)
                .collect()
        };
        if !w.signals.contains_key(&completion_signal.handle) || deps.iter().any(|d| !w.signals.contains_key(d)) {
            return sys::HSA_STATUS_ERROR_INVALID_SIGNAL;
        }
        // Both sides must be memory an agent can reach: pool blocks, loaded code objects or locked
        // host ranges. Pageable host memory is refused, as the copy engines cannot reach it.
        let (Some(to), Some(from)) = (w.region(dst as usize, size), w.region(src as usize, size)) else {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        let kind = match (from.device, to.device) {
            (false, true) => CopyKind::HostToDevice,
            (true, false) => CopyKind::DeviceToHost,
            (true, true) if from.owner == to.owner => CopyKind::DeviceToDevice,
            (true, true) => CopyKind::PeerToPeer,
            (false, false) => CopyKind::HostToHost,
        };
        // Between two GPUs, the source's agent copies: it must have been given access to the
        // destination, as on ROCm (a GPU's own memory is disallowed to others by default).
        if kind == CopyKind::PeerToPeer {
            let Some(source_agent) = w.agent(src_agent) else {
                return sys::HSA_STATUS_ERROR_INVALID_AGENT;
            };
            if !to.accessible_by(&w.agents, source_agent) {
                return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
            }
        }
        w.copy_calls.insert(w.record.log.len() - 1, kind);
        w.copies.push(AsyncCopy {
            dst: dst as usize,
            src: src as usize,
            size,
            kind,
            deps: deps.clone(),
            completion: completion_signal.handle,
        });
        w.pending.push_back(PendingCopy {
            dst: dst as usize,
            src: src as usize,
            size,
            deps,
            completion: completion_signal.handle,
        });
        ensure_engine(w);
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_amd_memory_fill(_ptr: *mut c_void, _value: u32, _count: usize) -> HsaStatus {
    unused("hsa_amd_memory_fill")
}

unsafe extern "C" fn hsa_amd_pointer_info(
    _ptr: *const c_void,
    _info: *mut PointerInfo,
    _alloc: Option<PointerInfoAlloc>,
    _num_agents_accessible: *mut u32,
    _accessible: *mut *mut HsaAgent,
) -> HsaStatus {
    unused("hsa_amd_pointer_info")
}

unsafe extern "C" fn hsa_memory_copy(_dst: *mut c_void, _src: *const c_void, _size: usize) -> HsaStatus {
    unused("hsa_memory_copy")
}

fn create_signal(w: &mut World, initial: i64, consumers: u32, list: *const HsaAgent, out: *mut HsaSignal) -> HsaStatus {
    if out.is_null() || (consumers > 0 && list.is_null()) {
        return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let h = handle();
    w.signals.insert(
        h,
        Signal {
            value: initial,
            doorbell: false,
        },
    );
    // SAFETY: writable per the API.
    unsafe { *out = HsaSignal { handle: h } };
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn hsa_signal_create(
    initial_value: HsaSignalValue,
    num_consumers: u32,
    consumers: *const HsaAgent,
    signal: *mut HsaSignal,
) -> HsaStatus {
    call("hsa_signal_create", |w| {
        create_signal(w, initial_value, num_consumers, consumers, signal)
    })
}

unsafe extern "C" fn hsa_amd_signal_create(
    initial_value: HsaSignalValue,
    num_consumers: u32,
    consumers: *const HsaAgent,
    _attributes: u64,
    signal: *mut HsaSignal,
) -> HsaStatus {
    call("hsa_amd_signal_create", |w| {
        create_signal(w, initial_value, num_consumers, consumers, signal)
    })
}

unsafe extern "C" fn hsa_signal_destroy(signal: HsaSignal) -> HsaStatus {
    call("hsa_signal_destroy", |w| match w.signals.get(&signal.handle) {
        Some(s) if !s.doorbell => {
            w.signals.remove(&signal.handle);
            w.handlers.retain(|h| h.signal != signal.handle);
            HSA_STATUS_SUCCESS
        }
        _ => sys::HSA_STATUS_ERROR_INVALID_SIGNAL,
    })
}

/// A signal operation without a status: `f` on its value, or misuse noted for an unknown signal.
fn on_signal<R: Default>(name: &'static str, signal: HsaSignal, f: impl FnOnce(&mut i64) -> R) -> R {
    peek(name, |w| match w.signals.get_mut(&signal.handle) {
        Some(s) => f(&mut s.value),
        None => {
            w.note(format!("{name} on signal {:#x}, which does not exist", signal.handle));
            R::default()
        }
    })
}

unsafe extern "C" fn hsa_signal_load_scacquire(signal: HsaSignal) -> HsaSignalValue {
    on_signal("hsa_signal_load_scacquire", signal, |v| *v)
}

unsafe extern "C" fn hsa_signal_load_relaxed(signal: HsaSignal) -> HsaSignalValue {
    on_signal("hsa_signal_load_relaxed", signal, |v| *v)
}

unsafe extern "C" fn hsa_signal_store_relaxed(signal: HsaSignal, value: HsaSignalValue) {
    on_signal("hsa_signal_store_relaxed", signal, |v| *v = value)
}

unsafe extern "C" fn hsa_signal_store_screlease(signal: HsaSignal, value: HsaSignalValue) {
    on_signal("hsa_signal_store_screlease", signal, |v| *v = value)
}

unsafe extern "C" fn hsa_signal_subtract_screlease(signal: HsaSignal, value: HsaSignalValue) {
    on_signal("hsa_signal_subtract_screlease", signal, |v| *v -= value)
}

unsafe extern "C" fn hsa_signal_wait_scacquire(
    signal: HsaSignal,
    condition: u32,
    compare_value: HsaSignalValue,
    timeout_hint: u64,
    _wait_state_hint: u32,
) -> HsaSignalValue {
    let known = peek("hsa_signal_wait_scacquire", |w| {
        let known = w.signals.contains_key(&signal.handle);
        if !known {
            w.note(format!(
                "hsa_signal_wait_scacquire on signal {:#x}, which does not exist",
                signal.handle
            ));
        }
        known.then_some(w.generation)
    });
    let Some(generation) = known else { return 0 };
    let deadline = (timeout_hint != u64::MAX)
        .then(|| Instant::now().checked_add(Duration::from_nanos(timeout_hint)))
        .flatten();
    let mut guard = world();
    loop {
        let Some(value) = guard
            .as_ref()
            .filter(|w| w.generation == generation)
            .and_then(|w| w.signal_value(signal.handle))
        else {
            return 0;
        };
        if check(condition, value, compare_value) {
            return value;
        }
        guard = match deadline {
            None => wait(guard),
            Some(deadline) => {
                let now = Instant::now();
                if now >= deadline {
                    return value;
                }
                wait_for(guard, deadline - now)
            }
        };
    }
}

/// Starts the signal handler thread of the current world if it has none.
fn ensure_handler_thread(w: &mut World) {
    if w.handler_thread.is_none() {
        let generation = w.generation;
        w.handler_thread = Some(
            std::thread::Builder::new()
                .name("sim-hsa-handlers".into())
                .spawn(move || handler_thread(generation))
                .expect("a thread for the simulated signal handlers"),
        );
    }
}

/// Calls each registered handler once its signal meets its condition, outside the lock (a handler may
/// call the runtime), and keeps it armed when it returns true.
fn handler_thread(generation: u64) {
    loop {
        let (handler, value) = {
            let mut guard = world();
            loop {
                let Some(w) = guard.as_mut().filter(|w| w.generation == generation) else {
                    return;
                };
                let ready = w
                    .handlers
                    .iter()
                    .position(|h| w.signal_value(h.signal).is_some_and(|v| check(h.condition, v, h.value)));
                if let Some(i) = ready {
                    let h = w.handlers.remove(i);
                    let value = w.signal_value(h.signal).unwrap_or_default();
                    break (h, value);
                }
                guard = wait(guard);
            }
        };
        // SAFETY: the handler was registered with this argument for exactly this call.
        let again = unsafe { (handler.handler)(value, handler.arg as *mut c_void) };
        let mut guard = world();
        if let Some(w) = guard.as_mut().filter(|w| w.generation == generation) {
            if again && w.signals.contains_key(&handler.signal) {
                w.handlers.push(handler);
            }
        }
    }
}

unsafe extern "C" fn hsa_amd_signal_async_handler(
    signal: HsaSignal,
    condition: u32,
    value: HsaSignalValue,
    handler: SignalHandler,
    arg: *mut c_void,
) -> HsaStatus {
    call("hsa_amd_signal_async_handler", |w| {
        if !w.signals.contains_key(&signal.handle) {
            return sys::HSA_STATUS_ERROR_INVALID_SIGNAL;
        }
        if condition > signal_condition::GTE {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        w.handlers.push(Handler {
            signal: signal.handle,
            condition,
            value,
            handler,
            arg: arg as usize,
        });
        ensure_handler_thread(w);
        HSA_STATUS_SUCCESS
    })
}

fn ring_layout(size: u32) -> Layout {
    Layout::from_size_align(size as usize * 64, 64).expect("a ring layout")
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn hsa_queue_create(
    agent: HsaAgent,
    size: u32,
    queue_type: u32,
    callback: Option<QueueErrorCallback>,
    data: *mut c_void,
    _private_segment_size: u32,
    _group_segment_size: u32,
    queue: *mut *mut HsaQueue,
) -> HsaStatus {
    call("hsa_queue_create", |w| {
        let Some(index) = w.agent(agent) else {
            return sys::HSA_STATUS_ERROR_INVALID_AGENT;
        };
        if w.agents[index].gpu.is_none() {
            return sys::HSA_STATUS_ERROR_INVALID_AGENT;
        }
        if queue.is_null()
            || !size.is_power_of_two()
            || !(QUEUE_MIN..=QUEUE_MAX).contains(&size)
            || queue_type > sys::queue_type::COOPERATIVE
        {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        if w.queues.values().filter(|q| q.agent == index).count() >= QUEUES_MAX as usize {
            return sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        }
        // SAFETY: the layout is non-empty.
        let ring = unsafe { std::alloc::alloc_zeroed(ring_layout(size)) };
        if ring.is_null() {
            return sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        }
        for slot in 0..size as usize {
            // SAFETY: inside the ring just allocated; every header starts INVALID, as the runtime's.
            unsafe { ring.add(slot * 64).cast::<u16>().write(packet_type::INVALID) };
        }
        let doorbell = handle();
        w.signals.insert(
            doorbell,
            Signal {
                value: -1,
                doorbell: true,
            },
        );
        let id = handle();
        let q = Box::into_raw(Box::new(HsaQueue {
            queue_type,
            features: sys::agent_feature::KERNEL_DISPATCH,
            base_address: ring.cast(),
            doorbell_signal: HsaSignal { handle: doorbell },
            size,
            reserved1: 0,
            id,
        }));
        let key = q as usize;
        let generation = w.generation;
        let worker = std::thread::Builder::new()
            .name(format!("sim-hsa-queue-{id:x}"))
            .spawn(move || queue_worker(key, generation))
            .expect("a thread for a simulated queue");
        w.queues.insert(
            key,
            QueueState {
                id,
                agent: index,
                ring: ring as usize,
                size,
                read: 0,
                write: 0,
                doorbell,
                callback,
                data: data as usize,
                failed: false,
                worker: Some(worker),
            },
        );
        // SAFETY: writable per the API.
        unsafe { *queue = q };
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_queue_destroy(queue: *mut HsaQueue) -> HsaStatus {
    let removed = with(|w| {
        w.enter("hsa_queue_destroy")?;
        if w.initialized == 0 {
            return Err(sys::HSA_STATUS_ERROR_NOT_INITIALIZED);
        }
        let state = w
            .queues
            .remove(&(queue as usize))
            .ok_or(sys::HSA_STATUS_ERROR_INVALID_QUEUE)?;
        w.signals.remove(&state.doorbell);
        Ok(state)
    });
    let mut state = match removed {
        Ok(state) => state,
        Err(status) => return status,
    };
    // The worker sees its queue gone and ends; a kernel body that destroys its own queue is not waited
    // for (the worker touches the ring only while the queue exists).
    if let Some(worker) = state.worker.take() {
        if worker.thread().id() != std::thread::current().id() {
            let _ = worker.join();
        }
    }
    // SAFETY: the ring and the queue were allocated in hsa_queue_create with these layouts, and no
    // thread of the simulation uses them any more.
    unsafe {
        std::alloc::dealloc(state.ring as *mut u8, ring_layout(state.size));
        drop(Box::from_raw(queue));
    }
    HSA_STATUS_SUCCESS
}

fn on_queue<R: Default>(name: &'static str, queue: *const HsaQueue, f: impl FnOnce(&mut QueueState) -> R) -> R {
    peek(name, |w| match w.queues.get_mut(&(queue as usize)) {
        Some(q) => f(q),
        None => {
            w.note(format!("{name} on queue {queue:p}, which does not exist"));
            R::default()
        }
    })
}

unsafe extern "C" fn hsa_queue_load_read_index_scacquire(queue: *const HsaQueue) -> u64 {
    on_queue("hsa_queue_load_read_index_scacquire", queue, |q| q.read)
}

unsafe extern "C" fn hsa_queue_load_write_index_relaxed(queue: *const HsaQueue) -> u64 {
    on_queue("hsa_queue_load_write_index_relaxed", queue, |q| q.write)
}

unsafe extern "C" fn hsa_queue_store_write_index_relaxed(queue: *const HsaQueue, value: u64) {
    on_queue("hsa_queue_store_write_index_relaxed", queue, |q| q.write = value)
}

unsafe extern "C" fn hsa_queue_add_write_index_relaxed(queue: *const HsaQueue, value: u64) -> u64 {
    on_queue("hsa_queue_add_write_index_relaxed", queue, |q| {
        let old = q.write;
        q.write += value;
        old
    })
}

/// What the packet processor does with the packet at the read index.
enum Job {
    /// Nothing to run: the packet (a barrier) is done.
    Done { completion: u64 },
    /// Run a kernel body, then complete.
    Kernel {
        body: Option<KernelBody>,
        args: Vec<u64>,
        completion: u64,
    },
    /// The queue fails with this status.
    Fault(HsaStatus),
}

/// The header of slot `index` of a ring.
///
/// # Safety
/// `ring` holds at least `index + 1` 64-byte packets.
unsafe fn header(ring: usize, index: usize) -> &'static AtomicU16 {
    // SAFETY: per this function's contract; headers are 2-byte aligned and accessed atomically by the
    // plugin and the simulation alike.
    unsafe { AtomicU16::from_ptr((ring + index * 64) as *mut u16) }
}

/// Looks at the packet at the read index of `q` (the world's lock held): `None` while there is none
/// ready (not yet published, doorbell not rung, or a barrier whose dependencies are not met).
fn examine(w: &mut World, key: usize) -> Option<Job> {
    if w.held {
        return None;
    }
    let q = w.queues.get(&key)?;
    if q.failed {
        return None;
    }
    let rung = w.signal_value(q.doorbell).unwrap_or(-1);
    if rung < q.read as i64 {
        return None;
    }
    let slot = (q.read % u64::from(q.size)) as usize;
    // SAFETY: `slot` is inside the ring, which lives as long as the queue.
    let head = unsafe { header(q.ring, slot) }.load(Ordering::Acquire);
    let kind = head & 0xff;
    if kind == packet_type::INVALID {
        return None;
    }
    let at = q.ring + slot * 64;
    let (queue_id, agent) = (q.id, q.agent);
    match kind {
        packet_type::BARRIER_AND | packet_type::BARRIER_OR => {
            // SAFETY: the header's acquire load published the packet's other bytes.
            let packet = unsafe { (at as *const sys::BarrierAndPacket).read() };
            let deps: Vec<u64> = packet.dep_signal.iter().map(|s| s.handle).filter(|&h| h != 0).collect();
            let mut values = Vec::new();
            for d in &deps {
                match w.signal_value(*d) {
                    Some(v) => values.push(v),
                    None => {
                        w.note(format!(
                            "a barrier packet depends on signal {d:#x}, which does not exist"
                        ));
                        return Some(Job::Fault(sys::HSA_STATUS_ERROR_INVALID_PACKET_FORMAT));
                    }
                }
            }
            let met = if kind == packet_type::BARRIER_AND {
                values.iter().all(|&v| v == 0)
            } else {
                values.is_empty() || values.contains(&0)
            };
            met.then_some(Job::Done {
                completion: packet.completion_signal.handle,
            })
        }
        packet_type::KERNEL_DISPATCH => {
            // SAFETY: as above.
            let packet = unsafe { (at as *const KernelDispatchPacket).read() };
            Some(dispatch(w, queue_id, agent, &packet))
        }
        _ => Some(Job::Fault(sys::HSA_STATUS_ERROR_INVALID_PACKET_FORMAT)),
    }
}

/// Checks a kernel dispatch packet as the command processor would and prepares its run.
fn dispatch(w: &mut World, queue: u64, agent: usize, packet: &KernelDispatchPacket) -> Job {
    let dimensions = packet.setup & 3;
    let Some(kernel) = w
        .kernel_objects
        .get(&packet.kernel_object)
        .and_then(|s| w.symbols.get(s))
        .and_then(|s| match &s.kind {
            SymbolKind::Kernel(k) => Some(k.clone()),
            SymbolKind::Variable { .. } => None,
        })
    else {
        w.note(format!(
            "a dispatch of kernel object {:#x}, which no loaded executable holds",
            packet.kernel_object
        ));
        return Job::Fault(sys::HSA_STATUS_ERROR_INVALID_PACKET_FORMAT);
    };
    if dimensions == 0
        || packet.workgroup_size_x == 0
        || packet.workgroup_size_x > 1024
        || packet.grid_size_x == 0
        || packet.group_segment_size as usize > GROUP_MEMORY
    {
        return Job::Fault(sys::HSA_STATUS_ERROR_INVALID_PACKET_FORMAT);
    }
    let words = kernel.kernarg_size as usize / 8;
    let kernargs = packet.kernarg_address as usize;
    if kernel.kernarg_size > 0 {
        let readable = w
            .region(kernargs, kernel.kernarg_size as usize)
            .is_some_and(|r| r.accessible_by(&w.agents, agent));
        if !readable {
            w.note(format!(
                "kernel {} read its arguments at {kernargs:#x}, which its GPU cannot access",
                kernel.name
            ));
            return Job::Fault(sys::HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION);
        }
    }
    // SAFETY: the kernarg range was checked to be simulated memory the agent may read.
    let args: Vec<u64> = (0..words)
        .map(|i| unsafe { (kernargs as *const u64).add(i).read_unaligned() })
        .collect();
    w.launches.push(Launch {
        kernel: kernel.name.clone(),
        grid_size_x: packet.grid_size_x,
        workgroup_size_x: u32::from(packet.workgroup_size_x),
        group_segment_size: packet.group_segment_size,
        private_segment_size: packet.private_segment_size,
        args: args.clone(),
        queue,
        static_group_segment_size: kernel.group,
    });
    Job::Kernel {
        body: w.bodies.get(&kernel.name).cloned(),
        args,
        completion: packet.completion_signal.handle,
    }
}

/// The packet processor of one queue: runs its packets in order, each once published and announced
/// on the doorbell; ends when the queue is destroyed or the world reset.
fn queue_worker(key: usize, generation: u64) {
    loop {
        let job = {
            let mut guard = world();
            loop {
                let Some(w) = guard.as_mut().filter(|w| w.generation == generation) else {
                    return;
                };
                if !w.queues.contains_key(&key) {
                    return;
                }
                if let Some(job) = examine(w, key) {
                    break job;
                }
                guard = wait(guard);
            }
        };
        let (status, completion) = match job {
            Job::Done { completion } => (HSA_STATUS_SUCCESS, completion),
            Job::Kernel { body, args, completion } => {
                let status = match body {
                    Some(body) => body(&args).err().unwrap_or(HSA_STATUS_SUCCESS),
                    None => HSA_STATUS_SUCCESS,
                };
                (status, completion)
            }
            Job::Fault(status) => (status, 0),
        };
        let mut guard = world();
        let Some(w) = guard.as_mut().filter(|w| w.generation == generation) else {
            return;
        };
        let Some(q) = w.queues.get_mut(&key) else {
            return;
        };
        if status != HSA_STATUS_SUCCESS {
            // A queue in error runs nothing more, and the failed packet never completes, as on a GPU:
            // the plugin learns of it from the error callback.
            q.failed = true;
            let (id, callback, data) = (q.id, q.callback, q.data);
            w.faults.push((id, status));
            drop(guard);
            CHANGED.notify_all();
            if let Some(callback) = callback {
                // SAFETY: the callback was registered for this queue with this data pointer.
                unsafe { callback(status, key as *mut HsaQueue, data as *mut c_void) };
            }
            continue;
        }
        let slot = (q.read % u64::from(q.size)) as usize;
        // SAFETY: the queue still exists, so its ring does.
        unsafe { header(q.ring, slot) }.store(packet_type::INVALID, Ordering::Release);
        q.read += 1;
        if completion != 0 {
            match w.signals.get_mut(&completion) {
                Some(s) => s.value -= 1,
                None => w.note(format!("a packet's completion signal {completion:#x} does not exist")),
            }
        }
        drop(guard);
        CHANGED.notify_all();
    }
}

/// Reads an ELF image's loadable segments: (file offset, address, file bytes, memory bytes).
fn segments(bytes: &[u8], header: &elf::Header) -> Option<Vec<(usize, usize, usize, usize)>> {
    let mut found = Vec::new();
    for i in 0..usize::from(header.program_headers) {
        let at = usize::try_from(header.program_headers_offset).ok()? + i * usize::from(header.program_header_size);
        let entry = bytes.get(at..at + 56)?;
        let word = |o: usize| u64::from_le_bytes(entry[o..o + 8].try_into().expect("8 bytes")) as usize;
        if u32::from_le_bytes(entry[..4].try_into().expect("4 bytes")) == 1 {
            found.push((word(8), word(16), word(32), word(40)));
        }
    }
    Some(found)
}

fn u32_at(memory: usize, offset: usize) -> u32 {
    // SAFETY: callers check that `offset + 4` lies inside the loaded image at `memory`.
    unsafe { ((memory + offset) as *const u32).read_unaligned() }
}

/// Loads a code object into `executable` for GPU `agent`, as the ROCm loader does: its loadable
/// segments (or, for an image without any, each symbol's bytes) into device memory, its dynamic
/// relocations applied, its kernel descriptors (`<name>.kd`) and variables made symbols.
fn load(w: &mut World, executable: u64, agent: usize, bytes: &[u8]) -> HsaStatus {
    let Some(header) = elf::header(bytes).filter(|h| h.machine == elf::EM_AMDGPU) else {
        return sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    };
    let Some(image) = elf::Image::parse(bytes) else {
        return sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    };
    let targets: Vec<&str> = w.agents[agent]
        .gpu
        .iter()
        .flat_map(SimAgent::isa_names)
        .map(|name| name.split(':').next().unwrap_or(name))
        .collect();
    if let Some(processor) = TargetId::from_header(&header).map(|t| t.processor) {
        if !targets.contains(&processor.as_str()) {
            return sys::HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS;
        }
    }
    let Some(segments) = segments(bytes, &header) else {
        return sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    };
    let symbols = image.symbols();
    let extent = if segments.is_empty() {
        symbols
            .iter()
            .map(|(_, s)| s.value.saturating_add(s.size))
            .max()
            .unwrap_or(0) as usize
    } else {
        segments.iter().map(|s| s.1.saturating_add(s.3)).max().unwrap_or(0)
    };
    if extent > 1 << 30 {
        return sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    }
    let size = extent.max(1).div_ceil(GRANULE) * GRANULE;
    let layout = Layout::from_size_align(size, GRANULE).expect("an image layout");
    // SAFETY: the layout is non-empty.
    let base = unsafe { std::alloc::alloc_zeroed(layout) } as usize;
    if base == 0 {
        return sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    let place = |at: usize, data: &[u8]| {
        if at.checked_add(data.len()).is_some_and(|end| end <= size) {
            // SAFETY: `at..at + data.len()` lies inside the `size` bytes at `base`.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), (base + at) as *mut u8, data.len()) };
        }
    };
    if segments.is_empty() {
        for (_, symbol) in &symbols {
            if let Some(data) = image.symbol_bytes(symbol) {
                place(symbol.value as usize, data);
            }
        }
    } else {
        for &(offset, address, file_size, _) in &segments {
            if let Some(data) = offset.checked_add(file_size).and_then(|end| bytes.get(offset..end)) {
                place(address, data);
            }
        }
    }
    let address_of = |name: &[u8]| symbols.iter().find(|(n, _)| *n == name).map(|(_, s)| s.value);
    for relocation in image.relocations() {
        let value = match relocation.kind {
            R_AMDGPU_RELATIVE64 => (base as i64 + relocation.addend) as u64,
            R_AMDGPU_ABS64 => match address_of(relocation.symbol) {
                Some(at) => (base as u64 + at).wrapping_add(relocation.addend as u64),
                None => continue,
            },
            _ => continue,
        };
        place(relocation.offset as usize, &value.to_le_bytes());
    }
    let mut handles = Vec::new();
    let mut locals = Vec::new();
    for (name, symbol) in &symbols {
        if symbol.kind != 1 || name.is_empty() {
            continue;
        }
        let name = String::from_utf8_lossy(name).into_owned();
        // ROCr's loader registers no local symbol that is not a kernel (`STT_AMDGPU_HSA_KERNEL`, code
        // object v2), so `hsa_executable_get_symbol_by_name` cannot find a hidden global.
        if symbol.is_local() {
            locals.push((name, (base + symbol.value as usize) as u64, symbol.size as u32));
            continue;
        }
        let at = symbol.value as usize;
        let kind = match name.strip_suffix(".kd") {
            Some(kernel) if symbol.size >= 64 && at + 64 <= size => SymbolKind::Kernel(Kernel {
                name: kernel.to_string(),
                object: (base + at) as u64,
                group: u32_at(base, at),
                private: u32_at(base, at + 4),
                kernarg_size: u32_at(base, at + 8),
                // kernel_code_properties (u16 at 56), bit 11: the kernel uses a dynamic stack.
                dynamic_stack: u32_at(base, at + 56) & (1 << 11) != 0,
            }),
            _ => SymbolKind::Variable {
                address: (base + at) as u64,
                size: symbol.size as u32,
            },
        };
        let h = handle();
        if let SymbolKind::Kernel(k) = &kind {
            w.kernel_objects.insert(k.object, h);
        }
        w.symbols.insert(
            h,
            Symbol {
                executable,
                agent,
                name,
                kind,
            },
        );
        handles.push(h);
    }
    let e = w.executables.get_mut(&executable).expect("checked by the caller");
    e.symbols.extend(handles);
    e.locals.extend(locals);
    e.loaded.push(Loaded { agent, base, size });
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn hsa_code_object_deserialize(
    _serialized: *mut c_void,
    _size: usize,
    _options: *const c_char,
    _code_object: *mut HsaCodeObject,
) -> HsaStatus {
    unused("hsa_code_object_deserialize")
}

unsafe extern "C" fn hsa_code_object_destroy(_code_object: HsaCodeObject) -> HsaStatus {
    unused("hsa_code_object_destroy")
}

unsafe extern "C" fn hsa_code_object_reader_create_from_memory(
    code_object: *const c_void,
    size: usize,
    reader: *mut HsaCodeObjectReader,
) -> HsaStatus {
    call("hsa_code_object_reader_create_from_memory", |w| {
        if reader.is_null() || code_object.is_null() || size == 0 {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // As ROCr's reader, it only keeps the bytes: what they hold is judged when they are loaded.
        // SAFETY: the caller passes `size` readable bytes.
        let bytes = unsafe { std::slice::from_raw_parts(code_object.cast::<u8>(), size) }.to_vec();
        let h = handle();
        w.readers.insert(h, bytes);
        // SAFETY: writable per the API.
        unsafe { *reader = HsaCodeObjectReader { handle: h } };
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_code_object_reader_destroy(reader: HsaCodeObjectReader) -> HsaStatus {
    call("hsa_code_object_reader_destroy", |w| {
        match w.readers.remove(&reader.handle) {
            Some(_) => HSA_STATUS_SUCCESS,
            None => sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER,
        }
    })
}

fn create_executable(w: &mut World, profile: u32, frozen: bool, executable: *mut HsaExecutable) -> HsaStatus {
    if executable.is_null() || profile > sys::profile::FULL {
        return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let h = handle();
    w.executables.insert(
        h,
        Executable {
            frozen,
            loaded: Vec::new(),
            symbols: Vec::new(),
            locals: Vec::new(),
        },
    );
    // SAFETY: writable per the API.
    unsafe { *executable = HsaExecutable { handle: h } };
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn hsa_executable_create(
    _profile: u32,
    _executable_state: u32,
    _options: *const c_char,
    _executable: *mut HsaExecutable,
) -> HsaStatus {
    unused("hsa_executable_create")
}

unsafe extern "C" fn hsa_executable_create_alt(
    profile: u32,
    default_float_rounding_mode: u32,
    _options: *const c_char,
    executable: *mut HsaExecutable,
) -> HsaStatus {
    call("hsa_executable_create_alt", |w| {
        if default_float_rounding_mode > sys::float_rounding_mode::NEAR {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        create_executable(w, profile, false, executable)
    })
}

unsafe extern "C" fn hsa_executable_destroy(executable: HsaExecutable) -> HsaStatus {
    call("hsa_executable_destroy", |w| {
        let Some(e) = w.executables.remove(&executable.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE;
        };
        for h in e.symbols {
            if let Some(Symbol {
                kind: SymbolKind::Kernel(k),
                ..
            }) = w.symbols.remove(&h)
            {
                w.kernel_objects.remove(&k.object);
            }
        }
        for loaded in e.loaded {
            // SAFETY: allocated in `load` with this layout.
            unsafe {
                std::alloc::dealloc(
                    loaded.base as *mut u8,
                    Layout::from_size_align_unchecked(loaded.size, GRANULE),
                )
            };
        }
        HSA_STATUS_SUCCESS
    })
}

/// The checks common to both loading entry points; then `load`.
fn load_checked(w: &mut World, executable: u64, agent: HsaAgent, bytes: Result<Vec<u8>, HsaStatus>) -> HsaStatus {
    match w.executables.get(&executable) {
        None => return sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE,
        Some(e) if e.frozen => return sys::HSA_STATUS_ERROR_FROZEN_EXECUTABLE,
        Some(_) => {}
    }
    let Some(index) = w.agent(agent).filter(|&i| w.agents[i].gpu.is_some()) else {
        return sys::HSA_STATUS_ERROR_INVALID_AGENT;
    };
    match bytes {
        Ok(bytes) if elf::header(&bytes).is_some_and(|h| h.machine == elf::EM_AMDGPU) => {
            load(w, executable, index, &bytes)
        }
        Ok(_) => sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
        Err(status) => status,
    }
}

unsafe extern "C" fn hsa_executable_load_code_object(
    _executable: HsaExecutable,
    _agent: HsaAgent,
    _code_object: HsaCodeObject,
    _options: *const c_char,
) -> HsaStatus {
    unused("hsa_executable_load_code_object")
}

unsafe extern "C" fn hsa_executable_load_agent_code_object(
    executable: HsaExecutable,
    agent: HsaAgent,
    reader: HsaCodeObjectReader,
    _options: *const c_char,
    loaded_code_object: *mut HsaLoadedCodeObject,
) -> HsaStatus {
    call("hsa_executable_load_agent_code_object", |w| {
        let bytes = w
            .readers
            .get(&reader.handle)
            .cloned()
            .ok_or(sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER);
        let status = load_checked(w, executable.handle, agent, bytes);
        if status == HSA_STATUS_SUCCESS && !loaded_code_object.is_null() {
            // SAFETY: writable per the API.
            unsafe { *loaded_code_object = HsaLoadedCodeObject { handle: handle() } };
        }
        status
    })
}

unsafe extern "C" fn hsa_executable_freeze(executable: HsaExecutable, _options: *const c_char) -> HsaStatus {
    call("hsa_executable_freeze", |w| {
        match w.executables.get_mut(&executable.handle) {
            None => sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE,
            Some(e) if e.frozen => sys::HSA_STATUS_ERROR_FROZEN_EXECUTABLE,
            Some(e) => {
                e.frozen = true;
                HSA_STATUS_SUCCESS
            }
        }
    })
}

unsafe extern "C" fn hsa_executable_validate(executable: HsaExecutable, result: *mut u32) -> HsaStatus {
    call("hsa_executable_validate", |w| {
        if !w.executables.contains_key(&executable.handle) {
            return sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE;
        }
        if result.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: writable per the API; 0 means valid.
        unsafe { *result = 0 };
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_executable_get_symbol_by_name(
    executable: HsaExecutable,
    symbol_name: *const c_char,
    agent: *const HsaAgent,
    symbol: *mut HsaExecutableSymbol,
) -> HsaStatus {
    call("hsa_executable_get_symbol_by_name", |w| {
        let Some(e) = w.executables.get(&executable.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE;
        };
        if symbol_name.is_null() || symbol.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: NUL-terminated per the API.
        let name = unsafe { CStr::from_ptr(symbol_name) }.to_string_lossy();
        let wanted = if agent.is_null() {
            None
        } else {
            // SAFETY: readable per the API.
            match w.agent(unsafe { *agent }) {
                Some(i) => Some(i),
                None => return sys::HSA_STATUS_ERROR_INVALID_AGENT,
            }
        };
        let found = e.symbols.iter().copied().find(|h| {
            let s = &w.symbols[h];
            s.name == name && wanted.is_none_or(|a| a == s.agent)
        });
        match found {
            Some(h) => {
                // SAFETY: writable per the API.
                unsafe { *symbol = HsaExecutableSymbol { handle: h } };
                HSA_STATUS_SUCCESS
            }
            None => sys::HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
        }
    })
}

unsafe extern "C" fn hsa_executable_symbol_get_info(
    symbol: HsaExecutableSymbol,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    call("hsa_executable_symbol_get_info", |w| {
        let Some(s) = w.symbols.get(&symbol.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL;
        };
        if value.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let frozen = w.executables.get(&s.executable).is_some_and(|e| e.frozen);
        use symbol_info as i;
        // SAFETY: in every arm, `value` is writable for the attribute's documented type.
        unsafe {
            match (attribute, &s.kind) {
                (i::TYPE, SymbolKind::Kernel(_)) => put(value, symbol_kind::KERNEL),
                (i::TYPE, SymbolKind::Variable { .. }) => put(value, symbol_kind::VARIABLE),
                (i::NAME_LENGTH, _) => put(value, s.name.len() as u32),
                (i::NAME, _) => std::ptr::copy_nonoverlapping(s.name.as_ptr(), value.cast(), s.name.len()),
                (i::MODULE_NAME_LENGTH, _) => put(value, 0u32),
                (i::MODULE_NAME, _) => {}
                // HSA_SYMBOL_LINKAGE_PROGRAM.
                (i::LINKAGE, _) => put(value, 1u32),
                (i::IS_DEFINITION, _) => put(value, true),
                (i::AGENT, _) => put(
                    value,
                    HsaAgent {
                        handle: w.agents[s.agent].handle,
                    },
                ),
                // HSA_VARIABLE_ALLOCATION_AGENT and HSA_VARIABLE_SEGMENT_GLOBAL.
                (i::VARIABLE_ALLOCATION | i::VARIABLE_SEGMENT, SymbolKind::Variable { .. }) => put(value, 0u32),
                (i::VARIABLE_ALIGNMENT, SymbolKind::Variable { .. }) => put(value, 8u32),
                (i::VARIABLE_SIZE, SymbolKind::Variable { size, .. }) => put(value, *size),
                (i::VARIABLE_IS_CONST, SymbolKind::Variable { .. }) => put(value, false),
                // The header: 0 while the executable is not frozen.
                (i::VARIABLE_ADDRESS, SymbolKind::Variable { address, .. }) => {
                    put(value, if frozen { *address } else { 0 })
                }
                (i::KERNEL_OBJECT, SymbolKind::Kernel(k)) => put(value, if frozen { k.object } else { 0 }),
                (i::KERNEL_KERNARG_SEGMENT_SIZE, SymbolKind::Kernel(k)) => put(value, k.kernarg_size),
                (i::KERNEL_KERNARG_SEGMENT_ALIGNMENT, SymbolKind::Kernel(_)) => put(value, 8u32),
                (i::KERNEL_GROUP_SEGMENT_SIZE, SymbolKind::Kernel(k)) => put(value, k.group),
                (i::KERNEL_PRIVATE_SEGMENT_SIZE, SymbolKind::Kernel(k)) => put(value, k.private),
                (i::KERNEL_DYNAMIC_CALLSTACK, SymbolKind::Kernel(k)) => put(value, k.dynamic_stack),
                // HSA_DEFAULT_CALL_CONVENTION... the only one: 0.
                (i::KERNEL_CALL_CONVENTION, SymbolKind::Kernel(_)) => put(value, 0u32),
                _ => return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
            }
        }
        HSA_STATUS_SUCCESS
    })
}

unsafe extern "C" fn hsa_executable_iterate_symbols(
    executable: HsaExecutable,
    callback: ExecutableSymbolCallback,
    data: *mut c_void,
) -> HsaStatus {
    let symbols = listed("hsa_executable_iterate_symbols", |w| {
        let e = w
            .executables
            .get(&executable.handle)
            .ok_or(sys::HSA_STATUS_ERROR_INVALID_EXECUTABLE)?;
        Ok(e.symbols.iter().map(|&handle| HsaExecutableSymbol { handle }).collect())
    });
    // SAFETY: the callback and its data are the caller's, called as the API promises.
    iterate(symbols, |symbol| unsafe { callback(executable, symbol, data) })
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::amdgpu::tests::code_object;
    use std::sync::atomic::AtomicU32;

    fn f() -> &'static Functions {
        &runtime().functions
    }

    fn gpu(name: &'static str) -> SimAgent {
        SimAgent {
            name,
            compute_units: 104,
            wavefront_size: if name.starts_with("gfx1") { 32 } else { 64 },
            generic_isa: None,
        }
    }

    /// A fresh world with `gpus`, initialised; the guard keeps other tests out.
    fn start(gpus: &[SimAgent]) -> MutexGuard<'static, ()> {
        let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        reset(gpus, HSA_STATUS_SUCCESS);
        // SAFETY: no preconditions.
        assert_eq!(unsafe { (f().hsa_init)() }, HSA_STATUS_SUCCESS);
        guard
    }

    unsafe extern "C" fn push_agent(agent: HsaAgent, data: *mut c_void) -> HsaStatus {
        // SAFETY: `data` is the Vec passed by `all_agents`.
        unsafe { &mut *data.cast::<Vec<HsaAgent>>() }.push(agent);
        HSA_STATUS_SUCCESS
    }

    fn all_agents() -> Vec<HsaAgent> {
        let mut agents: Vec<HsaAgent> = Vec::new();
        // SAFETY: the callback pushes into `agents`, alive for the call.
        let status = unsafe { (f().hsa_iterate_agents)(push_agent, (&mut agents as *mut Vec<HsaAgent>).cast()) };
        assert_eq!(status, HSA_STATUS_SUCCESS);
        agents
    }

    fn info<T: Copy + Default>(agent: HsaAgent, attribute: u32) -> T {
        let mut value = T::default();
        // SAFETY: `value` has the attribute's type.
        let status = unsafe { (f().hsa_agent_get_info)(agent, attribute, (&mut value as *mut T).cast()) };
        assert_eq!(status, HSA_STATUS_SUCCESS, "attribute {attribute:#x}");
        value
    }

    fn text(agent: HsaAgent, attribute: u32) -> String {
        let mut bytes = [0u8; 64];
        // SAFETY: a char[64] attribute.
        let status = unsafe { (f().hsa_agent_get_info)(agent, attribute, bytes.as_mut_ptr().cast()) };
        assert_eq!(status, HSA_STATUS_SUCCESS);
        CStr::from_bytes_until_nul(&bytes)
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    unsafe extern "C" fn push_pool(pool: HsaMemoryPool, data: *mut c_void) -> HsaStatus {
        // SAFETY: `data` is the Vec passed by `pools`.
        unsafe { &mut *data.cast::<Vec<HsaMemoryPool>>() }.push(pool);
        HSA_STATUS_SUCCESS
    }

    fn pools(agent: HsaAgent) -> Vec<HsaMemoryPool> {
        let mut pools: Vec<HsaMemoryPool> = Vec::new();
        // SAFETY: the callback pushes into `pools`, alive for the call.
        let status = unsafe {
            (f().hsa_amd_agent_iterate_memory_pools)(agent, push_pool, (&mut pools as *mut Vec<HsaMemoryPool>).cast())
        };
        assert_eq!(status, HSA_STATUS_SUCCESS);
        pools
    }

    fn pool<T: Copy + Default>(pool: HsaMemoryPool, attribute: u32) -> T {
        let mut value = T::default();
        // SAFETY: `value` has the attribute's type.
        let status = unsafe { (f().hsa_amd_memory_pool_get_info)(pool, attribute, (&mut value as *mut T).cast()) };
        assert_eq!(status, HSA_STATUS_SUCCESS);
        value
    }

    fn access(agent: HsaAgent, p: HsaMemoryPool) -> u32 {
        let mut value = 0u32;
        // SAFETY: ACCESS is a u32.
        let status = unsafe {
            (f().hsa_amd_agent_memory_pool_get_info)(agent, p, agent_pool_info::ACCESS, (&mut value as *mut u32).cast())
        };
        assert_eq!(status, HSA_STATUS_SUCCESS);
        value
    }

    fn allocate(p: HsaMemoryPool, size: usize) -> Result<*mut c_void, HsaStatus> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: `ptr` is writable.
        match unsafe { (f().hsa_amd_memory_pool_allocate)(p, size, 0, &mut ptr) } {
            HSA_STATUS_SUCCESS => Ok(ptr),
            status => Err(status),
        }
    }

    fn free(ptr: *mut c_void) -> HsaStatus {
        // SAFETY: the simulation checks the pointer.
        unsafe { (f().hsa_amd_memory_pool_free)(ptr) }
    }

    fn signal(value: i64) -> HsaSignal {
        let mut s = HsaSignal::default();
        assert_eq!(
            // SAFETY: `s` is writable.
            unsafe { (f().hsa_amd_signal_create)(value, 0, std::ptr::null(), 0, &mut s) },
            0
        );
        s
    }

    fn load_signal(s: HsaSignal) -> i64 {
        // SAFETY: no preconditions in the simulation.
        unsafe { (f().hsa_signal_load_scacquire)(s) }
    }

    fn wait_eq(s: HsaSignal, value: i64, timeout_ns: u64) -> i64 {
        // SAFETY: no preconditions in the simulation.
        unsafe { (f().hsa_signal_wait_scacquire)(s, signal_condition::EQ, value, timeout_ns, sys::wait_state::BLOCKED) }
    }

    /// Loads `bytes` for `agent` through a code object reader, as a plugin would; frozen when asked.
    fn load_image(agent: HsaAgent, bytes: &[u8], freeze: bool) -> Result<HsaExecutable, HsaStatus> {
        let mut reader = HsaCodeObjectReader::default();
        let mut exe = HsaExecutable::default();
        // SAFETY: for all calls, pointers to locals, `bytes` alive for the calls.
        unsafe {
            let status =
                (f().hsa_code_object_reader_create_from_memory)(bytes.as_ptr().cast(), bytes.len(), &mut reader);
            if status != 0 {
                return Err(status);
            }
            let status = (f().hsa_executable_create_alt)(
                sys::profile::FULL,
                sys::float_rounding_mode::ZERO,
                c"".as_ptr(),
                &mut exe,
            );
            assert_eq!(status, 0);
            let mut loaded = HsaLoadedCodeObject::default();
            let status = (f().hsa_executable_load_agent_code_object)(exe, agent, reader, c"".as_ptr(), &mut loaded);
            assert_eq!((f().hsa_code_object_reader_destroy)(reader), 0);
            if status != 0 {
                assert_eq!((f().hsa_executable_destroy)(exe), 0);
                return Err(status);
            }
            if freeze {
                assert_eq!((f().hsa_executable_freeze)(exe, c"".as_ptr()), 0);
                let mut result = 1u32;
                assert_eq!((f().hsa_executable_validate)(exe, &mut result), 0);
                assert_eq!(result, 0);
            }
        }
        Ok(exe)
    }

    unsafe extern "C" fn push_symbol(_: HsaExecutable, s: HsaExecutableSymbol, data: *mut c_void) -> HsaStatus {
        // SAFETY: `data` is the Vec passed by `symbol_names`.
        unsafe { &mut *data.cast::<Vec<HsaExecutableSymbol>>() }.push(s);
        HSA_STATUS_SUCCESS
    }

    fn symbol_info<T: Copy + Default>(s: HsaExecutableSymbol, attribute: u32) -> Result<T, HsaStatus> {
        let mut value = T::default();
        // SAFETY: `value` has the attribute's type.
        match unsafe { (f().hsa_executable_symbol_get_info)(s, attribute, (&mut value as *mut T).cast()) } {
            0 => Ok(value),
            status => Err(status),
        }
    }

    fn symbol_name(s: HsaExecutableSymbol) -> String {
        let len: u32 = symbol_info(s, symbol_info::NAME_LENGTH).unwrap();
        let mut name = vec![0u8; len as usize];
        assert_eq!(
            // SAFETY: NAME writes NAME_LENGTH bytes.
            unsafe { (f().hsa_executable_symbol_get_info)(s, symbol_info::NAME, name.as_mut_ptr().cast()) },
            0
        );
        String::from_utf8(name).unwrap()
    }

    fn symbol_names(exe: HsaExecutable) -> Vec<String> {
        let mut symbols: Vec<HsaExecutableSymbol> = Vec::new();
        // SAFETY: the callback pushes into `symbols`, alive for the call.
        let status = unsafe {
            (f().hsa_executable_iterate_symbols)(
                exe,
                push_symbol,
                (&mut symbols as *mut Vec<HsaExecutableSymbol>).cast(),
            )
        };
        assert_eq!(status, 0);
        symbols.into_iter().map(symbol_name).collect()
    }

    fn symbol(exe: HsaExecutable, agent: HsaAgent, name: &str) -> Result<HsaExecutableSymbol, HsaStatus> {
        let name = CString::new(name).unwrap();
        let mut s = HsaExecutableSymbol::default();
        // SAFETY: pointers to locals.
        match unsafe { (f().hsa_executable_get_symbol_by_name)(exe, name.as_ptr(), &agent, &mut s) } {
            0 => Ok(s),
            status => Err(status),
        }
    }

    fn kernel_named(exe: HsaExecutable, suffix: &str) -> String {
        symbol_names(exe)
            .into_iter()
            .find(|n| n.ends_with(suffix))
            .unwrap_or_else(|| panic!("no symbol ending {suffix}"))
    }

    #[test]
    fn init_and_shut_down_balance() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        reset(&[gpu("gfx90a")], HSA_STATUS_SUCCESS);
        let mut agents: Vec<HsaAgent> = Vec::new();
        // SAFETY: for all calls, no preconditions, or pointers to locals.
        unsafe {
            let data = (&mut agents as *mut Vec<HsaAgent>).cast();
            assert_eq!(
                (f().hsa_iterate_agents)(push_agent, data),
                sys::HSA_STATUS_ERROR_NOT_INITIALIZED
            );
            assert_eq!((f().hsa_shut_down)(), sys::HSA_STATUS_ERROR_NOT_INITIALIZED);
            assert_eq!((f().hsa_init)(), 0);
            assert_eq!((f().hsa_init)(), 0);
            assert_eq!((f().hsa_shut_down)(), 0);
            assert_eq!((f().hsa_iterate_agents)(push_agent, data), 0, "still initialised once");
            assert_eq!((f().hsa_shut_down)(), 0);
            assert_eq!((f().hsa_shut_down)(), sys::HSA_STATUS_ERROR_NOT_INITIALIZED);
        }
        assert_eq!(calls("hsa_init"), 2);
        assert_eq!(calls("hsa_shut_down"), 4);

        reset(&[], sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES);
        // SAFETY: as above.
        unsafe {
            assert_eq!((f().hsa_init)(), sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES);
        }
    }

    unsafe extern "C" fn stop_at_second(_: HsaAgent, data: *mut c_void) -> HsaStatus {
        // SAFETY: `data` is a u32 counter.
        let seen = unsafe { &mut *data.cast::<u32>() };
        *seen += 1;
        if *seen == 2 {
            sys::HSA_STATUS_INFO_BREAK
        } else {
            HSA_STATUS_SUCCESS
        }
    }

    unsafe extern "C" fn push_isa(isa: HsaIsa, data: *mut c_void) -> HsaStatus {
        // SAFETY: `data` is a Vec of ISAs.
        unsafe { &mut *data.cast::<Vec<HsaIsa>>() }.push(isa);
        HSA_STATUS_SUCCESS
    }

    #[test]
    fn agents_list_the_cpu_first_then_the_gpus() {
        let _serial = start(&[gpu("gfx90a"), gpu("gfx1030:xnack-")]);
        let agents = all_agents();
        assert_eq!(agents.len(), 3);
        assert_eq!(super::agents(), agents);
        assert_eq!(info::<u32>(agents[0], agent_info::DEVICE), device_type::CPU);
        assert_eq!(info::<u32>(agents[1], agent_info::DEVICE), device_type::GPU);
        assert_eq!(text(agents[1], agent_info::NAME), "gfx90a");
        assert_eq!(text(agents[2], agent_info::NAME), "gfx1030");
        assert_eq!(text(agents[1], agent_info::VENDOR_NAME), "AMD");
        assert_eq!(info::<u32>(agents[1], agent_info::WAVEFRONT_SIZE), 64);
        assert_eq!(info::<u32>(agents[2], agent_info::WAVEFRONT_SIZE), 32);
        assert_eq!(info::<u32>(agents[1], agent_info::COMPUTE_UNIT_COUNT), 104);
        assert_eq!(info::<[u16; 3]>(agents[1], agent_info::WORKGROUP_MAX_DIM), [1024; 3]);
        assert_eq!(info::<u32>(agents[1], agent_info::WORKGROUP_MAX_SIZE), 1024);
        assert_eq!(info::<HsaDim3>(agents[1], agent_info::GRID_MAX_DIM).x, u32::MAX);
        assert_eq!(info::<u32>(agents[1], agent_info::QUEUE_MAX_SIZE), 131072);
        assert_eq!(info::<u32>(agents[1], agent_info::QUEUES_MAX), 128);
        assert_eq!(
            info::<u32>(agents[1], agent_info::FEATURE),
            sys::agent_feature::KERNEL_DISPATCH
        );
        assert_eq!(info::<u32>(agents[0], agent_info::FEATURE), 0);
        assert!(text(agents[1], agent_info::PRODUCT_NAME).contains("gfx90a"));
        assert_eq!(info::<u32>(agents[2], agent_info::NODE), 2);
        let mut value = 0u64;
        // SAFETY: a pointer to a local.
        let status = unsafe { (f().hsa_agent_get_info)(agents[1], 0x7777, (&mut value as *mut u64).cast()) };
        assert_eq!(status, sys::HSA_STATUS_ERROR_INVALID_ARGUMENT);
        // SAFETY: as above.
        let status = unsafe {
            (f().hsa_agent_get_info)(
                HsaAgent { handle: 1 },
                agent_info::NAME,
                (&mut value as *mut u64).cast(),
            )
        };
        assert_eq!(status, sys::HSA_STATUS_ERROR_INVALID_AGENT);

        // A callback's INFO_BREAK stops the iteration and is passed through.
        let mut seen = 0u32;
        // SAFETY: the callback counts into `seen`.
        let status = unsafe { (f().hsa_iterate_agents)(stop_at_second, (&mut seen as *mut u32).cast()) };
        assert_eq!((status, seen), (sys::HSA_STATUS_INFO_BREAK, 2));

        // ISAs: none for the CPU; the GPUs' full names, features kept.
        for (agent, expected) in [
            (agents[1], Some("amdgcn-amd-amdhsa--gfx90a")),
            (agents[2], Some("amdgcn-amd-amdhsa--gfx1030:xnack-")),
            (agents[0], None),
        ] {
            let mut isas: Vec<HsaIsa> = Vec::new();
            // SAFETY: the callback pushes into `isas`.
            let status =
                unsafe { (f().hsa_agent_iterate_isas)(agent, push_isa, (&mut isas as *mut Vec<HsaIsa>).cast()) };
            assert_eq!(status, 0);
            assert_eq!(isas.len(), usize::from(expected.is_some()));
            if let Some(expected) = expected {
                let mut len = 0u32;
                // SAFETY: pointers to locals of the attributes' sizes.
                unsafe {
                    assert_eq!(
                        (f().hsa_isa_get_info_alt)(isas[0], isa_info::NAME_LENGTH, (&mut len as *mut u32).cast()),
                        0
                    );
                    let mut name = vec![0u8; len as usize];
                    assert_eq!(
                        (f().hsa_isa_get_info_alt)(isas[0], isa_info::NAME, name.as_mut_ptr().cast()),
                        0
                    );
                    assert_eq!(String::from_utf8(name).unwrap(), expected);
                }
            }
        }
    }

    #[test]
    fn pools_have_rocms_flags_and_access() {
        let _serial = start(&[gpu("gfx90a")]);
        let agents = all_agents();
        let (cpu, gpu) = (agents[0], agents[1]);
        let host = pools(cpu);
        let device = pools(gpu);
        let flags = |p| pool::<u32>(p, pool_info::GLOBAL_FLAGS);
        assert_eq!(host.len(), 3);
        assert_eq!(flags(host[0]), pool_global_flag::FINE_GRAINED);
        assert_eq!(
            flags(host[1]),
            pool_global_flag::FINE_GRAINED | pool_global_flag::KERNARG_INIT
        );
        assert_eq!(flags(host[2]), pool_global_flag::COARSE_GRAINED);
        assert_eq!(device.len(), 2);
        assert_eq!(flags(device[0]), pool_global_flag::COARSE_GRAINED);
        for p in host.iter().chain(&device[..1]) {
            assert_eq!(pool::<u32>(*p, pool_info::SEGMENT), segment::GLOBAL);
            assert!(pool::<bool>(*p, pool_info::RUNTIME_ALLOC_ALLOWED));
            assert_eq!(pool::<usize>(*p, pool_info::RUNTIME_ALLOC_GRANULE), GRANULE);
            assert_eq!(pool::<usize>(*p, pool_info::RUNTIME_ALLOC_ALIGNMENT), GRANULE);
            assert!(!pool::<bool>(*p, pool_info::ACCESSIBLE_BY_ALL));
        }
        assert_eq!(pool::<u32>(device[1], pool_info::SEGMENT), segment::GROUP);
        assert!(!pool::<bool>(device[1], pool_info::RUNTIME_ALLOC_ALLOWED));
        assert_eq!(pool::<usize>(device[0], pool_info::SIZE), DEVICE_MEMORY);
        assert_eq!(access(cpu, host[0]), pool_access::ALLOWED_BY_DEFAULT);
        assert_eq!(access(gpu, host[0]), pool_access::DISALLOWED_BY_DEFAULT);
        assert_eq!(access(gpu, device[0]), pool_access::ALLOWED_BY_DEFAULT);
        assert_eq!(access(cpu, device[0]), pool_access::DISALLOWED_BY_DEFAULT);
        assert_eq!(access(cpu, device[1]), pool_access::NEVER_ALLOWED);
        let mut value = 0u32;
        // SAFETY: a pointer to a local.
        unsafe {
            assert_eq!(
                (f().hsa_amd_memory_pool_get_info)(host[0], 99, (&mut value as *mut u32).cast()),
                sys::HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                (f().hsa_amd_memory_pool_get_info)(HsaMemoryPool { handle: 3 }, 0, (&mut value as *mut u32).cast()),
                sys::HSA_STATUS_ERROR_INVALID_MEMORY_POOL
            );
        }
    }

    #[test]
    fn memory_is_tracked_opened_to_agents_and_limited() {
        let _serial = start(&[gpu("gfx90a"), gpu("gfx90a")]);
        let agents = all_agents();
        let coarse = pools(agents[1])[0];
        let host = pools(agents[0])[0];
        let d = allocate(coarse, 100).unwrap();
        assert_eq!(d as usize % GRANULE, 0);
        let h = allocate(host, 64).unwrap();
        assert_eq!(live().memory, 2);
        assert_eq!(allocate(coarse, 0), Err(sys::HSA_STATUS_ERROR_INVALID_ARGUMENT));
        assert_eq!(
            allocate(pools(agents[1])[1], 64),
            Err(sys::HSA_STATUS_ERROR_INVALID_ALLOCATION)
        );

        // Host memory the GPUs touch is opened to them.
        assert_eq!(allowed_agents(h), Some(vec![]));
        let gpus = [agents[1], agents[2]];
        // SAFETY: `gpus` holds two agents.
        unsafe {
            assert_eq!(
                (f().hsa_amd_agents_allow_access)(2, gpus.as_ptr(), std::ptr::null(), h),
                0
            );
            assert_eq!(
                (f().hsa_amd_agents_allow_access)(2, gpus.as_ptr(), std::ptr::null(), h.cast::<u8>().add(8).cast()),
                sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
                "only a block's start"
            );
        }
        assert_eq!(allowed_agents(h), Some(gpus.to_vec()));

        // Locked host memory: the agent pointer is the host pointer; locks nest.
        let mut user = vec![0u8; 256];
        let mut agent_ptr = std::ptr::null_mut();
        // SAFETY: `user` is 256 bytes, alive until unlocked.
        unsafe {
            let p = user.as_mut_ptr().cast();
            assert_eq!(
                (f().hsa_amd_memory_lock)(p, 256, std::ptr::null_mut(), 0, &mut agent_ptr),
                0
            );
            assert_eq!(agent_ptr, p);
            assert_eq!(
                (f().hsa_amd_memory_lock)(p, 256, std::ptr::null_mut(), 0, &mut agent_ptr),
                0
            );
            assert_eq!(
                (f().hsa_amd_memory_lock)(p, 0, std::ptr::null_mut(), 0, &mut agent_ptr),
                sys::HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(live().locked, 1);
            assert_eq!((f().hsa_amd_memory_unlock)(p), 0);
            assert_eq!(live().locked, 1);
            assert_eq!((f().hsa_amd_memory_unlock)(p), 0);
            assert_eq!(live().locked, 0);
        }
        assert!(misuse().is_empty(), "{:?}", misuse());

        assert_eq!(free(d), 0);
        assert_eq!(free(d), sys::HSA_STATUS_ERROR_INVALID_ARGUMENT);
        assert_eq!(free(h), 0);

        // Out of memory, per device.
        set_capacity(Some(3 * GRANULE));
        let a = allocate(coarse, 2 * GRANULE).unwrap();
        assert_eq!(
            allocate(coarse, 2 * GRANULE),
            Err(sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES)
        );
        let other = allocate(pools(agents[2])[0], 2 * GRANULE).unwrap();
        assert_eq!(pool::<usize>(coarse, pool_info::SIZE), 3 * GRANULE);
        assert_eq!(
            allocate(coarse, 4 * GRANULE),
            Err(sys::HSA_STATUS_ERROR_INVALID_ALLOCATION)
        );
        assert_eq!(free(a), 0);
        assert_eq!(free(other), 0);
        assert_eq!(live(), Live::default());
    }

    #[test]
    fn signals_block_waiters_until_the_condition_holds() {
        let _serial = start(&[gpu("gfx90a")]);
        let s = signal(1);
        assert_eq!(live().signals, 1);
        assert_eq!(wait_eq(s, 0, 5_000_000), 1, "times out with the value");
        // SAFETY: for all calls, `s` is a live signal.
        unsafe {
            let ws = sys::wait_state::ACTIVE;
            assert_eq!(
                (f().hsa_signal_wait_scacquire)(s, signal_condition::NE, 0, u64::MAX, ws),
                1
            );
            assert_eq!(
                (f().hsa_signal_wait_scacquire)(s, signal_condition::GTE, 1, u64::MAX, ws),
                1
            );
            assert_eq!(
                (f().hsa_signal_wait_scacquire)(s, signal_condition::LT, 5, u64::MAX, ws),
                1
            );
            (f().hsa_signal_store_relaxed)(s, 3);
            (f().hsa_signal_subtract_screlease)(s, 1);
            assert_eq!((f().hsa_signal_load_relaxed)(s), 2);
        }
        let storer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            // SAFETY: `s` is live until the wait below returns.
            unsafe { (f().hsa_signal_store_screlease)(s, 0) };
        });
        assert_eq!(wait_eq(s, 0, u64::MAX), 0);
        storer.join().unwrap();
        // SAFETY: as above.
        unsafe {
            assert_eq!((f().hsa_signal_destroy)(s), 0);
            assert_eq!((f().hsa_signal_destroy)(s), sys::HSA_STATUS_ERROR_INVALID_SIGNAL);
        }
        assert_eq!(load_signal(s), 0);
        assert_eq!(misuse().len(), 1, "a load of a destroyed signal is noted");
        assert_eq!(live().signals, 0);
    }

    static HANDLED: AtomicU32 = AtomicU32::new(0);

    unsafe extern "C" fn count_handler(value: HsaSignalValue, arg: *mut c_void) -> bool {
        assert_eq!(value, 0);
        HANDLED.fetch_add(arg as u32, Ordering::SeqCst);
        false
    }

    #[test]
    fn async_handlers_run_when_the_condition_holds() {
        let _serial = start(&[gpu("gfx90a")]);
        HANDLED.store(0, Ordering::SeqCst);
        let s = signal(1);
        // SAFETY: `s` is live; the handler takes its argument as a number.
        unsafe {
            let status =
                (f().hsa_amd_signal_async_handler)(s, signal_condition::EQ, 0, count_handler, 5 as *mut c_void);
            assert_eq!(status, 0);
        }
        std::thread::sleep(Duration::from_millis(10));
        assert_eq!(HANDLED.load(Ordering::SeqCst), 0);
        // SAFETY: as above.
        unsafe { (f().hsa_signal_store_screlease)(s, 0) };
        let begun = Instant::now();
        while HANDLED.load(Ordering::SeqCst) == 0 && begun.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(HANDLED.load(Ordering::SeqCst), 5);
        // SAFETY: as above.
        assert_eq!(unsafe { (f().hsa_signal_destroy)(s) }, 0);
    }

    /// Writes `packet` into slot `index` of `queue`, its header last with a release store, as a plugin.
    fn publish<P: Copy>(queue: *mut HsaQueue, index: u64, packet: P, header: u16, setup: u16) {
        // SAFETY: `queue` is live, `index` a slot the caller reserved; the packet is 64 bytes.
        unsafe {
            let q = &*queue;
            let slot = q
                .base_address
                .cast::<u8>()
                .add((index % u64::from(q.size)) as usize * 64);
            slot.cast::<P>().write(P::clone(&packet));
            slot.cast::<u16>().write(packet_type::INVALID);
            std::sync::atomic::AtomicU32::from_ptr(slot.cast::<u32>())
                .store(u32::from(header) | (u32::from(setup) << 16), Ordering::Release);
        }
    }

    fn barrier(deps: &[HsaSignal], completion: HsaSignal) -> sys::BarrierAndPacket {
        let mut dep_signal = [HsaSignal::default(); 5];
        dep_signal[..deps.len()].copy_from_slice(deps);
        sys::BarrierAndPacket {
            header: 0,
            reserved0: 0,
            reserved1: 0,
            dep_signal,
            reserved2: 0,
            completion_signal: completion,
        }
    }

    fn kernel_packet(object: u64, kernargs: *mut c_void, completion: HsaSignal) -> KernelDispatchPacket {
        KernelDispatchPacket {
            header: 0,
            setup: 0,
            workgroup_size_x: 64,
            workgroup_size_y: 1,
            workgroup_size_z: 1,
            reserved0: 0,
            grid_size_x: 256,
            grid_size_y: 1,
            grid_size_z: 1,
            private_segment_size: 16,
            group_segment_size: 512,
            kernel_object: object,
            kernarg_address: kernargs,
            reserved2: 0,
            completion_signal: completion,
        }
    }

    const DISPATCH: u16 = 0x1402;
    const BARRIER_AND: u16 = 0x1403;

    static QUEUE_ERROR: AtomicU32 = AtomicU32::new(0);

    unsafe extern "C" fn on_queue_error(status: HsaStatus, _queue: *mut HsaQueue, data: *mut c_void) {
        assert_eq!(data as usize, 0x77);
        QUEUE_ERROR.store(status, Ordering::SeqCst);
    }

    fn create_queue(agent: HsaAgent) -> *mut HsaQueue {
        let mut queue = std::ptr::null_mut();
        // SAFETY: `queue` is writable.
        let status = unsafe {
            (f().hsa_queue_create)(
                agent,
                64,
                sys::queue_type::MULTI,
                Some(on_queue_error),
                0x77 as *mut c_void,
                u32::MAX,
                u32::MAX,
                &mut queue,
            )
        };
        assert_eq!(status, 0);
        queue
    }

    /// A loaded gfx90a image, its main_l15 kernel's name and kernel object, and kernarg memory (from
    /// the CPU's kernarg pool, opened to the GPU when `open`) holding `args`.
    fn kernel_setup(agents: &[HsaAgent], args: &[u64], open: bool) -> (HsaExecutable, String, u64, *mut c_void) {
        let exe = load_image(agents[1], &code_object("gfx90a"), true).unwrap();
        let kd = kernel_named(exe, "_l15.kd");
        let object: u64 = symbol_info(symbol(exe, agents[1], &kd).unwrap(), symbol_info::KERNEL_OBJECT).unwrap();
        let kernargs = allocate(pools(agents[0])[1], 64 + args.len() * 8).unwrap();
        // SAFETY: the block holds the arguments.
        unsafe { std::ptr::copy_nonoverlapping(args.as_ptr(), kernargs.cast::<u64>(), args.len()) };
        if open {
            // SAFETY: one agent.
            let status = unsafe { (f().hsa_amd_agents_allow_access)(1, &agents[1], std::ptr::null(), kernargs) };
            assert_eq!(status, 0);
        }
        (exe, kd.strip_suffix(".kd").unwrap().to_string(), object, kernargs)
    }

    #[test]
    fn a_queue_runs_a_barrier_then_a_kernel_once_the_doorbell_rings() {
        let _serial = start(&[gpu("gfx90a")]);
        let agents = all_agents();
        let (exe, name, object, kernargs) = kernel_setup(&agents, &[0xabcd, 0x1234], true);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        register_kernel(
            &name,
            Arc::new(move |args: &[u64]| {
                record.lock().unwrap().push(args.to_vec());
                Ok(())
            }),
        );
        let queue = create_queue(agents[1]);
        // SAFETY: `queue` is live.
        let q = unsafe { &*queue };
        assert_eq!(
            (q.size, q.queue_type, q.base_address as usize % 64),
            (64, sys::queue_type::MULTI, 0)
        );
        assert_eq!(live().signals, 0, "the doorbell is not counted");
        let (dep, done) = (signal(1), signal(1));
        // SAFETY: for the index calls, `queue` is live.
        let first = unsafe { (f().hsa_queue_add_write_index_relaxed)(queue, 2) };
        assert_eq!(first, 0);
        publish(queue, 0, barrier(&[dep], HsaSignal::default()), BARRIER_AND, 0);
        publish(queue, 1, kernel_packet(object, kernargs, done), DISPATCH, 1);
        assert_eq!(wait_eq(done, 0, 10_000_000), 1, "no doorbell yet");
        // SAFETY: the doorbell is the queue's signal.
        unsafe { (f().hsa_signal_store_relaxed)(q.doorbell_signal, 1) };
        assert_eq!(wait_eq(done, 0, 10_000_000), 1, "the barrier waits for its dependency");
        assert!(seen.lock().unwrap().is_empty());
        // SAFETY: `dep` is live.
        unsafe { (f().hsa_signal_store_screlease)(dep, 0) };
        assert_eq!(wait_eq(done, 0, u64::MAX), 0);
        // The l15 kernel has one explicit argument (kernarg_size 8).
        assert_eq!(*seen.lock().unwrap(), vec![vec![0xabcd]]);
        let launches = launches();
        assert_eq!(launches.len(), 1);
        assert_eq!(
            (
                launches[0].kernel.as_str(),
                launches[0].grid_size_x,
                launches[0].workgroup_size_x
            ),
            (name.as_str(), 256, 64)
        );
        assert_eq!(
            (launches[0].group_segment_size, launches[0].private_segment_size),
            (512, 16)
        );
        assert_eq!(launches[0].queue, q.id);
        // SAFETY: `queue` is live; slot headers are read as the plugin would.
        unsafe {
            assert_eq!((f().hsa_queue_load_read_index_scacquire)(queue), 2);
            assert_eq!((f().hsa_queue_load_write_index_relaxed)(queue), 2);
            assert_eq!(*q.base_address.cast::<u16>(), packet_type::INVALID);
            assert_eq!(*q.base_address.cast::<u8>().add(64).cast::<u16>(), packet_type::INVALID);
            assert_eq!((f().hsa_queue_destroy)(queue), 0);
            assert_eq!((f().hsa_signal_destroy)(dep), 0);
            assert_eq!((f().hsa_signal_destroy)(done), 0);
            assert_eq!((f().hsa_executable_destroy)(exe), 0);
        }
        assert_eq!(free(kernargs), 0);
        assert_eq!(live(), Live::default());
        assert!(misuse().is_empty(), "{:?}", misuse());
        clear_kernels();
    }

    #[test]
    fn a_faulting_kernel_or_unreadable_kernargs_reach_the_error_callback() {
        let _serial = start(&[gpu("gfx90a")]);
        let agents = all_agents();
        QUEUE_ERROR.store(0, Ordering::SeqCst);
        let (exe, name, object, kernargs) = kernel_setup(&agents, &[1], true);
        register_kernel(
            &name,
            Arc::new(|_: &[u64]| Err(sys::HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION)),
        );
        let queue = create_queue(agents[1]);
        let done = signal(1);
        publish(queue, 0, kernel_packet(object, kernargs, done), DISPATCH, 1);
        // SAFETY: `queue` is live.
        unsafe { (f().hsa_signal_store_relaxed)((*queue).doorbell_signal, 0) };
        let begun = Instant::now();
        while QUEUE_ERROR.load(Ordering::SeqCst) == 0 && begun.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            QUEUE_ERROR.load(Ordering::SeqCst),
            sys::HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION
        );
        assert_eq!(load_signal(done), 1, "a failed packet never completes");
        // SAFETY: `queue` is live.
        unsafe { assert_eq!((f().hsa_queue_destroy)(queue), 0) };

        // Kernel arguments in host memory never opened to the GPU fault the queue.
        QUEUE_ERROR.store(0, Ordering::SeqCst);
        clear_kernels();
        let closed = allocate(pools(agents[0])[1], 64).unwrap();
        let queue = create_queue(agents[1]);
        publish(queue, 0, kernel_packet(object, closed, done), DISPATCH, 1);
        // SAFETY: `queue` is live.
        unsafe { (f().hsa_signal_store_relaxed)((*queue).doorbell_signal, 0) };
        let begun = Instant::now();
        while QUEUE_ERROR.load(Ordering::SeqCst) == 0 && begun.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            QUEUE_ERROR.load(Ordering::SeqCst),
            sys::HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION
        );
        assert_eq!(misuse().len(), 1, "{:?}", misuse());
        assert_eq!(with(|w| w.faults.len()), 2);
        // SAFETY: live objects.
        unsafe {
            assert_eq!((f().hsa_queue_destroy)(queue), 0);
            assert_eq!((f().hsa_executable_destroy)(exe), 0);
        }
        // A queue of a CPU agent, or of a size that is not a power of two, is refused.
        let mut q = std::ptr::null_mut();
        // SAFETY: `q` is writable.
        unsafe {
            let create = f().hsa_queue_create;
            let none = std::ptr::null_mut();
            assert_eq!(
                create(agents[0], 64, 0, None, none, 0, 0, &mut q),
                sys::HSA_STATUS_ERROR_INVALID_AGENT
            );
            assert_eq!(
                create(agents[1], 100, 0, None, none, 0, 0, &mut q),
                sys::HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                create(agents[1], 1 << 18, 0, None, none, 0, 0, &mut q),
                sys::HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
        }
    }

    #[test]
    fn async_copies_wait_for_their_dependencies_and_complete_in_order() {
        let _serial = start(&[gpu("gfx90a")]);
        let agents = all_agents();
        let gpu = agents[1];
        let device = allocate(pools(gpu)[0], 64).unwrap();
        let staging = allocate(pools(agents[0])[0], 64).unwrap();
        // SAFETY: a 64-byte block.
        unsafe { std::ptr::copy_nonoverlapping([7u8; 64].as_ptr(), staging.cast::<u8>(), 64) };
        let mut user = vec![0u8; 64];
        let (dep, first, second) = (signal(1), signal(1), signal(1));
        let copy = f().hsa_amd_memory_async_copy;
        // SAFETY: for all calls, simulated or locked memory of 64 bytes, live signals.
        unsafe {
            // Pageable memory is refused until locked.
            let status = copy(
                user.as_mut_ptr().cast(),
                gpu,
                device,
                gpu,
                64,
                0,
                std::ptr::null(),
                second,
            );
            assert_eq!(status, sys::HSA_STATUS_ERROR_INVALID_ARGUMENT);
            let mut agent_ptr = std::ptr::null_mut();
            let locked = f().hsa_amd_memory_lock;
            assert_eq!(
                locked(user.as_mut_ptr().cast(), 64, std::ptr::null_mut(), 0, &mut agent_ptr),
                0
            );
            assert_eq!(copy(device, gpu, staging, gpu, 64, 1, &dep, first), 0);
            assert_eq!(copy(agent_ptr, gpu, device, gpu, 64, 1, &first, second), 0);
            assert_eq!(
                copy(device, gpu, staging, gpu, 64, 1, &HsaSignal { handle: 8 }, first),
                sys::HSA_STATUS_ERROR_INVALID_SIGNAL
            );
        }
        assert_eq!(wait_eq(second, 0, 10_000_000), 1, "both wait for the first dependency");
        assert_eq!(load_signal(first), 1);
        // SAFETY: `dep` is live.
        unsafe { (f().hsa_signal_store_screlease)(dep, 0) };
        assert_eq!(wait_eq(second, 0, u64::MAX), 0);
        assert_eq!(load_signal(first), 0);
        assert_eq!(user, vec![7u8; 64]);
        let kinds: Vec<CopyKind> = copies().iter().map(|c| c.kind).collect();
        assert_eq!(kinds, vec![CopyKind::HostToDevice, CopyKind::DeviceToHost]);
        assert_eq!(copies()[1].deps, vec![first.handle]);
        // SAFETY: live objects.
        unsafe {
            assert_eq!((f().hsa_amd_memory_unlock)(user.as_mut_ptr().cast()), 0);
            for s in [dep, first, second] {
                assert_eq!((f().hsa_signal_destroy)(s), 0);
            }
        }
        assert_eq!((free(device), free(staging)), (0, 0));
        assert_eq!(live(), Live::default());
    }

    #[test]
    fn a_real_gfx90a_code_object_loads_with_its_kernels_and_globals() {
        let _serial = start(&[gpu("gfx90a")]);
        let agents = all_agents();
        let gfx90a = agents[1];
        let bytes = code_object("gfx90a");
        let exe = load_image(gfx90a, &bytes, false).unwrap();
        let names = symbol_names(exe);
        for wanted in ["counter", "__omp_rtl_device_environment", "__llvm_libc_rpc_client"] {
            assert!(names.iter().any(|n| n == wanted), "{wanted} in {names:?}");
        }
        let kernels: Vec<&String> = names.iter().filter(|n| n.ends_with(".kd")).collect();
        assert_eq!(kernels.len(), 2, "{names:?}");
        assert!(kernels.iter().any(|n| n.ends_with("_l15.kd")) && kernels.iter().any(|n| n.ends_with("_l20.kd")));
        assert!(names.iter().any(|n| n.ends_with("_l15_exec_mode")));

        // Addresses are 0 until the executable is frozen, as the header says.
        let counter = symbol(exe, gfx90a, "counter").unwrap();
        assert_eq!(symbol_info::<u64>(counter, symbol_info::VARIABLE_ADDRESS), Ok(0));
        // SAFETY: `exe` is live.
        unsafe { assert_eq!((f().hsa_executable_freeze)(exe, c"".as_ptr()), 0) };
        // SAFETY: as above.
        unsafe {
            assert_eq!(
                (f().hsa_executable_freeze)(exe, c"".as_ptr()),
                sys::HSA_STATUS_ERROR_FROZEN_EXECUTABLE
            );
        }
        assert_eq!(
            symbol_info::<u32>(counter, symbol_info::TYPE),
            Ok(symbol_kind::VARIABLE)
        );
        assert_eq!(symbol_info::<u32>(counter, symbol_info::VARIABLE_SIZE), Ok(4));
        let address: u64 = symbol_info(counter, symbol_info::VARIABLE_ADDRESS).unwrap();
        // SAFETY: a variable's address is simulated device memory, initialised from the image.
        assert_eq!(unsafe { *(address as *const i32) }, 5);
        let environment = symbol(exe, gfx90a, "__omp_rtl_device_environment").unwrap();
        assert_eq!(symbol_info::<u32>(environment, symbol_info::VARIABLE_SIZE), Ok(16));
        // The image's one dynamic relocation points the RPC client at its object.
        let client: u64 = symbol_info(
            symbol(exe, gfx90a, "__llvm_libc_rpc_client").unwrap(),
            symbol_info::VARIABLE_ADDRESS,
        )
        .unwrap();
        // The object is hidden, so local in the code object: ROCr registers no local symbol that is not
        // a kernel, and neither does this runtime.
        assert_eq!(
            symbol(exe, gfx90a, "omprpc_client_object"),
            Err(sys::HSA_STATUS_ERROR_INVALID_SYMBOL_NAME)
        );
        let image = elf::Image::parse(&bytes).unwrap();
        let (pointer, object) = (
            image.symbol(b"__llvm_libc_rpc_client").unwrap(),
            image.symbol(b"omprpc_client_object").unwrap(),
        );
        assert!(object.is_local());
        assert_eq!(
            // SAFETY: as above.
            unsafe { *(client as *const u64) },
            client - pointer.value + object.value,
            "relocated by the image's load displacement"
        );
        assert_eq!(
            variable("omprpc_client_object").map(|(a, _)| a as u64),
            Some(client - pointer.value + object.value)
        );

        // Kernels: their descriptors' fields.
        let image = elf::Image::parse(&bytes).unwrap();
        for kd in kernels {
            let s = symbol(exe, gfx90a, kd).unwrap();
            assert_eq!(symbol_info::<u32>(s, symbol_info::TYPE), Ok(symbol_kind::KERNEL));
            let object: u64 = symbol_info(s, symbol_info::KERNEL_OBJECT).unwrap();
            let descriptor = image.symbol_bytes(&image.symbol(kd.as_bytes()).unwrap()).unwrap();
            assert_eq!(
                // SAFETY: the kernel object is the loaded 64-byte descriptor.
                unsafe { std::slice::from_raw_parts(object as *const u8, 64) },
                descriptor
            );
            let field = |at: usize| u32::from_le_bytes(descriptor[at..at + 4].try_into().unwrap());
            assert_eq!(
                symbol_info::<u32>(s, symbol_info::KERNEL_GROUP_SEGMENT_SIZE),
                Ok(field(0))
            );
            assert_eq!(
                symbol_info::<u32>(s, symbol_info::KERNEL_PRIVATE_SEGMENT_SIZE),
                Ok(field(4))
            );
            assert_eq!(
                symbol_info::<u32>(s, symbol_info::KERNEL_KERNARG_SEGMENT_SIZE),
                Ok(field(8))
            );
            assert_eq!(
                symbol_info::<u32>(s, symbol_info::VARIABLE_SIZE),
                Err(sys::HSA_STATUS_ERROR_INVALID_ARGUMENT)
            );
            assert_eq!(symbol_name(s), *kd);
        }
        assert!(
            symbol_info::<u32>(
                symbol(exe, gfx90a, &kernel_named(exe, "_l15.kd")).unwrap(),
                symbol_info::KERNEL_KERNARG_SEGMENT_SIZE
            )
            .unwrap()
                >= 8
        );
        let l15 = kernel_named(exe, "_l15.kd");
        assert_eq!(
            symbol(exe, gfx90a, l15.strip_suffix(".kd").unwrap()),
            Err(sys::HSA_STATUS_ERROR_INVALID_SYMBOL_NAME),
            "kernels are found by their descriptors' names"
        );
        assert_eq!(
            symbol(exe, gfx90a, "missing"),
            Err(sys::HSA_STATUS_ERROR_INVALID_SYMBOL_NAME)
        );
        assert_eq!(live().executables, 1);
        assert_eq!(live().readers, 0);
        // SAFETY: `exe` is live.
        unsafe { assert_eq!((f().hsa_executable_destroy)(exe), 0) };
        assert_eq!(live(), Live::default());
    }

    #[test]
    fn code_objects_are_checked_and_synthetic_ones_load_symbol_by_symbol() {
        let _serial = start(&[gpu("gfx90a"), gpu("gfx906"), gpu("gfx1030")]);
        let agents = all_agents();
        assert_eq!(
            load_image(agents[1], &code_object("gfx906"), true),
            Err(sys::HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS)
        );
        assert_eq!(
            load_image(agents[0], &code_object("gfx90a"), true),
            Err(sys::HSA_STATUS_ERROR_INVALID_AGENT)
        );
        assert_eq!(
            load_image(
                agents[1],
                b"not an ELF file at all, not at all, no; really not an ELF file",
                true
            ),
            Err(sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT)
        );
        let x86 = elf::tests::sample(elf::EM_X86_64, &[("g", 0, &[1, 2, 3, 4])]);
        assert_eq!(
            load_image(agents[1], &x86, true),
            Err(sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT)
        );
        for (agent, arch) in [(agents[2], "gfx906"), (agents[3], "gfx1030")] {
            let exe = load_image(agent, &code_object(arch), true).unwrap();
            assert!(symbol(exe, agent, &kernel_named(exe, "_l20.kd")).is_ok());
            // SAFETY: `exe` is live.
            unsafe { assert_eq!((f().hsa_executable_destroy)(exe), 0) };
        }

        // A synthetic image without segments: each symbol's bytes are loaded.
        let mut kd = [0u8; 64];
        kd[..12].copy_from_slice(&[16, 0, 0, 0, 32, 0, 0, 0, 24, 0, 0, 0]);
        let synthetic = elf::tests::sample(elf::EM_AMDGPU, &[("k.kd", 0, &kd), ("g", 0, &[1, 2, 3, 4])]);
        let exe = load_image(agents[1], &synthetic, true).unwrap();
        let k = symbol(exe, agents[1], "k.kd").unwrap();
        assert_eq!(symbol_info::<u32>(k, symbol_info::KERNEL_GROUP_SEGMENT_SIZE), Ok(16));
        assert_eq!(symbol_info::<u32>(k, symbol_info::KERNEL_PRIVATE_SEGMENT_SIZE), Ok(32));
        assert_eq!(symbol_info::<u32>(k, symbol_info::KERNEL_KERNARG_SEGMENT_SIZE), Ok(24));
        let g: u64 = symbol_info(symbol(exe, agents[1], "g").unwrap(), symbol_info::VARIABLE_ADDRESS).unwrap();
        // SAFETY: the variable's 4 loaded bytes.
        assert_eq!(unsafe { *(g as *const [u8; 4]) }, [1, 2, 3, 4]);
        // SAFETY: `exe` is live.
        unsafe { assert_eq!((f().hsa_executable_destroy)(exe), 0) };
        assert_eq!(live(), Live::default());
    }

    #[test]
    fn fail_next_fails_one_call_and_calls_are_logged() {
        let _serial = start(&[gpu("gfx90a")]);
        let agents = all_agents();
        let coarse = pools(agents[1])[0];
        fail_next("hsa_amd_memory_pool_allocate", sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES);
        assert_eq!(allocate(coarse, 64), Err(sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES));
        let ptr = allocate(coarse, 64).unwrap();
        assert_eq!(calls("hsa_amd_memory_pool_allocate"), 2);
        fail_next("hsa_init", sys::HSA_STATUS_ERROR);
        // SAFETY: no preconditions.
        unsafe {
            assert_eq!((f().hsa_init)(), sys::HSA_STATUS_ERROR);
            assert_eq!((f().hsa_init)(), 0);
            assert_eq!((f().hsa_shut_down)(), 0);
        }
        assert_eq!(free(ptr), 0);
        let log = with(|w| w.record.log.clone());
        assert_eq!(log[0], "hsa_init");
        assert!(log.ends_with(&["hsa_init", "hsa_init", "hsa_shut_down", "hsa_amd_memory_pool_free"]));
        let refused = std::panic::catch_unwind(|| fail_next("hsa_signal_load_relaxed", sys::HSA_STATUS_ERROR));
        assert!(refused.is_err(), "a call without a status cannot fail");
    }

    static FAULTS: AtomicU64 = AtomicU64::new(0);

    unsafe extern "C" fn on_event(event: *const AmdEvent, data: *mut c_void) -> HsaStatus {
        // SAFETY: the runtime passes a valid event.
        let event = unsafe { &*event };
        assert_eq!(
            (event.event_type, data as usize),
            (sys::event_type::GPU_MEMORY_FAULT, 9)
        );
        FAULTS.store(event.memory_fault.virtual_address, Ordering::SeqCst);
        HSA_STATUS_SUCCESS
    }

    #[test]
    fn memory_fault_events_reach_the_registered_handler_and_reset_stops_queues() {
        let _serial = start(&[gpu("gfx90a")]);
        let agents = all_agents();
        assert_eq!(
            // SAFETY: the handler ignores nothing it is given.
            unsafe { (f().hsa_amd_register_system_event_handler)(on_event, 9 as *mut c_void) },
            0
        );
        assert_eq!(
            fire_memory_fault(agents[1], 0xdead_0000, sys::memory_fault_reason::PAGE_NOT_PRESENT),
            1
        );
        assert_eq!(FAULTS.load(Ordering::SeqCst), 0xdead_0000);
        let _left = create_queue(agents[1]);
        assert_eq!(live().queues, 1);
        reset(&[gpu("gfx90a")], HSA_STATUS_SUCCESS);
        assert_eq!(live(), Live::default());
    }

    #[test]
    fn the_backend_opens_over_the_simulated_runtime() {
        use crate::backend::Backend;
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        reset(&[gpu("gfx90a"), gpu("gfx1030")], HSA_STATUS_SUCCESS);
        let config = crate::util::config::Config::from_pairs(&[]);
        let backend =
            super::super::AmdgpuBackend::with_runtime(super::super::runtime::Api::new(runtime()), &config).unwrap();
        assert_eq!(backend.device_count(), 2);
        let reason = backend.device_count_reason();
        assert!(reason.contains("2 AMD GPU(s) (gfx90a, gfx1030)"), "{reason}");
        assert_eq!(
            with(|w| w.initialized),
            1,
            "the runtime stays initialised while the backend lives"
        );
    }
}
