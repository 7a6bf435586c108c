//! The CUDA backend driven through the core over the simulated driver, with the real cubins in
//! `tests/data/nvptx` (built by `scripts/make-nvptx-test-images.sh`): what is CUDA's own. The rules
//! every backend shares run on it through the backend test suite (`backend::suite`, with
//! `harness.rs`).

use std::ffi::{c_void, CString};

use super::cubin::{Capability, NvidiaImage};
use super::harness::{core_on, cubin, serial, H100};
use super::simulated::{self, SimGpu};
use super::CudaBackend;
use crate::backend::suite::read;
use crate::backend::Backend;
use crate::plugin::{HostEntry, LaunchRequest};
use crate::util::config::Config;

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

/// The program's settings reach the driver as context limits.
#[test]
fn stack_and_heap_settings_set_the_contexts_limits() {
    let _serial = serial();
    let core = core_on(
        &[H100, H100],
        &[
            ("LIBOMPTARGET_STACK_SIZE", "4096"),
            ("LIBOMPTARGET_HEAP_SIZE", "1048576"),
            ("LIBOMPTARGET_SHARED_MEMORY_SIZE", "256"),
        ],
    );
    core.init_device(0).unwrap();
    core.init_device(1).unwrap();
    {
        let w = simulated::world();
        let w = w.as_ref().unwrap();
        assert_eq!(w.limits.get(&super::sys::LIMIT_STACK_SIZE), Some(&4096));
        assert_eq!(w.limits.get(&super::sys::LIMIT_MALLOC_HEAP_SIZE), Some(&1048576));
    }
    assert!(core.deinit().unwrap());
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

/// Loads a one-kernel PTX image (`tiny_kernel`) on device 0 of `core` and returns its entry address.
fn load_tiny_kernel(core: &dyn crate::plugin::PluginApi) -> usize {
    let ptx = b".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry tiny_kernel()\n{\n\tret;\n}\n";
    let entries = [HostEntry {
        name: CString::new("tiny_kernel").unwrap(),
        size: 0,
        flags: 0,
        host_addr: 0,
    }];
    core.load_image(0, 0x1000, ptx, &entries).unwrap().addresses[0]
}

/// Dynamic shared memory above 48 KiB (`LIBOMPTARGET_SHARED_MEMORY_SIZE`) needs the kernel's limit
/// raised before the launch, as NVIDIA's driver requires (the simulated one refuses the launch
/// otherwise): once per kernel, not per launch. Beyond what a block of the device may have, the
/// launch is refused with an error that names the kernel, the setting and the most that fits.
#[test]
fn dynamic_shared_memory_above_48_kib_raises_the_kernels_limit_or_is_refused_clearly() {
    let _serial = serial();
    let core = core_on(&[H100], &[("LIBOMPTARGET_SHARED_MEMORY_SIZE", "65536")]);
    core.init_device(0).unwrap();
    let kernel = load_tiny_kernel(core.as_ref());
    for _ in 0..2 {
        // SAFETY: the kernel takes no arguments and has no body here.
        unsafe { core.launch(0, kernel, &[], &LaunchRequest::default(), None) }.unwrap();
    }
    {
        let w = simulated::world();
        let w = w.as_ref().unwrap();
        assert_eq!(w.launches.len(), 2);
        assert!(w.launches.iter().all(|l| l.geometry.2 == 65536), "{:?}", w.launches);
        assert_eq!(w.record.calls["cuFuncSetAttribute"], 1, "raised once for the kernel");
    }
    assert!(core.deinit().unwrap());

    // An H100 block has 227 KiB in all; the simulated kernels use 2 KiB of static shared memory.
    let core = core_on(&[H100], &[("LIBOMPTARGET_SHARED_MEMORY_SIZE", "262144")]);
    core.init_device(0).unwrap();
    let kernel = load_tiny_kernel(core.as_ref());
    // SAFETY: as above.
    let err = unsafe { core.launch(0, kernel, &[], &LaunchRequest::default(), None) }
        .unwrap_err()
        .to_string();
    let most = (227 << 10) - simulated::STATIC_SHARED_BYTES;
    assert!(
        err.contains("kernel tiny_kernel cannot have 262144 bytes of dynamic shared memory")
            && err.contains("LIBOMPTARGET_SHARED_MEMORY_SIZE")
            && err.contains(&format!("ask for at most {most}")),
        "{err}"
    );
    assert!(simulated::world().as_ref().unwrap().launches.is_empty());
    assert!(core.deinit().unwrap());
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
    let (mut entries, _, _) = HostEntry::cuda_module_entries_of(&image);
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
        let (entries, _, _) = HostEntry::cuda_module_entries_of(&image);
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
        simulated::world().as_ref().unwrap().record.calls["cuMemHostGetDevicePointer_v2"],
        1
    );
    core.unlock_host(0, ptr).unwrap();
    core.unlock_host(1, ptr).unwrap();
    assert!(core.deinit().unwrap());
}

/// clang-16 with `-foffload-lto` makes the hidden client object a local symbol, which NVIDIA's
/// `cuModuleGetGlobal` (and so the simulated driver) does not find; the image still gets its client,
/// because the plugin judges the pointer from the cubin's own relocation, not from the driver.
#[cfg(feature = "rpc")]
#[test]
fn a_cubin_built_with_offload_lto_gets_its_local_client_object_filled() {
    let _serial = serial();
    let core = core_on(&[A10], &[]);
    core.init_device(0).unwrap();
    let image = std::fs::read(format!(
        "{}/tests/data/nvptx/cuda_module_lto-sm_80.cubin",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let object = crate::util::elf::Image::parse(&image)
        .unwrap()
        .symbol(b"omprpc_client_object")
        .unwrap();
    assert!(object.is_local(), "local under LTO");
    let (mut entries, _, _) = HostEntry::cuda_module_entries_of(&image);
    entries.push(client_entry());
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    let client = read::<u64>(loaded.addresses[entries.len() - 1]) as usize;
    assert_ne!(read::<u32>(client), 0, "the client object knows its ports");
    assert_ne!(read::<u64>(client + 8), 0, "and its mailbox");
    let world = simulated::world();
    let module = world.as_ref().unwrap().modules.values().next().unwrap();
    assert_eq!(module.globals.get("omprpc_client_object").map(|g| g.0), Some(client));
    assert!(
        module.is_local("omprpc_client_object"),
        "which the driver does not find by name"
    );
    drop(world);
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
    let core = crate::plugin::Core::new_boxed(backend, config);
    core.init_device(0).unwrap();
    let image = cubin("sm_90");
    let (mut entries, _, _) = HostEntry::cuda_module_entries_of(&image);
    entries.push(client_entry());
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    let object = read::<u64>(loaded.addresses[3]) as usize;
    assert_eq!(
        read::<u32>(object),
        0,
        "no ports: the device's calls fail as with no server"
    );
    assert_eq!(
        simulated::world()
            .as_ref()
            .unwrap()
            .record
            .calls
            .get("cuMemAllocHost_v2"),
        None,
        "no mailbox was made"
    );
    assert!(core.deinit().unwrap());
}

/// The backend suite's fault test fails, one at a time, every CUDA call of every operation of its
/// program's steps: these, each in its step (with host services, the client pointer's read, the
/// mailbox, the device heap's reservation and the polling of a kernel that may call the host too).
#[test]
fn the_suites_fault_test_fails_each_of_these_cuda_calls() {
    use crate::backend::suite::{steps, Harness, Step};
    let mut expected = vec![
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
    if cfg!(feature = "rpc") {
        expected.extend([
            (Step::Launch, "cuStreamQuery"),
            (Step::Load, "cuMemcpyDtoHAsync_v2"),
            (Step::Load, "cuMemAllocHost_v2"),
            (Step::Load, "cuMemAlloc_v2"),
            (Step::Teardown, "cuMemFreeHost"),
        ]);
    }
    let mut failed: Vec<(Step, &str)> = steps::<super::harness::CudaHarness>()
        .into_iter()
        .flat_map(|(step, op)| {
            super::harness::CudaHarness::driver_calls(op)
                .into_iter()
                .map(move |call| (step, call))
        })
        .collect();
    let key = |(step, call): &(Step, &str)| (format!("{step:?}"), call.to_string());
    expected.sort_by_key(key);
    failed.sort_by_key(key);
    assert_eq!(failed, expected);
}

/// The simulated driver keeps NVIDIA's context rules, so that the backend's tests fail where a real
/// driver would: no current context on a thread is `CUDA_ERROR_INVALID_CONTEXT`, another context's
/// stream is `CUDA_ERROR_INVALID_HANDLE`, and a released primary context is no longer current.
#[test]
fn the_simulated_driver_keeps_contexts_per_thread_and_objects_per_context() {
    use super::sys::{CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE, CUDA_SUCCESS};
    let _serial = serial();
    simulated::reset(&[H100, H100], 0);
    let f = &simulated::driver().functions;
    let mut contexts = [std::ptr::null_mut(); 2];
    let mut stream = std::ptr::null_mut();
    // SAFETY: the simulated driver's entry points, with writable out-pointers.
    unsafe {
        assert_eq!((f.cuDevicePrimaryCtxRetain)(&mut contexts[0], 0), CUDA_SUCCESS);
        assert_eq!((f.cuDevicePrimaryCtxRetain)(&mut contexts[1], 1), CUDA_SUCCESS);
        assert_eq!(
            (f.cuStreamCreate)(&mut stream, 0),
            CUDA_ERROR_INVALID_CONTEXT,
            "none current"
        );
        assert_eq!((f.cuCtxSetCurrent)(contexts[0]), CUDA_SUCCESS);
        assert_eq!((f.cuStreamCreate)(&mut stream, 0), CUDA_SUCCESS);
        let other_thread = stream as usize;
        let elsewhere = std::thread::spawn(move || (f.cuStreamSynchronize)(other_thread as _))
            .join()
            .unwrap();
        assert_eq!(elsewhere, CUDA_ERROR_INVALID_CONTEXT, "current on one thread only");
        assert_eq!((f.cuCtxSetCurrent)(contexts[1]), CUDA_SUCCESS);
        assert_eq!(
            (f.cuStreamSynchronize)(stream),
            CUDA_ERROR_INVALID_HANDLE,
            "another context's"
        );
        assert_eq!((f.cuCtxSetCurrent)(contexts[0]), CUDA_SUCCESS);
        assert_eq!((f.cuStreamDestroy_v2)(stream), CUDA_SUCCESS);
        assert_eq!((f.cuDevicePrimaryCtxRelease_v2)(0), CUDA_SUCCESS);
        assert_eq!(
            (f.cuStreamCreate)(&mut stream, 0),
            CUDA_ERROR_INVALID_CONTEXT,
            "released"
        );
        assert_eq!((f.cuDevicePrimaryCtxRelease_v2)(1), CUDA_SUCCESS);
    }
}

/// A host call that waits at a gate until the test opens it; says when it has started.
#[cfg(feature = "rpc")]
struct GatedCall {
    started: std::sync::Mutex<std::sync::mpsc::Sender<()>>,
    gate: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

#[cfg(feature = "rpc")]
impl crate::rpc::serving::handlers::UserHandler for GatedCall {
    fn serve(&self, port: &mut crate::rpc::protocol::port::Port<'_>) {
        let mut packets = port.lane_packets();
        port.recv(&mut packets).unwrap();
        self.started.lock().unwrap().send(()).unwrap();
        self.gate.lock().unwrap().recv().unwrap();
        port.send(&packets).unwrap();
    }
}

/// LLVM's #66817: `cuMemFree` waits for all work of its context, so a serving path that freed device
/// memory while its kernel waited for the call would wait for ever. The simulated driver blocks as
/// NVIDIA's does: while a kernel waits in a host call held at a gate, a `cuMemFree` on another thread
/// does not return; it returns once the call is answered and the kernel ends. Had the serving thread
/// itself made that `cuMemFree` (the shape of the upstream hang: nobody else serves the call) the
/// gate would never open: the test shows that wait, bounded, then opens the gate. The plugin's
/// serving path makes no driver call, which is why it never meets this.
#[cfg(feature = "rpc")]
#[test]
fn cu_mem_free_waits_for_a_kernel_in_a_host_call_as_in_llvm_66817() {
    use super::harness::CudaHarness;
    use crate::backend::suite::{load_with_host_services, opcode_of_its_own, Harness};
    use crate::backend::AllocKind;
    use crate::rpc::simulated::{SimulatedDevice, SimulatedWarp};
    use std::sync::{mpsc, Arc, Mutex};
    use std::time::Duration;

    let h = CudaHarness::start(1, &[("LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD", "0")]);
    let core = h.core();
    let (program, loaded, server) = load_with_host_services(&h);
    let op = opcode_of_its_own();
    let (started_tx, started) = mpsc::channel();
    let (open_gate, gate) = mpsc::channel();
    let handler = GatedCall {
        started: Mutex::new(started_tx),
        gate: Mutex::new(gate),
    };
    crate::rpc::serving::registry::register_handler(op, Box::new(handler)).unwrap();
    h.register_kernel(
        &program.generic_name,
        0,
        Arc::new(move |_| {
            let device = SimulatedDevice::new(Arc::clone(&server));
            let replies = SimulatedWarp::new(&device, 0).call(op, 1, &[[7, 0, 0, 0, 0, 0, 0, 0]]);
            assert_eq!(replies[0][0], 7);
        }),
    );
    let block = core.alloc(0, 64, AllocKind::Device).unwrap() as usize;
    let mut queue: *mut c_void = std::ptr::null_mut();
    let request = LaunchRequest {
        nowait: true,
        ..Default::default()
    };
    // SAFETY: the simulated kernel takes no arguments.
    unsafe { core.launch(0, loaded.addresses[program.generic], &[], &request, Some(&mut queue)) }.unwrap();
    started
        .recv_timeout(Duration::from_secs(20))
        .expect("the kernel's host call reached its handler");

    std::thread::scope(|scope| {
        let (freed_tx, freed) = mpsc::channel();
        scope.spawn(move || freed_tx.send(core.free(0, block)).unwrap());
        assert!(
            freed.recv_timeout(Duration::from_millis(300)).is_err(),
            "cuMemFree returned while a kernel of its context waited in a host call: had the \
             serving thread made it, the call would never have been answered"
        );
        open_gate.send(()).unwrap();
        freed
            .recv_timeout(Duration::from_secs(20))
            .expect("cuMemFree returns once the call is answered and the kernel has ended")
            .unwrap();
    });
    assert_eq!(
        h.calls(crate::backend::suite::Op::FreeDevice),
        1,
        "the free reached the driver"
    );
    core.synchronize(0, &mut queue).unwrap();
    h.clear_kernels();
    assert!(core.deinit().unwrap());
}
