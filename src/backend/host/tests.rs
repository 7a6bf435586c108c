//! The host backend driven through the core with a real image (`tests/data/host`, built by
//! `scripts/make-host-test-image.sh` from the CUDA tests' program), and every call it makes into the
//! operating system and the loader made to fail once in turn (`util::fault`): the entry point fails
//! with a message naming the call, a second try works, and no descriptor or loaded object is left.

use std::ffi::c_void;
use std::sync::Mutex;

use super::HostBackend;
use crate::plugin::{Core, HostEntry, LaunchRequest, LoadedEntries};
use crate::util::config::Config;
use crate::util::error::Result;
use crate::util::{elf, fault};

/// Tests that load host images run one at a time: they count the process's image descriptors.
static SERIAL: Mutex<()> = Mutex::new(());

fn image() -> Vec<u8> {
    let path = format!("{}/tests/data/host/cuda_module-x86_64.so", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}; rebuild with scripts/make-host-test-image.sh"))
}

/// The image's two kernels in line order (SPMD loop, then the generic region), then its global.
fn entries_of(image: &[u8]) -> Vec<HostEntry> {
    let parsed = elf::Image::parse(image).unwrap();
    let mut kernels: Vec<String> = parsed
        .symbols()
        .iter()
        .filter_map(|(name, _)| {
            let name = std::str::from_utf8(name).ok()?;
            name.starts_with("__omp_offloading_").then(|| name.to_string())
        })
        .collect();
    kernels.sort();
    assert_eq!(kernels.len(), 2, "the test program has two target regions: {kernels:?}");
    HostEntry::cuda_module_entries(&kernels)
}

/// Open descriptors and mappings of host images in this process.
fn images_held() -> (usize, usize) {
    let descriptors = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().contains("omprpc-host-image"))
        .count();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mut objects: Vec<&str> = maps
        .lines()
        .filter(|l| l.contains("omprpc-host-image"))
        .filter_map(|l| l.split_whitespace().nth(4)) // the inode: one per loaded image
        .collect();
    objects.dedup();
    (descriptors, objects.len())
}

/// The steps of a small program, each a group of entry points that the fault test makes fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Load,
    Alloc,
    Launch,
    Teardown,
}

/// Runs the program; at `fault`'s step, the next call named by it fails once: the step must fail with
/// a message containing `expect`, and a second try must succeed.
fn program_with_fault(fault: Option<(Step, &'static str, &'static str)>) {
    let core = Core::new_boxed(
        HostBackend::from_config(&Config::from_pairs(&[])),
        Config::from_pairs(&[]),
    );
    core.init_device(0).unwrap();
    let image = image();
    let entries = entries_of(&image);
    let start = image.as_ptr() as usize;
    let mut loaded: Option<LoadedEntries> = None;
    let mut buffer: *mut c_void = std::ptr::null_mut();
    let mut seen = 0i32;
    let step = |which: Step, op: &mut dyn FnMut() -> Result<()>| {
        if let Some((_, call, expect)) = fault.filter(|(at, _, _)| *at == which) {
            fault::arm(call);
            let err = op()
                .err()
                .unwrap_or_else(|| panic!("{which:?} did not fail when {call} did"));
            assert_eq!(fault::armed(), None, "{which:?} makes no {call} call");
            let text = err.to_string();
            assert!(
                text.contains(expect),
                "{which:?}, {call}: the message says '{expect}': {text}"
            );
            if which == Step::Teardown {
                return;
            }
        }
        op().unwrap_or_else(|e| panic!("{which:?} (after {fault:?}): {e}"));
    };
    step(Step::Load, &mut || {
        loaded = Some(core.load_image(0, start, &image, &entries)?);
        Ok(())
    });
    step(Step::Alloc, &mut || {
        buffer = core.alloc(0, 1 << 20, crate::backend::AllocKind::Device)?;
        Ok(())
    });
    let generic = loaded.as_ref().unwrap().addresses[1];
    step(Step::Launch, &mut || {
        let args = [(&mut seen as *mut i32).cast::<c_void>()];
        // SAFETY: the generic region of c_tests/gpu/cuda_module.c takes one pointer, to `seen`.
        unsafe { core.launch(0, generic, &args, &LaunchRequest::default(), None) }
    });
    assert!(seen > 5, "the region ran: seen {seen}");
    step(Step::Teardown, &mut || {
        // Every part runs even when one fails, as a program's exit does.
        let freed = core.free(0, buffer as usize);
        let unloaded = core.unregister_library(&[(start, start + image.len())]).map(|_| ());
        let released = core.deinit().map(|_| ());
        freed.and(unloaded).and(released)
    });
}

#[test]
fn every_os_and_loader_call_failing_once_is_reported_and_survived() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = images_held();
    program_with_fault(None);
    assert_eq!(images_held(), before, "the clean run releases every image");
    let faults = [
        (Step::Load, "memfd_create", "memfd_create failed: Too many open files"),
        (
            Step::Load,
            "write",
            "writing the image to a memfd failed: No space left on device",
        ),
        (
            Step::Load,
            "dlopen",
            "cannot load the device image: dlopen: /proc/self/fd/-1",
        ),
        (Step::Load, "dlsym counter", "has no symbol 'counter'"),
        (Step::Alloc, "malloc", "cannot allocate 1048576 bytes: out of memory"),
        (Step::Teardown, "dlclose", "dlclose of a host image failed"),
    ];
    // Host services: libc's RPC server for the image's device, set up at load, shut down at the end.
    let host_services: &[(Step, &str, &str)] = if cfg!(feature = "rpc") {
        &[
            (Step::Load, "rpc_server_init", "rpc_server_init"),
            (Step::Load, "rpc_register_callback", "rpc_register_callback"),
            (Step::Teardown, "rpc_server_shutdown", "rpc_server_shutdown"),
        ]
    } else {
        &[]
    };
    // A failed dlclose leaves the one object the loader kept, for good; nothing else is ever left.
    let mut kept = 0;
    for &(step, call, expect) in faults.iter().chain(host_services) {
        program_with_fault(Some((step, call, expect)));
        let (descriptors, objects) = images_held();
        kept += usize::from(call == "dlclose");
        assert_eq!(
            (descriptors, objects),
            (before.0, before.1 + kept),
            "{call} failing in {step:?}: image descriptors, loaded images"
        );
    }
}
