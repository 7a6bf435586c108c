//! The plugin as libomptarget 16's AMDGPU plugin over Debian's *real* HSA runtime (ROCr 5.2.3), which
//! reaches the kernel only through the thunk `libhsakmt.so.1`; here that thunk is the fake kernel
//! driver of `tests/fake_kfd/` (built by `scripts/build-fake-kfd.sh`), presenting one gfx90a GPU on a
//! machine without one. Real ROCr then initialises, loads and freezes code objects (copying them with
//! its own blit kernels, which the fake emulates), and answers symbol lookups as on hardware: what the
//! simulated runtime of `src/backend/amdgpu/simulated/` can only imitate.
//!
//! clang-16 gfx90a programs then run through Debian's libomptarget 16 on this plugin and on the stock
//! AMDGPU plugin, both over the same fake, and must agree.
//!
//! What this cannot show: device code does not run (the fake completes dispatches of kernels it was
//! not given a host body for), there is no timing, and all memory is coherent host memory.
//!
//! The real runtime is loaded into this process once, by one test; programs run in processes of
//! their own.

mod support;

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use support::abi::*;
use support::{plugin_dir_as, Gpu};

const AMDGPU_PLUGIN: &str = "libomptarget.rtl.amdgpu.nextgen.so";

/// The fake thunk and, beside it, the real runtime and its libraries (built once per process).
fn fake_kfd_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
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
    })
}

/// A gfx90a image whose hidden client object is local in the code object, as lld makes it, loads
/// through the real ROCr and gets its client: before the plugin judged the pointer from the image's
/// ELF it asked ROCr for the object by name, ROCr (which registers no local symbol that is not a
/// kernel) answered 0x1013, and the load failed with "not a writable object of 552 bytes".
#[test]
fn a_gfx90a_image_with_host_services_loads_through_the_real_rocr() {
    let dir = fake_kfd_dir();
    // The fake thunk, never the real one.
    support::load_hsa_runtime_dependencies(dir);
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

/// `c_tests/two_images` for gfx90a: a program and a shared library, each with an image of its own
/// that includes the device header.
fn two_images(gpu: Gpu) -> PathBuf {
    let dir = support::scratch().join("two_images-gfx90a");
    std::fs::create_dir_all(&dir).unwrap();
    let src = support::root().join("c_tests/two_images");
    let lib = dir.join("libtwo_images.so");
    let exe = dir.join("two_images");
    for (output, inputs) in [
        (&lib, vec![src.join("library.c")]),
        (&exe, vec![src.join("main.c"), lib.clone()]),
    ] {
        let mut cmd = gpu.compiler("clang-16");
        cmd.args(["-O1", "-Wall", "-Werror", "-I"])
            .arg(support::root().join("include"));
        if output == &lib {
            cmd.args(["-shared", "-fPIC"]);
        } else {
            cmd.arg(format!("-Wl,-rpath,{}", dir.display()));
        }
        let out = cmd.args(&inputs).arg("-o").arg(output).output().expect("clang-16");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    exe
}

/// The kernels a run launched, as its LIBOMPTARGET_INFO=16 lines name them: kernel, teams, threads
/// and mode (whichever plugin printed them; ours adds "(nowait)" where the launch was). LLVM 16's
/// plugins print the "device N info: " prefix and the message in two writes, so two threads that
/// launch at once can leave a message on a line of its own, after both prefixes: the message is
/// looked for anywhere on a line.
fn launches(stderr: &str) -> Vec<String> {
    let mut launches: Vec<String> = stderr
        .lines()
        .filter_map(|l| l.split_once("Launching kernel ").map(|(_, rest)| rest))
        .map(|rest| rest.trim_end_matches(" (nowait)").to_string())
        .collect();
    launches.sort();
    launches
}

/// Two launches whose prefixes and messages interleaved, as the stock plugin can print them from two
/// threads, still count as two launches.
#[test]
fn launches_are_read_from_interleaved_info_lines() {
    let stderr = "AMDGPU device 0 info: AMDGPU device 0 info: Launching kernel a with 4 blocks and 256 \
                  threads in SPMD mode\nLaunching kernel b with 1 blocks and 256 threads in Generic-SPMD \
                  mode\nomprpc device 0 info: Launching kernel c with 2 blocks and 64 threads in SPMD \
                  mode (nowait)\n";
    assert_eq!(
        launches(stderr),
        [
            "a with 4 blocks and 256 threads in SPMD mode",
            "b with 1 blocks and 256 threads in Generic-SPMD mode",
            "c with 2 blocks and 64 threads in SPMD mode",
        ]
    );
}

/// clang-16 gfx90a programs through Debian's libomptarget 16, on this plugin and on the stock AMDGPU
/// plugin, both over real ROCr on the fake kernel driver, with locked host memory at its own address
/// on the GPU and at a different one (a dGPU's): regions with and without the device header, every
/// copy path from 1 byte to 8 MiB, enter/exit data, nowait with depend, and two images. The same
/// output and status as stock, the same kernels launched with the same geometry, and no omprpc error.
#[test]
fn gfx90a_programs_run_through_libomptarget_as_on_the_stock_plugin() {
    let gpu = Gpu::Amdgcn("gfx90a");
    let fake = fake_kfd_dir();
    let ours = plugin_dir_as(AMDGPU_PLUGIN);
    let programs = [
        support::build_gpu_program("gpu/data_paths.c", gpu),
        support::build_gpu_program("gpu/device_client.c", gpu),
        support::build_gpu_program("target_basic.c", gpu),
        two_images(gpu),
    ];
    // Locked memory at its host address on the GPU, at another, and the team caps of the environment
    // (which LLVM 16's stock AMDGPU plugin does not apply).
    let settings: [&[(&str, &str)]; 3] = [
        &[("FAKE_KFD_DISTINCT_GPU_ADDRESSES", "0")],
        &[("FAKE_KFD_DISTINCT_GPU_ADDRESSES", "1")],
        &[("OMP_NUM_TEAMS", "2"), ("OMP_TEAMS_THREAD_LIMIT", "64")],
    ];
    for exe in &programs {
        for setting in settings {
            let mut env = vec![("LIBOMPTARGET_INFO", "16")];
            env.extend_from_slice(setting);
            let what = format!("{} ({setting:?})", exe.display());
            let (stock_ok, stock_out, stock_err) =
                support::run_with_search_path(exe, &fake.display().to_string(), &env);
            assert!(stock_ok, "{what} under the stock plugin: {stock_err}");
            assert!(
                stock_out.contains("devices: 1") || !exe.ends_with("data_paths-gfx90a"),
                "{what}: the stock plugin found the fake GPU: {stock_out}"
            );
            let search = format!("{}:{}", ours.display(), fake.display());
            let (ok, out, err) = support::run_with_search_path(exe, &search, &env);
            assert!(ok, "{what} under omprpc: {err}");
            assert!(
                err.contains("omprpc device 0 info: Launching kernel"),
                "{what}: our plugin launched the kernels: {err}"
            );
            assert!(!err.contains("omprpc error"), "{what}: {err}");
            assert_eq!(out, stock_out, "{what}: the stock plugin's output");
            let (mine, theirs) = (launches(&err), launches(&stock_err));
            assert!(
                !theirs.is_empty(),
                "{what}: the stock plugin launched kernels: {stock_err}"
            );
            assert_eq!(mine, theirs, "{what}: the same kernels with the same geometry");
        }
    }
}
