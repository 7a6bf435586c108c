//! The AMDGPU backend driven through the core over the simulated HSA runtime, with the real code
//! objects in `tests/data/amdgpu` (built by `scripts/make-amdgpu-test-images.sh`).

use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

use super::simulated::{self, SimAgent};
use super::AmdgpuBackend;
use crate::backend::suite::read;
use crate::backend::AllocKind;
use crate::plugin::{Core, HostEntry, LaunchRequest, PluginApi};
use crate::util::config::Config;

use super::harness::MI250;

/// A code object built by clang-16 from `c_tests/gpu/cuda_module.c` (committed; rebuilt by
/// `scripts/make-amdgpu-test-images.sh`).
/// The gfx90a code object of `c_tests/gpu/global_ctors.c`: device code with global constructors and
/// destructors, whose image has the kernels `amdgcn.device.init` and `amdgcn.device.fini`.
pub(super) fn code_object_with_global_ctors() -> Vec<u8> {
    let path = format!(
        "{}/tests/data/amdgpu/global_ctors-gfx90a.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}; rebuild with scripts/make-amdgpu-test-images.sh"))
}

pub(super) fn code_object(arch: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/data/amdgpu/cuda_module-{arch}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}; rebuild with scripts/make-amdgpu-test-images.sh"))
}

pub(super) fn serial() -> MutexGuard<'static, ()> {
    simulated::SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh simulated runtime with `gpus`, and the core over the AMDGPU backend on it.
pub(super) fn core_on(gpus: &[SimAgent], pairs: &[(&str, &str)]) -> Box<dyn PluginApi> {
    simulated::reset(gpus, 0);
    let config = Config::from_pairs(pairs);
    let backend = AmdgpuBackend::with_runtime(super::runtime::Api::new(simulated::runtime()), &config).unwrap();
    Core::new_boxed(backend, config)
}

#[test]
fn a_program_loads_runs_copies_and_releases_everything() {
    let _serial = serial();
    let core = core_on(&[MI250], &[("LIBOMPTARGET_SHARED_MEMORY_SIZE", "256")]);
    assert_eq!(core.device_count(), 1);
    core.init_device(0).unwrap();
    let image = code_object("gfx90a");
    let (entries, spmd, generic) = HostEntry::cuda_module_entries_of(&image);
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    let counter = loaded.addresses[2];
    assert_eq!(read::<u32>(counter), 5, "the global's initial value from the image");

    // Small copies through staging, in order on one queue.
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
    core.synchronize(0, &mut queue).unwrap();
    assert_eq!((back, read::<u32>(counter)), (41, 41));
    assert!(queue.is_null());

    // A launch passes the arguments by value, then 56 zero bytes, with the stock geometry.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    simulated::register_kernel(
        &spmd,
        Arc::new(move |args: &[u64]| {
            record.lock().unwrap().extend_from_slice(args);
            Ok(())
        }),
    );
    // The kernel takes one pointer (its kernarg segment is 8 bytes); more is refused, as by the stock
    // plugin.
    let args = [counter as *mut c_void];
    // SAFETY: refused before anything runs.
    let err = unsafe {
        core.launch(
            0,
            loaded.addresses[0],
            &[std::ptr::null_mut(); 2],
            &LaunchRequest::default(),
            None,
        )
    }
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("the kernel takes 8 bytes of arguments, fewer than the 16 passed"),
        "{err}"
    );
    let request = LaunchRequest {
        tripcount: 1000,
        ..Default::default()
    };
    // SAFETY: the simulated kernel only records its arguments.
    unsafe { core.launch(0, loaded.addresses[0], &args, &request, None) }.unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![counter as u64]);
    // SAFETY: as above; this kernel has no body.
    unsafe { core.launch(0, loaded.addresses[1], &[], &LaunchRequest::default(), None) }.unwrap();
    let launches = simulated::launches();
    assert_eq!(launches.len(), 2);
    assert!(launches[0].kernel.starts_with(&spmd), "{:?}", launches[0]);
    assert_eq!(
        (launches[0].grid_size_x, launches[0].workgroup_size_x),
        (4 * 256, 256),
        "SPMD: trip / 256 work-groups of 256"
    );
    assert!(launches[1].kernel.starts_with(&generic));
    assert_eq!(
        (launches[1].grid_size_x / 256, launches[1].workgroup_size_x),
        (104 * 4, 256),
        "generic, nothing asked: CUs × 4 teams of 256"
    );
    assert!(launches[1].group_segment_size >= 256, "the shared memory setting");

    // Large copies pin the host buffer and wait; host allocations are copied directly.
    let big = core.alloc(0, 4 << 20, AllocKind::Device).unwrap();
    let data: Vec<u8> = (0..4 << 20).map(|i| (i % 251) as u8).collect();
    let mut out = vec![0u8; 4 << 20];
    // SAFETY: 4 MiB each; synchronous copies.
    unsafe {
        core.submit(0, big, data.as_ptr().cast(), data.len(), None).unwrap();
        core.retrieve(0, out.as_mut_ptr().cast(), big, out.len(), None).unwrap();
    }
    assert!(out == data, "4 MiB round trip");
    let pinned = core.alloc(0, 64, AllocKind::Host).unwrap();
    // SAFETY: a 64-byte host allocation.
    unsafe {
        std::ptr::write_bytes(pinned.cast::<u8>(), 9, 64);
        core.submit(0, big, pinned, 64, None).unwrap();
    }
    assert_eq!(read::<[u8; 64]>(big as usize), [9; 64]);
    core.free(0, pinned as usize).unwrap();
    core.free(0, big as usize).unwrap();

    assert!(core.deinit().unwrap());
    assert_eq!(simulated::misuse(), Vec::<String>::new());
    let live = simulated::live();
    assert_eq!(live.memory, 0, "{live:?}");
    assert_eq!(
        (live.executables, live.readers, live.queues, live.locked),
        (0, 0, 0, 0),
        "{live:?}"
    );
    simulated::clear_kernels();
}

fn open_error(config: &Config) -> String {
    match AmdgpuBackend::open(config) {
        Ok(_) => panic!("opened"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_missing_runtime_is_named() {
    let config = Config::from_pairs(&[("OMPRPC_HSA_LIBRARY", "/nonexistent/libhsa-runtime64.so.1")]);
    let text = open_error(&config);
    assert!(
        text.starts_with("no HSA runtime: cannot load /nonexistent/libhsa-runtime64.so.1 (")
            && text.ends_with("; reporting 0 devices"),
        "{text}"
    );
}

#[test]
fn a_library_that_is_not_the_runtime_is_named_by_the_first_missing_entry_point() {
    let config = Config::from_pairs(&[("OMPRPC_HSA_LIBRARY", "libc.so.6")]);
    assert_eq!(
        open_error(&config),
        "the HSA runtime libc.so.6 lacks hsa_init (too old?); reporting 0 devices"
    );
}

/// A wave32 RDNA2 GPU.
const RX6800: SimAgent = SimAgent {
    name: "gfx1030",
    compute_units: 60,
    wavefront_size: 32,
    generic_isa: None,
};

/// A loaded program on a fresh core over `gpu`: the core, its kernels' and global's addresses, and the
/// kernels' names.
fn loaded_on(gpu: SimAgent, arch: &str, pairs: &[(&str, &str)]) -> (Box<dyn PluginApi>, Vec<usize>, String, String) {
    let core = core_on(&[gpu], pairs);
    core.init_device(0).unwrap();
    let image = code_object(arch);
    let (entries, spmd, generic) = HostEntry::cuda_module_entries_of(&image);
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    (core, loaded.addresses, spmd, generic)
}

/// Tears the core down (a failed device may report its failure once more) and checks that nothing
/// is left and nothing was misused. Work still held never runs: its queue is gone first.
fn tear_down(core: &dyn PluginApi) {
    simulated::clear_kernels();
    let _ = core.deinit();
    simulated::hold(false);
    assert_eq!(simulated::misuse(), Vec::<String>::new());
    let live = simulated::live();
    assert_eq!(
        (
            live.memory,
            live.executables,
            live.readers,
            live.queues,
            live.signals,
            live.locked
        ),
        (0, 0, 0, 0, 0, 0),
        "{live:?}"
    );
}

#[test]
fn a_wave32_gpu_runs_its_own_image_and_refuses_a_wave64_one() {
    let _serial = serial();
    let (core, addresses, spmd, _) = loaded_on(RX6800, "gfx1030", &[]);
    let ran = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&ran);
    simulated::register_kernel(
        &spmd,
        Arc::new(move |args: &[u64]| {
            record.lock().unwrap().extend_from_slice(args);
            Ok(())
        }),
    );
    let args = [addresses[2] as *mut c_void];
    // SAFETY: the simulated kernel only records its argument.
    unsafe { core.launch(0, addresses[0], &args, &LaunchRequest::default(), None) }.unwrap();
    assert_eq!(*ran.lock().unwrap(), vec![addresses[2] as u64]);
    let launch = &simulated::launches()[0];
    assert_eq!(
        (launch.grid_size_x / launch.workgroup_size_x, launch.workgroup_size_x),
        (60 * 4, 256),
        "CUs × 4 teams of 256 on the wave32 part too"
    );

    let wave64 = code_object("gfx90a");
    assert!(
        !core.is_valid_image(&wave64[..64], wave64.len(), None),
        "a gfx90a image is not for a gfx1030"
    );
    let (entries, _, _) = HostEntry::cuda_module_entries_of(&wave64);
    let err = match core.load_image(0, 0x9000, &wave64, &entries) {
        Ok(_) => panic!("a gfx90a image loaded on a gfx1030"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("gfx90a") && err.contains("gfx1030"), "{err}");
    assert!(!err.contains('\n'), "one line: {err}");
    tear_down(&*core);
}

/// An MI300X under ROCm 6.2 and later: its own ISA, then a generic one.
const MI300X: SimAgent = SimAgent {
    name: "gfx942:sramecc+:xnack-",
    compute_units: 304,
    wavefront_size: 64,
    generic_isa: Some("gfx9-4-generic:sramecc+:xnack-"),
};

/// A committed code object with its header's processor changed to `mach` (`EF_AMDGPU_MACH_*`).
fn code_object_for_mach(mach: u8) -> Vec<u8> {
    let mut image = code_object("gfx940");
    image[48] = mach;
    image
}

/// An agent that lists a generic ISA after its own is a device, named by its own ISA, and runs code
/// built for either; code for another processor is still refused. (Before, the last ISA was taken and
/// its name refused: the backend reported no device at all.)
#[test]
fn a_gpu_listing_a_generic_isa_after_its_own_runs_code_built_for_either() {
    let _serial = serial();
    let core = core_on(&[MI300X], &[]);
    assert_eq!(core.device_count(), 1);
    core.init_device(0).unwrap();
    let lines = core.describe_device(0).unwrap();
    let target = lines.iter().find(|(n, _)| *n == "Target ID:").map(|(_, v)| v.as_str());
    assert_eq!(target, Some("gfx942:sramecc+:xnack-"), "{lines:?}");
    for (mach, name) in [(0x4c, "gfx942"), (0x5f, "gfx9-4-generic")] {
        let image = code_object_for_mach(mach);
        assert!(core.is_valid_image(&image[..64], image.len(), None), "{name}");
        let (entries, _, _) = HostEntry::cuda_module_entries_of(&image);
        core.load_image(0, 0x1000 + usize::from(mach) * 0x100, &image, &entries)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let gfx90a = code_object("gfx90a");
    assert!(!core.is_valid_image(&gfx90a[..64], gfx90a.len(), None));
    let gfx9_generic = code_object_for_mach(0x51);
    assert!(
        !core.is_valid_image(&gfx9_generic[..64], gfx9_generic.len(), None),
        "another generic"
    );
    tear_down(&*core);
}

/// `LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE` below the agent's smallest queue (64 packets), past its
/// largest, or not a power of two still gives queues `hsa_queue_create` accepts. (Before, 2 or 32
/// packets were asked for as such, and every queue creation, so the device's start, failed.)
#[test]
fn any_queue_size_setting_gives_queues_the_runtime_accepts() {
    let _serial = serial();
    for (setting, packets) in [("2", 64), ("32", 64), ("1000", 512), ("1048576", 131072)] {
        let core = core_on(&[MI250], &[("LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE", setting)]);
        core.init_device(0).unwrap_or_else(|e| panic!("{setting}: {e}"));
        let lines = core.describe_device(0).unwrap();
        let queues = lines.iter().find(|(n, _)| *n == "HSA Queues:").map(|(_, v)| v.clone());
        assert_eq!(queues, Some(format!("4 of {packets} packets")), "{setting}");
        tear_down(&*core);
    }
}

#[test]
fn a_queue_error_fails_synchronize_instead_of_hanging() {
    let _serial = serial();
    let (core, addresses, spmd, _) = loaded_on(MI250, "gfx90a", &[]);
    simulated::register_kernel(&spmd, Arc::new(|_: &[u64]| Err(super::sys::HSA_STATUS_ERROR_EXCEPTION)));
    let args = [addresses[2] as *mut c_void];
    // SAFETY: the simulated kernel reads nothing.
    let err = unsafe { core.launch(0, addresses[0], &args, &LaunchRequest::default(), None) }
        .unwrap_err()
        .to_string();
    assert!(err.contains("HSA_STATUS_ERROR_EXCEPTION (0x1016)"), "{err}");
    assert!(!err.contains('\n'), "one line: {err}");
    tear_down(&*core);
}

#[test]
fn a_gpu_memory_fault_fails_synchronize_instead_of_hanging() {
    let _serial = serial();
    let (core, addresses, _, generic) = loaded_on(MI250, "gfx90a", &[]);
    simulated::register_kernel(&generic, Arc::new(|_: &[u64]| Ok(())));
    // The kernel never finishes (its queue is held), as one that faulted would not.
    simulated::hold(true);
    let mut queue: *mut c_void = std::ptr::null_mut();
    let request = LaunchRequest {
        nowait: true,
        ..Default::default()
    };
    // SAFETY: the simulated kernel takes no arguments.
    unsafe { core.launch(0, addresses[1], &[], &request, Some(&mut queue)) }.unwrap();
    let gpu = simulated::agents()[1];
    assert_eq!(
        simulated::fire_memory_fault(gpu, 0xdead_0000, 0x4),
        1,
        "the backend's handler"
    );
    let err = core.synchronize(0, &mut queue).unwrap_err().to_string();
    assert!(err.contains("memory fault at address 0xdead0000"), "{err}");
    assert!(!err.contains('\n'), "one line: {err}");
    tear_down(&*core);
}

#[test]
fn a_nowait_copy_to_the_host_lands_only_after_the_kernel_before_it() {
    let _serial = serial();
    let (core, addresses, spmd, _) = loaded_on(MI250, "gfx90a", &[]);
    let counter = addresses[2];
    simulated::register_kernel(
        &spmd,
        Arc::new(|args: &[u64]| {
            // SAFETY: the launch passes the image's 4-byte global, simulated device memory.
            unsafe { *(args[0] as *mut u32) = 99 };
            Ok(())
        }),
    );
    simulated::hold(true);
    let mut queue: *mut c_void = std::ptr::null_mut();
    let request = LaunchRequest {
        nowait: true,
        ..Default::default()
    };
    let args = [counter as *mut c_void];
    let mut back = 0u32;
    let handlers = simulated::calls("hsa_amd_signal_async_handler");
    // SAFETY: the kernel writes the 4-byte global; `back` outlives the synchronisation.
    unsafe {
        core.launch(0, addresses[0], &args, &request, Some(&mut queue)).unwrap();
        core.retrieve(
            0,
            (&mut back as *mut u32).cast(),
            counter as *const c_void,
            4,
            Some(&mut queue),
        )
        .unwrap();
    }
    let copy = simulated::copies().last().cloned().unwrap();
    assert_eq!(copy.kind, simulated::CopyKind::DeviceToHost);
    assert_eq!(copy.deps.len(), 1, "the copy waits for the kernel's signal");
    assert_eq!(
        simulated::calls("hsa_amd_signal_async_handler"),
        handlers + 1,
        "staged: the host copy is a handler's"
    );
    // SAFETY: read while nothing runs (held).
    assert_eq!(unsafe { std::ptr::read_volatile(&back) }, 0, "nothing ran yet");
    simulated::hold(false);
    core.synchronize(0, &mut queue).unwrap();
    assert_eq!(back, 99, "the copy saw what the kernel wrote");
    tear_down(&*core);
}

#[test]
fn the_amdgpu_settings_take_effect() {
    let _serial = serial();
    let (core, addresses, _, _) = loaded_on(
        MI250,
        "gfx90a",
        &[
            ("LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES", "2"),
            ("LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE", "128"),
            ("LIBOMPTARGET_AMDGPU_TEAMS_PER_CU", "2"),
            ("LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES", "4096"),
            ("LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS", "8"),
        ],
    );
    assert_eq!(simulated::queue_sizes(), vec![128, 128], "two queues of 128 packets");
    assert_eq!(
        simulated::calls("hsa_amd_signal_create"),
        8 + usize::from(crate::rpc::AVAILABLE),
        "eight signals up front, and (with host services) the doorbell of the image's host calls"
    );
    // SAFETY: the kernel has no body.
    unsafe { core.launch(0, addresses[1], &[], &LaunchRequest::default(), None) }.unwrap();
    let launch = simulated::launches().last().cloned().unwrap();
    assert_eq!(launch.grid_size_x / launch.workgroup_size_x, 104 * 2, "CUs × 2 teams");

    let device = core.alloc(0, 8192, AllocKind::Device).unwrap();
    let data: Vec<u8> = (0..8192).map(|i| i as u8).collect();
    // SAFETY: an 8 KiB device allocation; synchronous copies.
    unsafe { core.submit(0, device, data.as_ptr().cast(), 4096, None) }.unwrap();
    assert_eq!(
        simulated::calls("hsa_amd_memory_lock"),
        1,
        "4096 bytes: pinned and waited"
    );
    let copy = simulated::copies().last().cloned().unwrap();
    assert_eq!(copy.src, data.as_ptr() as usize, "straight from the pinned user buffer");
    // SAFETY: as above.
    unsafe { core.submit(0, device, data.as_ptr().cast(), 4095, None) }.unwrap();
    assert_eq!(simulated::calls("hsa_amd_memory_lock"), 1, "4095 bytes: staged");
    assert_ne!(simulated::copies().last().unwrap().src, data.as_ptr() as usize);
    assert_eq!(read::<[u8; 16]>(device as usize), data[..16]);
    core.free(0, device as usize).unwrap();
    tear_down(&*core);
}

#[test]
fn teardown_shuts_the_runtime_down_and_a_later_library_starts_it_again() {
    let _serial = serial();
    let (core, _, spmd, _) = loaded_on(MI250, "gfx90a", &[]);
    core.register_library();
    assert!(core.deinit().unwrap(), "the last library: teardown");
    assert_eq!(
        simulated::world().as_ref().unwrap().initialized,
        0,
        "hsa_shut_down balanced hsa_init, as the stock plugin does at teardown"
    );
    assert_eq!(simulated::calls("hsa_shut_down"), 1);
    // A library registered after teardown: the next use starts the runtime again and runs.
    core.init_device(0).unwrap();
    assert_eq!(simulated::world().as_ref().unwrap().initialized, 1);
    let image = code_object("gfx90a");
    let (entries, _, _) = HostEntry::cuda_module_entries_of(&image);
    let loaded = core.load_image(0, 0x1000, &image, &entries).unwrap();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&ran);
    simulated::register_kernel(
        &spmd,
        Arc::new(move |args: &[u64]| {
            record.lock().unwrap().extend_from_slice(args);
            Ok(())
        }),
    );
    let counter_again = loaded.addresses[2];
    // SAFETY: the simulated kernel only records its argument.
    unsafe {
        core.launch(
            0,
            loaded.addresses[0],
            &[counter_again as *mut c_void],
            &LaunchRequest::default(),
            None,
        )
    }
    .unwrap();
    assert_eq!(*ran.lock().unwrap(), vec![counter_again as u64]);
    let host = core.alloc(0, 64, AllocKind::Host).unwrap();
    core.free(0, host as usize).unwrap();
    tear_down(&*core);
    assert_eq!(simulated::world().as_ref().unwrap().initialized, 0);
}

#[test]
fn shared_memory_is_host_memory_every_gpu_reaches_at_the_same_address() {
    let _serial = serial();
    let core = core_on(&[MI250, MI250], &[]);
    core.init_device(0).unwrap();
    core.init_device(1).unwrap();
    let shared = core.alloc(0, 256, AllocKind::Shared).unwrap();
    // SAFETY: a 256-byte shared allocation, host-writable.
    unsafe { std::ptr::write_bytes(shared.cast::<u8>(), 7, 256) };
    let allowed = simulated::allowed_agents(shared).expect("access was granted");
    let agents = simulated::agents();
    assert!(
        agents[1..].iter().all(|gpu| allowed.contains(gpu)),
        "every GPU may access it: {allowed:?}"
    );
    // A copy from it goes to the device directly, without staging.
    let device = core.alloc(0, 256, AllocKind::Device).unwrap();
    let staged_before = simulated::copies().len();
    // SAFETY: 256 bytes each; a synchronous copy.
    unsafe { core.submit(0, device, shared, 256, None) }.unwrap();
    let copies = simulated::copies();
    assert_eq!(copies.len(), staged_before + 1, "one copy, no staging");
    assert_eq!(copies.last().unwrap().src, shared as usize);
    assert_eq!(read::<[u8; 256]>(device as usize), [7; 256]);
    core.free(0, device as usize).unwrap();
    core.free(0, shared as usize).unwrap();
    tear_down(&*core);
}

/// A staged copy to the host still on the copy engine when the device fails is neither freed under
/// the engine and the runtime's handler thread nor leaked: the device waits for it when it is
/// released, and the host buffer gets its bytes.
#[test]
fn a_copy_in_flight_when_the_device_fails_finishes_before_its_buffers_are_released() {
    let _serial = serial();
    let (core, addresses, _, _) = loaded_on(MI250, "gfx90a", &[]);
    let counter = addresses[2];
    // The copy engine starts nothing while held: the copy stays in flight.
    simulated::hold(true);
    let mut queue: *mut c_void = std::ptr::null_mut();
    let mut back = 0u32;
    // SAFETY: `counter` is the image's 4-byte global; `back` outlives the device's release below.
    unsafe {
        core.retrieve(
            0,
            (&mut back as *mut u32).cast(),
            counter as *const c_void,
            4,
            Some(&mut queue),
        )
    }
    .unwrap();
    let gpu = simulated::agents()[1];
    simulated::fire_memory_fault(gpu, 0xbad_0000, 0x4);
    let err = core.synchronize(0, &mut queue).unwrap_err().to_string();
    assert!(err.contains("memory fault at address 0xbad0000"), "{err}");
    assert_eq!(back, 0, "the copy has not run");
    // The engine resumes; teardown waits for the copy and its handler before releasing their buffers.
    std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        simulated::hold(false);
    });
    tear_down(&*core);
    assert_eq!(
        back, 5,
        "the handler wrote the global's initial value before its buffers went"
    );
}

/// A kernel of code object version 5 reads its work-group size, block counts and grid dimensions from
/// hidden arguments after its own (clang-16's OpenCL `hidden_args_v5.cl`, as LLVM 17 and later build
/// OpenMP kernels by default): the launch fills each one the kernel's metadata lists, at its offset,
/// in a kernarg segment of the size the metadata gives (264 bytes, not the 64 of code object v4).
#[test]
fn code_object_v5_kernels_get_their_hidden_arguments() {
    let _serial = serial();
    let core = core_on(&[MI250], &[]);
    core.init_device(0).unwrap();
    let path = format!(
        "{}/tests/data/amdgpu/hidden_args_v5-gfx90a.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    let image = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let entries = HostEntry::cuda_module_entries(&["geometry".to_string()]);
    let loaded = core.load_image(0, 0x1000, &image, &entries[..1]).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    simulated::register_kernel(
        "geometry",
        Arc::new(move |words: &[u64]| {
            record.lock().unwrap().extend_from_slice(words);
            Ok(())
        }),
    );
    let out = core.alloc(0, 8, AllocKind::Device).unwrap();
    let request = LaunchRequest {
        teams: 3,
        thread_limit: 64,
        dynamic_shared_bytes: 512,
        ..Default::default()
    };
    // SAFETY: the simulated kernel only records its kernel arguments.
    unsafe { core.launch(0, loaded.addresses[0], &[out], &request, None) }.unwrap();
    let words = seen.lock().unwrap().clone();
    assert_eq!(words.len(), 264 / 8, "the whole kernarg segment the metadata gives");
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!(words[0], out as u64, "the explicit argument");
    assert_eq!(
        (u32_at(8), u32_at(12), u32_at(16)),
        (3, 1, 1),
        "hidden_block_count_x/y/z"
    );
    assert_eq!(
        (u16_at(20), u16_at(22), u16_at(24)),
        (64, 1, 1),
        "hidden_group_size_x/y/z"
    );
    assert_eq!(
        (u16_at(26), u16_at(28), u16_at(30)),
        (0, 0, 0),
        "hidden_remainder_x/y/z"
    );
    assert!(bytes[48..72].iter().all(|&b| b == 0), "hidden_global_offset_x/y/z");
    assert_eq!(u16_at(72), 1, "hidden_grid_dims");
    core.free(0, out as usize).unwrap();
    tear_down(&*core);
}

/// Device memory is opened to a peer GPU when that peer first copies into it, not to every peer when
/// it is allocated (on an 8-GCD node: 7 mappings per allocation, the device heap's included), so a
/// peer that refuses access fails no allocation; a refusal fails that exchange, naming the call, and
/// the next exchange asks again.
#[test]
fn device_memory_is_opened_to_a_peer_on_its_first_exchange_into_it() {
    let _serial = serial();
    let core = core_on(&[MI250, MI250, MI250], &[]);
    for device in 0..3 {
        core.init_device(device).unwrap();
    }
    let opened = || simulated::calls("hsa_amd_agents_allow_access");
    let before = opened();
    let blocks: Vec<*mut c_void> = (0..3).map(|d| core.alloc(d, 64, AllocKind::Device).unwrap()).collect();
    assert_eq!(opened(), before, "no peer is given access when memory is allocated");
    let data = [9u8; 64];
    let mut back = [0u8; 64];
    // SAFETY: every block is a 64-byte device allocation; the copies are synchronous.
    unsafe {
        core.submit(0, blocks[0], data.as_ptr().cast(), 64, None).unwrap();
        // The copy's staging buffer is host memory opened to device 0: that is not a peer's.
        let before = opened();
        core.exchange(0, blocks[0], 1, blocks[1], 64, None).unwrap();
        assert_eq!(opened(), before + 1, "device 1's block opened to device 0");
        core.exchange(0, blocks[0], 1, blocks[1], 64, None).unwrap();
        assert_eq!(opened(), before + 1, "once");
        simulated::fail_next("hsa_amd_agents_allow_access", super::sys::HSA_STATUS_ERROR);
        let refused = core
            .exchange(1, blocks[1], 2, blocks[2], 64, None)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("hsa_amd_agents_allow_access"), "{refused}");
        core.exchange(1, blocks[1], 2, blocks[2], 64, None).unwrap();
        core.retrieve(2, back.as_mut_ptr().cast(), blocks[2], 64, None).unwrap();
    }
    assert_eq!(back, data, "the bytes went 0 -> 1 -> 2");
    for (device, block) in blocks.into_iter().enumerate() {
        core.free(device as i32, block as usize).unwrap();
    }
    tear_down(&*core);
}

/// Each start of the runtime registers one memory-fault handler whose state goes with that runtime
/// (it was leaked, with a hold on every device's health, per restart); and a start that fails part
/// way, after `hsa_init`, shuts the runtime down again rather than leaving it started with the old
/// runtime's handles, so that the next use starts it cleanly.
#[test]
fn restarting_the_runtime_leaks_no_fault_handler_and_never_leaves_it_half_started() {
    use crate::backend::Backend;
    let _serial = serial();
    simulated::reset(&[MI250, MI250], 0);
    let config = Config::from_pairs(&[]);
    let backend = AmdgpuBackend::with_runtime(super::runtime::Api::new(simulated::runtime()), &config).unwrap();
    let holds = || Arc::strong_count(&backend.devices[0].health);
    let initialized = || simulated::world().as_ref().unwrap().initialized;
    let at_start = holds();
    for _ in 0..3 {
        backend.release().unwrap();
        drop(backend.started().unwrap());
    }
    assert_eq!(holds(), at_start, "one fault handler's hold per running runtime");
    backend.release().unwrap();
    assert_eq!(initialized(), 0);
    // The peers' access is asked for after hsa_init and the agents: fail it.
    simulated::fail_next("hsa_amd_agent_memory_pool_get_info", super::sys::HSA_STATUS_ERROR);
    let err = backend.started().err().expect("the restart fails").to_string();
    assert!(err.contains("hsa_amd_agent_memory_pool_get_info"), "{err}");
    assert_eq!(initialized(), 0, "shut down again");
    assert!(
        !crate::util::sync::lock(&backend.runtime).started,
        "not taken for started"
    );
    drop(backend.started().unwrap());
    assert_eq!(initialized(), 1, "started once, cleanly");
    backend.release().unwrap();
    assert_eq!(initialized(), 0);
    assert_eq!(holds(), at_start - 1, "the last handler went with the runtime");
}

/// `OMP_NUM_TEAMS` and `OMP_TEAMS_THREAD_LIMIT` do not cap AMDGPU launches, as with LLVM 16's stock
/// AMDGPU plugin, which overwrites both caps with the GPU's own limits when it initialises the device
/// (measured: the stock plugin over real ROCr launches the same 4 teams of 256 with both set to 2 and
/// 64; `tests/real_rocr.rs` compares the two plugins' launches).
#[test]
fn the_team_caps_of_the_environment_do_not_apply_on_amdgpu_as_with_the_stock_plugin() {
    let _serial = serial();
    let (core, addresses, _, _) = loaded_on(
        MI250,
        "gfx90a",
        &[("OMP_NUM_TEAMS", "2"), ("OMP_TEAMS_THREAD_LIMIT", "64")],
    );
    let request = LaunchRequest {
        tripcount: 1000,
        ..Default::default()
    };
    // SAFETY: the simulated kernel has no body.
    unsafe { core.launch(0, addresses[0], &[std::ptr::null_mut()], &request, None) }.unwrap();
    let launch = simulated::launches().pop().unwrap();
    assert_eq!(
        (launch.grid_size_x / launch.workgroup_size_x, launch.workgroup_size_x),
        (4, 256),
        "SPMD: trip count / 256 teams of 256, uncapped"
    );
    tear_down(&*core);
}

/// A signal goes back to its pool's free list when its last share goes, not before, and taking one
/// reuses it rather than making another; a signal still shared when the pool destroys its signals is
/// not put back afterwards. (Taking one used to scan the whole pool for a free one: 27 µs per take
/// with 16,000 signals in use, against 0.35 µs now, in the simulated runtime.)
#[test]
fn signals_go_back_to_the_pool_when_their_last_share_goes() {
    let _serial = serial();
    simulated::reset(&[MI250], 0);
    let api = super::runtime::Api::new(simulated::runtime());
    api.init().unwrap();
    let health = Arc::new(super::queue::Health::default());
    let pool = super::queue::SignalPool::new(api, 2, &health).unwrap();
    let made = || simulated::calls("hsa_amd_signal_create");
    assert_eq!(made(), 2);
    let (a, b) = (pool.take().unwrap(), pool.take().unwrap());
    let shared = a.clone();
    let a_raw = a.raw();
    drop(a);
    let c = pool.take().unwrap();
    assert_ne!(c.raw(), a_raw, "a signal still shared is not free");
    assert_eq!(made(), 3, "the pool grew");
    drop(shared);
    let again = pool.take().unwrap();
    assert_eq!(again.raw(), a_raw, "the last share gave it back");
    assert_eq!(made(), 3);
    drop((again, c));
    pool.destroy_all().unwrap();
    drop(b);
    let fresh = pool.take().unwrap();
    assert_eq!(made(), 4, "the destroyed pool's survivor was not put back");
    drop(fresh);
    pool.destroy_all().unwrap();
    api.shut_down().unwrap();
}

/// An image's global constructors (its kernel `amdgcn.device.init`) run on one thread when it is
/// loaded, and its destructors (`amdgcn.device.fini`) before it is unloaded, as LLVM 17 and later
/// plugins run them. An image whose constructors fault is not loaded, leaves nothing behind, and its
/// destructors never run.
#[test]
fn an_images_global_constructors_run_at_load_and_its_destructors_at_unload() {
    let _serial = serial();
    let core = core_on(&[MI250], &[]);
    core.init_device(0).unwrap();
    let ran = Arc::new(Mutex::new(Vec::new()));
    for (kernel, what) in [
        ("amdgcn.device.init", "constructors"),
        ("amdgcn.device.fini", "destructors"),
    ] {
        let ran = ran.clone();
        simulated::register_kernel(
            kernel,
            Arc::new(move |_: &[u64]| {
                ran.lock().unwrap().push(what);
                Ok(())
            }),
        );
    }
    let image = code_object_with_global_ctors();
    core.load_image(0, 0x1000, &image, &[]).unwrap();
    assert_eq!(*ran.lock().unwrap(), ["constructors"], "when the image is loaded");
    let launch = simulated::launches().last().cloned().unwrap();
    assert_eq!(
        (launch.kernel.as_str(), launch.grid_size_x, launch.workgroup_size_x),
        ("amdgcn.device.init", 1, 1)
    );
    core.unregister_library(&[(0x1000, 0x1001)]).unwrap();
    assert_eq!(*ran.lock().unwrap(), ["constructors", "destructors"]);
    assert_eq!(simulated::live().executables, 0);

    simulated::register_kernel(
        "amdgcn.device.init",
        Arc::new(|_: &[u64]| Err(super::sys::HSA_STATUS_ERROR_EXCEPTION)),
    );
    let err = core
        .load_image(0, 0x2000, &image, &[])
        .err()
        .expect("constructors that fault fail the load")
        .to_string();
    assert!(err.contains("amdgcn.device.init"), "{err}");
    assert_eq!(simulated::live().executables, 0, "the image is unloaded");
    assert_eq!(
        *ran.lock().unwrap(),
        ["constructors", "destructors"],
        "nothing more ran"
    );
    let _ = core.deinit();
    simulated::clear_kernels();
    assert_eq!(simulated::misuse(), Vec::<String>::new());
}
