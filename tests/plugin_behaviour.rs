//! How the plugin presents itself to libomptarget and to users: which backend it picks and why, its
//! messages under LIBOMPTARGET_INFO and its silence otherwise, the devices it reports, what it exports,
//! and that it leaves no files behind.

mod support;

use std::process::Command;

use support::{build_program, check_ours_ran, plugin_dir_as, run_text, Plugin};

#[test]
fn info_messages_say_which_backend_why_and_what_ran() {
    let exe = build_program("target_basic.c");
    let out = run_text(&exe, &[], Plugin::Ours, &[("LIBOMPTARGET_INFO", "16")]);
    let stderr = &out.stderr;
    assert!(out.status.success(), "{stderr}");
    check_ours_ran(stderr).unwrap();
    for needle in [
        "omprpc info: host backend selected: plugin loaded as libomptarget.rtl.x86_64.nextgen.so",
        "omprpc info: 4 host devices",
        "omprpc device 0 info: loaded an image of",
        "omprpc device 0 info: Launching kernel __omp_offloading_",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
}

#[test]
fn host_device_count_follows_omprpc_host_devices() {
    let exe = build_program("target_basic.c");
    let out = run_text(&exe, &[], Plugin::Ours, &[("OMPRPC_HOST_DEVICES", "2")]);
    let stdout = &out.stdout;
    assert!(stdout.contains("devices: 2\n"), "{stdout}");
    check_ours_ran(&out.stderr).unwrap();
    let out = run_text(&exe, &[], Plugin::Ours, &[("OMPRPC_HOST_DEVICES", "many")]);
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(stdout.contains("devices: 4\n"), "{stdout}");
    assert!(
        stderr.contains("omprpc error: OMPRPC_HOST_DEVICES='many' is not a whole number"),
        "{stderr}"
    );
}

/// Loaded under the CUDA or AMDGPU name (or told so), the plugin reports no devices and says why,
/// only when asked; libomptarget then runs the program elsewhere.
#[test]
fn gpu_selections_report_zero_devices_with_a_reason() {
    let exe = build_program("target_basic.c");
    for (name, backend) in [
        ("libomptarget.rtl.cuda.nextgen.so", "CUDA"),
        ("libomptarget.rtl.amdgpu.nextgen.so", "AMDGPU"),
    ] {
        let dir = plugin_dir_as(name);
        let mut cmd = Command::new(&exe);
        cmd.env("LD_LIBRARY_PATH", &dir)
            .env("LIBOMPTARGET_INFO", "16")
            .env_remove("OMPRPC_BACKEND");
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let lower = backend.to_lowercase();
        assert!(
            stderr.contains(&format!(
                "omprpc info: {lower} backend selected: plugin loaded as {name}"
            )),
            "{stderr}"
        );
        // Without a GPU: each backend finds no driver or runtime, or one whose initialisation finds
        // no device (tests/cuda.rs and tests/amdgpu.rs check each reason).
        assert!(stderr.contains("; reporting 0 devices"), "{stderr}");
        assert!(
            stderr.contains(&format!("{}/{name}", dir.display())),
            "ours was loaded: {stderr}"
        );

        let quiet = Command::new(&exe)
            .env("LD_LIBRARY_PATH", &dir)
            .env_remove("LIBOMPTARGET_INFO")
            .output()
            .unwrap();
        let stderr = support::other_stderr(&String::from_utf8_lossy(&quiet.stderr));
        assert!(
            !stderr.contains("omprpc"),
            "no device is not an error, so nothing is printed: {stderr}"
        );
    }
    let out = run_text(
        &exe,
        &[],
        Plugin::Ours,
        &[("OMPRPC_BACKEND", "cuda"), ("LIBOMPTARGET_INFO", "16")],
    );
    let stderr = &out.stderr;
    assert!(
        stderr.contains("omprpc info: cuda backend selected by OMPRPC_BACKEND"),
        "{stderr}"
    );
}

#[test]
fn silent_without_info() {
    let exe = build_program("target_basic.c");
    let out = run_text(&exe, &[], Plugin::Ours, &[]);
    let stderr = &out.stderr;
    check_ours_ran(stderr).unwrap();
    assert_eq!(support::other_stderr(stderr), "");
}

#[test]
fn device_info_tool_lists_our_devices() {
    support::require_toolchain();
    let tool = format!("{}/bin/llvm-omp-device-info", support::LLVM16);
    let out = Command::new(&tool)
        .env("LD_LIBRARY_PATH", support::host_plugin_dir())
        .output()
        .unwrap_or_else(|e| panic!("{tool}: {e}; install it with: {}", support::SETUP));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Each device's lines follow the tool's own "Device (N):" heading, also when stdout is a pipe
    // (the tool's printf buffers; the plugin's lines must not overtake it).
    for device in 0..4 {
        let heading = format!("Device ({device}):\n");
        let after = stdout
            .find(&heading)
            .map(|at| &stdout[at + heading.len()..])
            .unwrap_or_else(|| panic!("no {heading:?} in {stdout}"));
        let first = after.lines().next().unwrap_or("");
        assert!(
            first.contains(&format!("host device {device} of 4")),
            "device {device}'s lines should follow its heading: {stdout}"
        );
    }
    assert!(stdout.contains("Hardware threads"), "{stdout}");
}

#[test]
fn images_leave_no_files_behind() {
    let exe = build_program("multi_device.c");
    let tmp = support::scratch().join("tmpdir-ours");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let out = run_text(&exe, &[], Plugin::Ours, &[("TMPDIR", tmp.to_str().unwrap())]);
    assert!(out.status.success());
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "files left in TMPDIR: {left:?}");
}

#[test]
fn exports_only_the_plugin_abi_and_the_omprpc_api() {
    let lib = support::built_plugin();
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm (binutils)");
    let text = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = text.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    let stray: Vec<&&str> = names
        .iter()
        .filter(|n| !n.starts_with("__tgt_rtl_") && !n.starts_with("omprpc_"))
        .collect();
    assert!(stray.is_empty(), "unexpected exports: {stray:?}");
    for required in [
        "init_plugin",
        "deinit_plugin",
        "is_valid_binary",
        "is_valid_binary_info",
        "number_of_devices",
        "init_requires",
        "init_device",
        "deinit_device",
        "load_binary",
        "data_alloc",
        "data_delete",
        "data_submit",
        "data_submit_async",
        "data_retrieve",
        "data_retrieve_async",
        "data_exchange",
        "data_exchange_async",
        "is_data_exchangable",
        "launch_kernel",
        "synchronize",
        "query_async",
        "create_event",
        "record_event",
        "wait_event",
        "sync_event",
        "destroy_event",
        "data_lock",
        "data_unlock",
        "init_async_info",
        "init_device_info",
        "release_async_info",
        "supports_empty_images",
        "set_info_flag",
        "print_device_info",
        "register_lib",
        "unregister_lib",
    ] {
        let name = format!("__tgt_rtl_{required}");
        assert!(names.contains(&name.as_str()), "{name} is not exported");
    }
}

/// The README's example program runs through our plugin and says so.
#[test]
fn the_example_reports_omprpc() {
    let exe = build_program("examples/hello_offload.c");
    let out = run_text(&exe, &[], Plugin::Ours, &[]);
    let stdout = &out.stdout;
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("target region ran on a device: yes"), "{stdout}");
    assert!(
        stdout.contains("saxpy checksum: 1000000000000 (expected 1000000000000)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("device: saxpy checksum 1000000000000\ndevice: wrote hello_offload.txt\n"),
        "{stdout}"
    );
    assert!(stdout.contains("host services served over RPC: yes"), "{stdout}");
    assert!(
        stdout.contains("file written by the device: 10 lines, the last \"9 squared is 81\""),
        "{stdout}"
    );
    let ours = support::host_plugin_dir().join("libomptarget.rtl.x86_64.nextgen.so");
    assert!(
        stdout.contains(&format!(
            "served by omprpc {}, loaded from {}",
            env!("CARGO_PKG_VERSION"),
            ours.display()
        )),
        "{stdout}"
    );
}

/// The README's handler example, as written there: through omprpc the device's call reaches the
/// handler; under the stock plugin the lookup finds nothing and the program ends with status 1 rather
/// than calling a NULL function.
#[test]
fn the_readme_handler_example_runs_and_without_omprpc_fails_cleanly() {
    let readme = std::fs::read_to_string(support::root().join("README.md")).unwrap();
    let section = &readme[readme.find("**Your own host calls.**").expect("the README's section")..];
    let code = &section[section.find("```c\n").unwrap() + 5..];
    let code = &code[..code.find("```").unwrap()];
    let src = support::scratch().join("readme_handler.c");
    std::fs::write(&src, code).unwrap();
    let exe = build_program(src.to_str().unwrap());
    let ours = run_text(&exe, &[], Plugin::Ours, &[]);
    assert!(ours.status.success(), "{}", ours.stderr);
    assert_eq!(ours.stdout, "42\n");
    let stock = run_text(&exe, &[], Plugin::Stock, &[]);
    assert_eq!(stock.status.code(), Some(1), "{}", stock.stderr);
}

/// The README stays a user's document: short enough to read through (what it is, quick start,
/// install, the API, settings, limits), with the GPU internals in `docs/` and the state of the GPU
/// backends said once.
#[test]
fn the_readme_stays_a_users_document() {
    let readme = std::fs::read_to_string(support::root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 250, "README.md has {lines} lines; move details to docs/");
    let hardware = readme.matches("have not run on GPU hardware").count();
    assert_eq!(hardware, 1, "the GPU backends' state is said once");
    for doc in [
        "docs/gpus.md",
        "docs/host-services.md",
        "docs/internals.md",
        "docs/testing.md",
    ] {
        assert!(readme.contains(doc), "the README points to {doc}");
        assert!(support::root().join(doc).is_file(), "{doc} exists");
    }
}

/// data_lock, data_unlock and interop get the global OpenMP device number from libomptarget 16; the
/// plugin maps it to its own, and hands interop the backend's queue.
#[test]
fn locking_and_interop_map_global_device_numbers() {
    let exe = build_program("interop_lock.c");
    for device in ["0", "2"] {
        let out = run_text(
            &exe,
            &[],
            Plugin::Ours,
            &[("OMP_DEFAULT_DEVICE", device), ("LIBOMPTARGET_INFO", "16")],
        );
        assert!(out.status.success(), "{}\n{}", out.status, out.stderr);
        check_ours_ran(&out.stderr).unwrap();
        assert_eq!(
            out.stdout,
            format!(
                "device {device}: locked at the same address: 1\ninterop made, its queue set\ntarget region on a \
                 device: 1\n"
            )
        );
        assert!(
            out.stderr.contains(&format!(
                "omprpc info: OpenMP device {device} is this plugin's device {device}"
            )),
            "{}",
            out.stderr
        );
        assert!(!out.stderr.contains("omprpc error"), "{}", out.stderr);
    }
}
