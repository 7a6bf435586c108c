//! The GPU check script (`scripts/gpu-check.sh`) builds its bundles (NVIDIA and AMD) here and, run on this machine
//! without a GPU, says that it found none instead of failing or pretending; on a machine that shows a
//! GPU (here: a fake `nvidia-smi` on `PATH`, and no driver) finding none is a failure. The NVIDIA bundle
//! also starts in a root with Debian 11's older glibc.

mod support;

use std::process::Command;

#[test]
fn the_gpu_check_builds_its_bundle_and_says_when_there_is_no_gpu() {
    support::require_gpu_toolchains();
    let out = Command::new("sh")
        .arg(support::root().join("scripts/gpu-check.sh"))
        .env("OMPRPC_BUNDLE_XZ", "-0")
        .env_remove("OMPRPC_CUDA_LIBRARY")
        .env_remove("LIBOMPTARGET_INFO")
        .output()
        .expect("sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let bundle = support::root().join("target/gpu-check/omprpc-gpu-check");
    for file in [
        "run.sh",
        "ours/libomptarget.rtl.cuda.nextgen.so",
        "lib/libomptarget.so.16",
        "lib/libomptarget.rtl.cuda.nextgen.so",
        "lib/libLLVM-16.so.1",
        "bin/device_client",
        "bin/data_paths",
        "bin/rpc_services",
        "bin/bench_launch",
        "bin/unchanged",
        "bin/unchanged_printf",
        "bin/unchanged_printf_stock",
        "unchanged/unchanged.stdout",
        "unchanged/unchanged_printf.lines",
        "expected/rpc_services.expected",
    ] {
        assert!(bundle.join(file).exists(), "the bundle lacks {file}");
    }
    if std::path::Path::new("/dev/nvidia0").exists() {
        println!("this machine has an NVIDIA GPU; the check ran on it:\n{stdout}");
        return;
    }
    assert!(stdout.contains("no NVIDIA GPU found"), "{stdout}");
    assert!(stdout.contains("skipped: no GPU"), "{stdout}");
    assert!(stdout.contains("reporting 0 devices"), "and says why: {stdout}");

    // A machine that shows a GPU (nvidia-smi lists one) where omprpc finds none: a FAIL, not a skip.
    let fake = support::scratch().join("fake-nvidia-smi");
    std::fs::create_dir_all(&fake).unwrap();
    let smi = fake.join("nvidia-smi");
    std::fs::write(
        &smi,
        "#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)'\n",
    )
    .unwrap();
    std::fs::set_permissions(&smi, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("sh")
        .arg(bundle.join("run.sh"))
        .env("PATH", path)
        .env_remove("OMPRPC_CUDA_LIBRARY")
        .env_remove("LIBOMPTARGET_INFO")
        .output()
        .expect("sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "zero devices on a machine that shows a GPU must fail:\n{stdout}"
    );
    assert!(stdout.contains("FAIL omprpc-devices"), "{stdout}");
    assert!(stdout.contains("nvidia-smi lists: GPU 0: NVIDIA H200"), "{stdout}");
    assert!(stdout.contains("reporting 0 devices"), "with omprpc's reason: {stdout}");
    assert!(stdout.contains("summary: 0 passed, 1 failed"), "{stdout}");
    assert!(!stdout.contains("skipped"), "{stdout}");

    starts_on_an_older_glibc(&bundle);
}

/// The bundle starts where the system's C library is older than Debian 12's: in a root that holds only
/// Debian 11's glibc (2.31) and a static busybox, where any program started without the bundle's own
/// loader fails (its libraries need symbol versions up to GLIBC_2.36), the runner finds no GPU and says
/// so, as here. With the bundle's own C library taken out, it says that the bundle cannot run here, in
/// the loader's words (a GLIBC_2.3x version not found), never that omprpc reports 0 devices.
fn starts_on_an_older_glibc(bundle: &std::path::Path) {
    let old = support::cuda_root().with_file_name("old-glibc");
    assert!(
        old.join("bin/sh").exists() && old.join("lib/x86_64-linux-gnu/libc.so.6").exists(),
        "missing the root with Debian 11's glibc {}. Install it with: {}",
        old.display(),
        support::GPU_SETUP
    );
    let root = support::scratch().join("old-glibc-root");
    let _ = std::fs::remove_dir_all(&root);
    let copied = Command::new("cp").arg("-a").arg(&old).arg(&root).status().unwrap();
    assert!(copied.success());
    // The bundle by hard links (the same file system), and a /dev/null for the runner's shell.
    let linked = Command::new("cp")
        .arg("-al")
        .arg(bundle)
        .arg(root.join("bundle"))
        .status()
        .unwrap();
    assert!(linked.success());
    std::fs::create_dir_all(root.join("dev")).unwrap();
    let made = Command::new("mknod")
        .args(["-m", "666"])
        .arg(root.join("dev/null"))
        .args(["c", "1", "3"])
        .status()
        .unwrap();
    assert!(made.success(), "mknod needs root, as chroot does");
    // A command in the root, with only its own /bin on the path: its status and stdout.
    let in_root = |command: &[&str]| {
        let out = Command::new("/usr/sbin/chroot")
            .arg(&root)
            .args(command)
            .env_clear()
            .env("PATH", "/bin")
            .output()
            .expect("chroot");
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let run = || in_root(&["/bin/sh", "/bundle/run.sh"]);
    // glibc 2.31's loader has no --version; its C library, run as a program, prints its release.
    let (_, glibc) = in_root(&["/lib/x86_64-linux-gnu/libc.so.6"]);
    assert!(
        glibc.contains("release version 2.31."),
        "the root's C library is glibc 2.31 (rerun {} if it holds another): {glibc}",
        support::GPU_SETUP
    );
    let (status, stdout) = run();
    assert_eq!(status, Some(0), "{stdout}");
    assert!(stdout.contains("no NVIDIA GPU found"), "{stdout}");
    assert!(
        stdout.contains("reporting 0 devices"),
        "omprpc itself ran and said why: {stdout}"
    );
    assert!(stdout.contains("skipped: no GPU"), "{stdout}");

    std::fs::remove_file(root.join("bundle/sys/libc.so.6")).unwrap();
    let (status, stdout) = run();
    assert_eq!(status, Some(2), "{stdout}");
    assert!(stdout.contains("this bundle cannot run here: "), "{stdout}");
    // The loader names the first symbol version the root's glibc lacks (GLIBC_2.34 with Debian 12's
    // libraries): newer than the root's 2.31, and no newer than the bundle's 2.36.
    let missing = stdout
        .split_once("libc.so.6: version `GLIBC_2.")
        .and_then(|(_, rest)| rest.split_once("' not found"))
        .and_then(|(minor, _)| minor.parse::<u32>().ok());
    assert!(
        missing.is_some_and(|minor| (32..=36).contains(&minor)),
        "the loader's words, naming a GLIBC_2.3x the root lacks: {stdout}"
    );
    assert!(!stdout.contains("0 devices"), "{stdout}");
    let _ = std::fs::remove_dir_all(&root);
}

/// The AMD bundle: gfx90a and gfx940 programs, ours as the AMDGPU plugin beside the stock one. Without
/// an AMD GPU it says so (with the real HSA runtime, by `hsa_init`'s status); on a machine that shows
/// one (here: a fake `rocminfo` on `PATH`) finding none is a failure.
#[test]
fn the_amd_gpu_check_builds_its_bundle_and_says_when_there_is_no_gpu() {
    support::require_gpu_toolchains();
    let out = Command::new("sh")
        .arg(support::root().join("scripts/gpu-check.sh"))
        .arg("amd-bundle")
        .env("OMPRPC_BUNDLE_XZ", "-0")
        .output()
        .expect("sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("omprpc-gpu-check-amd.tar.xz"), "{stdout}");
    let bundle = support::root().join("target/gpu-check/omprpc-gpu-check-amd");
    for file in [
        "run.sh",
        "vendor",
        "ours/libomptarget.rtl.amdgpu.nextgen.so",
        "lib/libomptarget.so.16",
        "lib/libomptarget.rtl.amdgpu.nextgen.so",
        "bin/device_client",
        "bin/data_paths",
        "bin/rpc_services",
        "bin/bench_rpc",
        "bin/unchanged",
        "bin/unchanged_printf",
        "bin/unchanged_printf_stock",
        "unchanged/unchanged_printf.lines",
        "expected/rpc_services.expected",
    ] {
        assert!(bundle.join(file).exists(), "the AMD bundle lacks {file}");
    }
    // Each program carries an image for both targets.
    let packed = Command::new("clang-offload-packager-16")
        .arg("--image=file=/dev/null,arch=gfx940")
        .arg(bundle.join("bin/target_basic"))
        .output()
        .expect("clang-offload-packager-16");
    assert!(
        packed.status.success(),
        "no gfx940 image: {}",
        String::from_utf8_lossy(&packed.stderr)
    );
    if std::path::Path::new("/dev/kfd").exists() {
        let out = Command::new("sh").arg(bundle.join("run.sh")).output().expect("sh");
        println!(
            "this machine has /dev/kfd; the AMD check ran on it:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        return;
    }
    let run = |path: Option<String>| {
        let mut cmd = Command::new("sh");
        cmd.arg(bundle.join("run.sh"))
            .env("LD_LIBRARY_PATH", support::real_libhsa_dir())
            .env_remove("OMPRPC_HSA_LIBRARY")
            .env_remove("LIBOMPTARGET_INFO");
        if let Some(path) = path {
            cmd.env("PATH", path);
        }
        let out = cmd.output().expect("sh");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (ok, stdout) = run(None);
    assert!(ok, "{stdout}");
    assert!(stdout.contains("no AMD GPU found"), "{stdout}");
    assert!(stdout.contains("skipped: no GPU"), "{stdout}");
    assert!(
        stdout.contains("HSA error in hsa_init: HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)"),
        "and says why, with the real runtime: {stdout}"
    );

    let fake = support::scratch().join("fake-rocminfo");
    std::fs::create_dir_all(&fake).unwrap();
    let rocminfo = fake.join("rocminfo");
    std::fs::write(&rocminfo, "#!/bin/sh\necho '  Name:                    gfx90a'\n").unwrap();
    std::fs::set_permissions(&rocminfo, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (ok, stdout) = run(Some(format!(
        "{}:{}",
        fake.display(),
        std::env::var("PATH").unwrap_or_default()
    )));
    assert!(
        !ok,
        "zero devices on a machine that shows an AMD GPU must fail:\n{stdout}"
    );
    assert!(stdout.contains("FAIL omprpc-devices"), "{stdout}");
    assert!(stdout.contains("rocminfo lists: gfx90a"), "{stdout}");
    assert!(stdout.contains("reporting 0 devices"), "with omprpc's reason: {stdout}");
    assert!(stdout.contains("summary: 0 passed, 1 failed"), "{stdout}");
    assert!(!stdout.contains("skipped"), "{stdout}");
}
