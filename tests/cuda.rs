//! The plugin as libomptarget 16's CUDA plugin on a machine without a GPU: with no driver library and
//! with the real one (whose `cuInit` finds no device) it reports zero devices and says why, every entry
//! point then fails cleanly, it judges real NVPTX images, and an NVPTX program falls back to the host
//! exactly as with the stock plugins. (The backend's own logic runs against a simulated driver in the
//! crate's unit tests; a real GPU runs `scripts/gpu-check.sh`.)

mod support;

use support::abi::*;
use support::{plugin_dir_as, Gpu};

const CUDA_PLUGIN: &str = "libomptarget.rtl.cuda.nextgen.so";

/// Runs `exe` with our plugin as the CUDA plugin (and the stock host plugin) and `env`.
fn run_as_cuda_plugin(exe: &std::path::Path, env: &[(&str, &str)]) -> (bool, String, String) {
    support::run_with_search_path(exe, plugin_dir_as(CUDA_PLUGIN).to_str().unwrap(), env)
}

#[test]
fn without_a_driver_library_there_are_no_devices_and_info_says_why() {
    let exe = support::build_program("target_basic.c");
    let missing = support::scratch().join("no-driver-here/libcuda.so.1");
    let missing = missing.to_str().unwrap();
    let (ok, _, stderr) = run_as_cuda_plugin(&exe, &[("OMPRPC_CUDA_LIBRARY", missing), ("LIBOMPTARGET_INFO", "16")]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(&format!("omprpc info: no CUDA driver: cannot load {missing} (")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{}/{CUDA_PLUGIN}", plugin_dir_as(CUDA_PLUGIN).display())),
        "ours was loaded as the CUDA plugin: {stderr}"
    );
    let (ok, _, stderr) = run_as_cuda_plugin(&exe, &[("OMPRPC_CUDA_LIBRARY", missing)]);
    assert!(ok);
    assert!(
        !support::other_stderr(&stderr).contains("omprpc"),
        "no GPU is not an error: silent without LIBOMPTARGET_INFO: {stderr}"
    );
}

#[test]
fn with_the_real_driver_and_no_gpu_cu_init_is_named() {
    let exe = support::build_program("target_basic.c");
    let libcuda = support::real_libcuda();
    let libcuda = libcuda.to_str().unwrap();
    let (ok, _, stderr) = run_as_cuda_plugin(&exe, &[("OMPRPC_CUDA_LIBRARY", libcuda), ("LIBOMPTARGET_INFO", "16")]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "omprpc info: CUDA error in cuInit: CUDA_ERROR_NO_DEVICE (100) from {libcuda}; reporting 0 devices"
        )),
        "{stderr}"
    );
}

#[test]
fn an_nvptx_program_falls_back_to_the_host_as_with_the_stock_plugins() {
    let exe = support::build_gpu_program("target_basic.c", Gpu::Nvptx("sm_90"));
    let libcuda = support::real_libcuda();
    let (ok, ours, stderr) = run_as_cuda_plugin(&exe, &[("OMPRPC_CUDA_LIBRARY", libcuda.to_str().unwrap())]);
    assert!(ok, "under omprpc: {stderr}");
    let mapped = support::mapped_plugins(&stderr);
    let ours_path = plugin_dir_as(CUDA_PLUGIN).join(CUDA_PLUGIN);
    assert!(
        mapped.iter().any(|p| p == ours_path.to_str().unwrap()),
        "our plugin was the CUDA plugin: {mapped:?}"
    );
    let stock = support::run(&exe, &[], support::Plugin::Stock, &[]);
    assert!(stock.status.success());
    assert_eq!(
        ours,
        String::from_utf8_lossy(&stock.stdout),
        "same output as the stock plugins"
    );
    assert!(
        ours.contains("x = 42\nran on device: 0\n"),
        "the host ran the region and computed the right result: {ours}"
    );
}

/// Loaded as the CUDA plugin with the real driver and no GPU, every entry point answers cleanly: no
/// devices, images judged without a device, and device calls refused with one line each.
#[test]
fn every_entry_point_fails_cleanly_without_a_gpu() {
    std::env::set_var("OMPRPC_CUDA_LIBRARY", support::real_libcuda());
    std::env::remove_var("LIBOMPTARGET_INFO");
    let api = open(&plugin_dir_as(CUDA_PLUGIN).join(CUDA_PLUGIN));
    let exe = support::build_gpu_program("target_basic.c", Gpu::Nvptx("sm_90"));
    let cubin = support::extract_image(&exe, Gpu::Nvptx("sm_90"));
    // SAFETY (whole test): every call passes arguments of the documented C types.
    unsafe {
        assert_eq!(expect_silence(|| (api.init_plugin)()), 0);
        assert_eq!((api.number_of_devices)(), 0);
        let image = image_of(&cubin, &[]);
        assert_eq!(expect_silence(|| (api.is_valid_binary)(&image)), 0, "no device runs it");
        assert_eq!(
            expect_error(
                "the CUDA backend has no devices (CUDA error in cuInit: CUDA_ERROR_NO_DEVICE (100)",
                || (api.init_device)(0)
            ),
            -1
        );
        expect_device_calls_refused(&api, "CUDA");
    }
}
