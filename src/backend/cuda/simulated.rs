//! A simulated CUDA driver, substituted for `libcuda` in-process so that the CUDA backend's own logic
//! runs in tests without a GPU: each stream's work runs in order on a thread of its own while the host
//! goes on, events mark positions in streams, modules are read from real cubins (kernels and globals
//! from their symbol tables), and kernels run as Rust closures registered by name. Every entry point counts its calls and can be made to fail once ([`fail_next`]), so that
//! fault handling is tested call by call.
//!
//! It is as strict as NVIDIA's driver where first runs on a GPU fail:
//! * the current context is per thread; a call that needs one fails with `CUDA_ERROR_INVALID_CONTEXT`
//!   without it (or when its primary context has been released), and streams, events, modules and
//!   functions belong to the context that made them: used with another one current they are
//!   `CUDA_ERROR_INVALID_HANDLE` (an event may still be waited for from another context);
//! * a kernel that faults (its body returns an error, `CUDA_ERROR_ILLEGAL_ADDRESS` as a rule) makes the
//!   error sticky: every later call in its context fails with it, its queued work is dropped, until the
//!   primary context is released for the last time, which destroys what the context held;
//! * device memory (allocations and module globals) is memory the host cannot touch (see
//!   `gpu::sim_memory`): only queued copies and kernel bodies reach it;
//! * calls block where NVIDIA's documentation says they do: `cuMemFree` and `cuMemFreeHost` wait for
//!   the context's work, a copy from the device into pageable host memory returns once it is done (one
//!   from pageable memory to the device is staged at once), and the legacy default stream (handle 0)
//!   waits for, and is waited for by, the context's blocking streams. So a host thread that waits on
//!   a kernel which waits on that thread hangs here as on a GPU (upstream's #66817, #72440).

// The entry points keep the driver's names, so that the table is built from them by name
// (`sys::cuda_functions_in_scope!`).
#![allow(non_snake_case)]
use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::sys::{self, CuDevice, CuDevicePtr, CuHandle, CuResult, Driver, Functions};
use crate::backend::gpu::sim_calls::CallRecord;
use crate::backend::gpu::sim_memory;
use crate::util::elf;

/// A kernel's behaviour: called with the values of its arguments; an error is a fault on the device
/// (sticky for the kernel's context).
pub type KernelBody = Arc<dyn Fn(&[u64]) -> Result<(), CuResult> + Send + Sync>;

/// One simulated GPU.
#[derive(Clone, Copy, Debug)]
pub struct SimGpu {
    /// Compute capability major.
    pub major: i32,
    /// Compute capability minor.
    pub minor: i32,
    /// Streaming multiprocessors.
    pub sms: i32,
    /// Whether kernels may use a pinned range's host address (else the driver gives another).
    pub host_pointers: bool,
}

/// A launch as the driver saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The kernel's name.
    pub kernel: String,
    /// Blocks, threads per block, dynamic shared memory.
    pub geometry: (u32, u32, u32),
    /// The stream it was queued on.
    pub stream: usize,
}

/// Work queued on a stream.
enum Op {
    /// A copy of `len` bytes to `dst`.
    Copy {
        dst: usize,
        src: Source,
        len: usize,
    },
    Launch {
        body: Option<KernelBody>,
        args: Vec<u64>,
    },
    /// Waits until the `until`th piece of `on`'s work is done (an event, the legacy stream's order).
    Wait {
        on: Arc<Stream>,
        until: u64,
    },
}

/// Where a queued copy reads.
enum Source {
    /// Memory the copy reads when it runs (device, pinned or registered memory).
    At(usize),
    /// Pageable host memory, staged when the copy was queued, as the driver does.
    Staged(Vec<u8>),
}

/// One stream: its queue, run in order by a thread of its own ([`run_stream`]).
struct Stream {
    context: usize,
    /// Whether it is ordered with the legacy default stream (created without `CU_STREAM_NON_BLOCKING`).
    blocking: bool,
    progress: Mutex<Progress>,
    changed: Condvar,
}

#[derive(Default)]
struct Progress {
    /// Work not started, each piece with its number in the stream's order.
    queue: VecDeque<(u64, Op)>,
    /// Pieces of work queued so far, and done (or dropped) so far, in order.
    queued: u64,
    done: u64,
    /// The piece the stream's thread is running, if any.
    running: Option<u64>,
    /// Work up to this number was dropped: done once the piece running then ends.
    dropped: u64,
    /// Destroyed: the thread ends once the queue is empty.
    closed: bool,
    /// What a kernel body's panic said: the test fails where it waits for the stream.
    panicked: Option<String>,
}

/// Holds every stream's next piece of work back (see [`hold`]).
static HELD: AtomicBool = AtomicBool::new(false);

impl Stream {
    fn start(context: usize, blocking: bool) -> Arc<Stream> {
        let stream = Arc::new(Stream {
            context,
            blocking,
            progress: Mutex::new(Progress::default()),
            changed: Condvar::new(),
        });
        let worker = Arc::clone(&stream);
        std::thread::Builder::new()
            .name("sim-cuda-stream".into())
            .spawn(move || run_stream(&worker))
            .expect("a thread for a simulated stream");
        stream
    }

    fn progress(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `op`; its number in the stream's order.
    fn push(&self, op: Op) -> u64 {
        let mut progress = self.progress();
        progress.queued += 1;
        let number = progress.queued;
        progress.queue.push_back((number, op));
        self.changed.notify_all();
        number
    }

    /// The number of the last piece of work queued.
    fn queued(&self) -> u64 {
        self.progress().queued
    }

    fn is_idle(&self) -> bool {
        let progress = self.progress();
        progress.done >= progress.queued
    }

    /// Waits until the `until`th piece of work is done (or dropped); a kernel body's panic is raised
    /// again here, in the test.
    fn wait_for(&self, until: u64) {
        let mut progress = self.progress();
        while progress.done < until && progress.panicked.is_none() {
            progress = self.changed.wait(progress).unwrap_or_else(|e| e.into_inner());
        }
        if let Some(message) = &progress.panicked {
            panic!("a simulated kernel panicked: {message}");
        }
    }

    /// Drops the queued work, as a fault or a failed wait does on a GPU. A piece already running
    /// finishes first: until it has, the dropped work does not count as done (else work queued later
    /// would count as done when that piece ends).
    fn drop_work(&self) {
        let mut progress = self.progress();
        progress.queue.clear();
        progress.dropped = progress.queued;
        if progress.running.is_none() {
            progress.done = progress.queued;
        }
        self.changed.notify_all();
    }

    /// The stream is destroyed: its thread ends after the work queued so far.
    fn close(&self) {
        self.progress().closed = true;
        self.changed.notify_all();
    }
}

/// A stream's thread: runs its work in order, each piece as device code (see `gpu::sim_memory`).
fn run_stream(stream: &Stream) {
    loop {
        let (number, op) = {
            let mut progress = stream.progress();
            loop {
                if progress.panicked.is_some() || (progress.closed && progress.queue.is_empty()) {
                    return;
                }
                if !progress.queue.is_empty() && !HELD.load(Ordering::Acquire) {
                    let next = progress.queue.pop_front().expect("checked");
                    progress.running = Some(next.0);
                    break next;
                }
                progress = if progress.queue.is_empty() {
                    // `push` and `close` wake it.
                    stream.changed.wait(progress).unwrap_or_else(|e| e.into_inner())
                } else {
                    // Held: it looks again now and then, as `hold` does not wake it.
                    stream
                        .changed
                        .wait_timeout(progress, Duration::from_millis(1))
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                };
            }
        };
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_op(stream, op)));
        let mut progress = stream.progress();
        progress.running = None;
        match ran {
            // Work dropped while this piece ran is done now too; work queued after the drop has
            // higher numbers and is still to run.
            Ok(()) => progress.done = progress.done.max(number).max(progress.dropped),
            Err(payload) => {
                let message = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                progress.panicked = Some(message);
            }
        }
        stream.changed.notify_all();
    }
}

fn run_op(stream: &Stream, op: Op) {
    match op {
        Op::Copy { dst, src, len } => sim_memory::device_access(|| match src {
            // SAFETY: the backend queued a copy between ranges it owns for `len` bytes, valid until the
            // stream's work is done, which it is not yet.
            Source::At(src) => unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) },
            // SAFETY: as above, for the destination; the staged bytes are `len` long.
            Source::Staged(bytes) => unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst as *mut u8, len) },
        }),
        Op::Launch { body, args } => {
            if let Some(Err(code)) = body.map(|body| sim_memory::device_access(|| body(&args))) {
                with(|w| fault(w, stream.context, code));
            }
        }
        Op::Wait { on, until } => on.wait_for(until),
    }
}

/// Holds the streams' work back (`true`: what is queued waits) or lets it go (`false`).
pub fn hold(on: bool) {
    HELD.store(on, Ordering::Release);
}

#[derive(Default)]
pub(super) struct Module {
    kernels: HashMap<String, usize>,
    /// Global name → (address, size), in memory the module owns.
    pub(super) globals: HashMap<String, (usize, usize)>,
    /// Globals of local binding: placed and relocated like the others, but `cuModuleGetGlobal` does
    /// not find them, as NVIDIA's driver does not (clang-16 makes hidden globals local under
    /// `-foffload-lto`).
    local: std::collections::HashSet<String>,
}

impl Module {
    /// Whether the global `name` is one that `cuModuleGetGlobal` does not find.
    #[cfg_attr(not(feature = "rpc"), allow(dead_code))] // only the host-services tests ask
    pub(super) fn is_local(&self, name: &str) -> bool {
        self.local.contains(name)
    }
}

/// Everything the simulated driver holds.
#[derive(Default)]
pub struct World {
    gpus: Vec<SimGpu>,
    /// `cuInit`'s answer.
    init_result: CuResult,
    next_handle: usize,
    /// Calls per entry point, in order, and the one armed to fail.
    pub record: CallRecord<CuResult>,
    retained: HashMap<CuDevice, usize>,
    contexts: HashMap<usize, CuDevice>,
    /// Device, managed and pinned host allocations: address → size.
    pub memory: HashMap<usize, usize>,
    /// Which of them are host memory (pinned or managed); the others are device memory.
    host_blocks: HashSet<usize>,
    /// Bytes that may be allocated at once (device, managed and pinned together), when a test sets a
    /// limit; past it allocations fail with `CUDA_ERROR_OUT_OF_MEMORY`.
    pub capacity: Option<usize>,
    /// Driver calls that would deadlock on a real GPU (see `enter`); a test fails when any were made.
    #[cfg(feature = "rpc")]
    pub violations: Vec<String>,
    /// Host ranges registered with `cuMemHostRegister`, with the flags they were registered with.
    pub registered: HashMap<usize, c_uint>,
    /// Their sizes.
    registered_bytes: HashMap<usize, usize>,
    pub(super) modules: HashMap<usize, Module>,
    functions: HashMap<usize, String>,
    /// Dynamic shared memory each function may be launched with, where raised above the default.
    dynamic_shared: HashMap<usize, u32>,
    streams: HashMap<usize, Arc<Stream>>,
    /// Each context's legacy default stream (handle 0), made when first used.
    legacy: HashMap<usize, Arc<Stream>>,
    /// Event → (stream recorded on, the piece of its work the recording follows).
    events: HashMap<usize, Option<(Arc<Stream>, u64)>>,
    bodies: HashMap<String, (usize, KernelBody)>,
    /// Every launch, in order.
    pub launches: Vec<Launch>,
    /// Limits set with `cuCtxSetLimit`.
    pub limits: HashMap<c_int, usize>,
    /// Peer access enabled: (context, peer context).
    pub peers: HashSet<(usize, usize)>,
    /// This world's number, so that a context made current on a thread in an earlier world is not
    /// current in this one.
    generation: usize,
    /// The context each stream, event, module, function and allocation belongs to.
    owners: HashMap<usize, usize>,
    /// Contexts whose kernel faulted, with the error every later call in them gets.
    sticky: HashMap<usize, CuResult>,
}

/// Calls that need no current context.
const CONTEXT_FREE: [&str; 14] = [
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDeviceCanAccessPeer",
    "cuDevicePrimaryCtxGetState",
    "cuDevicePrimaryCtxSetFlags_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxSetCurrent",
    "cuMemHostUnregister",
];

std::thread_local! {
    /// The context current on this thread, with the world it was made current in.
    static CURRENT: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// Numbers the worlds `reset` makes.
static GENERATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

/// The context current on this thread, if it is alive: else `CUDA_ERROR_INVALID_CONTEXT`.
fn current(w: &World) -> Result<usize, CuResult> {
    let (generation, context) = CURRENT.with(|c| c.get());
    let alive = generation == w.generation
        && w.contexts
            .get(&context)
            .is_some_and(|device| w.retained.get(device).copied().unwrap_or(0) > 0);
    if alive {
        Ok(context)
    } else {
        Err(sys::CUDA_ERROR_INVALID_CONTEXT)
    }
}

/// Refuses `handle` when it belongs to a context other than the current one.
fn owned(w: &World, handle: usize) -> Result<(), CuResult> {
    let context = current(w)?;
    match w.owners.get(&handle) {
        Some(&owner) if owner != context => Err(sys::CUDA_ERROR_INVALID_HANDLE),
        _ => Ok(()),
    }
}

static WORLD: Mutex<Option<World>> = Mutex::new(None);
/// Tests that use the simulated driver run one at a time.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// The simulated driver's state.
pub fn world() -> MutexGuard<'static, Option<World>> {
    WORLD.lock().unwrap_or_else(|e| e.into_inner())
}

fn with<R>(f: impl FnOnce(&mut World) -> R) -> R {
    let _not_the_plugins = crate::util::alloc_count::pause();
    f(world().as_mut().expect("the simulated driver is reset first"))
}

/// Starts afresh with `gpus` (and `cuInit` answering `init_result`). What a failed test left allocated
/// is leaked, not freed: a server it left registered may still read its mailbox.
pub fn reset(gpus: &[SimGpu], init_result: CuResult) {
    let mut slot = world();
    hold(false);
    // The last world's streams end: their work is dropped, their threads return.
    for stream in slot.iter().flat_map(|w| w.streams.values().chain(w.legacy.values())) {
        stream.drop_work();
        stream.close();
    }
    *slot = Some(World {
        gpus: gpus.to_vec(),
        init_result,
        next_handle: 0x1000,
        generation: GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        ..World::default()
    });
}

/// The next call of `call` fails with `code` (once).
pub fn fail_next(call: &'static str, code: CuResult) {
    assert!(
        Functions::NAMES.contains(&call),
        "{call} is not an entry point of sys::Functions"
    );
    with(|w| w.record.arm(call, code));
}

/// Runs `body` for every launch of a kernel named `name`, with its first `args` argument values.
pub fn register_kernel(name: &str, args: usize, body: KernelBody) {
    with(|w| w.bodies.insert(name.to_string(), (args, body)));
}

/// Forgets every kernel body (and what their closures hold).
pub fn clear_kernels() {
    with(|w| w.bodies.clear());
}

/// What is still allocated or alive: (memory blocks, modules, streams, events, retained contexts).
pub fn live() -> (usize, usize, usize, usize, usize) {
    with(|w| {
        (
            w.memory.len(),
            w.modules.len(),
            w.streams.len(),
            w.events.len(),
            w.retained.values().sum(),
        )
    })
}

/// The driver's allocation and free calls, which must not be made while a kernel that may call the
/// host is in flight.
#[cfg(feature = "rpc")]
const MEMORY_CALLS: [&str; 5] = [
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemAllocHost_v2",
    "cuMemFreeHost",
    "cuMemAllocManaged",
];

/// Counts a call, and fails it when armed. An allocation or free made while serving a kernel's host
/// call (so while that kernel is in flight) is recorded in `violations` and fails: on a real GPU it can
/// deadlock.
fn enter(w: &mut World, call: &'static str) -> Result<(), CuResult> {
    let armed = w.record.enter(call);
    #[cfg(feature = "rpc")]
    if MEMORY_CALLS.contains(&call) && crate::rpc::calls::this_thread_is_serving() {
        w.violations.push(format!(
            "{call} while serving a host call of a running kernel: would deadlock on a real GPU"
        ));
        return Err(sys::CUDA_ERROR_UNKNOWN);
    }
    armed?;
    if !CONTEXT_FREE.contains(&call) {
        let context = current(w)?;
        if let Some(&code) = w.sticky.get(&context) {
            return Err(code);
        }
    }
    Ok(())
}

/// Records that `handle` belongs to the current context.
fn own(w: &mut World, handle: usize) {
    if let Ok(context) = current(w) {
        w.owners.insert(handle, context);
    }
}

/// A kernel of `stream` faulted with `code`: the error sticks to the stream's context and the
/// context's queued work is dropped, as a GPU's is.
fn fault(w: &mut World, context: usize, code: CuResult) {
    if !w.contexts.contains_key(&context) {
        return; // a stream of an earlier world
    }
    w.sticky.insert(context, code);
    for stream in streams_of(w, context) {
        stream.drop_work();
    }
}

/// The streams of `context`, its legacy default stream included.
fn streams_of(w: &World, context: usize) -> Vec<Arc<Stream>> {
    w.streams
        .values()
        .chain(w.legacy.get(&context))
        .filter(|stream| stream.context == context)
        .cloned()
        .collect()
}

/// The last release of a faulted context destroys what it held, as the driver's context destruction
/// does (the plugin cannot release them one by one: every call in the context fails). A context
/// without a fault keeps what was not released, so that the tests see the plugin's leaks.
fn destroy_faulted_context(w: &mut World, context: usize) {
    if w.sticky.remove(&context).is_none() {
        return;
    }
    let held: Vec<usize> = w
        .owners
        .iter()
        .filter(|(_, &owner)| owner == context)
        .map(|(&handle, _)| handle)
        .collect();
    for handle in held {
        w.owners.remove(&handle);
        if let Some(stream) = w.streams.remove(&handle) {
            stream.close();
        }
        w.events.remove(&handle);
        w.functions.remove(&handle);
        if let Some(module) = w.modules.remove(&handle) {
            unmap_globals(&module);
        }
        if w.memory.contains_key(&handle) {
            free(w, handle);
        }
    }
    if let Some(stream) = w.legacy.remove(&context) {
        stream.close();
    }
}

/// Gives back the device memory of a module's globals.
fn unmap_globals(module: &Module) {
    for (ptr, _) in module.globals.values() {
        sim_memory::unmap(*ptr);
    }
}

fn handle(w: &mut World) -> usize {
    w.next_handle += 0x10;
    w.next_handle
}

/// Runs `f` on the world after counting `call`; a failure armed for it is returned instead.
fn call(name: &'static str, f: impl FnOnce(&mut World) -> CuResult) -> CuResult {
    with(|w| match enter(w, name) {
        Ok(()) => f(w),
        Err(code) => code,
    })
}

fn gpu(w: &World, device: CuDevice) -> Option<SimGpu> {
    usize::try_from(device).ok().and_then(|i| w.gpus.get(i)).copied()
}

/// The stream `handle` names in the current context: 0 is the context's legacy default stream.
fn stream_of(w: &mut World, handle: CuHandle) -> Result<Arc<Stream>, CuResult> {
    if handle.is_null() {
        let context = current(w)?;
        return Ok(Arc::clone(
            w.legacy.entry(context).or_insert_with(|| Stream::start(context, true)),
        ));
    }
    owned(w, handle as usize)?;
    w.streams
        .get(&(handle as usize))
        .cloned()
        .ok_or(sys::CUDA_ERROR_INVALID_VALUE)
}

/// Queues `op` on `stream`, after the work it must follow by the legacy default stream's rules: work
/// on the legacy stream waits for the context's blocking streams, and theirs for it. Its number.
fn enqueue(w: &World, stream: &Arc<Stream>, op: Op) -> u64 {
    let legacy = w.legacy.get(&stream.context);
    if legacy.is_some_and(|legacy| Arc::ptr_eq(legacy, stream)) {
        for other in streams_of(w, stream.context) {
            if other.blocking && !Arc::ptr_eq(&other, stream) && !other.is_idle() {
                let until = other.queued();
                stream.push(Op::Wait { on: other, until });
            }
        }
    } else if let Some(legacy) = legacy.filter(|legacy| stream.blocking && !legacy.is_idle()) {
        stream.push(Op::Wait {
            on: Arc::clone(legacy),
            until: legacy.queued(),
        });
    }
    stream.push(op)
}

/// What a wait on a stream answers once done: the context's sticky error, if its work faulted.
fn after_wait(context: usize) -> CuResult {
    with(|w| w.sticky.get(&context).copied().unwrap_or(sys::CUDA_SUCCESS))
}

/// Whether `ptr..ptr + len` lies in one allocation or module global.
fn known_range(w: &World, ptr: usize, len: usize) -> bool {
    w.memory
        .iter()
        .any(|(&start, &size)| ptr >= start && ptr + len <= start + size)
        || w.modules
            .values()
            .flat_map(|m| m.globals.values())
            .any(|&(start, size)| ptr >= start && ptr + len <= start + size)
}

unsafe extern "C" fn cuInit(_flags: c_uint) -> CuResult {
    call("cuInit", |w| w.init_result)
}

unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CuResult {
    call("cuDriverGetVersion", |_| {
        // SAFETY: the backend passes a writable int.
        unsafe { *version = 12020 };
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuGetErrorName(error: CuResult, name: *mut *const c_char) -> CuResult {
    let text: &'static CStr = match error {
        1 => c"CUDA_ERROR_INVALID_VALUE",
        2 => c"CUDA_ERROR_OUT_OF_MEMORY",
        4 => c"CUDA_ERROR_DEINITIALIZED",
        100 => c"CUDA_ERROR_NO_DEVICE",
        200 => c"CUDA_ERROR_INVALID_IMAGE",
        201 => c"CUDA_ERROR_INVALID_CONTEXT",
        400 => c"CUDA_ERROR_INVALID_HANDLE",
        600 => c"CUDA_ERROR_NOT_READY",
        500 => c"CUDA_ERROR_NOT_FOUND",
        700 => c"CUDA_ERROR_ILLEGAL_ADDRESS",
        999 => c"CUDA_ERROR_UNKNOWN",
        _ => return sys::CUDA_ERROR_INVALID_VALUE,
    };
    // SAFETY: the backend passes a writable pointer.
    unsafe { *name = text.as_ptr() };
    sys::CUDA_SUCCESS
}

unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CuResult {
    call("cuDeviceGetCount", |w| {
        // SAFETY: writable per the API.
        unsafe { *count = w.gpus.len() as c_int };
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuDeviceGet(device: *mut CuDevice, ordinal: c_int) -> CuResult {
    call("cuDeviceGet", |w| {
        if gpu(w, ordinal).is_none() {
            return 101; // CUDA_ERROR_INVALID_DEVICE
        }
        // SAFETY: writable per the API.
        unsafe { *device = ordinal };
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, device: CuDevice) -> CuResult {
    call("cuDeviceGetName", |w| {
        let Some(_) = gpu(w, device) else { return 101 };
        let text = format!("Simulated GPU {device}\0");
        let n = text.len().min(len.max(0) as usize);
        // SAFETY: `name` is writable for `len` bytes per the API.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), name.cast(), n) };
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuDeviceGetAttribute(value: *mut c_int, which: c_int, device: CuDevice) -> CuResult {
    call("cuDeviceGetAttribute", |w| {
        let Some(g) = gpu(w, device) else { return 101 };
        use sys::attribute as a;
        let v = match which {
            a::MAX_THREADS_PER_BLOCK | a::MAX_BLOCK_DIM_X => 1024,
            a::MAX_BLOCK_DIM_Y => 1024,
            a::MAX_BLOCK_DIM_Z => 64,
            a::MAX_GRID_DIM_X => i32::MAX,
            a::MAX_GRID_DIM_Y | a::MAX_GRID_DIM_Z => 65535,
            a::WARP_SIZE => 32,
            a::MULTIPROCESSOR_COUNT => g.sms,
            a::COMPUTE_CAPABILITY_MAJOR => g.major,
            a::COMPUTE_CAPABILITY_MINOR => g.minor,
            a::UNIFIED_ADDRESSING | a::MANAGED_MEMORY | a::MEMORY_POOLS_SUPPORTED => 1,
            a::CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM => i32::from(g.host_pointers),
            a::MAX_SHARED_MEMORY_PER_BLOCK => 48 << 10,
            a::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN => shared_opt_in_bytes(g),
            _ => 0,
        };
        // SAFETY: writable per the API.
        unsafe { *value = v };
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, device: CuDevice) -> CuResult {
    call("cuDeviceTotalMem_v2", |w| {
        let Some(_) = gpu(w, device) else { return 101 };
        // SAFETY: writable per the API.
        unsafe { *bytes = 80 << 30 };
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuDeviceCanAccessPeer(can: *mut c_int, device: CuDevice, peer: CuDevice) -> CuResult {
    call("cuDeviceCanAccessPeer", |w| {
        if gpu(w, device).is_none() || gpu(w, peer).is_none() {
            return 101;
        }
        // SAFETY: writable per the API.
        unsafe { *can = 1 };
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuDevicePrimaryCtxGetState(device: CuDevice, flags: *mut c_uint, active: *mut c_int) -> CuResult {
    call("cuDevicePrimaryCtxGetState", |w| {
        // SAFETY: writable per the API.
        unsafe {
            *flags = sys::CTX_SCHED_BLOCKING_SYNC;
            *active = c_int::from(w.retained.get(&device).copied().unwrap_or(0) > 0);
        }
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuDevicePrimaryCtxSetFlags_v2(device: CuDevice, _flags: c_uint) -> CuResult {
    call("cuDevicePrimaryCtxSetFlags_v2", |w| {
        if gpu(w, device).is_some() {
            0
        } else {
            101
        }
    })
}

fn context_of(device: CuDevice) -> usize {
    0x7000_0000 + device as usize * 0x100
}

unsafe extern "C" fn cuDevicePrimaryCtxRetain(context: *mut CuHandle, device: CuDevice) -> CuResult {
    call("cuDevicePrimaryCtxRetain", |w| {
        if gpu(w, device).is_none() {
            return 101;
        }
        *w.retained.entry(device).or_default() += 1;
        w.contexts.insert(context_of(device), device);
        // SAFETY: writable per the API.
        unsafe { *context = context_of(device) as CuHandle };
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(device: CuDevice) -> CuResult {
    call("cuDevicePrimaryCtxRelease_v2", |w| match w.retained.get_mut(&device) {
        Some(n) if *n > 0 => {
            *n -= 1;
            if *n == 0 {
                destroy_faulted_context(w, context_of(device));
            }
            sys::CUDA_SUCCESS
        }
        _ => sys::CUDA_ERROR_INVALID_CONTEXT,
    })
}

unsafe extern "C" fn cuCtxSetCurrent(context: CuHandle) -> CuResult {
    call("cuCtxSetCurrent", |w| {
        let context = context as usize;
        if context != 0 && !w.contexts.contains_key(&context) {
            return sys::CUDA_ERROR_INVALID_CONTEXT;
        }
        let generation = w.generation;
        CURRENT.with(|c| c.set((generation, context)));
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuCtxSetLimit(limit: c_int, value: usize) -> CuResult {
    call("cuCtxSetLimit", |w| {
        w.limits.insert(limit, value);
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuCtxEnablePeerAccess(peer: CuHandle, _flags: c_uint) -> CuResult {
    call("cuCtxEnablePeerAccess", |w| {
        if !w.contexts.contains_key(&(peer as usize)) {
            return sys::CUDA_ERROR_INVALID_CONTEXT;
        }
        let Ok(context) = current(w) else {
            return sys::CUDA_ERROR_INVALID_CONTEXT;
        };
        w.peers.insert((context, peer as usize));
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut CuHandle,
    image: *const c_void,
    _options: c_uint,
    _keys: *mut c_int,
    _values: *mut *mut c_void,
) -> CuResult {
    call("cuModuleLoadDataEx", |w| {
        // SAFETY: an image is an ELF file or PTX text; both start with at least 4 readable bytes.
        let magic = unsafe { std::slice::from_raw_parts(image.cast::<u8>(), 4) };
        if magic != b"\x7fELF" {
            // PTX, read as the driver reads it: up to the NUL the caller must have put at its end.
            // SAFETY: as the driver would, this relies on that NUL.
            let text = unsafe { CStr::from_ptr(image.cast()) }.to_string_lossy().into_owned();
            if !text.contains(".version") {
                return sys::CUDA_ERROR_INVALID_IMAGE;
            }
            let mut loaded = Module::default();
            for name in text.split(".entry ").skip(1) {
                let name: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                let function = handle(w);
                own(w, function);
                w.functions.insert(function, name.clone());
                loaded.kernels.insert(name, function);
            }
            let id = handle(w);
            own(w, id);
            w.modules.insert(id, loaded);
            // SAFETY: writable per the API.
            unsafe { *module = id as CuHandle };
            return sys::CUDA_SUCCESS;
        }
        // SAFETY: the image starts with an ELF header (checked next); its full length is read from
        // the header's section table, within the bytes the backend passed, which are a whole cubin
        // in these tests.
        let header = unsafe { std::slice::from_raw_parts(image.cast::<u8>(), 64) };
        let Some(h) = elf::header(header) else {
            return sys::CUDA_ERROR_INVALID_IMAGE;
        };
        if h.machine != super::cubin::EM_CUDA {
            return sys::CUDA_ERROR_INVALID_IMAGE;
        }
        // The section headers end the file (as ptxas lays a cubin out).
        let shoff = u64::from_le_bytes(header[40..48].try_into().unwrap()) as usize;
        let shnum = u16::from_le_bytes(header[60..62].try_into().unwrap()) as usize;
        // SAFETY: as above.
        let bytes = unsafe { std::slice::from_raw_parts(image.cast::<u8>(), shoff + shnum * 64) };
        let Some(parsed) = elf::Image::parse(bytes) else {
            return sys::CUDA_ERROR_INVALID_IMAGE;
        };
        let mut loaded = Module::default();
        let mut placed = Vec::new();
        for (name, symbol) in parsed.symbols() {
            let name = String::from_utf8_lossy(name).into_owned();
            if symbol.kind == 2 && symbol.size > 0 {
                let function = handle(w);
                own(w, function);
                w.functions.insert(function, name.clone());
                loaded.kernels.insert(name, function);
            } else if symbol.kind == 1 && symbol.size > 0 {
                let Some(ptr) = sim_memory::map(symbol.size as usize) else {
                    return sys::CUDA_ERROR_OUT_OF_MEMORY;
                };
                if let Some(initial) = parsed.symbol_bytes(&symbol) {
                    // SAFETY: `ptr` holds `symbol.size` bytes, as many as `initial`; the driver writes
                    // device memory as device code does.
                    sim_memory::device_access(|| unsafe {
                        std::ptr::copy_nonoverlapping(initial.as_ptr(), ptr as *mut u8, initial.len())
                    });
                }
                placed.push((symbol, ptr));
                if symbol.is_local() {
                    loaded.local.insert(name.clone());
                }
                loaded.globals.insert(name, (ptr, symbol.size as usize));
            }
        }
        // A global initialised with another's address (`T *p = &object;`) carries a 64-bit global
        // address relocation (R_CUDA_G64) that the driver applies at load.
        const R_CUDA_G64: u32 = 4;
        for relocation in parsed.relocations().into_iter().filter(|r| r.kind == R_CUDA_G64) {
            let patched = placed.iter().find(|(symbol, _)| {
                symbol.section() == relocation.section
                    && (symbol.value..symbol.value + symbol.size).contains(&relocation.offset)
                    && relocation.offset + 8 <= symbol.value + symbol.size
            });
            let target = loaded.globals.get(String::from_utf8_lossy(relocation.symbol).as_ref());
            if let (Some(&(symbol, ptr)), Some(&(address, _))) = (patched, target) {
                let value = (address as i64 + relocation.addend) as u64;
                let at = ptr + (relocation.offset - symbol.value) as usize;
                // SAFETY: `at..at + 8` lies inside the global's allocation (checked above).
                sim_memory::device_access(|| unsafe { (at as *mut u64).write_unaligned(value) });
            }
        }
        let id = handle(w);
        own(w, id);
        w.modules.insert(id, loaded);
        // SAFETY: writable per the API.
        unsafe { *module = id as CuHandle };
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuModuleUnload(module: CuHandle) -> CuResult {
    call("cuModuleUnload", |w| {
        match owned(w, module as usize).map(|()| w.modules.remove(&(module as usize))) {
            Err(code) => code,
            Ok(Some(m)) => {
                unmap_globals(&m);
                for f in m.kernels.values() {
                    w.functions.remove(f);
                    w.owners.remove(f);
                }
                w.owners.remove(&(module as usize));
                sys::CUDA_SUCCESS
            }
            Ok(None) => sys::CUDA_ERROR_INVALID_VALUE,
        }
    })
}

unsafe extern "C" fn cuModuleGetFunction(function: *mut CuHandle, module: CuHandle, name: *const c_char) -> CuResult {
    call("cuModuleGetFunction", |w| {
        if let Err(code) = owned(w, module as usize) {
            return code;
        }
        // SAFETY: NUL-terminated per the API.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        match w
            .modules
            .get(&(module as usize))
            .and_then(|m| m.kernels.get(name.as_ref()))
        {
            Some(&f) => {
                // SAFETY: writable per the API.
                unsafe { *function = f as CuHandle };
                sys::CUDA_SUCCESS
            }
            None => sys::CUDA_ERROR_NOT_FOUND,
        }
    })
}

unsafe extern "C" fn cuModuleGetGlobal_v2(
    ptr: *mut CuDevicePtr,
    bytes: *mut usize,
    module: CuHandle,
    name: *const c_char,
) -> CuResult {
    call("cuModuleGetGlobal_v2", |w| {
        if let Err(code) = owned(w, module as usize) {
            return code;
        }
        // SAFETY: NUL-terminated per the API.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        match w
            .modules
            .get(&(module as usize))
            .filter(|m| !m.local.contains(name.as_ref()))
            .and_then(|m| m.globals.get(name.as_ref()))
        {
            Some(&(addr, size)) => {
                // SAFETY: writable per the API.
                unsafe {
                    *ptr = addr as CuDevicePtr;
                    *bytes = size;
                }
                sys::CUDA_SUCCESS
            }
            None => sys::CUDA_ERROR_NOT_FOUND,
        }
    })
}

/// Static shared memory of every simulated kernel (the OpenMP device runtime's team state has some).
pub const STATIC_SHARED_BYTES: u32 = 2 << 10;

/// What a block may have in all once a kernel opts in, per compute capability (NVIDIA's tables).
fn shared_opt_in_bytes(gpu: SimGpu) -> i32 {
    match gpu.major {
        9 => 227 << 10,
        8 if gpu.minor == 0 => 163 << 10,
        8 => 99 << 10,
        7 => 96 << 10,
        _ => 48 << 10,
    }
}

unsafe extern "C" fn cuFuncGetAttribute(value: *mut c_int, which: c_int, function: CuHandle) -> CuResult {
    call("cuFuncGetAttribute", |w| {
        if !w.functions.contains_key(&(function as usize)) {
            return sys::CUDA_ERROR_INVALID_VALUE;
        }
        if let Err(code) = owned(w, function as usize) {
            return code;
        }
        let answer = match which {
            sys::FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK => 896,
            sys::FUNC_ATTRIBUTE_SHARED_SIZE_BYTES => STATIC_SHARED_BYTES as c_int,
            _ => return sys::CUDA_ERROR_INVALID_VALUE,
        };
        // SAFETY: writable per the API.
        unsafe { *value = answer };
        sys::CUDA_SUCCESS
    })
}

/// The device whose context is current on this thread.
fn current_gpu(w: &World) -> Option<SimGpu> {
    let context = current(w).ok()?;
    gpu(w, *w.contexts.get(&context)?)
}

unsafe extern "C" fn cuFuncSetAttribute(function: CuHandle, which: c_int, value: c_int) -> CuResult {
    call("cuFuncSetAttribute", |w| {
        let function = function as usize;
        if !w.functions.contains_key(&function) || which != sys::FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES {
            return sys::CUDA_ERROR_INVALID_VALUE;
        }
        if let Err(code) = owned(w, function) {
            return code;
        }
        let Some(gpu) = current_gpu(w) else {
            return sys::CUDA_ERROR_INVALID_VALUE;
        };
        // As NVIDIA's driver: the kernel's static and dynamic shared memory must fit a block.
        if value < 0 || i64::from(value) + i64::from(STATIC_SHARED_BYTES) > i64::from(shared_opt_in_bytes(gpu)) {
            return sys::CUDA_ERROR_INVALID_VALUE;
        }
        w.dynamic_shared.insert(function, value as u32);
        sys::CUDA_SUCCESS
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn cuLaunchKernel(
    function: CuHandle,
    grid_x: c_uint,
    _grid_y: c_uint,
    _grid_z: c_uint,
    block_x: c_uint,
    _block_y: c_uint,
    _block_z: c_uint,
    shared: c_uint,
    stream: CuHandle,
    params: *mut *mut c_void,
    _extra: *mut *mut c_void,
) -> CuResult {
    let prepared = with(|w| {
        enter(w, "cuLaunchKernel")?;
        let name = w
            .functions
            .get(&(function as usize))
            .cloned()
            .ok_or(sys::CUDA_ERROR_INVALID_VALUE)?;
        owned(w, function as usize)?;
        stream_of(w, stream)?;
        // Above 48 KiB, dynamic shared memory needs the kernel's limit raised first.
        let allowed = w
            .dynamic_shared
            .get(&(function as usize))
            .copied()
            .unwrap_or(sys::DEFAULT_DYNAMIC_SHARED_LIMIT);
        if shared > allowed {
            return Err(sys::CUDA_ERROR_INVALID_VALUE);
        }
        w.launches.push(Launch {
            kernel: name.clone(),
            geometry: (grid_x, block_x, shared),
            stream: stream as usize,
        });
        let (count, body) = match w.bodies.get(&name) {
            Some((count, body)) => (*count, Some(Arc::clone(body))),
            None => (0, None),
        };
        // The driver copies the parameter values now, as the real one does.
        // SAFETY: `params` holds a pointer to each argument's 8-byte value (the backend's contract).
        let args = (0..count).map(|i| unsafe { *(*params.add(i)).cast::<u64>() }).collect();
        let stream = stream_of(w, stream)?;
        enqueue(w, &stream, Op::Launch { body, args });
        Ok(())
    });
    match prepared {
        Ok(()) => sys::CUDA_SUCCESS,
        Err(code) => code,
    }
}

/// Where an allocation lives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Memory {
    /// On the device: the host cannot touch it.
    Device,
    /// Pinned or managed host memory.
    Host,
}

fn alloc(w: &mut World, bytes: usize, memory: Memory) -> Result<usize, CuResult> {
    let live: usize = w.memory.values().sum();
    if bytes > 1 << 40 || w.capacity.is_some_and(|capacity| live + bytes > capacity) {
        return Err(sys::CUDA_ERROR_OUT_OF_MEMORY);
    }
    let ptr = match memory {
        Memory::Device => sim_memory::map(bytes).ok_or(sys::CUDA_ERROR_OUT_OF_MEMORY)?,
        Memory::Host => {
            // SAFETY: calloc has no preconditions.
            let ptr = unsafe { libc::calloc(1, bytes.max(1)) } as usize;
            w.host_blocks.insert(ptr);
            ptr
        }
    };
    w.memory.insert(ptr, bytes);
    own(w, ptr);
    Ok(ptr)
}

fn free(w: &mut World, ptr: usize) -> CuResult {
    if w.memory.remove(&ptr).is_none() {
        return sys::CUDA_ERROR_INVALID_VALUE;
    }
    w.owners.remove(&ptr);
    if w.host_blocks.remove(&ptr) {
        // SAFETY: from calloc in `alloc`.
        unsafe { libc::free(ptr as *mut c_void) };
    } else {
        sim_memory::unmap(ptr);
    }
    sys::CUDA_SUCCESS
}

/// `cuMemFree` and `cuMemFreeHost` wait for the work of the current context, as NVIDIA's do: then
/// free.
fn free_after_the_contexts_work(name: &'static str, ptr: usize) -> CuResult {
    let pending = with(|w| {
        enter(w, name)?;
        let context = current(w)?;
        Ok(streams_of(w, context)
            .into_iter()
            .map(|stream| {
                let until = stream.queued();
                (stream, until)
            })
            .collect::<Vec<_>>())
    });
    match pending {
        Ok(pending) => {
            for (stream, until) in pending {
                stream.wait_for(until);
            }
            with(|w| free(w, ptr))
        }
        Err(code) => code,
    }
}

unsafe extern "C" fn cuMemAlloc_v2(ptr: *mut CuDevicePtr, bytes: usize) -> CuResult {
    call("cuMemAlloc_v2", |w| match alloc(w, bytes, Memory::Device) {
        // SAFETY: writable per the API.
        Ok(p) => unsafe {
            *ptr = p as CuDevicePtr;
            0
        },
        Err(code) => code,
    })
}

/// Where the simulated device sees pinned host memory when it cannot use the host address: the host
/// address plus this (a device address that no host pointer equals).
pub const DEVICE_ALIAS_OFFSET: usize = 1 << 56;

unsafe extern "C" fn cuMemHostGetDevicePointer_v2(
    dptr: *mut CuDevicePtr,
    host: *mut c_void,
    _flags: c_uint,
) -> CuResult {
    call("cuMemHostGetDevicePointer_v2", |w| {
        let at = host as usize;
        // Registered memory has a device address only when mapped (`CU_MEMHOSTREGISTER_DEVICEMAP`).
        let mapped = w
            .registered
            .get(&at)
            .is_some_and(|flags| flags & sys::MEMHOSTREGISTER_DEVICEMAP != 0);
        let pinned = mapped || w.memory.contains_key(&at);
        if !pinned {
            return sys::CUDA_ERROR_INVALID_VALUE;
        }
        // SAFETY: writable per the API.
        unsafe { *dptr = (at + DEVICE_ALIAS_OFFSET) as CuDevicePtr };
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuMemFree_v2(ptr: CuDevicePtr) -> CuResult {
    free_after_the_contexts_work("cuMemFree_v2", ptr as usize)
}

unsafe extern "C" fn cuMemAllocHost_v2(ptr: *mut *mut c_void, bytes: usize) -> CuResult {
    call("cuMemAllocHost_v2", |w| match alloc(w, bytes, Memory::Host) {
        // SAFETY: writable per the API.
        Ok(p) => unsafe {
            *ptr = p as *mut c_void;
            0
        },
        Err(code) => code,
    })
}

unsafe extern "C" fn cuMemFreeHost(ptr: *mut c_void) -> CuResult {
    free_after_the_contexts_work("cuMemFreeHost", ptr as usize)
}

unsafe extern "C" fn cuMemAllocManaged(ptr: *mut CuDevicePtr, bytes: usize, _flags: c_uint) -> CuResult {
    call("cuMemAllocManaged", |w| match alloc(w, bytes, Memory::Host) {
        // SAFETY: writable per the API.
        Ok(p) => unsafe {
            *ptr = p as CuDevicePtr;
            0
        },
        Err(code) => code,
    })
}

unsafe extern "C" fn cuMemHostRegister_v2(ptr: *mut c_void, bytes: usize, flags: c_uint) -> CuResult {
    call("cuMemHostRegister_v2", |w| match w.registered.entry(ptr as usize) {
        std::collections::hash_map::Entry::Vacant(entry) => {
            entry.insert(flags);
            w.registered_bytes.insert(ptr as usize, bytes);
            0
        }
        std::collections::hash_map::Entry::Occupied(_) => sys::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
    })
}

unsafe extern "C" fn cuMemHostUnregister(ptr: *mut c_void) -> CuResult {
    call("cuMemHostUnregister", |w| {
        if w.registered.remove(&(ptr as usize)).is_some() {
            w.registered_bytes.remove(&(ptr as usize));
            0
        } else {
            713 // CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
        }
    })
}

/// Which side of a copy is host memory, for the driver's rules on pageable memory.
#[derive(Clone, Copy, PartialEq, Eq)]
enum HostSide {
    Neither,
    Source,
    Destination,
}

/// Whether `ptr..ptr + len` is pinned host memory (allocated pinned or managed, or registered).
fn is_pinned(w: &World, ptr: usize, len: usize) -> bool {
    let within = |start: usize, size: usize| ptr >= start && ptr + len <= start + size;
    w.host_blocks.iter().any(|start| within(*start, w.memory[start]))
        || w.registered_bytes.iter().any(|(&start, &size)| within(start, size))
}

/// Queues a copy after checking that the device side is simulated memory. From pageable host memory
/// the bytes are staged now; into pageable host memory the call returns once the copy is done (after
/// the stream's earlier work), as NVIDIA documents for its asynchronous copies.
fn copy(
    name: &'static str,
    dst: usize,
    src: usize,
    len: usize,
    device_side: &[usize],
    host: HostSide,
    stream: CuHandle,
) -> CuResult {
    let queued = with(|w| {
        enter(w, name)?;
        let stream = stream_of(w, stream)?;
        if !device_side.iter().all(|&p| known_range(w, p, len)) {
            return Err(sys::CUDA_ERROR_INVALID_VALUE);
        }
        let (source, wait) = match host {
            HostSide::Source if !is_pinned(w, src, len) => {
                // SAFETY: the caller passes `len` readable bytes at `src`, which the driver reads now.
                let staged = unsafe { std::slice::from_raw_parts(src as *const u8, len) }.to_vec();
                (Source::Staged(staged), false)
            }
            HostSide::Destination => (Source::At(src), !is_pinned(w, dst, len)),
            _ => (Source::At(src), false),
        };
        let done_at = enqueue(w, &stream, Op::Copy { dst, src: source, len });
        Ok(wait.then_some((stream, done_at)))
    });
    match queued {
        Err(code) => code,
        Ok(None) => sys::CUDA_SUCCESS,
        Ok(Some((stream, done_at))) => {
            stream.wait_for(done_at);
            after_wait(stream.context)
        }
    }
}

unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: CuDevicePtr,
    src: *const c_void,
    bytes: usize,
    stream: CuHandle,
) -> CuResult {
    copy(
        "cuMemcpyHtoDAsync_v2",
        dst as usize,
        src as usize,
        bytes,
        &[dst as usize],
        HostSide::Source,
        stream,
    )
}

unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: CuDevicePtr,
    bytes: usize,
    stream: CuHandle,
) -> CuResult {
    copy(
        "cuMemcpyDtoHAsync_v2",
        dst as usize,
        src as usize,
        bytes,
        &[src as usize],
        HostSide::Destination,
        stream,
    )
}

unsafe extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: CuDevicePtr,
    src: CuDevicePtr,
    bytes: usize,
    stream: CuHandle,
) -> CuResult {
    copy(
        "cuMemcpyDtoDAsync_v2",
        dst as usize,
        src as usize,
        bytes,
        &[src as usize, dst as usize],
        HostSide::Neither,
        stream,
    )
}

unsafe extern "C" fn cuMemcpyPeerAsync(
    dst: CuDevicePtr,
    _dst_context: CuHandle,
    src: CuDevicePtr,
    _src_context: CuHandle,
    bytes: usize,
    stream: CuHandle,
) -> CuResult {
    copy(
        "cuMemcpyPeerAsync",
        dst as usize,
        src as usize,
        bytes,
        &[src as usize, dst as usize],
        HostSide::Neither,
        stream,
    )
}

unsafe extern "C" fn cuStreamCreate(stream: *mut CuHandle, flags: c_uint) -> CuResult {
    call("cuStreamCreate", |w| {
        let Ok(context) = current(w) else {
            return sys::CUDA_ERROR_INVALID_CONTEXT;
        };
        let id = handle(w);
        own(w, id);
        let blocking = flags & sys::STREAM_NON_BLOCKING == 0;
        w.streams.insert(id, Stream::start(context, blocking));
        // SAFETY: writable per the API.
        unsafe { *stream = id as CuHandle };
        sys::CUDA_SUCCESS
    })
}

/// Destroys the object `handle` of the current context, which `remove` takes out of its table
/// (answering whether it was there).
fn destroy_owned(w: &mut World, handle: usize, remove: impl FnOnce(&mut World) -> bool) -> CuResult {
    if let Err(code) = owned(w, handle) {
        return code;
    }
    if !remove(w) {
        return sys::CUDA_ERROR_INVALID_VALUE;
    }
    w.owners.remove(&handle);
    sys::CUDA_SUCCESS
}

unsafe extern "C" fn cuStreamDestroy_v2(stream: CuHandle) -> CuResult {
    let stream = stream as usize;
    // As the driver: the call returns at once, and the stream's work is still done.
    call("cuStreamDestroy_v2", |w| {
        destroy_owned(w, stream, |w| w.streams.remove(&stream).map(|s| s.close()).is_some())
    })
}

/// Enters a wait on `stream`; a failed call stands for failed work, as with a real GPU (whose errors
/// are sticky): the stream's queued work is dropped, never run later against memory its owner has
/// since reused.
fn enter_wait(name: &'static str, stream: CuHandle) -> Result<Arc<Stream>, CuResult> {
    with(|w| {
        let entered = enter(w, name).and_then(|()| stream_of(w, stream));
        if let Err(code) = entered {
            if let Some(stream) = w.streams.get(&(stream as usize)) {
                stream.drop_work();
            }
            return Err(code);
        }
        entered
    })
}

unsafe extern "C" fn cuStreamSynchronize(stream: CuHandle) -> CuResult {
    match enter_wait("cuStreamSynchronize", stream) {
        Ok(stream) => {
            stream.wait_for(stream.queued());
            after_wait(stream.context)
        }
        Err(code) => code,
    }
}

unsafe extern "C" fn cuStreamQuery(stream: CuHandle) -> CuResult {
    match enter_wait("cuStreamQuery", stream) {
        Ok(stream) if stream.is_idle() => after_wait(stream.context),
        Ok(_) => sys::CUDA_ERROR_NOT_READY,
        Err(code) => code,
    }
}

unsafe extern "C" fn cuStreamWaitEvent(stream: CuHandle, event: CuHandle, _flags: c_uint) -> CuResult {
    call("cuStreamWaitEvent", |w| {
        let stream = match stream_of(w, stream) {
            Ok(stream) => stream,
            Err(code) => return code,
        };
        match w.events.get(&(event as usize)) {
            None => sys::CUDA_ERROR_INVALID_VALUE,
            // The stream's later work waits on the device, not the host, for the recorded work.
            Some(Some((on, until))) => {
                let (on, until) = (Arc::clone(on), *until);
                enqueue(w, &stream, Op::Wait { on, until });
                sys::CUDA_SUCCESS
            }
            Some(None) => sys::CUDA_SUCCESS,
        }
    })
}

unsafe extern "C" fn cuEventCreate(event: *mut CuHandle, _flags: c_uint) -> CuResult {
    call("cuEventCreate", |w| {
        let id = handle(w);
        own(w, id);
        w.events.insert(id, None);
        // SAFETY: writable per the API.
        unsafe { *event = id as CuHandle };
        sys::CUDA_SUCCESS
    })
}

unsafe extern "C" fn cuEventDestroy_v2(event: CuHandle) -> CuResult {
    let event = event as usize;
    call("cuEventDestroy_v2", |w| {
        destroy_owned(w, event, |w| w.events.remove(&event).is_some())
    })
}

unsafe extern "C" fn cuEventRecord(event: CuHandle, stream: CuHandle) -> CuResult {
    call("cuEventRecord", |w| {
        if let Err(code) = owned(w, event as usize) {
            return code;
        }
        let stream = match stream_of(w, stream) {
            Ok(stream) => stream,
            Err(code) => return code,
        };
        // The event follows the work queued on the stream so far.
        let until = stream.queued();
        match w.events.get_mut(&(event as usize)) {
            Some(state) => {
                *state = Some((stream, until));
                sys::CUDA_SUCCESS
            }
            None => sys::CUDA_ERROR_INVALID_VALUE,
        }
    })
}

unsafe extern "C" fn cuEventSynchronize(event: CuHandle) -> CuResult {
    let recorded = with(|w| {
        enter(w, "cuEventSynchronize")?;
        w.events
            .get(&(event as usize))
            .cloned()
            .ok_or(sys::CUDA_ERROR_INVALID_VALUE)
    });
    match recorded {
        Err(code) => code,
        Ok(Some((on, until))) => {
            on.wait_for(until);
            after_wait(on.context)
        }
        Ok(None) => sys::CUDA_SUCCESS,
    }
}

/// The simulated driver's table, as `Driver::open` would have filled it from a library.
pub fn driver() -> &'static Driver {
    static DRIVER: std::sync::OnceLock<Driver> = std::sync::OnceLock::new();
    DRIVER.get_or_init(|| Driver {
        library: "simulated libcuda".into(),
        functions: sys::cuda_functions_in_scope!(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    /// A kernel body that says it started and then waits for the test's word.
    fn gated(started: std::sync::mpsc::Sender<()>, go: std::sync::mpsc::Receiver<()>) -> Op {
        let (started, go) = (Mutex::new(started), Mutex::new(go));
        Op::Launch {
            body: Some(Arc::new(move |_| {
                started.lock().unwrap().send(()).unwrap();
                go.lock().unwrap().recv().unwrap();
                Ok(())
            })),
            args: Vec::new(),
        }
    }

    /// Work dropped while a piece of it runs (a failed wait) counts as done only once that piece
    /// ends, and never stands in for work queued after the drop: a later synchronisation waits for
    /// that work itself.
    #[test]
    fn work_dropped_while_a_piece_runs_does_not_count_work_queued_after_it() {
        let stream = Stream::start(0, true);
        let (started, first_started) = channel();
        let (release_first, go) = channel();
        stream.push(gated(started, go));
        first_started.recv_timeout(Duration::from_secs(10)).unwrap();
        stream.drop_work();
        let (started, second_started) = channel();
        let (release_second, go) = channel();
        let second = stream.push(gated(started, go));
        release_first.send(()).unwrap();
        second_started.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(!stream.is_idle(), "the piece queued after the drop is still running");
        release_second.send(()).unwrap();
        stream.wait_for(second);
        assert!(stream.is_idle());
        stream.close();
    }
}
