//! The AMDGPU backend driven through the core over the simulated HSA runtime, with the real code
//! objects in `tests/data/amdgpu` (built by `scripts/make-amdgpu-test-images.sh`).

use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

use super::simulated::{self, SimAgent};
use super::AmdgpuBackend;
use crate::backend::AllocKind;
use crate::plugin::{Core, HostEntry, LaunchRequest, PluginApi};
use crate::util::config::Config;
use crate::util::elf;

use super::harness::MI250;

pub(super) fn code_object(arch: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/data/amdgpu/cuda_module-{arch}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}; rebuild with scripts/make-amdgpu-test-images.sh"))
}

/// The code object's kernels (symbols with an `_exec_mode` byte) in a fixed order, then its global.
pub(super) fn entries_of(image: &[u8]) -> (Vec<HostEntry>, String, String) {
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
    (entries, kernels[0].clone(), kernels[1].clone())
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

fn read<T: Copy>(addr: usize) -> T {
    // SAFETY: simulated device memory is host memory; tests read what the plugin wrote there.
    unsafe { std::ptr::read_unaligned(addr as *const T) }
}

#[test]
fn a_program_loads_runs_copies_and_releases_everything() {
    let _serial = serial();
    let core = core_on(&[MI250], &[("LIBOMPTARGET_SHARED_MEMORY_SIZE", "256")]);
    assert_eq!(core.device_count(), 1);
    core.init_device(0).unwrap();
    let image = code_object("gfx90a");
    let (entries, spmd, generic) = entries_of(&image);
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
