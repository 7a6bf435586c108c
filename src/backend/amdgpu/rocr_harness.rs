//! The backend test suite's harness over Debian's *real* HSA runtime (ROCr 5.2.3) on the fake kernel
//! driver of `tests/fake_kfd/` (built by `scripts/build-fake-kfd.sh`), with the code objects the
//! simulated harness runs: gfx90a GPUs (wave64) or gfx1030 GPUs (wave32), one per device.
//!
//! Everything the runtime does is its own: agents, pools, loading and freezing code objects (with
//! its blit kernels, which the fake carries out), symbol lookups, queues, signals, interrupts and
//! queue errors. What the suite must see or steer in terms of runtime calls (the call log, a call
//! failing once, what is still held, a memory limit) comes from a thin recording layer between the
//! backend and the runtime: each recorded entry point logs its call and forwards it unchanged, or
//! fails it without reaching the runtime. Kernels run as host bodies on the fake driver's command
//! processor threads, called with the dispatch packet the backend wrote.
//!
//! Each test runs in a process of its own ([`in_own_process`](crate::backend::suite::in_own_process)):
//! the runtime and the fake thunk stay loaded under the sonames that other tests load the real ones
//! by. Within a process, tests that start the harness several times get a fresh runtime each time
//! (ROCr initialises again after `hsa_shut_down`) over freshly configured fake GPUs.

use std::collections::{HashMap, HashSet};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex, MutexGuard, OnceLock};

use super::harness::{driver_calls_of, failure_text_of, op_of_call, Mi250, PoolUse, SimulatedGpu};
use super::runtime::{Api, Runtime};
use super::simulated::CopyKind;
use super::sys::{
    self, device_type, pointer_type, pool_global_flag, symbol_info, HsaAgent, HsaCodeObjectReader, HsaExecutable,
    HsaExecutableSymbol, HsaLoadedCodeObject, HsaMemoryPool, HsaQueue, HsaSignal, HsaSignalValue, HsaStatus,
    PointerInfo, QueueErrorCallback, SignalHandler, HSA_STATUS_ERROR, HSA_STATUS_ERROR_OUT_OF_RESOURCES,
    HSA_STATUS_SUCCESS,
};
use super::tests::code_object;
use super::AmdgpuBackend;
use crate::backend::gpu::library::Opened;
use crate::backend::suite::{Harness, KernelBody, Live, Op, SeenLaunch, TestProgram};
use crate::plugin::{Core, PluginApi};
use crate::util::config::Config;

/// A kernel's host body as the fake driver calls it (`fake_kfd_kernel_body` in `fake_kfd.h`).
type FakeKernelBody = unsafe extern "C" fn(ctx: *mut c_void, packet: *const u8, kernarg: *const u8) -> i64;

/// The fake driver's test hooks (`tests/fake_kfd/fake_kfd.h`).
struct FakeDriver {
    configure: unsafe extern "C" fn(gpu: *const c_char, gpus: u32, distinct_gpu_addresses: c_int) -> c_int,
    hold: unsafe extern "C" fn(on: c_int),
    set_kernel: unsafe extern "C" fn(kernel_object: u64, body: Option<FakeKernelBody>, ctx: *mut c_void) -> c_int,
    packets: unsafe extern "C" fn(out: *mut LoggedPacket, from: usize, max: usize) -> usize,
    memory_fault: unsafe extern "C" fn(gpu: u32, virtual_address: u64) -> c_int,
    fail_next: unsafe extern "C" fn(thunk_function: *const c_char),
    signal_store: unsafe extern "C" fn(handle: u64, value: i64) -> c_int,
}

/// A packet the fake's command processor consumed (`struct fake_kfd_packet`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct LoggedPacket {
    /// The `hsa_queue_t` it was on.
    queue: u64,
    /// Its AQL packet type.
    packet_type: u32,
    reserved: u32,
    completion_signal: u64,
    first_dependency: u64,
}

/// The packets consumed since the `from`th, and how many were consumed in all.
fn packets_since(from: usize) -> (Vec<LoggedPacket>, usize) {
    // SAFETY: a NULL buffer only asks for the count.
    let total = unsafe { (rocr().fake.packets)(std::ptr::null_mut(), 0, 0) };
    let mut packets = vec![LoggedPacket::default(); total.saturating_sub(from)];
    // SAFETY: `packets` holds `packets.len()` entries.
    unsafe { (rocr().fake.packets)(packets.as_mut_ptr(), from, packets.len()) };
    (packets, total)
}

/// The real runtime over the fake driver, opened once per process.
struct Rocr {
    /// The runtime's own entry points.
    real: &'static Runtime,
    /// The same, with the recorded entry points in place: what the backend is given.
    recorded: &'static Runtime,
    fake: FakeDriver,
}

static ROCR: OnceLock<Rocr> = OnceLock::new();

/// One test at a time: the runtime and the fake driver are the process's.
static SERIAL: Mutex<()> = Mutex::new(());

fn rocr() -> &'static Rocr {
    ROCR.get_or_init(open_rocr)
}

fn real() -> &'static sys::Functions {
    &rocr().real.functions
}

/// Builds the fake driver beside links to the real runtime, loads them (the fake in place of the real
/// thunk) and resolves the runtime and the fake's hooks.
fn open_rocr() -> Rocr {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target/fake-kfd");
    // Test processes build and load the fake one at a time: a build replaces the links being loaded.
    std::fs::create_dir_all(root.join("target")).expect("the target directory");
    let lock = std::fs::File::create(root.join("target/fake-kfd.lock")).expect("the fake driver's lock file");
    // SAFETY: flock on an open descriptor has no memory preconditions; closing `lock` releases it.
    let locked = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
    assert_eq!(locked, 0, "the fake driver's lock: {}", std::io::Error::last_os_error());
    let out = std::process::Command::new("sh")
        .arg(root.join("scripts/build-fake-kfd.sh"))
        .arg(&dir)
        .output()
        .expect("sh");
    assert!(
        out.status.success(),
        "scripts/build-fake-kfd.sh failed: {} (install what it needs with: sudo sh scripts/setup-debian.sh)",
        String::from_utf8_lossy(&out.stderr)
    );
    let open = |name: &str, flags: c_int| {
        // SAFETY: these libraries' initialisers have no preconditions; they stay loaded for the life of
        // the process (the handles are leaked), so the entry points resolved below stay valid.
        let library = unsafe { libloading::os::unix::Library::open(Some(dir.join(name)), flags) }
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        &*Box::leak(Box::new(library))
    };
    let order = std::fs::read_to_string(dir.join("load-order")).expect("the fake driver's load-order file");
    for dependency in order.lines() {
        open(dependency, libc::RTLD_NOW | libc::RTLD_GLOBAL);
    }
    let runtime = open("libhsa-runtime64.so.1", libc::RTLD_NOW);
    let real = sys::Functions::resolve(runtime).unwrap_or_else(|missing| panic!("the HSA runtime lacks {missing}"));
    let thunk = open("libhsakmt.so.1", libc::RTLD_NOW);
    /// A hook of the fake driver, as the function type of its declaration in fake_kfd.h.
    fn hook<T: Copy>(thunk: &libloading::os::unix::Library, name: &[u8]) -> T {
        // SAFETY: every caller names a hook whose C signature is `T` (the field it fills).
        let symbol = unsafe { thunk.get::<T>(name) };
        *symbol.unwrap_or_else(|e| panic!("the fake driver lacks a hook: {e}"))
    }
    let fake = FakeDriver {
        configure: hook(thunk, b"fake_kfd_configure\0"),
        hold: hook(thunk, b"fake_kfd_hold\0"),
        set_kernel: hook(thunk, b"fake_kfd_set_kernel\0"),
        packets: hook(thunk, b"fake_kfd_packets\0"),
        memory_fault: hook(thunk, b"fake_kfd_memory_fault\0"),
        fail_next: hook(thunk, b"fake_kfd_fail_next\0"),
        signal_store: hook(thunk, b"fake_kfd_signal_store\0"),
    };
    drop(lock);
    let mut recorded = real;
    recorded.hsa_queue_create = queue_create;
    recorded.hsa_queue_destroy = queue_destroy;
    recorded.hsa_amd_signal_create = signal_create;
    recorded.hsa_signal_destroy = signal_destroy;
    recorded.hsa_code_object_reader_create_from_memory = reader_create;
    recorded.hsa_code_object_reader_destroy = reader_destroy;
    recorded.hsa_executable_create_alt = executable_create;
    recorded.hsa_executable_load_agent_code_object = executable_load;
    recorded.hsa_executable_freeze = executable_freeze;
    recorded.hsa_executable_validate = executable_validate;
    recorded.hsa_executable_destroy = executable_destroy;
    recorded.hsa_executable_get_symbol_by_name = symbol_by_name;
    recorded.hsa_executable_symbol_get_info = symbol_info;
    recorded.hsa_amd_memory_pool_allocate = pool_allocate;
    recorded.hsa_amd_memory_pool_free = pool_free;
    recorded.hsa_amd_agents_allow_access = allow_access;
    recorded.hsa_amd_memory_lock = memory_lock;
    recorded.hsa_amd_memory_unlock = memory_unlock;
    recorded.hsa_amd_memory_async_copy = async_copy;
    recorded.hsa_amd_signal_async_handler = async_handler;
    let name = "libhsa-runtime64.so.1 (ROCr over the fake kernel driver)".to_string();
    Rocr {
        real: Box::leak(Box::new(Opened {
            functions: real,
            library: name.clone(),
        })),
        recorded: Box::leak(Box::new(Opened {
            functions: recorded,
            library: name,
        })),
        fake,
    }
}

/// What the recording layer saw in the current test.
#[derive(Default)]
struct Record {
    /// Every recorded call, in order.
    log: Vec<&'static str>,
    /// The pool a logged allocation or free (by log index) was about.
    pool_calls: HashMap<usize, PoolUse>,
    /// The memory a logged copy (by log index) moved between.
    copy_calls: HashMap<usize, CopyKind>,
    /// Entry points whose next call fails.
    fail: Vec<&'static str>,
    /// Pool blocks held: address → size and pool.
    blocks: HashMap<usize, (usize, PoolUse)>,
    /// Locked host ranges: address → locks not undone.
    locked: HashMap<usize, usize>,
    executables: HashSet<u64>,
    readers: HashSet<u64>,
    queues: HashSet<usize>,
    signals: HashSet<u64>,
    /// Symbols looked up: handle → name.
    symbols: HashMap<u64, String>,
    /// Variables whose address was asked: name → address.
    variables: HashMap<String, usize>,
    /// Kernels whose code object was asked: code object → name and static group segment size.
    kernels: HashMap<u64, (String, u32)>,
    /// Host bodies by kernel name, with how many argument words each is given.
    bodies: HashMap<String, (usize, KernelBody)>,
    /// Kernels that fault when they run.
    faulting: HashSet<String>,
    launches: Vec<SeenLaunch>,
    /// The agents' pools, by kind.
    pools: HashMap<u64, PoolUse>,
    /// GPU agents, in the runtime's order.
    gpus: Vec<HsaAgent>,
    /// Bytes of device memory the test allows, after `limit_memory`.
    capacity: Option<usize>,
    /// Kernel bodies running now.
    running: usize,
    /// Calls made while a kernel body ran, and bodies that panicked.
    violations: Vec<String>,
}

impl Record {
    fn device_bytes(&self) -> usize {
        self.blocks
            .values()
            .filter(|(_, pool)| *pool == PoolUse::Device)
            .map(|(size, _)| size)
            .sum()
    }
}

static RECORD: LazyLock<Mutex<Record>> = LazyLock::new(Mutex::default);

fn record() -> MutexGuard<'static, Record> {
    RECORD.lock().unwrap_or_else(|e| e.into_inner())
}

/// Logs `call` (about `pool` or `copy`, where it allocates or copies) and says whether it fails now.
fn enter(call: &'static str, pool: Option<PoolUse>, copy: Option<CopyKind>) -> Option<HsaStatus> {
    let mut r = record();
    let index = r.log.len();
    r.log.push(call);
    if let Some(pool) = pool {
        r.pool_calls.insert(index, pool);
    }
    if let Some(copy) = copy {
        r.copy_calls.insert(index, copy);
    }
    if r.running > 0 && pool.is_some() {
        r.violations.push(format!("{call} while a kernel ran"));
    }
    let armed = r.fail.iter().position(|c| *c == call)?;
    r.fail.remove(armed);
    Some(HSA_STATUS_ERROR)
}

/// Calls the real entry point `$name` with the arguments the backend passed.
macro_rules! forward {
    ($name:ident($($arg:expr),* $(,)?)) => {
        // SAFETY: the backend's arguments go unchanged to the runtime's entry point, whose signature
        // the recorded one shares; the backend upholds that entry point's contract.
        unsafe { (real().$name)($($arg),*) }
    };
}

unsafe extern "C" fn queue_create(
    agent: HsaAgent,
    size: u32,
    queue_type: u32,
    callback: Option<QueueErrorCallback>,
    data: *mut c_void,
    private_segment_size: u32,
    group_segment_size: u32,
    queue: *mut *mut HsaQueue,
) -> HsaStatus {
    if let Some(status) = enter("hsa_queue_create", None, None) {
        return status;
    }
    let status = forward!(hsa_queue_create(
        agent,
        size,
        queue_type,
        callback,
        data,
        private_segment_size,
        group_segment_size,
        queue
    ));
    if status == HSA_STATUS_SUCCESS {
        // SAFETY: on success the runtime wrote the queue there.
        record().queues.insert(unsafe { *queue } as usize);
    }
    status
}

unsafe extern "C" fn queue_destroy(queue: *mut HsaQueue) -> HsaStatus {
    if let Some(status) = enter("hsa_queue_destroy", None, None) {
        return status;
    }
    let status = forward!(hsa_queue_destroy(queue));
    if status == HSA_STATUS_SUCCESS {
        record().queues.remove(&(queue as usize));
    }
    status
}

unsafe extern "C" fn signal_create(
    initial_value: HsaSignalValue,
    num_consumers: u32,
    consumers: *const HsaAgent,
    attributes: u64,
    signal: *mut HsaSignal,
) -> HsaStatus {
    if let Some(status) = enter("hsa_amd_signal_create", None, None) {
        return status;
    }
    let status = forward!(hsa_amd_signal_create(
        initial_value,
        num_consumers,
        consumers,
        attributes,
        signal
    ));
    if status == HSA_STATUS_SUCCESS {
        // SAFETY: on success the runtime wrote the signal there.
        record().signals.insert(unsafe { *signal }.handle);
    }
    status
}

unsafe extern "C" fn signal_destroy(signal: HsaSignal) -> HsaStatus {
    if let Some(status) = enter("hsa_signal_destroy", None, None) {
        return status;
    }
    let status = forward!(hsa_signal_destroy(signal));
    if status == HSA_STATUS_SUCCESS {
        record().signals.remove(&signal.handle);
    }
    status
}

unsafe extern "C" fn reader_create(
    code_object: *const c_void,
    size: usize,
    reader: *mut HsaCodeObjectReader,
) -> HsaStatus {
    if let Some(status) = enter("hsa_code_object_reader_create_from_memory", None, None) {
        return status;
    }
    let status = forward!(hsa_code_object_reader_create_from_memory(code_object, size, reader));
    if status == HSA_STATUS_SUCCESS {
        // SAFETY: on success the runtime wrote the reader there.
        record().readers.insert(unsafe { *reader }.handle);
    }
    status
}

unsafe extern "C" fn reader_destroy(reader: HsaCodeObjectReader) -> HsaStatus {
    if let Some(status) = enter("hsa_code_object_reader_destroy", None, None) {
        return status;
    }
    let status = forward!(hsa_code_object_reader_destroy(reader));
    if status == HSA_STATUS_SUCCESS {
        record().readers.remove(&reader.handle);
    }
    status
}

unsafe extern "C" fn executable_create(
    profile: u32,
    rounding: u32,
    options: *const c_char,
    executable: *mut HsaExecutable,
) -> HsaStatus {
    if let Some(status) = enter("hsa_executable_create_alt", None, None) {
        return status;
    }
    let status = forward!(hsa_executable_create_alt(profile, rounding, options, executable));
    if status == HSA_STATUS_SUCCESS {
        // SAFETY: on success the runtime wrote the executable there.
        record().executables.insert(unsafe { *executable }.handle);
    }
    status
}

unsafe extern "C" fn executable_load(
    executable: HsaExecutable,
    agent: HsaAgent,
    reader: HsaCodeObjectReader,
    options: *const c_char,
    loaded: *mut HsaLoadedCodeObject,
) -> HsaStatus {
    if let Some(status) = enter("hsa_executable_load_agent_code_object", None, None) {
        return status;
    }
    forward!(hsa_executable_load_agent_code_object(
        executable, agent, reader, options, loaded
    ))
}

unsafe extern "C" fn executable_freeze(executable: HsaExecutable, options: *const c_char) -> HsaStatus {
    if let Some(status) = enter("hsa_executable_freeze", None, None) {
        return status;
    }
    forward!(hsa_executable_freeze(executable, options))
}

unsafe extern "C" fn executable_validate(executable: HsaExecutable, result: *mut u32) -> HsaStatus {
    if let Some(status) = enter("hsa_executable_validate", None, None) {
        return status;
    }
    forward!(hsa_executable_validate(executable, result))
}

unsafe extern "C" fn executable_destroy(executable: HsaExecutable) -> HsaStatus {
    if let Some(status) = enter("hsa_executable_destroy", None, None) {
        return status;
    }
    let status = forward!(hsa_executable_destroy(executable));
    if status == HSA_STATUS_SUCCESS {
        record().executables.remove(&executable.handle);
    }
    status
}

unsafe extern "C" fn symbol_by_name(
    executable: HsaExecutable,
    name: *const c_char,
    agent: *const HsaAgent,
    symbol: *mut HsaExecutableSymbol,
) -> HsaStatus {
    if let Some(status) = enter("hsa_executable_get_symbol_by_name", None, None) {
        return status;
    }
    let status = forward!(hsa_executable_get_symbol_by_name(executable, name, agent, symbol));
    if status == HSA_STATUS_SUCCESS {
        // SAFETY: `name` is the NUL-terminated name the backend asked for; on success the runtime wrote
        // the symbol.
        let (name, symbol) = unsafe { (CStr::from_ptr(name), *symbol) };
        let name = name.to_string_lossy();
        record()
            .symbols
            .insert(symbol.handle, name.strip_suffix(".kd").unwrap_or(&name).to_string());
    }
    status
}

unsafe extern "C" fn symbol_info(symbol: HsaExecutableSymbol, attribute: u32, value: *mut c_void) -> HsaStatus {
    if let Some(status) = enter("hsa_executable_symbol_get_info", None, None) {
        return status;
    }
    let status = forward!(hsa_executable_symbol_get_info(symbol, attribute, value));
    if status != HSA_STATUS_SUCCESS {
        return status;
    }
    let name = record().symbols.get(&symbol.handle).cloned().unwrap_or_default();
    if attribute == symbol_info::KERNEL_OBJECT {
        // SAFETY: KERNEL_OBJECT is a u64, which the runtime just wrote.
        let object = unsafe { *value.cast::<u64>() };
        let mut static_group = 0u32;
        let found = forward!(hsa_executable_symbol_get_info(
            symbol,
            symbol_info::KERNEL_GROUP_SEGMENT_SIZE,
            (&mut static_group as *mut u32).cast()
        ));
        assert_eq!(found, HSA_STATUS_SUCCESS, "the kernel's group segment size");
        record().kernels.insert(object, (name, static_group));
        // SAFETY: run_kernel has the body signature of fake_kfd.h and needs no context.
        let registered = unsafe { (rocr().fake.set_kernel)(object, Some(run_kernel), std::ptr::null_mut()) };
        assert_eq!(registered, 0, "the fake driver's kernel table is full");
    } else if attribute == symbol_info::VARIABLE_ADDRESS {
        // SAFETY: VARIABLE_ADDRESS is a u64, which the runtime just wrote.
        let address = unsafe { *value.cast::<u64>() };
        record().variables.insert(name, address as usize);
    }
    status
}

unsafe extern "C" fn pool_allocate(pool: HsaMemoryPool, size: usize, flags: u32, ptr: *mut *mut c_void) -> HsaStatus {
    let kind = record().pools.get(&pool.handle).copied();
    if let Some(status) = enter("hsa_amd_memory_pool_allocate", kind, None) {
        return status;
    }
    if kind == Some(PoolUse::Device) {
        let r = record();
        if r.capacity.is_some_and(|capacity| r.device_bytes() + size > capacity) {
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        }
    }
    let status = forward!(hsa_amd_memory_pool_allocate(pool, size, flags, ptr));
    if status == HSA_STATUS_SUCCESS {
        if let Some(kind) = kind {
            // SAFETY: on success the runtime wrote the block's address there.
            record().blocks.insert(unsafe { *ptr } as usize, (size, kind));
        }
    }
    status
}

unsafe extern "C" fn pool_free(ptr: *mut c_void) -> HsaStatus {
    let kind = record().blocks.get(&(ptr as usize)).map(|&(_, kind)| kind);
    if let Some(status) = enter("hsa_amd_memory_pool_free", kind, None) {
        return status;
    }
    let status = forward!(hsa_amd_memory_pool_free(ptr));
    if status == HSA_STATUS_SUCCESS {
        record().blocks.remove(&(ptr as usize));
    }
    status
}

unsafe extern "C" fn allow_access(
    num_agents: u32,
    agents: *const HsaAgent,
    flags: *const u32,
    ptr: *const c_void,
) -> HsaStatus {
    if let Some(status) = enter("hsa_amd_agents_allow_access", None, None) {
        return status;
    }
    forward!(hsa_amd_agents_allow_access(num_agents, agents, flags, ptr))
}

unsafe extern "C" fn memory_lock(
    host_ptr: *mut c_void,
    size: usize,
    agents: *mut HsaAgent,
    num_agent: c_int,
    agent_ptr: *mut *mut c_void,
) -> HsaStatus {
    if let Some(status) = enter("hsa_amd_memory_lock", None, None) {
        return status;
    }
    let status = forward!(hsa_amd_memory_lock(host_ptr, size, agents, num_agent, agent_ptr));
    if status == HSA_STATUS_SUCCESS {
        *record().locked.entry(host_ptr as usize).or_default() += 1;
    }
    status
}

unsafe extern "C" fn memory_unlock(host_ptr: *mut c_void) -> HsaStatus {
    if let Some(status) = enter("hsa_amd_memory_unlock", None, None) {
        return status;
    }
    let status = forward!(hsa_amd_memory_unlock(host_ptr));
    if status == HSA_STATUS_SUCCESS {
        let mut r = record();
        if let Some(locks) = r.locked.get_mut(&(host_ptr as usize)) {
            *locks -= 1;
            if *locks == 0 {
                r.locked.remove(&(host_ptr as usize));
            }
        }
    }
    status
}

/// The GPU that owns the memory at `ptr`, as the runtime knows it; `None` for host memory.
fn device_owner(ptr: *const c_void) -> Option<u64> {
    // SAFETY: PointerInfo is plain data, for which all zeroes is a valid value.
    let mut info: PointerInfo = unsafe { std::mem::zeroed() };
    info.size = std::mem::size_of::<PointerInfo>() as u32;
    let status = forward!(hsa_amd_pointer_info(
        ptr,
        &mut info,
        None,
        std::ptr::null_mut(),
        std::ptr::null_mut()
    ));
    let on_a_gpu = record().gpus.contains(&info.agent_owner);
    (status == HSA_STATUS_SUCCESS && info.pointer_type == pointer_type::HSA && on_a_gpu)
        .then_some(info.agent_owner.handle)
}

#[allow(clippy::too_many_arguments)] // the runtime's signature
unsafe extern "C" fn async_copy(
    dst: *mut c_void,
    dst_agent: HsaAgent,
    src: *const c_void,
    src_agent: HsaAgent,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const HsaSignal,
    completion_signal: HsaSignal,
) -> HsaStatus {
    let kind = match (device_owner(src), device_owner(dst.cast_const())) {
        (None, Some(_)) => CopyKind::HostToDevice,
        (Some(_), None) => CopyKind::DeviceToHost,
        (Some(from), Some(to)) if from == to => CopyKind::DeviceToDevice,
        (Some(_), Some(_)) => CopyKind::PeerToPeer,
        (None, None) => CopyKind::HostToHost,
    };
    if let Some(status) = enter("hsa_amd_memory_async_copy", None, Some(kind)) {
        return status;
    }
    forward!(hsa_amd_memory_async_copy(
        dst,
        dst_agent,
        src,
        src_agent,
        size,
        num_dep_signals,
        dep_signals,
        completion_signal
    ))
}

unsafe extern "C" fn async_handler(
    signal: HsaSignal,
    condition: u32,
    value: HsaSignalValue,
    handler: SignalHandler,
    arg: *mut c_void,
) -> HsaStatus {
    if let Some(status) = enter("hsa_amd_signal_async_handler", None, None) {
        return status;
    }
    forward!(hsa_amd_signal_async_handler(signal, condition, value, handler, arg))
}

/// A trap on the device: ROCr's queue error handler reports it as `HSA_STATUS_ERROR_EXCEPTION`.
const TRAP: i64 = 0x8000_0000;

/// Every kernel the backend found: records the launch from its dispatch packet and runs the test's
/// body for it, if any, with the first argument words of its kernel arguments.
///
/// # Safety
/// `packet` is a 64-byte AQL dispatch packet and `kernarg` the host address of its kernel arguments,
/// as the fake driver passes them.
unsafe extern "C" fn run_kernel(_ctx: *mut c_void, packet: *const u8, kernarg: *const u8) -> i64 {
    // SAFETY: hsa_kernel_dispatch_packet_t's fields at their offsets in hsa.h.
    let (workgroup, grid, group_segment, object) = unsafe {
        (
            u32::from(packet.add(4).cast::<u16>().read_unaligned()),
            packet.add(12).cast::<u32>().read_unaligned(),
            packet.add(28).cast::<u32>().read_unaligned(),
            packet.add(32).cast::<u64>().read_unaligned(),
        )
    };
    let (body, faults) = {
        let mut r = record();
        let (name, static_group) = r.kernels.get(&object).cloned().unwrap_or_default();
        r.launches.push(SeenLaunch {
            kernel: name.clone(),
            geometry: (
                grid / workgroup.max(1),
                workgroup,
                group_segment.saturating_sub(static_group),
            ),
            queue: 0,
        });
        let body = r.bodies.get(&name).cloned();
        if body.is_some() {
            r.running += 1;
        }
        (body, r.faulting.contains(&name))
    };
    let Some((words, body)) = body else {
        return if faults { TRAP } else { 0 };
    };
    // SAFETY: the backend wrote at least `words` argument words (the kernels' explicit arguments).
    let args: Vec<u64> = (0..words)
        .map(|i| unsafe { kernarg.add(8 * i).cast::<u64>().read_unaligned() })
        .collect();
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&args)));
    let mut r = record();
    r.running -= 1;
    if ran.is_err() {
        r.violations.push("a kernel body panicked".into());
        return TRAP;
    }
    // A faulting kernel faults after its body ran (a call it began is left for the host to end).
    if faults {
        TRAP
    } else {
        0
    }
}

/// How many argument words the suite's kernels take: each takes one pointer.
const KERNEL_ARGUMENTS: usize = 1;

/// The AMDGPU backend on real ROCr over fake GPUs of one kind.
pub(crate) struct RocrHarness<G: SimulatedGpu = Mi250> {
    core: Box<dyn PluginApi>,
    _serial: MutexGuard<'static, ()>,
    _gpu: PhantomData<G>,
}

impl<G: SimulatedGpu> Harness for RocrHarness<G> {
    fn start(devices: usize, settings: &[(&str, &str)]) -> Self {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let rocr = rocr();
        *record() = Record::default();
        let gpu = CString::new(G::AGENT.processor()).unwrap();
        // SAFETY: the hooks of fake_kfd.h, with a NUL-terminated model name.
        let configured = || unsafe {
            (rocr.fake.hold)(0);
            (rocr.fake.configure)(gpu.as_ptr(), devices as u32, 0) == 0
        };
        if !configured() {
            // A test that failed left the runtime initialised: shut it down for good.
            while forward!(hsa_shut_down()) == HSA_STATUS_SUCCESS {}
            assert!(configured(), "the fake driver takes {devices} {}", G::AGENT.name);
        }
        let config = Config::from_pairs(settings);
        let backend = AmdgpuBackend::with_runtime(Api::new(rocr.recorded), &config).unwrap();
        let core = Core::new_boxed(backend, config);
        // The agents and their pools, asked of the runtime directly (unrecorded).
        let api = Api::new(rocr.real);
        let mut r = record();
        for agent in api.agents().unwrap() {
            let gpu = agent.device_type == device_type::GPU;
            if gpu {
                r.gpus.push(agent.agent);
            }
            for pool in api.pools(agent.agent).unwrap() {
                let kind = if gpu {
                    PoolUse::Device
                } else if pool.global_flags & pool_global_flag::KERNARG_INIT != 0 {
                    PoolUse::Kernarg
                } else {
                    PoolUse::Host
                };
                r.pools.insert(pool.pool.handle, kind);
            }
        }
        assert_eq!(r.gpus.len(), devices, "the fake driver's GPUs");
        drop(r);
        RocrHarness {
            core,
            _serial: serial,
            _gpu: PhantomData,
        }
    }

    fn core(&self) -> &dyn PluginApi {
        &*self.core
    }

    fn program(&self) -> TestProgram {
        TestProgram::of_cuda_module(code_object(G::AGENT.processor()), KERNEL_ARGUMENTS)
    }

    fn default_geometry(&self) -> (u32, u32) {
        // LLVM 16's defaults: 256 work-items, compute units × 4 work-groups (the fake's CU counts).
        let compute_units = match G::AGENT.processor() {
            "gfx90a" => 104,
            _ => 60,
        };
        (256, compute_units * 4)
    }

    fn device_memory(&self) -> u64 {
        match G::AGENT.processor() {
            "gfx90a" => 64 << 30,
            _ => 16 << 30,
        }
    }

    fn native_device_id(&self, device: usize) -> usize {
        record().gpus[device].handle as usize
    }

    fn pinned_device_address(&self, _device: usize, host: usize) -> usize {
        host // the fake maps locked memory at its host address unless told otherwise
    }

    fn log(&self) -> Vec<Op> {
        let r = record();
        r.log
            .iter()
            .enumerate()
            .map(|(i, call)| op_of_call(call, r.pool_calls.get(&i).copied(), r.copy_calls.get(&i).copied()))
            .collect()
    }

    fn calls(&self, op: Op) -> usize {
        self.log().into_iter().filter(|o| *o == op).count()
    }

    fn driver_call_count(&self, call: &str) -> usize {
        record().log.iter().filter(|c| **c == call).count()
    }

    fn driver_calls(op: Op) -> Vec<&'static str> {
        driver_calls_of(op)
    }

    fn fail_call(&self, call: &'static str) {
        record().fail.push(call);
    }

    fn failure_text(call: &str) -> Vec<String> {
        failure_text_of(call)
    }

    fn live(&self) -> Live {
        let r = record();
        Live {
            memory: r.blocks.len() + r.locked.len(),
            modules: r.executables.len() + r.readers.len(),
            queues: 0,
            events: 0,
            devices: usize::from(r.queues.len() + r.signals.len() > 0),
        }
    }

    fn pinned(&self) -> usize {
        record().locked.len()
    }

    fn launches(&self) -> Vec<SeenLaunch> {
        record().launches.clone()
    }

    fn register_kernel(&self, name: &str, args: usize, body: KernelBody) {
        record()
            .bodies
            .insert(name.to_string(), (args.min(KERNEL_ARGUMENTS), body));
    }

    fn clear_kernels(&self) {
        record().bodies.clear();
    }

    fn limit_memory(&self, extra: usize) {
        let mut r = record();
        r.capacity = Some(r.device_bytes() + extra);
    }

    fn within_memory_limit(&self) -> bool {
        let r = record();
        r.device_bytes() <= r.capacity.unwrap_or(usize::MAX)
    }

    fn memory_blocks(&self) -> Vec<(usize, usize)> {
        record()
            .blocks
            .iter()
            .map(|(&address, &(size, _))| (address, size))
            .collect()
    }

    fn violations(&self) -> Vec<String> {
        record().violations.clone()
    }

    fn device_can_ring() -> bool {
        true
    }

    fn ring_from_device(doorbell: u64) {
        // SAFETY: the hook of fake_kfd.h; it checks that the handle is a user signal before using it.
        let stored = unsafe { (rocr().fake.signal_store)(doorbell, 1) };
        assert_eq!(
            stored, 0,
            "the doorbell {doorbell:#x} is a user signal of the runtime's"
        );
    }

    fn module_global(&self, name: &str) -> Option<(usize, usize)> {
        // ROCr registers no local variable, so the address comes from the image's symbol table and the
        // load delta of a variable the backend looked up.
        let image = code_object(G::AGENT.processor());
        let elf = crate::util::elf::Image::parse(&image)?;
        let delta = record()
            .variables
            .iter()
            .find_map(|(variable, &address)| Some(address as u64 - elf.symbol(variable.as_bytes())?.value))?;
        let symbol = elf.symbol(name.as_bytes())?;
        Some(((symbol.value + delta) as usize, symbol.size as usize))
    }

    fn streams_are_driver_objects() -> bool {
        false
    }

    fn interop_has_context() -> bool {
        false
    }

    fn runs_work_on_its_own() -> bool {
        true
    }

    fn hold(&self, on: bool) {
        // SAFETY: a hook of fake_kfd.h without preconditions.
        unsafe { (rocr().fake.hold)(c_int::from(on)) };
    }

    fn lane_size(&self) -> u32 {
        G::AGENT.wavefront_size
    }

    fn device_owns_host_buffers() -> bool {
        true
    }

    fn is_host_block(&self, addr: usize) -> bool {
        record().blocks.get(&addr).map(|&(_, kind)| kind) == Some(PoolUse::Host)
    }

    fn queues_fail_by_device_faults() -> bool {
        true
    }

    fn fail_kernel(&self, name: &str) -> String {
        record().faulting.insert(name.to_string());
        "HSA_STATUS_ERROR_EXCEPTION (0x1016)".into()
    }

    fn fail_kernel_after(&self, name: &str, args: usize, body: KernelBody) -> String {
        self.register_kernel(name, args, body);
        self.fail_kernel(name)
    }
}

impl<G: SimulatedGpu> Drop for RocrHarness<G> {
    /// Held work is let go, so that nothing waits for ever, and the bodies go with the test.
    fn drop(&mut self) {
        self.hold(false);
        let mut r = record();
        r.bodies.clear();
        r.faulting.clear();
    }
}

#[cfg(test)]
mod tests {
    /// A `#[test]` that runs `$body` in a process of its own (`suite::in_own_process`), named once.
    macro_rules! own_process_test {
        ($(#[$meta:meta])* $name:ident => $body:path) => {
            $(#[$meta])*
            #[test]
            fn $name() {
                in_own_process(concat!(module_path!(), "::", stringify!($name)), $body);
            }
        };
    }

    use std::ffi::c_void;

    use super::{packets_since, record, rocr, RocrHarness};
    use crate::backend::amdgpu::harness::Mi250;
    use crate::backend::amdgpu::sys::packet_type;
    use crate::backend::suite::Live;
    use crate::backend::suite::{in_own_process, Harness};
    use crate::backend::AllocKind;
    use crate::plugin::LaunchRequest;

    own_process_test!(
        /// A launch behind earlier work on its stream is a barrier-AND packet and a dispatch, pushed as
        /// one, as the stock plugin pushes them under one lock: another stream's packet between them
        /// would wait behind a barrier that is not its own. Eight streams on one HSA queue launch while
        /// the GPU is held, then the ring's order is read from the fake driver's packet log.
        a_barrier_and_its_dispatch_are_pushed_as_one => barrier_and_dispatch_pushed_as_one
    );

    fn barrier_and_dispatch_pushed_as_one() {
        let h = RocrHarness::<Mi250>::start(1, &[("LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES", "1")]);
        let core = h.core();
        core.init_device(0).unwrap();
        let program = h.program();
        let loaded = core.load_image(0, 0x1000, &program.image, &program.entries).unwrap();
        let kernel = loaded.addresses[program.generic];
        let (_, before) = packets_since(0);
        h.hold(true);
        let request = LaunchRequest {
            nowait: true,
            ..Default::default()
        };
        let queues: Vec<usize> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        let mut queue: *mut c_void = std::ptr::null_mut();
                        for _ in 0..24 {
                            // SAFETY: the kernel runs no body; its one argument is only passed along.
                            unsafe { core.launch(0, kernel, &[std::ptr::null_mut()], &request, Some(&mut queue)) }
                                .unwrap();
                        }
                        queue as usize
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        h.hold(false);
        for queue in queues {
            let mut queue = queue as *mut c_void;
            core.synchronize(0, &mut queue).unwrap();
        }
        let ours = record().queues.clone();
        let (packets, _) = packets_since(before);
        let ring: Vec<u32> = packets
            .iter()
            .filter(|p| ours.contains(&(p.queue as usize)))
            .map(|p| p.packet_type)
            .collect();
        let barriers = ring
            .iter()
            .filter(|&&t| t == u32::from(packet_type::BARRIER_AND))
            .count();
        assert_eq!(
            barriers,
            8 * 23,
            "every launch after a stream's first waits for the one before"
        );
        for (at, pair) in ring.windows(2).enumerate() {
            if pair[0] == u32::from(packet_type::BARRIER_AND) {
                assert_eq!(
                    pair[1],
                    u32::from(packet_type::KERNEL_DISPATCH),
                    "packet {at}'s barrier is followed by its own dispatch: {ring:?}"
                );
            }
        }
        assert!(core.deinit().unwrap());
    }

    own_process_test!(
        /// A GPU memory fault as the kernel driver reports it (ROCr's memory event) reaches the plugin
        /// through the runtime's system event handler: the waiting operation fails naming the address,
        /// later work is refused with the same error, and teardown still releases everything.
        a_memory_fault_reported_by_the_driver_fails_the_device_cleanly => memory_fault_fails_the_device
    );

    fn memory_fault_fails_the_device() {
        let h = RocrHarness::<Mi250>::start(1, &[]);
        let core = h.core();
        core.init_device(0).unwrap();
        let program = h.program();
        let loaded = core.load_image(0, 0x1000, &program.image, &program.entries).unwrap();
        let kernel = loaded.addresses[program.generic];
        h.hold(true);
        let request = LaunchRequest {
            nowait: true,
            ..Default::default()
        };
        let mut queue: *mut c_void = std::ptr::null_mut();
        // SAFETY: the kernel runs no body; its one argument is only passed along.
        unsafe { core.launch(0, kernel, &[std::ptr::null_mut()], &request, Some(&mut queue)) }.unwrap();
        assert_eq!(
            // SAFETY: a hook of fake_kfd.h without preconditions.
            unsafe { (rocr().fake.memory_fault)(0, 0xdead_0000) },
            0,
            "ROCr's memory event"
        );
        let expected = "memory fault at address 0xdead0000";
        let err = core.synchronize(0, &mut queue).unwrap_err().to_string();
        assert!(err.contains(expected), "{err}");
        // Memory may still be allocated and freed (the stock plugin would have ended the process).
        if let Ok(block) = core.alloc(0, 64, AllocKind::Device) {
            core.free(0, block as usize).unwrap();
        }
        let launched = {
            let mut again: *mut c_void = std::ptr::null_mut();
            // SAFETY: as above.
            unsafe { core.launch(0, kernel, &[std::ptr::null_mut()], &request, Some(&mut again)) }
                .unwrap_err()
                .to_string()
        };
        assert!(launched.contains(expected), "later work is refused: {launched}");
        h.hold(false);
        match core.deinit() {
            Ok(done) => assert!(done),
            Err(e) => assert!(e.to_string().contains(expected), "{e}"),
        }
        assert_eq!(h.live(), Live::NONE);
    }

    own_process_test!(
        /// An image's global constructors (`amdgcn.device.init`) run on one thread at load and its
        /// destructors (`amdgcn.device.fini`) before unload, through ROCr's own loading and symbols;
        /// constructors that fault leave no image behind, and no destructor runs.
        an_images_global_constructors_and_destructors_run => global_constructors_and_destructors
    );

    fn global_constructors_and_destructors() {
        let h = RocrHarness::<Mi250>::start(1, &[]);
        let core = h.core();
        core.init_device(0).unwrap();
        let ran = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        for (kernel, what) in [
            ("amdgcn.device.init", "constructors"),
            ("amdgcn.device.fini", "destructors"),
        ] {
            let ran = ran.clone();
            h.register_kernel(
                kernel,
                0,
                std::sync::Arc::new(move |_: &[u64]| ran.lock().unwrap().push(what)),
            );
        }
        let image = crate::backend::amdgpu::tests::code_object_with_global_ctors();
        core.load_image(0, 0x1000, &image, &[]).unwrap();
        assert_eq!(*ran.lock().unwrap(), ["constructors"], "when the image is loaded");
        let launch = h.launches().last().cloned().unwrap();
        assert_eq!(
            (launch.kernel.as_str(), launch.geometry.0, launch.geometry.1),
            ("amdgcn.device.init", 1, 1)
        );
        core.unregister_library(&[(0x1000, 0x1001)]).unwrap();
        assert_eq!(*ran.lock().unwrap(), ["constructors", "destructors"]);

        let expected = h.fail_kernel("amdgcn.device.init");
        let err = core
            .load_image(0, 0x2000, &image, &[])
            .err()
            .expect("constructors that fault fail the load")
            .to_string();
        assert!(err.contains("amdgcn.device.init") && err.contains(&expected), "{err}");
        assert_eq!(
            *ran.lock().unwrap(),
            ["constructors", "destructors", "constructors"],
            "no destructor ran"
        );
        let _ = core.deinit();
        assert_eq!(h.live(), Live::NONE);
        assert_eq!(h.violations(), Vec::<String>::new());
    }

    own_process_test!(
        /// The kernel driver refusing what the runtime asks of it (device memory, a mapping, pinning host
        /// memory, a queue) reaches the plugin as the runtime's own error, through ROCr's real handling:
        /// the operation fails cleanly or, for memory, is retried once the core's cache is given back,
        /// and the same operation then succeeds.
        the_kernel_driver_refusing_once_is_reported_and_survived => driver_refusals_are_survived
    );

    fn driver_refusals_are_survived() {
        let h = RocrHarness::<Mi250>::start(1, &[]);
        let core = h.core();
        let refuse = |thunk: &std::ffi::CStr| {
            // SAFETY: a hook of fake_kfd.h with a NUL-terminated name.
            unsafe { (rocr().fake.fail_next)(thunk.as_ptr()) }
        };
        refuse(c"hsaKmtCreateQueue");
        let err = core.init_device(0).unwrap_err().to_string();
        assert!(err.contains("hsa_queue_create"), "{err}");
        core.init_device(0).unwrap();
        for thunk in [c"hsaKmtAllocMemory", c"hsaKmtMapMemoryToGPUNodes"] {
            refuse(thunk);
            match core.alloc(0, 64 << 20, AllocKind::Device) {
                Ok(block) => core.free(0, block as usize).unwrap(),
                // ROCr answers HSA_STATUS_ERROR_OUT_OF_RESOURCES, the core's out-of-memory error.
                Err(e) => assert!(
                    matches!(e, crate::util::error::Error::OutOfMemory { size } if size == 64 << 20),
                    "{thunk:?}: {e}"
                ),
            }
            let block = core.alloc(0, 64 << 20, AllocKind::Device).unwrap();
            core.free(0, block as usize).unwrap();
        }
        let mut host = vec![0u8; 1 << 20];
        refuse(c"hsaKmtRegisterMemoryWithFlags");
        let err = core
            .lock_host(0, host.as_mut_ptr().cast(), host.len())
            .unwrap_err()
            .to_string();
        assert!(err.contains("hsa_amd_memory_lock"), "{err}");
        core.lock_host(0, host.as_mut_ptr().cast(), host.len()).unwrap();
        core.unlock_host(0, host.as_mut_ptr().cast()).unwrap();
        assert!(core.deinit().unwrap());
        assert_eq!(h.live(), Live::NONE);
    }

    /// What a runtime answers to the calls the backend makes to start, find its devices and their
    /// pools, copy through device memory and load a code object (and refuse a truncated one): one
    /// line per answer, leaving out what only says which GPU model the fake presents.
    fn account(api: crate::backend::amdgpu::runtime::Api, image: &[u8]) -> Vec<String> {
        use crate::backend::amdgpu::sys::{agent_info, device_type, symbol_kind, HsaSignal};
        let mut lines = Vec::new();
        api.init().unwrap();
        let agents = api.agents().unwrap();
        let gpu = agents.iter().find(|a| a.device_type == device_type::GPU).unwrap().agent;
        let cpu = agents.iter().find(|a| a.device_type == device_type::CPU).unwrap().agent;
        lines.push(format!(
            "agents: {:?}",
            agents.iter().map(|a| a.device_type).collect::<Vec<_>>()
        ));
        lines.push(format!("gpu isas: {:?}", api.isa_names(gpu).unwrap()));
        for (attribute, what) in [
            (agent_info::WAVEFRONT_SIZE, "wavefront"),
            (agent_info::WORKGROUP_MAX_SIZE, "work-group max"),
            (agent_info::FEATURE, "feature"),
        ] {
            lines.push(format!(
                "gpu {what}: {}",
                api.agent_u32(gpu, attribute, "info").unwrap()
            ));
        }
        for (agent, name) in [(cpu, "cpu"), (gpu, "gpu")] {
            for pool in api.pools(agent).unwrap() {
                lines.push(format!(
                    "{name} pool: segment {} flags {:#x} allocatable {}; the gpu's access {}",
                    pool.segment,
                    pool.global_flags,
                    pool.alloc_allowed,
                    api.pool_access(gpu, pool.pool).unwrap()
                ));
            }
        }
        // A round trip through device memory, from and to host pool memory opened to the GPU.
        let device_pool = api.pools(gpu).unwrap()[0].pool;
        let host_pool = api.pools(cpu).unwrap()[0].pool;
        let (size, pattern) = (1 << 16, 0x5au8);
        let device = api.pool_allocate(device_pool, size).unwrap();
        let host = api.pool_allocate_for(host_pool, 2 * size, &[gpu]).unwrap().cast::<u8>();
        let done = api.signal_create(1).unwrap();
        // SAFETY: both blocks are `size` bytes or more, reachable by the GPU; each copy is waited for.
        unsafe {
            std::ptr::write_bytes(host, pattern, size);
            api.async_copy(device, host.cast(), size, gpu, &[], done).unwrap();
            api.signal_wait_zero(done, u64::MAX);
            api.signal_store(done, 1);
            api.async_copy(host.add(size).cast(), device, size, gpu, &[] as &[HsaSignal], done)
                .unwrap();
            api.signal_wait_zero(done, u64::MAX);
            let back = std::slice::from_raw_parts(host.add(size), size);
            lines.push(format!("round trip: {}", back.iter().all(|&b| b == pattern)));
            api.signal_destroy(done).unwrap();
            api.pool_free(device).unwrap();
            api.pool_free(host.cast()).unwrap();
        }
        let (executable, reader) = api.load_executable(gpu, image).unwrap();
        let (entries, spmd, generic) = crate::plugin::HostEntry::cuda_module_entries_of(image);
        for name in [spmd, generic] {
            let symbol = api
                .symbol(executable, gpu, &std::ffi::CString::new(format!("{name}.kd")).unwrap())
                .unwrap()
                .unwrap();
            let info = api.kernel_info(symbol).unwrap();
            lines.push(format!(
                "kernel: kind {} kernarg {} group {} private {}",
                api.symbol_kind(symbol).unwrap(),
                info.kernarg_segment_size,
                info.group_segment_size,
                info.private_segment_size
            ));
        }
        let counter = api
            .symbol(executable, gpu, entries[2].name.as_c_str())
            .unwrap()
            .unwrap();
        lines.push(format!(
            "counter: kind {} (variable {}), size {}",
            api.symbol_kind(counter).unwrap(),
            symbol_kind::VARIABLE,
            api.variable_info(counter).unwrap().1
        ));
        let client = api.symbol(executable, gpu, c"omprpc_client_object").unwrap();
        lines.push(format!("a local object found by name: {}", client.is_some()));
        // SAFETY: nothing uses the executable.
        unsafe { api.destroy_executable(executable, reader) }.unwrap();
        // Another machine's ELF file (e_machine, at 18: x86-64's 62).
        let mut foreign = image.to_vec();
        foreign[18..20].copy_from_slice(&62u16.to_le_bytes());
        let refused = api.load_executable(gpu, &foreign).err();
        lines.push(format!(
            "an x86-64 ELF file: {}",
            refused.map_or("loaded".into(), |e| e.to_string())
        ));
        api.shut_down().unwrap();
        lines
    }

    own_process_test!(
        /// The simulated runtime and the real one give the same account of what the backend asks (see
        /// [`account`]), for a wave64 and a wave32 GPU: where they differ, the simulator is wrong.
        the_simulated_runtime_answers_as_the_real_one => simulated_and_real_agree
    );

    fn simulated_and_real_agree() {
        use crate::backend::amdgpu::harness::{MI250, RX6900};
        use crate::backend::amdgpu::{runtime::Api, simulated};
        let rocr = rocr();
        for (agent, model) in [(MI250, c"gfx90a"), (RX6900, c"gfx1030")] {
            let image = crate::backend::amdgpu::tests::code_object(agent.processor());
            let real = {
                // SAFETY: the hook of fake_kfd.h, with a NUL-terminated model name, the runtime closed.
                assert_eq!(unsafe { (rocr.fake.configure)(model.as_ptr(), 1, 0) }, 0);
                account(Api::new(rocr.real), &image)
            };
            let imitated = {
                let _serial = crate::backend::amdgpu::tests::serial();
                simulated::reset(&[agent], 0);
                account(Api::new(simulated::runtime()), &image)
            };
            assert_eq!(
                imitated, real,
                "{}: the simulated runtime, then the real one",
                agent.name
            );
        }
    }
}
