//! The plugin as libomptarget 16's AMDGPU plugin over Debian's *real* HSA runtime (ROCr 5.2.3), which
//! reaches the kernel only through the thunk `libhsakmt.so.1`; here that thunk is the fake kernel
//! driver of `tests/fake_kfd/` (built by `scripts/build-fake-kfd.sh`), presenting one gfx90a GPU on a
//! machine without one. Real ROCr then initialises, loads and freezes code objects (copying them with
//! its own blit kernels, which the fake emulates), and answers symbol lookups as on hardware: what the
//! simulated runtime of `src/backend/amdgpu/simulated.rs` can only imitate.
//!
//! What this cannot show: device code does not run (the fake completes dispatches of kernels it was
//! not given a host body for), there is no timing, and all memory is coherent host memory.
//!
//! ROCr is a singleton per process, so this binary holds one scenario.

mod support;

use std::ffi::c_void;
use std::path::PathBuf;
use std::process::Command;

use support::abi::*;
use support::plugin_dir_as;

const AMDGPU_PLUGIN: &str = "libomptarget.rtl.amdgpu.nextgen.so";

/// The fake thunk and, beside it, the real runtime and its libraries.
fn fake_kfd_dir() -> PathBuf {
    let dir = support::scratch().join("fake-kfd");
    let out = Command::new("sh")
        .arg(support::root().join("scripts/build-fake-kfd.sh"))
        .arg(&dir)
        .output()
        .expect("sh");
    assert!(
        out.status.success(),
        "scripts/build-fake-kfd.sh failed: {} (install what it needs with: sudo sh scripts/setup-debian.sh)",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// A gfx90a image whose hidden client object is local in the code object, as lld makes it, loads
/// through the real ROCr and gets its client: before the plugin judged the pointer from the image's
/// ELF it asked ROCr for the object by name, ROCr (which registers no local symbol that is not a
/// kernel) answered 0x1013, and the load failed with "not a writable object of 552 bytes".
#[test]
fn a_gfx90a_image_with_host_services_loads_through_the_real_rocr() {
    let dir = fake_kfd_dir();
    // The fake thunk, never the real one.
    support::load_hsa_runtime_dependencies(&dir);
    std::env::set_var("OMPRPC_HSA_LIBRARY", dir.join("libhsa-runtime64.so.1"));
    std::env::remove_var("LIBOMPTARGET_INFO");
    let api = open(&plugin_dir_as(AMDGPU_PLUGIN).join(AMDGPU_PLUGIN));
    let code_object =
        std::fs::read(support::root().join("tests/data/amdgpu/cuda_module-gfx90a.hsaco")).expect("committed image");
    // SAFETY (whole test): every call passes arguments of the documented C types; device addresses
    // are only passed back to the plugin.
    unsafe {
        assert_eq!(expect_silence(|| (api.init_plugin)()), 0);
        assert_eq!((api.number_of_devices)(), 1, "the fake driver's one gfx90a");
        assert_eq!((api.init_device)(0), 0);
        let mut host_pointer = 0u64;
        let mut entries = [entry(c"__llvm_libc_rpc_client", 8)];
        entries[0].addr = (&raw mut host_pointer).cast::<c_void>();
        let image = image_of(&code_object, &entries);
        let (table, stderr) = capture_stderr(|| (api.load_binary)(0, &image));
        assert!(!table.is_null(), "the image loads: {stderr}");
        assert!(!stderr.contains("omprpc error"), "{stderr}");
        let pointer_at = (*(*table).begin).addr;
        let mut client = 0u64;
        assert_eq!((api.data_retrieve)(0, (&raw mut client).cast(), pointer_at, 8), 0);
        let elf_pointer = 0x90f8u64; // llvm-readelf -s: __llvm_libc_rpc_client
        let elf_object = 0x9110u64; // omprpc_client_object, LOCAL
        assert_eq!(
            client,
            pointer_at as u64 - elf_pointer + elf_object,
            "ROCr relocated the pointer to the local object"
        );
        let mut ports = 0u32;
        assert_eq!(
            (api.data_retrieve)(0, (&raw mut ports).cast(), client as *mut c_void, 4),
            0
        );
        assert!(
            ports > 0,
            "the plugin copied libc's client (its port count) into the object"
        );
    }
}
