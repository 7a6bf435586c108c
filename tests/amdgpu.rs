//! The plugin as libomptarget 16's AMDGPU plugin on a machine without an AMD GPU: with no HSA runtime
//! and with the real one (Debian's libhsa-runtime64-1, whose `hsa_init` fails without `/dev/kfd`) it
//! reports zero devices and says why by the runtime's status name and number, and an AMDGPU program
//! falls back to the host exactly as with the stock plugins — with ours as the AMDGPU plugin alone, and
//! as all three plugins at once.

mod support;

use std::path::{Path, PathBuf};

use support::{plugin_dir_as, Gpu};

const AMDGPU_PLUGIN: &str = "libomptarget.rtl.amdgpu.nextgen.so";
const ALL_PLUGINS: [&str; 3] = [
    "libomptarget.rtl.x86_64.nextgen.so",
    "libomptarget.rtl.cuda.nextgen.so",
    AMDGPU_PLUGIN,
];

/// What Debian's HSA runtime (ROCm 5.2.3) says from `hsa_init` where there is no `/dev/kfd`.
const HSA_INIT_WITHOUT_GPU: &str = "HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)";

/// Runs `exe` with the plugins in `plugin_dir` first on the search path (then the HSA runtime's
/// directory, for the libraries it loads) and `env`.
fn run_with_plugins(exe: &Path, plugin_dir: &Path, env: &[(&str, &str)]) -> (bool, String, String) {
    let search = format!("{}:{}", plugin_dir.display(), support::real_libhsa_dir().display());
    support::run_with_search_path(exe, &search, env)
}

fn real_libhsa() -> String {
    support::real_libhsa_dir()
        .join("libhsa-runtime64.so.1")
        .to_str()
        .unwrap()
        .to_string()
}

/// A directory with our plugin installed under all three stock plugin names.
fn all_three_plugins() -> PathBuf {
    let dir = support::scratch().join("plugin-all-three");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ALL_PLUGINS {
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        std::fs::copy(support::built_plugin(), &tmp).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    }
    dir
}

#[test]
fn without_an_hsa_runtime_there_are_no_devices_and_info_says_why() {
    let exe = support::build_program("target_basic.c");
    let missing = support::scratch().join("no-hsa-here/libhsa-runtime64.so.1");
    let missing = missing.to_str().unwrap();
    let dir = plugin_dir_as(AMDGPU_PLUGIN);
    let (ok, out, stderr) = run_with_plugins(
        &exe,
        &dir,
        &[("OMPRPC_HSA_LIBRARY", missing), ("LIBOMPTARGET_INFO", "16")],
    );
    assert!(ok, "{stderr}");
    assert!(out.contains("x = 42\n"), "{out}");
    assert!(
        stderr.contains(&format!("omprpc info: no HSA runtime: cannot load {missing} (")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{}/{AMDGPU_PLUGIN}", dir.display())),
        "ours was loaded as the AMDGPU plugin: {stderr}"
    );
    let (ok, _, stderr) = run_with_plugins(&exe, &dir, &[("OMPRPC_HSA_LIBRARY", missing)]);
    assert!(ok);
    assert!(
        !support::other_stderr(&stderr).contains("omprpc"),
        "no GPU is not an error: silent without LIBOMPTARGET_INFO: {stderr}"
    );
}

#[test]
fn with_the_real_runtime_and_no_gpu_hsa_init_is_named() {
    let exe = support::build_program("target_basic.c");
    let libhsa = real_libhsa();
    let dir = plugin_dir_as(AMDGPU_PLUGIN);
    for env in [
        vec![("OMPRPC_HSA_LIBRARY", libhsa.as_str()), ("LIBOMPTARGET_INFO", "16")],
        // Found by its soname on the search path, as an installed runtime is.
        vec![("LIBOMPTARGET_INFO", "16")],
    ] {
        let (ok, _, stderr) = run_with_plugins(&exe, &dir, &env);
        assert!(ok, "{stderr}");
        let shown = if env.len() == 2 {
            libhsa.as_str()
        } else {
            "libhsa-runtime64.so.1"
        };
        assert!(
            stderr.contains(&format!(
                "omprpc info: HSA error in hsa_init: {} from {shown}; reporting 0 devices",
                HSA_INIT_WITHOUT_GPU
            )),
            "{stderr}"
        );
    }
}

#[test]
fn an_amdgpu_program_falls_back_to_the_host_as_with_the_stock_plugins() {
    let exe = support::build_gpu_program("target_basic.c", Gpu::Amdgcn("gfx90a"));
    let stock = support::run(&exe, &[], support::Plugin::Stock, &[]);
    assert!(stock.status.success());
    let stock = String::from_utf8_lossy(&stock.stdout).into_owned();
    assert!(
        stock.contains("x = 42\nran on device: 0\n"),
        "the host ran the region and computed the right result: {stock}"
    );
    for (dir, ours) in [
        (plugin_dir_as(AMDGPU_PLUGIN), vec![AMDGPU_PLUGIN]),
        (all_three_plugins(), ALL_PLUGINS.to_vec()),
    ] {
        let (ok, out, stderr) = run_with_plugins(&exe, &dir, &[("OMPRPC_HSA_LIBRARY", &real_libhsa())]);
        assert!(ok, "under omprpc as {ours:?}: {stderr}");
        let mapped = support::mapped_plugins(&stderr);
        for name in &ours {
            let path = dir.join(name);
            assert!(
                mapped.iter().any(|p| p == path.to_str().unwrap()),
                "our plugin was loaded as {name}: {mapped:?}"
            );
        }
        assert_eq!(out, stock, "same output as the stock plugins, as {ours:?}");
        assert!(
            !support::other_stderr(&stderr).contains("omprpc"),
            "nothing said without LIBOMPTARGET_INFO: {stderr}"
        );
    }
}

/// Loaded as the AMDGPU plugin with the real HSA runtime and no GPU, every entry point answers cleanly:
/// no devices, AMDGPU images (whole, truncated, corrupted) judged without a device, and device calls
/// refused with one line each.
#[test]
fn every_entry_point_fails_cleanly_without_a_gpu() {
    use support::abi::*;

    // The runtime's own dependencies are not installed here: load them first by path, so that the
    // runtime finds them by soname when the plugin opens it.
    let dir = support::real_libhsa_dir();
    support::load_hsa_runtime_dependencies(&dir);
    std::env::set_var("OMPRPC_HSA_LIBRARY", dir.join("libhsa-runtime64.so.1"));
    std::env::remove_var("LIBOMPTARGET_INFO");
    let api = open(&plugin_dir_as(AMDGPU_PLUGIN).join(AMDGPU_PLUGIN));
    let exe = support::build_gpu_program("target_basic.c", Gpu::Amdgcn("gfx90a"));
    let code_object = support::extract_image(&exe, Gpu::Amdgcn("gfx90a"));
    // SAFETY (whole test): every call passes arguments of the documented C types.
    unsafe {
        assert_eq!(expect_silence(|| (api.init_plugin)()), 0);
        assert_eq!((api.number_of_devices)(), 0);
        let image = image_of(&code_object, &[]);
        assert_eq!(expect_silence(|| (api.is_valid_binary)(&image)), 0, "no device runs it");
        for len in [0, 63, 64, 4096, code_object.len() / 2] {
            let cut = image_of(&code_object[..len], &[]);
            assert_eq!(expect_silence(|| (api.is_valid_binary)(&cut)), 0, "{len} bytes");
        }
        let mut corrupt = code_object.clone();
        corrupt[48..52].copy_from_slice(&0xffu32.to_le_bytes());
        let corrupt = image_of(&corrupt, &[]);
        assert_eq!(expect_silence(|| (api.is_valid_binary)(&corrupt)), 0);
        assert_eq!(
            expect_error(
                "the AMDGPU backend has no devices (HSA error in hsa_init: HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)",
                || (api.init_device)(0)
            ),
            -1
        );
        expect_device_calls_refused(&api, "AMDGPU");
    }
}
