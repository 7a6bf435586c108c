//! One test suite for every backend: the core's rules as a program sees them — images, launches,
//! copies and their order, queues and events, exchange, locking, recycling, host services, teardown
//! order, and every driver call failing once — written once, in driver-neutral terms, and run against
//! each backend's simulated driver through a [`Harness`].
//!
//! A backend plugs in by implementing [`Harness`] over its simulated driver (the CUDA backend's is in
//! `cuda/harness.rs`, the fake backend's in `plugin/tests.rs`; the AMDGPU backend's, over the real HSA
//! runtime on a fake kernel driver, in `amdgpu/rocr_harness.rs`) and instantiating the suite with
//! [`backend_suite!`](crate::backend_suite): `backend_suite!(cuda, CudaHarness);` makes one `#[test]` per
//! suite test in a module `suite::cuda`, so that `cargo test --lib suite::cuda::` runs them all.
//! Everything the suite cannot say without naming the driver (which calls an operation makes, what a
//! failure reads like, the device's defaults) comes from the harness.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::AllocKind;
use crate::plugin::{HostEntry, LaunchRequest, PluginApi};

/// A kernel's behaviour in a simulated driver: called with the values of its arguments when the
/// launch runs (when its queue is synchronised or queried, not when it is submitted).
pub(crate) type KernelBody = Arc<dyn Fn(&[u64]) + Send + Sync>;

/// What a backend does for the core, in terms every driver has. A harness maps its driver's calls
/// onto these (CUDA's `cuModuleUnload` is [`Op::UnloadModule`], and so is HSA's
/// `hsa_executable_destroy`; the AMDGPU harness maps `hsa_queue_create` to [`Op::InitDevice`], its
/// streams and events being the plugin's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    /// Preparing a device: retaining its context, setting limits, reading its attributes.
    InitDevice,
    /// Releasing what `InitDevice` acquired.
    ReleaseDevice,
    LoadModule,
    UnloadModule,
    /// Finding a kernel in a module and reading its attributes.
    FindKernel,
    /// Finding a global in a module.
    FindGlobal,
    AllocDevice,
    FreeDevice,
    /// Pinned host memory (the RPC mailbox).
    AllocHost,
    FreeHost,
    CreateQueue,
    DestroyQueue,
    CreateEvent,
    DestroyEvent,
    CopyToDevice,
    CopyToHost,
    /// A copy between two devices.
    CopyPeer,
    /// A copy within one device.
    CopyDeviceToDevice,
    Launch,
    SynchronizeQueue,
    QueryQueue,
    RecordEvent,
    WaitEvent,
    SynchronizeEvent,
    Pin,
    Unpin,
    /// A call the suite has no name for.
    Other,
}

/// What a simulated driver still holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Live {
    /// Memory blocks: device, managed and pinned host allocations.
    pub memory: usize,
    pub modules: usize,
    pub queues: usize,
    pub events: usize,
    /// Devices (contexts) initialised and not released.
    pub devices: usize,
}

impl Live {
    /// Nothing at all.
    pub const NONE: Live = Live {
        memory: 0,
        modules: 0,
        queues: 0,
        events: 0,
        devices: 0,
    };
}

/// A launch as the driver saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SeenLaunch {
    pub kernel: String,
    /// Teams, threads per team, dynamic shared memory per team.
    pub geometry: (u32, u32, u32),
    /// The queue's handle, as libomptarget holds it (`Backend::queue_handle`).
    pub queue: usize,
}

/// The suite's program: an image of the backend's family with two target regions and a global, its
/// host entries, and which entries are which.
pub(crate) struct TestProgram {
    pub image: Vec<u8>,
    pub entries: Vec<HostEntry>,
    /// Entry of an SPMD kernel, and its name.
    pub spmd: usize,
    pub spmd_name: String,
    /// Entry of a generic-mode kernel, and its name.
    pub generic: usize,
    pub generic_name: String,
    /// Entry of a 4-byte global.
    pub global: usize,
    /// How many 8-byte arguments the suite passes its kernels: two where the driver takes what it is
    /// given, fewer where the kernel's own argument segment is smaller and the backend refuses more
    /// (AMDGPU: the real kernels take one pointer).
    pub arguments: usize,
    /// The global that `__llvm_libc_rpc_client` points at in the image: libc's client object.
    #[cfg_attr(not(feature = "rpc"), allow(dead_code))] // only host services look at it
    pub client_object: &'static str,
}

impl TestProgram {
    /// The program built from `c_tests/gpu/cuda_module.c` (as a cubin or an AMDGPU code object):
    /// entries and kernels as `HostEntry::cuda_module_entries_of` finds them, passing `arguments`.
    pub fn of_cuda_module(image: Vec<u8>, arguments: usize) -> TestProgram {
        let (entries, spmd_name, generic_name) = HostEntry::cuda_module_entries_of(&image);
        TestProgram {
            image,
            entries,
            spmd: 0,
            spmd_name,
            generic: 1,
            generic_name,
            global: 2,
            arguments,
            client_object: "omprpc_client_object",
        }
    }
}

/// A backend under test, over its simulated driver. Device memory of a simulated driver must be host
/// memory at the device address, so that the suite can read what the core wrote.
pub(crate) trait Harness: Sized {
    /// A fresh backend with `devices` devices under a fresh core configured by `settings`. The harness
    /// holds whatever its simulated driver needs to run one test at a time.
    fn start(devices: usize, settings: &[(&str, &str)]) -> Self;
    /// The core over the backend.
    fn core(&self) -> &dyn PluginApi;
    /// The suite's program, for this backend's family.
    fn program(&self) -> TestProgram;
    /// Threads per team and teams the device uses when the program does not say.
    fn default_geometry(&self) -> (u32, u32);
    /// The device's memory in bytes, from which the core sizes device code's heap.
    #[cfg_attr(not(feature = "rpc"), allow(dead_code))] // only host services use it
    fn device_memory(&self) -> u64;
    /// The driver's own device handle that interop gives for `device`.
    fn native_device_id(&self, device: usize) -> usize;
    /// The address the device uses for a pinned host range at `host` on `device`.
    fn pinned_device_address(&self, device: usize, host: usize) -> usize;

    /// The driver's calls, in order, as operations.
    fn log(&self) -> Vec<Op>;
    /// How many calls of `op` the driver had.
    fn calls(&self, op: Op) -> usize {
        Self::driver_calls(op).iter().map(|c| self.driver_call_count(c)).sum()
    }
    /// How many times the driver entry point `call` was called.
    fn driver_call_count(&self, call: &str) -> usize;
    /// The driver's entry points that make up `op`; empty when the driver has none for it.
    fn driver_calls(op: Op) -> Vec<&'static str>;
    /// Makes the next call of the driver entry point `call` fail (once).
    fn fail_call(&self, call: &'static str);
    /// Makes the next call of `op`'s first entry point fail (once).
    fn fail_next(&self, op: Op) {
        let calls = Self::driver_calls(op);
        self.fail_call(calls.first().unwrap_or_else(|| panic!("no driver call for {op:?}")));
    }
    /// What the error of a failed `call` must say (each string must appear in it).
    fn failure_text(call: &str) -> Vec<String>;

    /// What the driver still holds.
    fn live(&self) -> Live;
    /// Host ranges pinned with the driver.
    fn pinned(&self) -> usize;
    /// Every launch, in order.
    fn launches(&self) -> Vec<SeenLaunch>;
    /// Runs `body` for every launch of kernel `name`, with its first `args` argument values.
    fn register_kernel(&self, name: &str, args: usize, body: KernelBody);
    /// Forgets every kernel body.
    fn clear_kernels(&self);
    /// From now on the device has room for `extra` more bytes and no more; past that, allocations fail
    /// as the driver reports a full device.
    fn limit_memory(&self, extra: usize);
    /// Whether what is allocated is within the limit `limit_memory` set.
    fn within_memory_limit(&self) -> bool;
    /// Blocks the driver owns at their addresses (device memory, pinned host memory): address → size.
    #[cfg_attr(not(feature = "rpc"), allow(dead_code))] // only host services use it
    fn memory_blocks(&self) -> Vec<(usize, usize)>;
    /// Calls the driver refused because they would deadlock on a real device (an allocation while a
    /// kernel that calls the host runs).
    #[cfg_attr(not(feature = "rpc"), allow(dead_code))] // only host services use it
    fn violations(&self) -> Vec<String>;
    /// Address and size of the module's global `name` in the one loaded module.
    #[cfg_attr(not(feature = "rpc"), allow(dead_code))] // only host services use it
    fn module_global(&self, name: &str) -> Option<(usize, usize)>;

    /// Whether the backend's queues and events are driver objects, each made and destroyed with a
    /// driver call (CUDA streams and events), rather than the plugin's own over objects made when the
    /// device is prepared (HSA: queues and signals).
    fn streams_are_driver_objects() -> bool {
        true
    }
    /// Whether interop gives a driver context beside the device (HSA has none: NULL).
    fn interop_has_context() -> bool {
        true
    }
    /// Whether the simulated device starts queued work on its own, as a real one does, rather than only
    /// when the host synchronises or queries; then the suite holds it with [`Harness::hold`] to see what
    /// is queued, and waits rather than expects a query to find the work done.
    fn runs_work_on_its_own() -> bool {
        false
    }
    /// Holds the device's queued work back (`true`) or lets it go (`false`); a device that runs work only
    /// when the host waits has nothing to hold.
    fn hold(&self, _on: bool) {}

    /// Whether the backend gives device code a doorbell to ring after its host calls' requests.
    #[cfg_attr(not(feature = "rpc"), allow(dead_code))] // only host services use it
    fn device_can_ring() -> bool {
        false
    }

    /// What device code does to ring `doorbell`, the value the backend wrote into the image's
    /// `__omprpc_rpc_doorbell`.
    #[cfg_attr(not(feature = "rpc"), allow(dead_code))] // only host services use it
    fn ring_from_device(_doorbell: u64) {}
    /// Lanes of the device's warp or wavefront, which host services serve at once.
    #[cfg_attr(not(feature = "rpc"), allow(dead_code))] // only host services use it
    fn lane_size(&self) -> u32 {
        32
    }
    /// Whether preparing a device allocates host memory of its own (staging and kernel-argument
    /// buffers, HSA) that is released with the device, so that host-memory calls are not all the
    /// program's.
    fn device_owns_host_buffers() -> bool {
        false
    }
    /// Whether the pool block at `addr` is host memory; asked only of harnesses whose devices own
    /// host buffers (where counting host allocations does not find the program's).
    #[cfg_attr(not(feature = "rpc"), allow(dead_code))] // only host services use it
    fn is_host_block(&self, _addr: usize) -> bool {
        unreachable!("asked only where device_owns_host_buffers")
    }
    /// Whether a queue fails only by a fault of the work on it (HSA: a signal query returns no
    /// status), which then fails the whole device; else the driver's query is made to fail.
    fn queues_fail_by_device_faults() -> bool {
        false
    }
    /// Makes every later run of kernel `name` fault on the device; asked where
    /// `queues_fail_by_device_faults` and by the device-fault tests (`backend_fault_suite!`). Returns
    /// what the resulting error must say.
    fn fail_kernel(&self, _name: &str) -> String {
        unreachable!("asked only of harnesses whose kernels can fault")
    }
    /// Makes every later run of kernel `name` run `body` (with its first `args` argument values) and
    /// then fault on the device, as [`Harness::fail_kernel`].
    #[cfg_attr(not(feature = "rpc"), allow(dead_code))] // only the host-services fault test asks
    fn fail_kernel_after(&self, _name: &str, _args: usize, _body: KernelBody) -> String {
        unreachable!("asked only of harnesses whose kernels can fault")
    }
}

/// Reads a `T` at a simulated device address, as a debugger would (device memory the host cannot
/// touch is opened for the read).
pub(crate) fn read<T: Copy>(addr: usize) -> T {
    // SAFETY: a harness's device memory is host memory at the device address (see `Harness`), readable
    // as device code; the suite reads only what the core wrote there, with no work in flight on it.
    crate::backend::gpu::sim_memory::device_access(|| unsafe { std::ptr::read_unaligned(addr as *const T) })
}

/// The settings of the program the suite's scenario tests ran as one before they were split.
const PROGRAM_SETTINGS: [(&str, &str); 3] = [
    ("LIBOMPTARGET_STACK_SIZE", "4096"),
    ("LIBOMPTARGET_HEAP_SIZE", "1048576"),
    ("LIBOMPTARGET_SHARED_MEMORY_SIZE", "256"),
];

/// Two devices initialised and the program loaded on the first.
fn two_devices_with_program<H: Harness>() -> (H, TestProgram, Vec<usize>) {
    let h = H::start(2, &PROGRAM_SETTINGS);
    assert_eq!(h.core().device_count(), 2);
    h.core().init_device(0).unwrap();
    h.core().init_device(1).unwrap();
    let program = h.program();
    let loaded = h
        .core()
        .load_image(0, 0x1000, &program.image, &program.entries)
        .unwrap();
    (h, program, loaded.addresses)
}

pub(crate) fn initial_queues_and_events_are_made_per_device<H: Harness>() {
    let (h, _, _) = two_devices_with_program::<H>();
    if H::streams_are_driver_objects() {
        assert_eq!(
            h.calls(Op::CreateQueue),
            64,
            "LIBOMPTARGET_NUM_INITIAL_STREAMS per device"
        );
        assert_eq!(
            h.calls(Op::CreateEvent),
            64,
            "LIBOMPTARGET_NUM_INITIAL_EVENTS per device"
        );
        assert!(h.core().deinit().unwrap());
        return;
    }
    // The initial streams and events are the plugin's own: making 32 of each per device costs the
    // driver no call more than making one.
    assert_eq!((h.calls(Op::CreateQueue), h.calls(Op::CreateEvent)), (0, 0));
    assert!(h.core().deinit().unwrap());
    drop(h);
    let init_calls = |settings: &[(&str, &str)]| {
        let h = H::start(1, settings);
        let before = h.log().len();
        h.core().init_device(0).unwrap();
        let calls = h.log().len() - before;
        assert!(h.core().deinit().unwrap());
        calls
    };
    let default = init_calls(&[]);
    let one = init_calls(&[
        ("LIBOMPTARGET_NUM_INITIAL_STREAMS", "1"),
        ("LIBOMPTARGET_NUM_INITIAL_EVENTS", "1"),
    ]);
    assert_eq!(
        default, one,
        "driver calls to prepare a device with 32 initial streams and events, and with 1"
    );
}

pub(crate) fn async_copies_run_in_queue_order_once_synchronised<H: Harness>() {
    let (h, program, addresses) = two_devices_with_program::<H>();
    let core = h.core();
    let counter = addresses[program.global];
    let mut queue: *mut c_void = std::ptr::null_mut();
    let value = 41u32;
    // The copy back lands in the driver's pinned memory: into pageable memory, CUDA's copy returns
    // only once it is done, which would wait here for the held device.
    let back = core.alloc(0, 4, AllocKind::Host).unwrap().cast::<u32>();
    // SAFETY: `back` is 4 bytes of host memory from the driver, which only this test touches.
    let read_back = || unsafe { back.read_volatile() };
    // SAFETY: as above.
    unsafe { back.write_volatile(0) };
    h.hold(true);
    // SAFETY: `counter` is the image's 4-byte global; `value` and `back` outlive the synchronisation.
    unsafe {
        core.submit(
            0,
            counter as *mut c_void,
            (&value as *const u32).cast(),
            4,
            Some(&mut queue),
        )
        .unwrap();
        core.retrieve(0, back.cast(), counter as *const c_void, 4, Some(&mut queue))
            .unwrap();
    }
    assert_eq!(read_back(), 0, "nothing ran before the queue was synchronised");
    h.hold(false);
    core.synchronize(0, &mut queue).unwrap();
    assert_eq!(
        (read_back(), read::<u32>(counter)),
        (41, 41),
        "the copy to the device ran first"
    );
    assert!(queue.is_null());
    core.free(0, back as usize).unwrap();
    assert!(core.deinit().unwrap());
}

pub(crate) fn launches_pass_arguments_by_value_with_the_stock_geometry<H: Harness>() {
    let (h, program, addresses) = two_devices_with_program::<H>();
    let core = h.core();
    let counter = addresses[program.global];
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    h.register_kernel(
        &program.spmd_name,
        2,
        Arc::new(move |args| record.lock().unwrap().extend_from_slice(args)),
    );
    let args = &[0x1234 as *mut c_void, counter as *mut c_void][..program.arguments];
    let request = LaunchRequest {
        tripcount: 1000,
        ..Default::default()
    };
    // SAFETY: the simulated kernel only records its arguments.
    unsafe { core.launch(0, addresses[program.spmd], args, &request, None) }.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [0x1234, counter as u64][..program.arguments].to_vec()
    );
    // SAFETY: as above; this kernel has no body.
    unsafe { core.launch(0, addresses[program.generic], &[], &LaunchRequest::default(), None) }.unwrap();
    let launches = h.launches();
    let (threads, teams) = h.default_geometry();
    assert_eq!(launches[0].kernel, program.spmd_name);
    assert_eq!(
        launches[0].geometry,
        (1000u32.div_ceil(threads), threads, 256),
        "SPMD: trip / default threads blocks; shared memory setting"
    );
    assert_eq!(launches[1].kernel, program.generic_name);
    assert_eq!(
        launches[1].geometry,
        (teams, threads, 256),
        "generic, nothing asked: the default threads and team cap"
    );
    h.clear_kernels();
    assert!(core.deinit().unwrap());
}

pub(crate) fn device_to_device_between_two_devices_goes_peer_to_peer<H: Harness>() {
    let (h, _, _) = two_devices_with_program::<H>();
    let core = h.core();
    let a = core.alloc(0, 64, AllocKind::Device).unwrap();
    let b = core.alloc(1, 64, AllocKind::Device).unwrap();
    let data = [5u8; 64];
    assert!(core.can_exchange(0, 1).unwrap());
    // SAFETY: both are 64-byte device allocations; `data` outlives the synchronous copies.
    unsafe {
        core.submit(0, a, data.as_ptr().cast(), 64, None).unwrap();
        core.exchange(0, a, 1, b, 64, None).unwrap();
    }
    assert_eq!(h.calls(Op::CopyPeer), 1);
    assert_eq!(read::<[u8; 64]>(b as usize), data, "the bytes arrived");
    // Within one device, the copy is the driver's device-to-device copy.
    let c = core.alloc(0, 64, AllocKind::Device).unwrap();
    assert!(core.can_exchange(0, 0).unwrap());
    // SAFETY: both are 64-byte device allocations of device 0.
    unsafe { core.exchange(0, a, 0, c, 64, None) }.unwrap();
    assert_eq!((h.calls(Op::CopyPeer), h.calls(Op::CopyDeviceToDevice)), (1, 1));
    assert_eq!(
        read::<[u8; 64]>(c as usize),
        data,
        "the bytes arrived within the device"
    );
    for (device, ptr) in [(0, a), (1, b), (0, c)] {
        core.free(device, ptr as usize).unwrap();
    }
    assert!(core.deinit().unwrap());
}

pub(crate) fn small_allocations_are_recycled<H: Harness>() {
    let (h, _, _) = two_devices_with_program::<H>();
    let core = h.core();
    let a = core.alloc(0, 64, AllocKind::Device).unwrap();
    let allocs_before = h.calls(Op::AllocDevice);
    core.free(0, a as usize).unwrap();
    let again = core.alloc(0, 64, AllocKind::Device).unwrap();
    assert_eq!(again, a, "the freed block came back");
    assert_eq!(h.calls(Op::AllocDevice), allocs_before);
    core.free(0, again as usize).unwrap();
    assert!(core.deinit().unwrap());
}

pub(crate) fn locking_pins_once_per_range_and_unlocking_unpins<H: Harness>() {
    let (h, _, _) = two_devices_with_program::<H>();
    let core = h.core();
    let mut host = vec![0u8; 4096];
    let ptr = host.as_mut_ptr().cast::<c_void>();
    let device_address = h.pinned_device_address(0, ptr as usize);
    assert_eq!(core.lock_host(0, ptr, 4096).unwrap() as usize, device_address);
    assert_eq!(core.lock_host(0, ptr, 4096).unwrap() as usize, device_address);
    assert!(
        core.lock_host(1, ptr, 4096).is_ok(),
        "another device finds the range pinned already"
    );
    assert_eq!(h.pinned(), 1);
    core.unlock_host(1, ptr).unwrap();
    core.unlock_host(0, ptr).unwrap();
    assert_eq!(h.pinned(), 1, "still locked once");
    core.unlock_host(0, ptr).unwrap();
    assert_eq!(h.pinned(), 0);
    assert!(core.deinit().unwrap());
    drop(host);
}

pub(crate) fn interop_gets_the_drivers_own_handles<H: Harness>() {
    let (h, _, _) = two_devices_with_program::<H>();
    let native = h.core().native_device(1).unwrap();
    assert_eq!(native.device as usize, h.native_device_id(1));
    assert_eq!(
        native.context.is_null(),
        !H::interop_has_context(),
        "a context where the driver has one"
    );
    assert!(h.core().deinit().unwrap());
}

/// Teardown releases everything, the still-loaded image too, in order: host services (the mailbox,
/// with the rpc feature), images, cached memory, events, queues, and the device last.
pub(crate) fn teardown_releases_everything_in_order<H: Harness>() {
    let (h, program, addresses) = two_devices_with_program::<H>();
    let core = h.core();
    // SAFETY: the kernel has no body.
    unsafe { core.launch(0, addresses[program.generic], &[], &LaunchRequest::default(), None) }.unwrap();
    // Cached blocks on both devices.
    let a = core.alloc(0, 64, AllocKind::Device).unwrap();
    let b = core.alloc(1, 64, AllocKind::Device).unwrap();
    core.free(0, a as usize).unwrap();
    core.free(1, b as usize).unwrap();
    let log_start = h.log().len();
    assert!(core.deinit().unwrap());
    assert_eq!(h.live(), Live::NONE, "memory, modules, queues, events, devices");
    let mut log = h.log()[log_start..].to_vec();
    // Device 0's teardown, up to its release (device 1's follows).
    log.truncate(log.iter().position(|c| *c == Op::ReleaseDevice).unwrap() + 1);
    let first = |op: Op| {
        log.iter()
            .position(|c| *c == op)
            .unwrap_or_else(|| panic!("no {op:?}: {log:?}"))
    };
    let last = |op: Op| log.iter().rposition(|c| *c == op).unwrap();
    if cfg!(feature = "rpc") && H::device_owns_host_buffers() {
        // The mailbox before the image; the device's own host buffers go with the device.
        assert!(
            first(Op::FreeHost) < first(Op::UnloadModule),
            "the mailbox before the image: {log:?}"
        );
        let device_part = log.iter().rposition(|c| *c == Op::FreeDevice).unwrap();
        assert!(
            log.iter()
                .enumerate()
                .all(|(i, c)| *c != Op::FreeHost || i < first(Op::UnloadModule) || i > device_part),
            "host buffers freed after the image belong to the device's release: {log:?}"
        );
    } else if cfg!(feature = "rpc") {
        assert!(
            last(Op::FreeHost) < first(Op::UnloadModule),
            "the mailbox before the image: {log:?}"
        );
    }
    assert!(
        first(Op::UnloadModule) < first(Op::FreeDevice),
        "then cached blocks: {log:?}"
    );
    if H::streams_are_driver_objects() {
        assert!(last(Op::FreeDevice) < first(Op::DestroyEvent), "then events: {log:?}");
        assert!(last(Op::DestroyEvent) < first(Op::DestroyQueue), "then queues: {log:?}");
    } else {
        assert!(
            !log.contains(&Op::DestroyEvent) && !log.contains(&Op::DestroyQueue),
            "no driver object per event or queue: {log:?}"
        );
        assert!(
            last(Op::FreeDevice) < first(Op::ReleaseDevice),
            "then the device: {log:?}"
        );
    }
    assert_eq!(log.last(), Some(&Op::ReleaseDevice), "the device last: {log:?}");
}

pub(crate) fn a_launch_allocates_nothing_on_the_host<H: Harness>() {
    let h = H::start(1, &[]);
    let core = h.core();
    core.init_device(0).unwrap();
    let program = h.program();
    let loaded = core.load_image(0, 0x1000, &program.image, &program.entries).unwrap();
    let counter = loaded.addresses[program.global];
    let args = &[0x1234 as *mut c_void, counter as *mut c_void][..program.arguments];
    let request = LaunchRequest {
        teams: 4,
        thread_limit: 64,
        tripcount: 1000,
        ..Default::default()
    };
    let launch_twice = || {
        // SAFETY: the simulated kernels have no bodies; the arguments are only passed along.
        unsafe { core.launch(0, loaded.addresses[program.spmd], args, &request, None) }.unwrap();
        let mut queue: *mut c_void = std::ptr::null_mut();
        // SAFETY: as above.
        unsafe { core.launch(0, loaded.addresses[program.generic], args, &request, Some(&mut queue)) }.unwrap();
        core.synchronize(0, &mut queue).unwrap();
    };
    // The first launches may fill the queue pool; the steady state is what every region pays.
    launch_twice();
    let ((), allocations) = crate::util::alloc_count::allocations_during(|| {
        for _ in 0..10 {
            launch_twice();
        }
    });
    assert_eq!(allocations, 0, "host allocations in 20 launches, blocking and nowait");
    assert_eq!(h.launches().len(), 22);
    assert!(core.deinit().unwrap());
}

/// The steps of a small program, each a group of operations that the fault test makes fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Step {
    Init,
    Load,
    Alloc,
    Copy,
    Launch,
    Teardown,
}

/// The operations each step makes, whose driver calls the fault test makes fail one at a time.
pub(crate) fn steps<H: Harness>() -> Vec<(Step, Op)> {
    let mut steps = vec![
        (Step::Init, Op::InitDevice),
        (Step::Init, Op::CreateQueue),
        (Step::Init, Op::CreateEvent),
        (Step::Load, Op::LoadModule),
        (Step::Load, Op::FindGlobal),
        (Step::Load, Op::FindKernel),
        (Step::Load, Op::CopyToDevice),
        (Step::Load, Op::SynchronizeQueue),
        (Step::Alloc, Op::AllocDevice),
        (Step::Copy, Op::CopyToDevice),
        (Step::Copy, Op::CopyToHost),
        (Step::Copy, Op::SynchronizeQueue),
        (Step::Launch, Op::Launch),
        (Step::Launch, Op::SynchronizeQueue),
        (Step::Teardown, Op::FreeDevice),
        (Step::Teardown, Op::UnloadModule),
        (Step::Teardown, Op::DestroyEvent),
        (Step::Teardown, Op::DestroyQueue),
        (Step::Teardown, Op::ReleaseDevice),
    ];
    // Host services: reading the image's client pointer, the mailbox (pinned host memory), the device
    // heap's reservation, and the polling of a thread that waits for a kernel that may call the host.
    if cfg!(feature = "rpc") {
        steps.extend([
            (Step::Launch, Op::QueryQueue),
            (Step::Load, Op::CopyToHost),
            (Step::Load, Op::AllocHost),
            (Step::Load, Op::AllocDevice),
            (Step::Teardown, Op::FreeHost),
        ]);
    }
    if !H::streams_are_driver_objects() {
        // Queues and events are no driver calls of their own (their driver objects are made and
        // released with the device's), and waiting on or querying one is a signal wait or load, which
        // returns no status to fail.
        steps.retain(|(_, op)| {
            !(matches!(
                op,
                Op::CreateQueue | Op::CreateEvent | Op::DestroyQueue | Op::DestroyEvent
            ) || H::driver_calls(*op).is_empty())
        });
    }
    steps
}

/// Runs the program's steps; at `fault`'s step, the next call of its driver entry point fails once:
/// the step must fail with a message naming the call, and a second try must succeed.
fn program_with_fault<H: Harness>(fault: Option<(Step, &'static str)>) -> H {
    let h = H::start(1, &[("LIBOMPTARGET_STACK_SIZE", "8192")]);
    let program = h.program();
    {
        let core = h.core();
        let mut loaded = None;
        let mut buffer = std::ptr::null_mut();
        let step = |which: Step, op: &mut dyn FnMut() -> crate::util::error::Result<()>| {
            if let Some((_, call)) = fault.filter(|(at, _)| *at == which) {
                h.fail_call(call);
                let err = op()
                    .err()
                    .unwrap_or_else(|| panic!("{which:?} did not fail when {call} did"));
                let text = err.to_string();
                for expected in H::failure_text(call) {
                    assert!(
                        text.contains(&expected),
                        "{which:?}: the message names {call} and the driver's result ({expected}): {text}"
                    );
                }
                if which == Step::Teardown {
                    return;
                }
            }
            op().unwrap_or_else(|e| panic!("{which:?} (after {fault:?}): {e}"));
        };
        step(Step::Init, &mut || core.init_device(0));
        step(Step::Load, &mut || {
            loaded = Some(core.load_image(0, 0x1000, &program.image, &program.entries)?);
            Ok(())
        });
        step(Step::Alloc, &mut || {
            buffer = core.alloc(0, 1 << 20, AllocKind::Device)?;
            Ok(())
        });
        step(Step::Copy, &mut || {
            let data = [7u8; 64];
            let mut back = [0u8; 64];
            // SAFETY: `buffer` is a 1 MiB device allocation; the copies are synchronous.
            unsafe {
                core.submit(0, buffer, data.as_ptr().cast(), 64, None)?;
                core.retrieve(0, back.as_mut_ptr().cast(), buffer, 64, None)?;
            }
            assert_eq!(back, data);
            Ok(())
        });
        let kernel = loaded.as_ref().unwrap().addresses[program.generic];
        step(Step::Launch, &mut || {
            // SAFETY: the simulated kernel has no body.
            unsafe { core.launch(0, kernel, &[], &LaunchRequest::default(), None) }
        });
        step(Step::Teardown, &mut || {
            // Every part runs even when one fails, as a program's exit does.
            let freed = core.free(0, buffer as usize);
            let unloaded = core
                .unregister_library(&[(0x1000, 0x1000 + program.image.len())])
                .map(|_| ());
            let released = core.deinit().map(|_| ());
            freed.and(unloaded).and(released)
        });
    }
    h
}

pub(crate) fn every_driver_call_failing_once_is_reported_and_survived<H: Harness>() {
    let h = program_with_fault::<H>(None);
    assert_eq!(h.live(), Live::NONE, "the clean run releases everything");
    drop(h);
    // Several operations can make the same driver call (HSA frees device and host memory alike): each
    // call fails once per step, and what it leaves is checked for every operation that makes it.
    let mut left: HashMap<(Step, &'static str), Live> = HashMap::new();
    for (step, op) in steps::<H>() {
        let calls = H::driver_calls(op);
        assert!(!calls.is_empty(), "{op:?} has a driver call to fail");
        for call in calls {
            let live = *left
                .entry((step, call))
                .or_insert_with(|| program_with_fault::<H>(Some((step, call))).live());
            // A failed release leaves exactly the object the driver refused to release; nothing else.
            let expected = match op {
                Op::FreeDevice | Op::FreeHost if step == Step::Teardown => Live {
                    memory: 1,
                    ..Live::NONE
                },
                Op::UnloadModule if step == Step::Teardown => Live {
                    modules: 1,
                    ..Live::NONE
                },
                Op::DestroyQueue => Live {
                    queues: 1,
                    ..Live::NONE
                },
                Op::DestroyEvent => Live {
                    events: 1,
                    ..Live::NONE
                },
                Op::ReleaseDevice => Live {
                    devices: 1,
                    ..Live::NONE
                },
                _ => Live::NONE,
            };
            assert_eq!(
                live, expected,
                "{call} ({op:?}) failing in {step:?}: live memory, modules, queues, events, devices"
            );
        }
    }
}

pub(crate) fn nowait_work_is_queried_and_events_order_queues<H: Harness>() {
    let h = H::start(1, &[("LIBOMPTARGET_NUM_INITIAL_STREAMS", "2")]);
    let core = h.core();
    core.init_device(0).unwrap();
    let program = h.program();
    let loaded = core.load_image(0, 0x1000, &program.image, &program.entries).unwrap();
    let kernel = loaded.addresses[program.spmd];
    let ran = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&ran);
    h.register_kernel(
        &program.spmd_name,
        0,
        Arc::new(move |_| {
            count.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let request = LaunchRequest {
        nowait: true,
        ..Default::default()
    };
    let (mut first, mut second): (*mut c_void, *mut c_void) = (std::ptr::null_mut(), std::ptr::null_mut());
    h.hold(true);
    // SAFETY: the simulated kernel takes no arguments.
    unsafe { core.launch(0, kernel, &[], &request, Some(&mut first)) }.unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 0, "nowait: queued, not run");
    if H::streams_are_driver_objects() {
        assert_eq!(
            first as usize,
            h.launches()[0].queue,
            "libomptarget holds the driver's queue handle itself"
        );
    } else {
        assert!(!first.is_null(), "libomptarget holds the plugin's stream");
    }

    // An event recorded after the kernel holds back the other queue's work until the kernel ran.
    let event = core.create_event(0).unwrap();
    core.record_event(0, event, &mut first).unwrap();
    core.wait_event(0, event, &mut second).unwrap();
    assert!(
        !second.is_null() && second != first,
        "the waiting async info got a queue of its own"
    );
    if H::runs_work_on_its_own() {
        // The wait is the device's (a barrier on the waiting queue), not the host's.
        assert_eq!(ran.load(Ordering::SeqCst), 0, "held: the recorded work has not run");
        h.hold(false);
        core.synchronize(0, &mut second).unwrap();
        assert_eq!(
            ran.load(Ordering::SeqCst),
            1,
            "the waiting queue ran after the recorded work"
        );
    } else {
        assert_eq!(ran.load(Ordering::SeqCst), 1, "waiting ran the recorded work");
    }
    core.sync_event(0, event).unwrap();
    core.destroy_event(0, event).unwrap();

    // query_async leaves a busy queue with its async info and gives back an idle one.
    h.hold(true);
    // SAFETY: as above.
    unsafe { core.launch(0, kernel, &[], &request, Some(&mut first)) }.unwrap();
    core.query_async(0, &mut first).unwrap();
    assert!(!first.is_null(), "not done yet: the async info keeps its queue");
    h.hold(false);
    core.query_async(0, &mut first).unwrap();
    if H::runs_work_on_its_own() {
        // The device finishes in its own time: query until it has.
        let started = std::time::Instant::now();
        while !first.is_null() {
            assert!(started.elapsed().as_secs() < 10, "the kernel never finished");
            std::thread::yield_now();
            core.query_async(0, &mut first).unwrap();
        }
    }
    assert!(first.is_null(), "done: the queue went back to the pool");
    assert_eq!(ran.load(Ordering::SeqCst), 2);
    core.synchronize(0, &mut second).unwrap();
    assert!(second.is_null());

    // Queues beyond the initial two are made on demand and kept in the pool.
    let mut infos = [std::ptr::null_mut::<c_void>(); 3];
    for info in infos.iter_mut() {
        // SAFETY: as above.
        unsafe { core.launch(0, kernel, &[], &request, Some(info)) }.unwrap();
    }
    for info in infos.iter_mut() {
        core.synchronize(0, info).unwrap();
    }
    if H::streams_are_driver_objects() {
        // Two initial queues and one more for the third async info (device code's allocations, which
        // have a queue of their own, made none here).
        assert_eq!(h.calls(Op::CreateQueue), 3);
    } else {
        assert_eq!(h.calls(Op::CreateQueue), 0, "streams are no driver objects");
    }
    h.clear_kernels();
    assert!(core.deinit().unwrap());
    assert_eq!(h.live(), Live::NONE);
}

/// Eight host threads on two devices at once, each with its own queue: copies in, a `nowait` launch
/// and a copy back, then a synchronisation, fifty times; every round's result must be that round's
/// data plus what the kernel added, so that no operation of one thread's queue is lost, repeated,
/// reordered or mixed with another's.
pub(crate) fn eight_threads_of_queued_copies_and_launches_keep_their_order<H: Harness>() {
    const WORDS: usize = 256;
    let h = H::start(2, &[]);
    let core = h.core();
    let program = h.program();
    let mut kernels = Vec::new();
    for device in 0..2 {
        core.init_device(device).unwrap();
        kernels.push(
            core.load_image(device, 0x1000, &program.image, &program.entries)
                .unwrap()
                .addresses[program.spmd],
        );
    }
    // The kernel adds 1 to each of the `args[1]` words at `args[0]`.
    h.register_kernel(
        &program.spmd_name,
        2,
        Arc::new(|args| {
            // A kernel that takes one argument is passed the buffer only, of WORDS words.
            let len = args.get(1).map_or(WORDS, |&n| n as usize);
            // SAFETY: every launch below passes a live buffer of `len` words (simulated device memory is
            // host memory), which only this launch's queue touches until it is synchronised.
            let words = unsafe { std::slice::from_raw_parts_mut(args[0] as *mut u32, len) };
            for w in words {
                *w += 1;
            }
        }),
    );
    let kernels = &kernels;
    let arguments = program.arguments;
    std::thread::scope(|scope| {
        for thread in 0..8u32 {
            scope.spawn(move || {
                let device = (thread % 2) as i32;
                let buffer = core.alloc(device, WORDS * 4, AllocKind::Device).unwrap();
                let request = LaunchRequest {
                    nowait: true,
                    ..Default::default()
                };
                for round in 0..50u32 {
                    let data: Vec<u32> = (0..WORDS as u32)
                        .map(|i| thread * 1_000_000 + round * 1000 + i)
                        .collect();
                    let mut back = vec![0u32; WORDS];
                    let mut queue: *mut c_void = std::ptr::null_mut();
                    let args = &[buffer, WORDS as *mut c_void][..arguments];
                    // SAFETY: `buffer` holds WORDS words; `data` and `back` outlive the synchronisation.
                    unsafe {
                        core.submit(device, buffer, data.as_ptr().cast(), WORDS * 4, Some(&mut queue))
                            .unwrap();
                        core.launch(device, kernels[device as usize], args, &request, Some(&mut queue))
                            .unwrap();
                        core.retrieve(device, back.as_mut_ptr().cast(), buffer, WORDS * 4, Some(&mut queue))
                            .unwrap();
                    }
                    core.synchronize(device, &mut queue).unwrap();
                    let expected: Vec<u32> = data.iter().map(|v| v + 1).collect();
                    assert_eq!(back, expected, "thread {thread}, round {round}");
                }
                core.free(device, buffer as usize).unwrap();
            });
        }
    });
    h.clear_kernels();
    assert!(core.deinit().unwrap());
    assert_eq!(h.live(), Live::NONE, "everything released");
}

/// When the driver runs out of memory, the core frees the small blocks its memory manager caches and
/// tries again, so memory the program freed is never what makes an allocation fail.
pub(crate) fn out_of_device_memory_frees_the_cache_and_retries<H: Harness>() {
    let h = H::start(1, &[]);
    let core = h.core();
    core.init_device(0).unwrap();
    // Room for the blocks below and nothing more.
    h.limit_memory(16 * 4096);
    let blocks: Vec<*mut c_void> = (0..16)
        .map(|_| core.alloc(0, 4096, AllocKind::Device).unwrap())
        .collect();
    let full = core.alloc(0, 4096, AllocKind::Device).unwrap_err();
    assert!(
        matches!(full, crate::util::error::Error::OutOfMemory { size: 4096 }),
        "the driver's out-of-memory result is an out-of-memory error: {full}"
    );
    for block in &blocks {
        core.free(0, *block as usize).unwrap();
    }
    // The freed blocks sit in the cache, so the device is still full; a block of another size misses
    // the cache, runs out, and succeeds once the cache is given back to the driver.
    let big = core.alloc(0, 8192, AllocKind::Device).unwrap();
    assert!(!big.is_null());
    assert!(h.within_memory_limit(), "within the device's memory");
    core.free(0, big as usize).unwrap();
    assert!(core.deinit().unwrap());
}

/// A nowait region whose queue the driver reports failed: `query_async` fails naming the call, and,
/// as with the stock plugin, the queue goes back to the pool and the async info forgets it.
pub(crate) fn a_failed_query_releases_the_queue<H: Harness>() {
    let h = H::start(1, &[("LIBOMPTARGET_NUM_INITIAL_STREAMS", "1")]);
    let core = h.core();
    core.init_device(0).unwrap();
    let program = h.program();
    let loaded = core.load_image(0, 0x1000, &program.image, &program.entries).unwrap();
    let request = LaunchRequest {
        nowait: true,
        ..Default::default()
    };
    let mut info: *mut c_void = std::ptr::null_mut();
    if H::queues_fail_by_device_faults() {
        // The kernel faults on the device: the query fails naming the fault and the async info
        // forgets the queue; the device is failed for good (the stock plugin aborts the process),
        // so later work is refused with the same error instead of hanging, and teardown still
        // releases everything.
        h.hold(true);
        // SAFETY: the simulated kernel takes no arguments.
        unsafe { core.launch(0, loaded.addresses[program.spmd], &[], &request, Some(&mut info)) }.unwrap();
        assert!(!info.is_null());
        let expected = h.fail_kernel(&program.spmd_name);
        h.hold(false);
        let started = std::time::Instant::now();
        let err = loop {
            match core.query_async(0, &mut info) {
                Err(e) => break e.to_string(),
                Ok(()) => {
                    assert!(!info.is_null(), "a faulting kernel was reported done");
                    assert!(started.elapsed().as_secs() < 10, "the fault never reached the query");
                    std::thread::yield_now();
                }
            }
        };
        assert!(err.contains(&expected), "{err}");
        assert!(info.is_null(), "the async info no longer holds the queue");
        let mut again: *mut c_void = std::ptr::null_mut();
        // SAFETY: as above.
        let refused = unsafe { core.launch(0, loaded.addresses[program.spmd], &[], &request, Some(&mut again)) };
        let refused = refused.unwrap_err().to_string();
        assert!(refused.contains(&expected), "{refused}");
        h.clear_kernels();
        teardown_after_fault(&h, &expected, "everything released");
        return;
    }
    // SAFETY: the simulated kernel takes no arguments.
    unsafe { core.launch(0, loaded.addresses[program.spmd], &[], &request, Some(&mut info)) }.unwrap();
    assert!(!info.is_null());
    h.fail_next(Op::QueryQueue);
    let err = core.query_async(0, &mut info).unwrap_err().to_string();
    let call = H::driver_calls(Op::QueryQueue)[0];
    assert!(err.contains(call), "{err}");
    assert!(info.is_null(), "the async info no longer holds the queue");
    // The pool's one queue is free again: the next nowait region gets it, no new queue is made.
    let mut again: *mut c_void = std::ptr::null_mut();
    // SAFETY: as above.
    unsafe { core.launch(0, loaded.addresses[program.spmd], &[], &request, Some(&mut again)) }.unwrap();
    assert_eq!(h.calls(Op::CreateQueue), 1);
    core.synchronize(0, &mut again).unwrap();
    h.clear_kernels();
    assert!(core.deinit().unwrap());
}

/// Launches the argument-less simulated kernel at `entry` of device 0 (no queue: waited for at once)
/// and returns the error it must end with.
fn launch_expecting_failure(core: &dyn PluginApi, entry: usize) -> String {
    launch_without_arguments(core, entry).unwrap_err().to_string()
}

/// Launches the kernel at `entry` on device 0 with no arguments, the stock geometry, and waits.
fn launch_without_arguments(core: &dyn PluginApi, entry: usize) -> crate::util::error::Result<()> {
    // SAFETY: the suite's simulated kernels that are launched this way take no arguments.
    unsafe { core.launch(0, entry, &[], &LaunchRequest::default(), None) }
}

/// Tears down a core whose device faulted: teardown may report the fault (`expected`) once more,
/// and it releases everything all the same.
fn teardown_after_fault<H: Harness>(h: &H, expected: &str, what: &str) {
    match h.core().deinit() {
        Ok(done) => assert!(done),
        Err(e) => assert!(e.to_string().contains(expected), "{e}"),
    }
    assert_eq!(h.live(), Live::NONE, "{what}");
}

/// A kernel that faults on the device fails the region that waited for it with an error that names
/// the kernel and the driver's own error; the device is failed for good (the driver's error is sticky
/// on CUDA, the queue's on HSA), so later work is refused with the same error instead of hanging, and
/// teardown still releases everything.
pub(crate) fn a_kernel_that_faults_fails_its_device_for_good_and_is_named<H: Harness>() {
    let h = H::start(1, &[]);
    let core = h.core();
    core.init_device(0).unwrap();
    let program = h.program();
    let loaded = core.load_image(0, 0x1000, &program.image, &program.entries).unwrap();
    let expected = h.fail_kernel(&program.spmd_name);
    let err = launch_expecting_failure(core, loaded.addresses[program.spmd]);
    assert!(err.contains(&expected), "the driver's error: {err}");
    assert!(
        err.contains(&format!("its last kernel {}", program.spmd_name)),
        "the kernel named: {err}"
    );
    let refused = launch_expecting_failure(core, loaded.addresses[program.generic]);
    assert!(refused.contains(&expected), "{refused}");
    h.clear_kernels();
    teardown_after_fault(&h, &expected, "everything released");
}

/// Receives a byte string from lane 0 and replies: a call whose string spans packets, in the middle
/// of which a lost device leaves the handler waiting. Keeps the string it got.
#[cfg(feature = "rpc")]
struct KeepString {
    got: Arc<Mutex<Option<Vec<u8>>>>,
}

#[cfg(feature = "rpc")]
impl crate::rpc::serving::handlers::UserHandler for KeepString {
    fn serve(&self, port: &mut crate::rpc::protocol::port::Port<'_>) {
        let strings = port.recv_n().unwrap();
        *self.got.lock().unwrap() = Some(strings[0].as_slice().to_vec());
        port.send(&port.lane_packets()).unwrap();
    }
}

/// A device lost in the middle of a host call (its kernel faulted after sending the first packet of
/// a string that spans four) leaves no serving thread waiting for it: the region fails naming the
/// kernel and the fault, the call in progress is answered for the device (the handler gets the rest
/// of the string as zeros and returns), the device's server is out of service, and teardown releases
/// everything.
#[cfg(feature = "rpc")]
pub(crate) fn a_device_lost_in_the_middle_of_a_host_call_leaves_no_thread_waiting<H: Harness>() {
    use crate::rpc::simulated::SimulatedDevice;
    /// The string the device starts to send: its first packet carries the size and 56 bytes.
    const LEN: usize = 200;
    let h = H::start(1, &[("OMPRPC_RPC_PORTS", "8")]);
    let got = Arc::new(Mutex::new(None));
    let op_keep_string = opcode_of_its_own();
    crate::rpc::serving::registry::register_handler(op_keep_string, Box::new(KeepString { got: Arc::clone(&got) }))
        .unwrap();
    let core = h.core();
    let (program, loaded, server) = load_with_host_services(&h);
    assert!(server.serves_port_by_port(), "libc 19.1's layout, served port by port");
    let kernel_server = Arc::clone(&server);
    let expected = h.fail_kernel_after(
        &program.generic_name,
        0,
        Arc::new(move |_| {
            let device = SimulatedDevice::new(Arc::clone(&kernel_server));
            let mut port = device.open(op_keep_string, 1, 3);
            // The first packet of a string of LEN bytes, as libc's client sends it...
            port.send(|_, packet| {
                packet[0] = LEN as u64;
                packet[1..].fill(u64::from_ne_bytes([0xAB; 8]));
            });
            // ...taken by the server, which now waits for the next one: the device faults here.
            port.wait_for_turn();
        }),
    );
    let started = std::time::Instant::now();
    let err = launch_expecting_failure(core, loaded.addresses[program.generic]);
    assert!(
        err.contains(&expected) && err.contains(&program.generic_name),
        "the fault and the kernel: {err}"
    );
    while got.lock().unwrap().is_none() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the handler still waits for the lost device"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let string = got.lock().unwrap().clone().unwrap();
    assert_eq!(string.len(), LEN, "the size the device sent");
    assert!(
        string[..56].iter().all(|&b| b == 0xAB) && string[56..].iter().all(|&b| b == 0),
        "what the device sent, then empty packets answered for it: {string:x?}"
    );
    assert!(server.device_lost() && !server.in_a_call());
    assert!(
        !crate::rpc::serving::registry::servers()
            .iter()
            .any(|s| Arc::ptr_eq(s, &server)),
        "the lost device's server is out of service"
    );
    h.clear_kernels();
    drop(server);
    teardown_after_fault(&h, &expected, "the mailbox and client object are released too");
}

/// Notes which thread served each call, and replies with the packet unchanged.
#[cfg(feature = "rpc")]
struct NoteThread {
    served_on: Arc<Mutex<Vec<std::thread::ThreadId>>>,
}

#[cfg(feature = "rpc")]
impl crate::rpc::serving::handlers::UserHandler for NoteThread {
    fn serve(&self, port: &mut crate::rpc::protocol::port::Port<'_>) {
        let mut packets = port.lane_packets();
        port.recv(&mut packets).unwrap();
        self.served_on.lock().unwrap().push(std::thread::current().id());
        port.send(&packets).unwrap();
    }
}

/// A user opcode of its own for each test that registers a handler with state: the suite runs on
/// several harnesses at once, and an opcode's handler is the process's.
#[cfg(feature = "rpc")]
pub(crate) fn opcode_of_its_own() -> u16 {
    static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0xC100);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The thread that waits for a kernel never serves that kernel's host calls itself: it is the one
/// that sees the device fail, so a call it was in the middle of when the device was lost (waiting
/// for a packet that never comes) would never end. The serving threads serve them.
#[cfg(feature = "rpc")]
pub(crate) fn the_thread_waiting_for_a_kernel_leaves_its_host_calls_to_the_serving_threads<H: Harness>() {
    use crate::rpc::simulated::{SimulatedDevice, SimulatedWarp};
    const CALLS: usize = 300;
    let h = H::start(1, &[("OMPRPC_RPC_PORTS", "8")]);
    let op_note_thread = opcode_of_its_own();
    let served_on = Arc::new(Mutex::new(Vec::new()));
    let handler = NoteThread {
        served_on: Arc::clone(&served_on),
    };
    crate::rpc::serving::registry::register_handler(op_note_thread, Box::new(handler)).unwrap();
    let core = h.core();
    let (program, loaded, server) = load_with_host_services(&h);
    h.register_kernel(
        &program.generic_name,
        0,
        Arc::new(move |_| {
            let device = SimulatedDevice::new(Arc::clone(&server));
            let warp = SimulatedWarp::new(&device, 0);
            for call in 0..CALLS as u64 {
                let replies = warp.call(op_note_thread, 1, &[[call, 0, 0, 0, 0, 0, 0, 0]]);
                assert_eq!(replies[0][0], call, "the reply of call {call}");
            }
        }),
    );
    launch_without_arguments(core, loaded.addresses[program.generic]).unwrap();
    let served_on = served_on.lock().unwrap().clone();
    assert_eq!(served_on.len(), CALLS, "every call served");
    let me = std::thread::current().id();
    let mine = served_on.iter().filter(|&&id| id == me).count();
    assert_eq!(
        mine, 0,
        "calls served by the thread that waited for the kernel, of {CALLS}"
    );
    h.clear_kernels();
    assert!(core.deinit().unwrap());
    assert_eq!(h.live(), Live::NONE);
}

/// Loads the harness's program with the device header's RPC client on device 0 (initialised
/// here), as an image that asks for host services: the program, its addresses (the client pointer's
/// last) and its server.
#[cfg(feature = "rpc")]
pub(crate) fn load_with_host_services<H: Harness>(
    h: &H,
) -> (
    TestProgram,
    crate::plugin::LoadedEntries,
    Arc<crate::rpc::serving::server::RpcServer>,
) {
    let core = h.core();
    core.init_device(0).unwrap();
    let program = h.program();
    let mut entries = program.entries.clone();
    entries.push(client_entry());
    let loaded = core.load_image(0, 0x1000, &program.image, &entries).unwrap();
    let blocks = h.memory_blocks();
    let server = crate::rpc::serving::registry::servers()
        .iter()
        .find(|s| blocks.iter().any(|&(start, _)| start == s.mailbox_address()))
        .cloned()
        .expect("a server whose mailbox is the driver's memory");
    (program, loaded, server)
}

/// The host entry of the device header's RPC client pointer, which every suite program defines.
#[cfg(feature = "rpc")]
fn client_entry() -> HostEntry {
    HostEntry {
        name: std::ffi::CString::new("__llvm_libc_rpc_client").unwrap(),
        size: 8,
        flags: 0,
        host_addr: 0,
    }
}

/// Doubles each lane's first word and adds the lane number.
#[cfg(feature = "rpc")]
struct DoubleIt;

#[cfg(feature = "rpc")]
impl crate::rpc::serving::handlers::UserHandler for DoubleIt {
    fn serve(&self, port: &mut crate::rpc::protocol::port::Port<'_>) {
        let mut packets = port.lane_packets();
        let n = port.recv(&mut packets).unwrap();
        for (lane, p) in packets.iter_mut().take(n as usize).enumerate() {
            p.data[0] = p.data[0] * 2 + lane as u64;
        }
        port.send(&packets).unwrap();
    }
}

/// A kernel run by a simulated warp (32 lanes; an AMD wavefront: 64) calls the host: device `malloc` and `free` from the heap
/// reserved at load, and a user opcode from 16 lanes, over a mailbox in the driver's pinned memory.
#[cfg(feature = "rpc")]
pub(crate) fn host_services_serve_a_32_lane_warp_over_the_drivers_pinned_memory<H: Harness>() {
    use crate::rpc::simulated::{SimulatedDevice, SimulatedWarp};
    const OP_DOUBLE: u16 = 0xC0DA;
    let h = H::start(1, &[("OMPRPC_RPC_PORTS", "64")]);
    crate::rpc::serving::registry::register_handler(OP_DOUBLE, Box::new(DoubleIt)).unwrap();
    let core = h.core();
    let (program, loaded, server) = load_with_host_services(&h);
    let lanes = h.lane_size() as u64;
    assert_eq!(
        (server.lane_size(), server.ports()),
        (lanes as u32, 64),
        "warp-size lanes; OMPRPC_RPC_PORTS"
    );
    if H::device_owns_host_buffers() {
        assert!(h.is_host_block(server.mailbox_address()), "the mailbox is host memory");
    } else {
        assert_eq!(h.calls(Op::AllocHost), 1, "the mailbox is pinned host memory");
    }
    // The contract of LLVM's plugins: the pointer is left as the image set it, and libc's client
    // bytes are copied to the object it names, which lives in the module's own memory.
    let client = read::<u64>(*loaded.addresses.last().unwrap()) as usize;
    let (object, object_size) = h
        .module_global(program.client_object)
        .expect("the module's client object");
    assert_eq!(client, object, "the image's pointer still names its own client object");
    assert_eq!(object_size, 552);
    assert_eq!(read::<u32>(object), 64, "the client object knows the port count");
    assert_eq!(
        read::<u64>(object + 8) as usize,
        server.mailbox_address(),
        "and the mailbox"
    );

    let results = Arc::new(Mutex::new((Vec::new(), Vec::new())));
    let out = Arc::clone(&results);
    let kernel_server = Arc::clone(&server);
    h.register_kernel(
        &program.generic_name,
        0,
        Arc::new(move |_| {
            let device = SimulatedDevice::new(Arc::clone(&kernel_server));
            let warp = SimulatedWarp::new(&device, 5);
            let mask = warp.full_mask();
            let sizes: Vec<u64> = (0..lanes).map(|lane| 16 + lane).collect();
            let ptrs = warp.malloc(mask, &sizes);
            let packets: Vec<[u64; 8]> = (0..lanes).map(|lane| [100 + lane, 0, 0, 0, 0, 0, 0, 0]).collect();
            let replies = warp.call(OP_DOUBLE, mask & 0xffff, &packets);
            warp.free(mask, &ptrs);
            *out.lock().unwrap() = (ptrs, replies.iter().map(|r| r[0]).collect::<Vec<_>>());
        }),
    );
    let memory_calls = || [h.calls(Op::AllocDevice), h.calls(Op::FreeDevice)];
    let calls_before = memory_calls();
    launch_without_arguments(core, loaded.addresses[program.generic]).unwrap();
    let (ptrs, replies) = results.lock().unwrap().clone();
    assert_eq!(ptrs.len(), lanes as usize);
    let distinct: std::collections::HashSet<_> = ptrs.iter().collect();
    assert!(
        ptrs.iter().all(|&p| p != 0) && distinct.len() == lanes as usize,
        "one block per lane: {ptrs:x?}"
    );
    assert_eq!(
        memory_calls(),
        calls_before,
        "device malloc and free make no driver call while the kernel runs"
    );
    assert_eq!(h.violations(), Vec::<String>::new());
    let reservation = {
        let (base, size) = h.memory_blocks().into_iter().max_by_key(|&(_, size)| size).unwrap();
        base..base + size
    };
    assert_eq!(
        reservation.len() as u64,
        (h.device_memory() / 16).min(256 << 20),
        "the default reservation: a sixteenth of the device's memory, at most 256 MiB (80 GiB: 256 MiB)"
    );
    assert!(
        ptrs.iter().all(|&p| reservation.contains(&(p as usize))),
        "the blocks come from the memory reserved when the image was loaded"
    );
    let expected: Vec<u64> = (0..lanes)
        .map(|lane| if lane < 16 { (100 + lane) * 2 + lane } else { 0 })
        .collect();
    assert_eq!(
        replies, expected,
        "the user opcode served the 16 active lanes, each its own packet"
    );
    h.clear_kernels();
    drop(server);
    assert!(core.deinit().unwrap());
    assert_eq!(h.live(), Live::NONE, "the mailbox and client object are released too");
}

/// Device code rings the doorbell after each request where the backend gave it one (AMD: a signal
/// whose interrupt the runtime's handler thread passes on to the serving threads), so that they can
/// sleep through a lull; every call after a lull is served promptly, rung or not. A ring that did not
/// reach them would leave each call waiting for the scanner's look-anyway timer (100 ms), so the
/// median of five calls after 30 ms lulls stays far below that.
#[cfg(feature = "rpc")]
pub(crate) fn calls_after_lulls_are_rung_for_where_the_device_can_ring<H: Harness>() {
    use crate::rpc::simulated::{SimulatedDevice, SimulatedWarp};
    use std::time::{Duration, Instant};
    let h = H::start(1, &[("OMPRPC_RPC_PORTS", "8")]);
    let op_note_thread = opcode_of_its_own();
    let handler = NoteThread {
        served_on: Arc::new(Mutex::new(Vec::new())),
    };
    crate::rpc::serving::registry::register_handler(op_note_thread, Box::new(handler)).unwrap();
    let core = h.core();
    let (program, loaded, server) = load_with_host_services(&h);
    let doorbell = h
        .module_global("__omprpc_rpc_doorbell")
        .map_or(0, |(addr, _)| read::<u64>(addr));
    assert_eq!(
        doorbell != 0,
        H::device_can_ring(),
        "the doorbell the backend wrote into the image: {doorbell:#x}"
    );
    assert_eq!(
        server.rung(),
        doorbell != 0,
        "the server sleeps until rung only when its device rings"
    );
    let took = Arc::new(Mutex::new(Vec::new()));
    let (kernel_server, kernel_took) = (Arc::clone(&server), Arc::clone(&took));
    let ring: fn(u64) = H::ring_from_device;
    h.register_kernel(
        &program.generic_name,
        0,
        Arc::new(move |_| {
            let device = SimulatedDevice::ringing(Arc::clone(&kernel_server), move || {
                if doorbell != 0 {
                    ring(doorbell);
                }
            });
            let warp = SimulatedWarp::new(&device, 0);
            for i in 0..5u64 {
                std::thread::sleep(Duration::from_millis(30));
                let started = Instant::now();
                assert_eq!(warp.call(op_note_thread, 1, &[[i; 8]])[0][0], i);
                kernel_took.lock().unwrap().push(started.elapsed());
            }
        }),
    );
    launch_without_arguments(core, loaded.addresses[program.generic]).unwrap();
    let mut took = took.lock().unwrap().clone();
    took.sort();
    assert_eq!(took.len(), 5);
    assert!(
        took[2] < Duration::from_millis(60),
        "calls after lulls waited {took:?}: the device's ring did not wake the serving threads"
    );
    h.clear_kernels();
    drop(server);
    assert!(core.deinit().unwrap());
    assert_eq!(h.live(), Live::NONE, "the doorbell signal is released with the device");
}

/// Instantiates every suite test for a harness, as `#[test]`s in a module `$name`:
/// `backend_suite!(cuda, CudaHarness);` makes `suite::cuda::<test>` for each.
#[macro_export]
#[doc(hidden)]
macro_rules! backend_suite {
    ($name:ident, $harness:ty $(, $runner:ident)?) => {
        mod $name {
            $crate::backend_suite!(@tests $harness $(, $runner)?;
                initial_queues_and_events_are_made_per_device,
                async_copies_run_in_queue_order_once_synchronised,
                launches_pass_arguments_by_value_with_the_stock_geometry,
                device_to_device_between_two_devices_goes_peer_to_peer,
                small_allocations_are_recycled,
                locking_pins_once_per_range_and_unlocking_unpins,
                interop_gets_the_drivers_own_handles,
                teardown_releases_everything_in_order,
                a_launch_allocates_nothing_on_the_host,
                every_driver_call_failing_once_is_reported_and_survived,
                nowait_work_is_queried_and_events_order_queues,
                eight_threads_of_queued_copies_and_launches_keep_their_order,
                out_of_device_memory_frees_the_cache_and_retries,
                a_failed_query_releases_the_queue,
            );
            #[cfg(feature = "rpc")]
            $crate::backend_suite!(@tests $harness $(, $runner)?;
                host_services_serve_a_32_lane_warp_over_the_drivers_pinned_memory,
                the_thread_waiting_for_a_kernel_leaves_its_host_calls_to_the_serving_threads,
                calls_after_lulls_are_rung_for_where_the_device_can_ring,
            );
        }
    };
    (@tests $harness:ty; $($test:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                $crate::backend::suite::$test::<$harness>();
            }
        )*
    };
    (@tests $harness:ty, in_own_process; $($test:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                $crate::backend::suite::in_own_process(
                    concat!(module_path!(), "::", stringify!($test)),
                    $crate::backend::suite::$test::<$harness>,
                );
            }
        )*
    };
}

/// Runs the test at module path `path` (`crate::backend::suite::<harness>::<test>`) as `test` in a
/// process of its own: this test binary started again to run that test alone. For harnesses over a
/// driver loaded into the process for good, whose libraries must not meet those other tests load
/// under the same names (the real HSA runtime over the fake kernel driver, and the real thunk).
pub(crate) fn in_own_process(path: &str, test: fn()) {
    const CHILD: &str = "OMPRPC_SUITE_TEST_IN_OWN_PROCESS";
    let name = path.split_once("::").map_or(path, |(_, rest)| rest);
    if std::env::var(CHILD).as_deref() == Ok(name) {
        return test();
    }
    let child = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, name)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the test binary starts again");
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    let limit = std::time::Duration::from_secs(300);
    let Ok(output) = finished.recv_timeout(limit) else {
        // SAFETY: kill has no memory preconditions; `pid` is the child, not yet waited for.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        panic!("{name} did not finish within {limit:?} in its own process");
    };
    let output = output.expect("the child's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{name} in its own process: {}\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Instantiates the suite's device-fault tests for a harness whose kernels can fault
/// ([`Harness::fail_kernel`]), as `#[test]`s in a module `$name`.
#[macro_export]
#[doc(hidden)]
macro_rules! backend_fault_suite {
    ($name:ident, $harness:ty $(, $runner:ident)?) => {
        mod $name {
            $crate::backend_suite!(@tests $harness $(, $runner)?;
                a_kernel_that_faults_fails_its_device_for_good_and_is_named,
            );
            #[cfg(feature = "rpc")]
            $crate::backend_suite!(@tests $harness $(, $runner)?;
                a_device_lost_in_the_middle_of_a_host_call_leaves_no_thread_waiting,
            );
        }
    };
}

// The harnesses, each beside the backend it drives; `suite::<name>::` runs the suite on one.
crate::backend_suite!(cuda, crate::backend::cuda::harness::CudaHarness);
crate::backend_suite!(fake, crate::plugin::tests::FakeHarness);
// The AMDGPU backend on Debian's real HSA runtime over the fake kernel driver of tests/fake_kfd, each
// test in a process of its own.
crate::backend_suite!(
    amdgpu_rocr,
    crate::backend::amdgpu::rocr_harness::RocrHarness<crate::backend::amdgpu::harness::Mi250>,
    in_own_process
);
crate::backend_suite!(
    amdgpu_rocr_wave32,
    crate::backend::amdgpu::rocr_harness::RocrHarness<crate::backend::amdgpu::harness::Rx6900>,
    in_own_process
);

// Device faults, on the harnesses of GPUs (the core's fake backend has none).
crate::backend_fault_suite!(cuda_faults, crate::backend::cuda::harness::CudaHarness);
crate::backend_fault_suite!(
    amdgpu_rocr_faults,
    crate::backend::amdgpu::rocr_harness::RocrHarness<crate::backend::amdgpu::harness::Mi250>,
    in_own_process
);
