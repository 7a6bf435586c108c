//! The CUDA backend driven through the core over the simulated driver, with the real cubins in
//! `tests/data/nvptx` (built by `scripts/make-nvptx-test-images.sh`).

use std::ffi::{c_void, CString};
use std::sync::Arc;

use super::cubin::{Capability, NvidiaImage};
use super::simulated::{self, SimGpu};
use super::CudaBackend;
use crate::backend::Backend;
use crate::plugin::{Core, HostEntry, LaunchRequest, PluginApi};
use crate::util::config::Config;
use crate::util::elf;

const H100: SimGpu = SimGpu {
    major: 9,
    minor: 0,
    sms: 132,
    host_pointers: true,
};
const A10: SimGpu = SimGpu {
    major: 8,
    minor: 6,
    sms: 72,
    host_pointers: true,
};
/// A device that reaches pinned host memory only at an address of the driver's.
const NO_HOST_POINTERS: SimGpu = SimGpu {
    host_pointers: false,
    ..H100
};

fn cubin(arch: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/data/nvptx/cuda_module-{arch}.cubin",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}; rebuild with scripts/make-nvptx-test-images.sh"))
}

/// A fresh simulated driver with `gpus`, and the core over the CUDA backend on it.
fn core_on(gpus: &[SimGpu], pairs: &[(&str, &str)]) -> Box<dyn PluginApi> {
    simulated::reset(gpus, 0);
    let config = Config::from_pairs(pairs);
    let backend = CudaBackend::with_driver(simulated::driver(), &config).unwrap();
    Core::new_boxed(backend, config)
}

/// The cubin's kernels (symbols with an `_exec_mode` byte) in a fixed order, then its global.
fn entries_of(image: &[u8]) -> (Vec<HostEntry>, String, String) {
    let parsed = elf::Image::parse(image).unwrap();
    let mut kernels: Vec<String> = parsed
        .symbols()
        .iter()
        .filter_map(|(name, _)| {
            std::str::from_utf8(name)
                .ok()?
                .strip_suffix("_exec_mode")
                .map(String::from)
        })
        .collect();
    kernels.sort();
    assert_eq!(kernels.len(), 2, "the test program has two target regions");
    let entries = HostEntry::cuda_module_entries(&kernels);
    // By line number: l15 is the SPMD loop, l20 the generic region.
    (entries, kernels[0].clone(), kernels[1].clone())
}

fn read<T: Copy>(addr: usize) -> T {
    // SAFETY: simulated device memory is host memory; tests read what the plugin wrote there.
    unsafe { std::ptr::read_unaligned(addr as *const T) }
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    simulated::SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn cubins_built_here_carry_their_capability() {
    for (arch, sm) in [("sm_70", 70), ("sm_80", 80), ("sm_90", 90)] {
        assert_eq!(
            NvidiaImage::detect(&cubin(arch)),
            Some(NvidiaImage::Cubin(Capability::from_sm(sm))),
            "{arch}"
        );
    }
}

#[test]
fn images_are_accepted_by_the_stock_plugins_rule() {
    let _serial = serial();
    simulated::reset(&[A10], 0);
    let backend = CudaBackend::with_driver(simulated::driver(), &Config::from_pairs(&[])).unwrap();
    let check = |bytes: &[u8], arch| backend.is_compatible_image(&bytes[..4096.min(bytes.len())], bytes.len(), arch);
    assert!(check(&cubin("sm_80"), None), "sm_80 runs on sm_86");
    assert!(check(&cubin("sm_80"), Some("sm_80")));
    assert!(!check(&cubin("sm_90"), None), "sm_90 does not run on sm_86");
    assert!(!check(&cubin("sm_70"), None), "nor does sm_70 (another major version)");
    assert!(
        !check(&cubin("sm_80"), Some("sm_90")),
        "the wrapper's arch string decides"
    );
    let host = std::fs::read("/proc/self/exe").unwrap();
    assert!(!check(&host, None), "a host ELF");
    let mut amdgpu = cubin("sm_80");
    amdgpu[18..20].copy_from_slice(&224u16.to_le_bytes());
    assert!(!check(&amdgpu, Some("gfx90a")), "an AMDGPU ELF");
    assert!(!check(b"garbage", None));
}

#[test]
fn a_failing_cu_init_means_no_backend_and_says_why() {
    let _serial = serial();
    simulated::reset(&[H100], super::sys::CUDA_ERROR_NO_DEVICE);
    let err = CudaBackend::with_driver(simulated::driver(), &Config::from_pairs(&[]))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("CUDA error in cuInit: CUDA_ERROR_NO_DEVICE (100) from simulated libcuda; reporting 0 devices"),
        "{err}"
    );
}

#[test]
fn a_program_runs_through_the_core_and_releases_everything() {
    let _serial = serial();
    let core = core_on(
        &[H100, H100],
        &[
            ("LIBOMPTARGET_STACK_SIZE", "4096"),
            ("LIBOMPTARGET_HEAP_SIZE", "1048576"),
            ("LIBOMPTARGET_SHARED_MEMORY_SIZE", "256"),
        ],
    );
    assert_eq!(core.device_count(), 2);
    core.init_device(0).unwrap();
    core.init_device(1).unwrap();
    {
        let w = simulated::world();
        let w = w.as_ref().unwrap();
        assert_eq!(w.limits.get(&super::sys::LIMIT_STACK_SIZE), Some(&4096));
        assert_eq!(w.limits.get(&super::sys::LIMIT_MALLOC_HEAP_SIZE), Some(&1048576));
        assert_eq!(
            w.calls["cuStreamCreate"], 64,
            "LIBOMPTARGET_NUM_INITIAL_STREAMS per device"
        );
        assert_eq!(
            w.calls["cuEventCreate"], 64,
            "LIBOMPTARGET_NUM_INITIAL_EVENTS per device"
        );
    }
    let image = cubin("sm_90");
    let (entries, spmd, generic) = entries_of(&image);
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    let counter = loaded.addresses[2];

    // Async copies on one queue run in order, and only once the queue is synchronised.
    let mut queue: *mut c_void = std::ptr::null_mut();
    let value = 41u32;
    let mut back = 0u32;
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
        core.retrieve(
            0,
            (&mut back as *mut u32).cast(),
            counter as *const c_void,
            4,
            Some(&mut queue),
        )
        .unwrap();
    }
    assert_eq!(back, 0, "nothing ran before the queue was synchronised");
    core.synchronize(0, &mut queue).unwrap();
    assert_eq!(
        (back, read::<u32>(counter)),
        (41, 41),
        "the copy to the device ran first"
    );
    assert!(queue.is_null());

    // A launch passes each argument by pointer to its value, with the stock geometry.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    simulated::register_kernel(
        &spmd,
        2,
        Arc::new(move |args| record.lock().unwrap().extend_from_slice(args)),
    );
    let args = [0x1234 as *mut c_void, counter as *mut c_void];
    let request = LaunchRequest {
        tripcount: 1000,
        ..Default::default()
    };
    // SAFETY: the simulated kernel only records its arguments.
    unsafe { core.launch(0, loaded.addresses[0], &args, &request, None) }.unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![0x1234, counter as u64]);
    // SAFETY: as above; this kernel has no body.
    unsafe { core.launch(0, loaded.addresses[1], &[], &LaunchRequest::default(), None) }.unwrap();
    let launches = simulated::world().as_ref().unwrap().launches.clone();
    assert_eq!(launches[0].kernel, spmd);
    assert_eq!(
        launches[0].geometry,
        (8, 128, 256),
        "SPMD: trip / 128 blocks; shared memory setting"
    );
    assert_eq!(launches[1].kernel, generic);
    assert_eq!(
        launches[1].geometry,
        (3200, 128, 256),
        "generic, nothing asked: the default threads and team cap"
    );

    // Device to device between two devices goes peer to peer.
    let a = core.alloc(0, 64, crate::backend::AllocKind::Device).unwrap();
    let b = core.alloc(1, 64, crate::backend::AllocKind::Device).unwrap();
    assert!(core.can_exchange(0, 1).unwrap());
    // SAFETY: both are 64-byte device allocations.
    unsafe { core.exchange(0, a, 1, b, 64, None) }.unwrap();
    assert_eq!(simulated::world().as_ref().unwrap().calls["cuMemcpyPeerAsync"], 1);

    // Small allocations are recycled by the memory manager.
    let allocs_before = simulated::world().as_ref().unwrap().calls["cuMemAlloc_v2"];
    core.free(0, a as usize).unwrap();
    let again = core.alloc(0, 64, crate::backend::AllocKind::Device).unwrap();
    assert_eq!(again, a, "the freed block came back");
    assert_eq!(
        simulated::world().as_ref().unwrap().calls["cuMemAlloc_v2"],
        allocs_before
    );

    // Locking pins through the driver, once per range, and unlocking unpins.
    let mut host = vec![0u8; 4096];
    let ptr = host.as_mut_ptr().cast::<c_void>();
    assert_eq!(core.lock_host(0, ptr, 4096).unwrap(), ptr);
    assert_eq!(core.lock_host(0, ptr, 4096).unwrap(), ptr);
    assert!(
        core.lock_host(1, ptr, 4096).is_ok(),
        "another device finds the range pinned already"
    );
    assert_eq!(simulated::world().as_ref().unwrap().registered.len(), 1);
    core.unlock_host(1, ptr).unwrap();
    core.unlock_host(0, ptr).unwrap();
    assert_eq!(
        simulated::world().as_ref().unwrap().registered.len(),
        1,
        "still locked once"
    );
    core.unlock_host(0, ptr).unwrap();
    assert!(simulated::world().as_ref().unwrap().registered.is_empty());

    // Interop gets the driver's own context and stream.
    let native = core.native_device(1).unwrap();
    assert_eq!(native.device as usize, 1);
    assert!(!native.context.is_null());

    core.free(0, again as usize).unwrap();
    core.free(1, b as usize).unwrap();
    // Teardown releases everything, the still-loaded image too, in order: host services (the mailbox,
    // with the rpc feature), images, cached memory, events, streams, and the context last.
    let log_start = simulated::world().as_ref().unwrap().log.len();
    assert!(core.deinit().unwrap());
    assert_eq!(
        simulated::live(),
        (0, 0, 0, 0, 0),
        "memory, modules, streams, events, contexts"
    );
    let mut log = simulated::world().as_ref().unwrap().log[log_start..].to_vec();
    // Device 0's teardown, up to its context's release (device 1's follows).
    log.truncate(log.iter().position(|c| *c == "cuDevicePrimaryCtxRelease_v2").unwrap() + 1);
    let first = |call: &str| {
        log.iter()
            .position(|c| *c == call)
            .unwrap_or_else(|| panic!("no {call}: {log:?}"))
    };
    let last = |call: &str| log.iter().rposition(|c| *c == call).unwrap();
    if cfg!(feature = "rpc") {
        assert!(
            last("cuMemFreeHost") < first("cuModuleUnload"),
            "the mailbox before the image: {log:?}"
        );
    }
    assert!(
        first("cuModuleUnload") < first("cuMemFree_v2"),
        "then cached blocks: {log:?}"
    );
    assert!(
        last("cuMemFree_v2") < first("cuEventDestroy_v2"),
        "then events: {log:?}"
    );
    assert!(
        last("cuEventDestroy_v2") < first("cuStreamDestroy_v2"),
        "then streams: {log:?}"
    );
    assert_eq!(
        log.last(),
        Some(&"cuDevicePrimaryCtxRelease_v2"),
        "the context last: {log:?}"
    );
    drop(host);
}

#[test]
fn a_launch_allocates_nothing_on_the_host() {
    let _serial = serial();
    let core = core_on(&[H100], &[]);
    core.init_device(0).unwrap();
    let image = cubin("sm_90");
    let (entries, _, _) = entries_of(&image);
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    let counter = loaded.addresses[2];
    let args = [0x1234 as *mut c_void, counter as *mut c_void];
    let request = LaunchRequest {
        teams: 4,
        thread_limit: 64,
        tripcount: 1000,
        ..Default::default()
    };
    let launch_twice = || {
        // SAFETY: the simulated kernels have no bodies; the arguments are only passed along.
        unsafe { core.launch(0, loaded.addresses[0], &args, &request, None) }.unwrap();
        let mut queue: *mut c_void = std::ptr::null_mut();
        // SAFETY: as above.
        unsafe { core.launch(0, loaded.addresses[1], &args, &request, Some(&mut queue)) }.unwrap();
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
    assert_eq!(simulated::world().as_ref().unwrap().launches.len(), 22);
    assert!(core.deinit().unwrap());
}

/// The steps of a small program, each a group of entry points that the fault test makes fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Init,
    Load,
    Alloc,
    Copy,
    Launch,
    Teardown,
}

/// Runs the program's steps; at `fault`'s step, the next call of its driver function fails once: the
/// step must fail with a message naming the call, and a second try must succeed.
fn program_with_fault(fault: Option<(Step, &'static str)>) {
    let core = core_on(&[H100], &[("LIBOMPTARGET_STACK_SIZE", "8192")]);
    let image = cubin("sm_90");
    let (entries, _, _) = entries_of(&image);
    let mut loaded = None;
    let mut buffer = std::ptr::null_mut();
    let step = |which: Step, op: &mut dyn FnMut() -> crate::util::error::Result<()>| {
        if let Some((_, call)) = fault.filter(|(at, _)| *at == which) {
            simulated::fail_next(call, 999);
            let err = op()
                .err()
                .unwrap_or_else(|| panic!("{which:?} did not fail when {call} did"));
            let text = err.to_string();
            assert!(text.contains(call), "{which:?}: the message names {call}: {text}");
            assert!(
                text.contains("CUDA_ERROR_UNKNOWN (999)"),
                "and the driver's result: {text}"
            );
            if which == Step::Teardown {
                return;
            }
        }
        op().unwrap_or_else(|e| panic!("{which:?} (after {fault:?}): {e}"));
    };
    step(Step::Init, &mut || core.init_device(0));
    step(Step::Load, &mut || {
        loaded = Some(core.load_image(0, 0x1000, &image, &entries)?);
        Ok(())
    });
    step(Step::Alloc, &mut || {
        buffer = core.alloc(0, 1 << 20, crate::backend::AllocKind::Device)?;
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
    let kernel = loaded.as_ref().unwrap().addresses[1];
    step(Step::Launch, &mut || {
        // SAFETY: the simulated kernel has no body.
        unsafe { core.launch(0, kernel, &[], &LaunchRequest::default(), None) }
    });
    step(Step::Teardown, &mut || {
        // Every part runs even when one fails, as a program's exit does.
        let freed = core.free(0, buffer as usize);
        let unloaded = core.unregister_library(&[(0x1000, 0x1000 + image.len())]).map(|_| ());
        let released = core.deinit().map(|_| ());
        freed.and(unloaded).and(released)
    });
}

#[test]
fn every_driver_call_failing_once_is_reported_and_survived() {
    let _serial = serial();
    program_with_fault(None);
    assert_eq!(simulated::live(), (0, 0, 0, 0, 0), "the clean run releases everything");
    let faults = [
        (Step::Init, "cuDevicePrimaryCtxGetState"),
        (Step::Init, "cuDevicePrimaryCtxSetFlags_v2"),
        (Step::Init, "cuDevicePrimaryCtxRetain"),
        (Step::Init, "cuCtxSetCurrent"),
        (Step::Init, "cuCtxSetLimit"),
        (Step::Init, "cuDeviceGetAttribute"),
        (Step::Init, "cuDeviceTotalMem_v2"),
        (Step::Init, "cuStreamCreate"),
        (Step::Init, "cuEventCreate"),
        (Step::Load, "cuModuleLoadDataEx"),
        (Step::Load, "cuModuleGetGlobal_v2"),
        (Step::Load, "cuModuleGetFunction"),
        (Step::Load, "cuFuncGetAttribute"),
        (Step::Load, "cuMemcpyHtoDAsync_v2"),
        (Step::Load, "cuStreamSynchronize"),
        (Step::Alloc, "cuMemAlloc_v2"),
        (Step::Copy, "cuMemcpyHtoDAsync_v2"),
        (Step::Copy, "cuMemcpyDtoHAsync_v2"),
        (Step::Copy, "cuStreamSynchronize"),
        (Step::Launch, "cuLaunchKernel"),
        (Step::Launch, "cuStreamSynchronize"),
        (Step::Teardown, "cuMemFree_v2"),
        (Step::Teardown, "cuModuleUnload"),
        (Step::Teardown, "cuEventDestroy_v2"),
        (Step::Teardown, "cuStreamDestroy_v2"),
        (Step::Teardown, "cuDevicePrimaryCtxRelease_v2"),
    ];
    // Host services: reading the image's client pointer, the mailbox (pinned host memory), the device
    // heap's reservation, and the polling of a thread that waits for a kernel that may call the host.
    let host_services: &[(Step, &str)] = if cfg!(feature = "rpc") {
        &[
            (Step::Launch, "cuStreamQuery"),
            (Step::Load, "cuMemcpyDtoHAsync_v2"),
            (Step::Load, "cuMemAllocHost_v2"),
            (Step::Load, "cuMemAlloc_v2"),
            (Step::Teardown, "cuMemFreeHost"),
        ]
    } else {
        &[]
    };
    for &(step, call) in faults.iter().chain(host_services) {
        program_with_fault(Some((step, call)));
        let (memory, modules, streams, events, contexts) = simulated::live();
        // A failed release leaves exactly the object the driver refused to release; nothing else.
        let expected = match call {
            "cuMemFree_v2" | "cuMemFreeHost" | "cuMemFreeAsync" if step == Step::Teardown => (1, 0, 0, 0, 0),
            "cuModuleUnload" if step == Step::Teardown => (0, 1, 0, 0, 0),
            "cuStreamDestroy_v2" => (0, 0, 1, 0, 0),
            "cuEventDestroy_v2" => (0, 0, 0, 1, 0),
            "cuDevicePrimaryCtxRelease_v2" => (0, 0, 0, 0, 1),
            _ => (0, 0, 0, 0, 0),
        };
        assert_eq!(
            (memory, modules, streams, events, contexts),
            expected,
            "{call} failing in {step:?}: live memory, modules, streams, events, contexts"
        );
    }
}

/// The host entry of the device header's RPC client pointer, which the test cubins define.
#[cfg(feature = "rpc")]
fn client_entry() -> HostEntry {
    HostEntry {
        name: CString::new("__llvm_libc_rpc_client").unwrap(),
        size: 8,
        flags: 0,
        host_addr: 0,
    }
}

/// Doubles each lane's first word and adds the lane number.
#[cfg(feature = "rpc")]
struct DoubleIt;

#[cfg(feature = "rpc")]
impl crate::rpc::registry::UserHandler for DoubleIt {
    fn serve(&self, port: &mut crate::rpc::port::Port<'_>) {
        let mut packets = port.lane_packets();
        let n = port.recv(&mut packets).unwrap();
        for (lane, p) in packets.iter_mut().take(n as usize).enumerate() {
            p.data[0] = p.data[0] * 2 + lane as u64;
        }
        port.send(&packets).unwrap();
    }
}

#[cfg(feature = "rpc")]
#[test]
fn host_services_serve_a_32_lane_warp_over_the_drivers_pinned_memory() {
    use crate::rpc::simulated::{SimulatedDevice, SimulatedWarp};
    const OP_DOUBLE: u16 = 0xC0DA;
    let _serial = serial();
    crate::rpc::registry::register_handler(OP_DOUBLE, Box::new(DoubleIt)).unwrap();
    let core = core_on(&[H100], &[("OMPRPC_RPC_PORTS", "64")]);
    core.init_device(0).unwrap();
    let image = cubin("sm_90");
    let (mut entries, _, generic) = entries_of(&image);
    entries.push(client_entry());
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    let pinned = |addr: usize| simulated::world().as_ref().unwrap().memory.contains_key(&addr);
    let server = crate::rpc::registry::servers()
        .iter()
        .find(|s| pinned(s.mailbox_address()))
        .cloned()
        .expect("a server whose mailbox is the simulated driver's memory");
    assert_eq!(
        (server.lane_size(), server.ports()),
        (32, 64),
        "warp-size lanes; OMPRPC_RPC_PORTS"
    );
    assert_eq!(
        simulated::world().as_ref().unwrap().calls["cuMemAllocHost_v2"],
        1,
        "the mailbox is pinned host memory"
    );
    // The contract of LLVM's plugins: the pointer is left as the image set it, and libc's client
    // bytes are copied to the object it names, which lives in the module's own memory.
    let client = read::<u64>(loaded.addresses[3]) as usize;
    let (object, object_size) = simulated::world()
        .as_ref()
        .unwrap()
        .modules
        .values()
        .next()
        .unwrap()
        .globals["omprpc_client_object"];
    assert_eq!(client, object, "the image's pointer still names its own client object");
    assert_eq!(object_size, 552);
    assert_eq!(read::<u32>(object), 64, "the client object knows the port count");
    assert_eq!(
        read::<u64>(object + 8) as usize,
        server.mailbox_address(),
        "and the mailbox"
    );

    let results = Arc::new(std::sync::Mutex::new((Vec::new(), Vec::new())));
    let out = Arc::clone(&results);
    let kernel_server = Arc::clone(&server);
    simulated::register_kernel(
        &generic,
        0,
        Arc::new(move |_| {
            let device = SimulatedDevice::new(Arc::clone(&kernel_server));
            let warp = SimulatedWarp::new(&device, 5);
            let mask = warp.full_mask();
            let sizes: Vec<u64> = (0..32).map(|lane| 16 + lane).collect();
            let ptrs = warp.malloc(mask, &sizes);
            let packets: Vec<[u64; 8]> = (0..32).map(|lane| [100 + lane, 0, 0, 0, 0, 0, 0, 0]).collect();
            let replies = warp.call(OP_DOUBLE, mask & 0xffff, &packets);
            warp.free(mask, &ptrs);
            *out.lock().unwrap() = (ptrs, replies.iter().map(|r| r[0]).collect::<Vec<_>>());
        }),
    );
    let memory_calls = || {
        let world = simulated::world();
        let calls = &world.as_ref().unwrap().calls;
        ["cuMemAlloc_v2", "cuMemFree_v2"].map(|c| calls.get(c).copied().unwrap_or(0))
    };
    let calls_before = memory_calls();
    // SAFETY: the simulated kernel takes no arguments.
    unsafe { core.launch(0, loaded.addresses[1], &[], &LaunchRequest::default(), None) }.unwrap();
    let (ptrs, replies) = results.lock().unwrap().clone();
    assert_eq!(ptrs.len(), 32);
    let distinct: std::collections::HashSet<_> = ptrs.iter().collect();
    assert!(
        ptrs.iter().all(|&p| p != 0) && distinct.len() == 32,
        "one block per lane: {ptrs:x?}"
    );
    assert_eq!(
        memory_calls(),
        calls_before,
        "device malloc and free make no driver call while the kernel runs"
    );
    assert_eq!(simulated::world().as_ref().unwrap().violations, Vec::<String>::new());
    let reservation = {
        let world = simulated::world();
        let memory = &world.as_ref().unwrap().memory;
        let (&base, &size) = memory.iter().max_by_key(|(_, &size)| size).unwrap();
        base..base + size
    };
    assert_eq!(
        reservation.len(),
        256 << 20,
        "the default reservation on an 80 GiB device"
    );
    assert!(
        ptrs.iter().all(|&p| reservation.contains(&(p as usize))),
        "the blocks come from the memory reserved when the image was loaded"
    );
    let expected: Vec<u64> = (0..32)
        .map(|lane| if lane < 16 { (100 + lane) * 2 + lane } else { 0 })
        .collect();
    assert_eq!(
        replies, expected,
        "the user opcode served the 16 active lanes, each its own packet"
    );
    simulated::clear_kernels();
    drop(server);
    assert!(core.deinit().unwrap());
    assert_eq!(
        simulated::live(),
        (0, 0, 0, 0, 0),
        "the mailbox and client object are released too"
    );
}

#[test]
fn nowait_work_is_queried_and_events_order_queues() {
    let _serial = serial();
    let core = core_on(&[H100], &[("LIBOMPTARGET_NUM_INITIAL_STREAMS", "2")]);
    core.init_device(0).unwrap();
    let image = cubin("sm_90");
    let (entries, spmd, _) = entries_of(&image);
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = Arc::clone(&ran);
    simulated::register_kernel(
        &spmd,
        0,
        Arc::new(move |_| {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }),
    );
    let request = LaunchRequest {
        nowait: true,
        ..Default::default()
    };
    let (mut first, mut second): (*mut c_void, *mut c_void) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the simulated kernel takes no arguments.
    unsafe { core.launch(0, loaded.addresses[0], &[], &request, Some(&mut first)) }.unwrap();
    assert_eq!(
        ran.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nowait: queued, not run"
    );
    let streams = &simulated::world().as_ref().unwrap().launches[0].stream.clone();
    assert_eq!(first as usize, *streams, "libomptarget holds the CUstream itself");

    // An event recorded after the kernel holds back the other queue's work until the kernel ran.
    let event = core.create_event(0).unwrap();
    core.record_event(0, event, &mut first).unwrap();
    core.wait_event(0, event, &mut second).unwrap();
    assert!(
        !second.is_null() && second != first,
        "the waiting async info got a queue of its own"
    );
    assert_eq!(
        ran.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "waiting ran the recorded work"
    );
    core.sync_event(0, event).unwrap();
    core.destroy_event(0, event).unwrap();

    // query_async leaves a busy queue with its async info and gives back an idle one.
    // SAFETY: as above.
    unsafe { core.launch(0, loaded.addresses[0], &[], &request, Some(&mut first)) }.unwrap();
    core.query_async(0, &mut first).unwrap();
    assert!(!first.is_null(), "not done yet: the async info keeps its queue");
    core.query_async(0, &mut first).unwrap();
    assert!(first.is_null(), "done: the queue went back to the pool");
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 2);
    core.synchronize(0, &mut second).unwrap();
    assert!(second.is_null());

    // Streams beyond the initial two are made on demand and kept in the pool.
    let mut infos = [std::ptr::null_mut::<c_void>(); 3];
    for info in infos.iter_mut() {
        // SAFETY: as above.
        unsafe { core.launch(0, loaded.addresses[0], &[], &request, Some(info)) }.unwrap();
    }
    for info in infos.iter_mut() {
        core.synchronize(0, info).unwrap();
    }
    // Two initial streams and one more for the third async info (device code's allocations, which
    // have a stream of their own, made none here).
    assert_eq!(simulated::world().as_ref().unwrap().calls["cuStreamCreate"], 3);
    simulated::clear_kernels();
    assert!(core.deinit().unwrap());
    assert_eq!(simulated::live(), (0, 0, 0, 0, 0));
}

#[test]
fn device_info_lists_what_the_stock_plugin_prints() {
    let _serial = serial();
    let core = core_on(&[H100, A10], &[]);
    core.init_device(1).unwrap();
    let lines = core.describe_device(1).unwrap();
    let value = |name: &str| {
        lines
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name} in {lines:?}"))
    };
    assert_eq!(value("Device Name:"), "Simulated GPU 1");
    assert_eq!(value("Compute Capabilities:"), "sm_86");
    assert_eq!(value("Number of Multiprocessors:"), "72");
    assert_eq!(value("Warp Size:"), "32 Threads");
    assert_eq!(value("CUDA Driver Version:"), "12020");
    assert_eq!(value("Global Memory Size:"), format!("{} bytes", 80u64 << 30));
    assert!(core.deinit().unwrap());
    assert_eq!(simulated::live(), (0, 0, 0, 0, 0));
}

#[test]
fn ptx_images_are_handed_to_the_driver_to_compile() {
    let _serial = serial();
    let ptx = b"//\n// hand-written\n//\n.version 7.8\n.target sm_80\n.address_size 64\n\n\
                .visible .entry tiny_kernel()\n{\n\tret;\n}\n";
    let core = core_on(&[A10], &[]);
    assert!(core.is_valid_image(ptx, ptx.len(), None), "sm_80 PTX runs on sm_86");
    let newer = String::from_utf8_lossy(ptx).replace("sm_80", "sm_90");
    assert!(
        !core.is_valid_image(newer.as_bytes(), newer.len(), None),
        "but sm_90 PTX does not"
    );
    core.init_device(0).unwrap();
    // The image's bytes end without a NUL; the driver gets a terminated copy.
    let entries = [HostEntry {
        name: CString::new("tiny_kernel").unwrap(),
        size: 0,
        flags: 0,
        host_addr: 0,
    }];
    let loaded = core.load_image(0, 0x1000, ptx, &entries).unwrap();
    // SAFETY: the kernel takes no arguments and has no body here.
    unsafe { core.launch(0, loaded.addresses[0], &[], &LaunchRequest::default(), None) }.unwrap();
    assert_eq!(simulated::world().as_ref().unwrap().launches[0].kernel, "tiny_kernel");
    assert!(core.deinit().unwrap());
    assert_eq!(simulated::live(), (0, 0, 0, 0, 0));
}

/// Eight host threads on two GPUs at once, each with its own queue: copies in, a `nowait` launch and a
/// copy back, then a synchronisation, fifty times; every round's result must be that round's data
/// plus what the kernel added, so that no operation of one thread's queue is lost, repeated,
/// reordered or mixed with another's.
#[test]
fn eight_threads_of_queued_copies_and_launches_keep_their_order() {
    const WORDS: usize = 256;
    let _serial = serial();
    let core = core_on(&[H100, H100], &[]);
    let image = cubin("sm_90");
    let (entries, spmd, _) = entries_of(&image);
    let mut kernels = Vec::new();
    for device in 0..2 {
        core.init_device(device).unwrap();
        kernels.push(core.load_image(device, 0x1000, &image, &entries).unwrap().addresses[0]);
    }
    // The kernel adds 1 to each of the `args[1]` words at `args[0]`.
    simulated::register_kernel(
        &spmd,
        2,
        Arc::new(|args| {
            // SAFETY: every launch below passes a live buffer of `args[1]` words (simulated device
            // memory is host memory), which only this launch's queue touches until it is synchronised.
            let words = unsafe { std::slice::from_raw_parts_mut(args[0] as *mut u32, args[1] as usize) };
            for w in words {
                *w += 1;
            }
        }),
    );
    let core = &core;
    let kernels = &kernels;
    std::thread::scope(|scope| {
        for thread in 0..8u32 {
            scope.spawn(move || {
                let device = (thread % 2) as i32;
                let buffer = core
                    .alloc(device, WORDS * 4, crate::backend::AllocKind::Device)
                    .unwrap();
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
                    let args = [buffer, WORDS as *mut c_void];
                    // SAFETY: `buffer` holds WORDS words; `data` and `back` outlive the synchronisation.
                    unsafe {
                        core.submit(device, buffer, data.as_ptr().cast(), WORDS * 4, Some(&mut queue))
                            .unwrap();
                        core.launch(device, kernels[device as usize], &args, &request, Some(&mut queue))
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
    simulated::clear_kernels();
    assert!(core.deinit().unwrap());
    assert_eq!(simulated::live(), (0, 0, 0, 0, 0), "everything released");
}

/// Under `requires unified_shared_memory` the device's globals get the host's values at load (for
/// clang's `_decl_tgt_ref_ptr` globals, the host variable's address), through the driver's copy.
#[test]
fn unified_shared_memory_gives_device_globals_the_hosts_values() {
    let _serial = serial();
    let core = core_on(&[H100], &[]);
    core.init_requires(0x008);
    core.init_device(0).unwrap();
    let image = cubin("sm_90");
    let (mut entries, _, _) = entries_of(&image);
    let host_counter: u32 = 0xC0FFEE;
    let counter = entries.iter_mut().find(|e| e.size > 0).unwrap();
    counter.host_addr = &host_counter as *const u32 as usize;
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    assert_eq!(
        read::<u32>(loaded.addresses[2]),
        0xC0FFEE,
        "the device's counter holds the host's value"
    );
    // Without the requirement the device keeps the image's own value.
    assert!(core.deinit().unwrap());
    let core = core_on(&[H100], &[]);
    core.init_device(0).unwrap();
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    assert_ne!(read::<u32>(loaded.addresses[2]), 0xC0FFEE);
    assert!(core.deinit().unwrap());
}

/// When the driver runs out of memory, the core frees the small blocks its memory manager caches and
/// tries again, so memory the program freed is never what makes an allocation fail.
#[test]
fn out_of_device_memory_frees_the_cache_and_retries() {
    let _serial = serial();
    let core = core_on(&[H100], &[]);
    core.init_device(0).unwrap();
    let live = || simulated::world().as_ref().unwrap().memory.values().sum::<usize>();
    // Room for the blocks below and nothing more.
    simulated::world().as_mut().unwrap().capacity = Some(live() + 16 * 4096);
    let blocks: Vec<*mut c_void> = (0..16)
        .map(|_| core.alloc(0, 4096, crate::backend::AllocKind::Device).unwrap())
        .collect();
    let full = core.alloc(0, 4096, crate::backend::AllocKind::Device).unwrap_err();
    assert!(
        matches!(full, crate::util::error::Error::OutOfMemory { size: 4096 }),
        "the driver's CUDA_ERROR_OUT_OF_MEMORY is an out-of-memory error: {full}"
    );
    for block in &blocks {
        core.free(0, *block as usize).unwrap();
    }
    // The freed blocks sit in the cache, so the device is still full; a block of another size misses
    // the cache, runs out, and succeeds once the cache is given back to the driver.
    let big = core.alloc(0, 8192, crate::backend::AllocKind::Device).unwrap();
    assert!(!big.is_null());
    assert!(
        live() <= simulated::world().as_ref().unwrap().capacity.unwrap(),
        "within the device's memory"
    );
    core.free(0, big as usize).unwrap();
    assert!(core.deinit().unwrap());
}

/// A nowait region whose stream the driver reports failed: `query_async` fails naming the call, and,
/// as with the stock plugin, the stream goes back to the pool and the async info forgets it.
#[test]
fn a_failed_query_releases_the_queue() {
    let _serial = serial();
    let core = core_on(&[H100], &[("LIBOMPTARGET_NUM_INITIAL_STREAMS", "1")]);
    core.init_device(0).unwrap();
    let image = cubin("sm_90");
    let (entries, _, _) = entries_of(&image);
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    let request = LaunchRequest {
        nowait: true,
        ..Default::default()
    };
    let mut info: *mut c_void = std::ptr::null_mut();
    // SAFETY: the simulated kernel takes no arguments.
    unsafe { core.launch(0, loaded.addresses[0], &[], &request, Some(&mut info)) }.unwrap();
    assert!(!info.is_null());
    simulated::fail_next("cuStreamQuery", 999);
    let err = core.query_async(0, &mut info).unwrap_err().to_string();
    assert!(err.contains("cuStreamQuery"), "{err}");
    assert!(info.is_null(), "the async info no longer holds the queue");
    // The pool's one stream is free again: the next nowait region gets it, no new stream is made.
    let mut again: *mut c_void = std::ptr::null_mut();
    // SAFETY: as above.
    unsafe { core.launch(0, loaded.addresses[0], &[], &request, Some(&mut again)) }.unwrap();
    assert_eq!(simulated::world().as_ref().unwrap().calls["cuStreamCreate"], 1);
    core.synchronize(0, &mut again).unwrap();
    simulated::clear_kernels();
    assert!(core.deinit().unwrap());
}

/// At exit the driver may already be shutting down when the plugin is torn down: every release then
/// reports CUDA_ERROR_DEINITIALIZED, which is not a failure (as with the stock plugin, nothing is said).
#[test]
fn teardown_after_the_driver_shut_down_is_silent() {
    for call in [
        "cuModuleUnload",
        "cuMemFree_v2",
        "cuEventDestroy_v2",
        "cuStreamDestroy_v2",
        "cuDevicePrimaryCtxRelease_v2",
    ] {
        let _serial = serial();
        let core = core_on(&[H100], &[]);
        core.init_device(0).unwrap();
        let image = cubin("sm_90");
        let (entries, _, _) = entries_of(&image);
        core.load_image(0, 0x1000, &image, &entries).unwrap();
        let _block = core.alloc(0, 1 << 20, crate::backend::AllocKind::Device).unwrap();
        simulated::fail_next(call, 4);
        assert!(
            core.deinit().is_ok(),
            "{call} reporting CUDA_ERROR_DEINITIALIZED at teardown"
        );
        // Other failures still count.
        let core = core_on(&[H100], &[]);
        core.init_device(0).unwrap();
        simulated::fail_next("cuDevicePrimaryCtxRelease_v2", 999);
        assert!(core.deinit().is_err());
    }
}

/// `data_lock` hands the device's address of the pinned range: the host address where the device can
/// use it, else the one `cuMemHostGetDevicePointer` gives (as the stock plugin does).
#[test]
fn a_locked_range_is_handed_over_at_the_devices_address() {
    let _serial = serial();
    let core = core_on(&[H100, NO_HOST_POINTERS], &[]);
    core.init_device(0).unwrap();
    core.init_device(1).unwrap();
    let mut host = vec![0u8; 8192];
    let ptr = host.as_mut_ptr().cast::<c_void>();
    assert_eq!(
        core.lock_host(0, ptr, 8192).unwrap(),
        ptr,
        "a device that can use host pointers"
    );
    let aliased = core.lock_host(1, ptr, 8192).unwrap();
    assert_eq!(
        aliased as usize,
        ptr as usize + simulated::DEVICE_ALIAS_OFFSET,
        "the driver's address for the range"
    );
    assert_eq!(
        simulated::world().as_ref().unwrap().calls["cuMemHostGetDevicePointer_v2"],
        1
    );
    core.unlock_host(0, ptr).unwrap();
    core.unlock_host(1, ptr).unwrap();
    assert!(core.deinit().unwrap());
}

/// On GPUs in confidential-computing mode kernels cannot read the mailbox: an image with a client loads
/// without host services (its client object stays empty, so its calls fail as with no server) instead
/// of hanging on its first call.
#[cfg(feature = "rpc")]
#[test]
fn confidential_computing_refuses_host_services() {
    let _serial = serial();
    simulated::reset(&[H100], 0);
    let config = Config::from_pairs(&[]);
    let mut backend = CudaBackend::with_driver(simulated::driver(), &config).unwrap();
    backend.set_confidential_computing();
    let core = Core::new_boxed(backend, config);
    core.init_device(0).unwrap();
    let image = cubin("sm_90");
    let (mut entries, _, _) = entries_of(&image);
    entries.push(client_entry());
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    let object = read::<u64>(loaded.addresses[3]) as usize;
    assert_eq!(
        read::<u32>(object),
        0,
        "no ports: the device's calls fail as with no server"
    );
    assert_eq!(
        simulated::world().as_ref().unwrap().calls.get("cuMemAllocHost_v2"),
        None,
        "no mailbox was made"
    );
    assert!(core.deinit().unwrap());
}
