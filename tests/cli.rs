//! The `omprpc` command, end to end, as a user types it: `run` serves a program without touching the
//! system and passes its status and signals through; `info` says why each backend has the devices it
//! has; `install` then `uninstall` leaves every byte of a system as it was, and refuses to take back
//! files it did not install.

mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{build_program, built_plugin, real_libcuda, scratch, LLVM16};

/// The command, with the plugin this test run built and a cache directory of the test's own, so
/// that neither the user's cache nor another test's is used.
fn omprpc(cache: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_omprpc"));
    cmd.env("OMPRPC_PLUGIN", built_plugin())
        .env("XDG_CACHE_HOME", cache)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LIBOMPTARGET_INFO")
        .env_remove("OMPRPC_BACKEND")
        .env_remove("OMPRPC_CUDA_LIBRARY")
        .env_remove("OMPRPC_HSA_LIBRARY")
        .env_remove("OMPRPC_DEVICE_LIBRARY");
    cmd
}

/// An empty directory for one test.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = scratch().join("cli").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Fails unless the program run with `LIBOMPTARGET_INFO=16` said omprpc served it.
fn assert_served_by_omprpc(ran: &Output) {
    let (_, stderr) = text(ran);
    assert!(stderr.contains("omprpc info: host backend selected"), "{stderr}");
}

#[test]
fn every_verb_has_help() {
    let cache = fresh_dir("help");
    let out = omprpc(&cache).arg("--help").output().unwrap();
    let (stdout, _) = text(&out);
    assert!(out.status.success(), "{stdout}");
    for verb in ["run", "info", "install", "uninstall", "trace"] {
        assert!(stdout.contains(&format!("  {verb} ")), "--help lists {verb}: {stdout}");
        let out = omprpc(&cache).args([verb, "--help"]).output().unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{verb} --help: {stderr}");
        assert!(stdout.contains(&format!("Usage: omprpc {verb}")), "{stdout}");
    }
    let out = omprpc(&cache).arg("instal").output().unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("install"),
        "a mistyped verb gets a suggestion: {stderr}"
    );
}

/// `omprpc run` serves an unchanged program's host services from its own directory of the plugin
/// under the stock names, with no installation.
#[test]
fn run_serves_a_program_through_omprpc() {
    let cache = fresh_dir("run");
    let exe = build_program("rpc_services.c");
    let out = omprpc(&cache)
        .arg("run")
        .arg(&exe)
        .env("LIBOMPTARGET_INFO", "16")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let expected = std::fs::read_to_string(support::root().join("c_tests/rpc_services.expected")).unwrap();
    assert_eq!(stdout, expected);
    assert!(
        stderr.contains("omprpc info: host backend selected: plugin loaded as libomptarget.rtl.x86_64.nextgen.so"),
        "{stderr}"
    );
    // The plugin libomptarget mapped is the copy in the cache, never the stock one.
    let private = cache.join("omprpc/run");
    let mapped: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("omprpc-test: mapped "))
        .filter(|p| p.contains("libomptarget.rtl.x86_64"))
        .collect();
    assert_eq!(mapped.len(), 1, "{stderr}");
    assert!(mapped[0].starts_with(private.to_str().unwrap()), "{mapped:?}");
}

/// The program's exit status and signals are the caller's to see; a program that cannot start is
/// status 127 with the reason.
#[test]
fn run_passes_status_and_signals_through() {
    let cache = fresh_dir("status");
    let status = omprpc(&cache).args(["run", "sh", "-c", "exit 7"]).status().unwrap();
    assert_eq!(status.code(), Some(7));
    let status = omprpc(&cache)
        .args(["run", "sh", "-c", "kill -KILL $$"])
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(9), "{status:?}");
    // Options after PROG are the program's, not the command's.
    let out = omprpc(&cache).args(["run", "echo", "--help", "-x"]).output().unwrap();
    assert_eq!(text(&out).0, "--help -x\n");
    let out = omprpc(&cache).args(["run", "/nonexistent/prog"]).output().unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(
        stderr,
        "omprpc: cannot run /nonexistent/prog: No such file or directory (os error 2)\n"
    );
}

/// The private directory is made once and copied again when the plugin is rebuilt.
#[test]
fn run_keeps_its_copies_up_to_date_with_the_build() {
    let cache = fresh_dir("rebuild");
    let plugin = cache.join("libomprpc.so");
    std::fs::write(&plugin, b"first build").unwrap();
    let copies = || -> Vec<Vec<u8>> {
        let dirs: Vec<PathBuf> = std::fs::read_dir(cache.join("omprpc/run"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(dirs.len(), 1, "one directory per plugin: {dirs:?}");
        ["x86_64", "cuda", "amdgpu"]
            .iter()
            .map(|b| std::fs::read(dirs[0].join(format!("libomptarget.rtl.{b}.nextgen.so"))).unwrap())
            .collect()
    };
    let run = || {
        let status = omprpc(&cache)
            .env("OMPRPC_PLUGIN", &plugin)
            .args(["run", "true"])
            .status()
            .unwrap();
        assert!(status.success());
    };
    run();
    assert_eq!(copies(), vec![b"first build".to_vec(); 3]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&plugin, b"second build, longer").unwrap();
    run();
    assert_eq!(copies(), vec![b"second build, longer".to_vec(); 3]);
}

/// `info` shows the devices through omprpc and, on a machine without a GPU driver, names the library
/// it could not load; exit 0 since the host devices are usable.
#[test]
fn info_says_why_each_backend_has_its_devices() {
    let cache = fresh_dir("info");
    let out = omprpc(&cache)
        .arg("info")
        .env("OMPRPC_CUDA_LIBRARY", "/nonexistent/libcuda.so.1")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    for needle in [
        // llvm-omp-device-info's table, with omprpc as the host plugin.
        "Device (0):",
        "host device 0 of 4",
        "host backend: 4 device(s)",
        "cuda backend: 0 device(s): no CUDA driver: cannot load /nonexistent/libcuda.so.1",
        "cuda backend: no driver library loaded (libcuda.so*)",
        "amdgpu backend: ",
        "host plugin a program loads now: /usr/lib/llvm-16/lib/libomptarget.rtl.x86_64.nextgen.so",
        "device library: no libomprpc-device.a beside this command",
        "host services: on",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    assert!(
        stdout.contains(&format!("libomptarget 16: {LLVM16}/lib/libomptarget.so.16")),
        "{stdout}"
    );

    // The real driver library, on a machine without a GPU: found, its version, and cuInit's answer.
    let libcuda = real_libcuda();
    let out = omprpc(&cache)
        .arg("info")
        .env("OMPRPC_CUDA_LIBRARY", &libcuda)
        .output()
        .unwrap();
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains(&format!(
            "cuda backend: driver library {} (driver API ",
            libcuda.display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("CUDA_ERROR_NO_DEVICE"), "{stdout}");

    // The device library's architectures, from its members' names.
    let dir = fresh_dir("info-devlib");
    for arch in ["sm_80", "gfx90a"] {
        std::fs::write(dir.join(format!("omprpc_libc-{arch}.o")), b"object").unwrap();
    }
    let made = Command::new("ar")
        .current_dir(&dir)
        .args([
            "rcs",
            "libomprpc-device.a",
            "omprpc_libc-sm_80.o",
            "omprpc_libc-gfx90a.o",
        ])
        .status()
        .unwrap();
    assert!(made.success());
    let library = dir.join("libomprpc-device.a");
    let out = omprpc(&cache)
        .arg("info")
        .env("OMPRPC_DEVICE_LIBRARY", &library)
        .output()
        .unwrap();
    assert!(
        text(&out)
            .0
            .contains(&format!("device library: {}, for sm_80, gfx90a", library.display())),
        "{}",
        text(&out).0
    );

    // No libomptarget 16: nothing usable, said why, status 1.
    let out = omprpc(&cache)
        .args(["info", "--root", "/nonexistent"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "libomptarget 16: libomptarget 16 is not installed: no /nonexistent/usr/lib/llvm-16/lib/libomptarget.so.16"
        ),
        "{stdout}"
    );
    assert!(stderr.contains("omprpc: nothing usable"), "{stderr}");
}

/// Every path below `root` with its kind, mode, link target and content: two equal snapshots are
/// the same tree, byte for byte.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut all = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = path.symlink_metadata().unwrap();
            let mode = meta.permissions().mode();
            let what = if meta.file_type().is_symlink() {
                format!("link {mode:o} -> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                todo.push(path.clone());
                format!("dir {mode:o}")
            } else {
                format!("file {mode:o} {:?}", std::fs::read(&path).unwrap())
            };
            all.insert(path.strip_prefix(root).unwrap().to_path_buf(), what);
        }
    }
    all
}

/// A system root holding Debian's libomptarget 16 and its stock plugins (copied from this machine,
/// symbolic links as links), and the `/var/lib` every system has.
fn system_root(name: &str) -> PathBuf {
    let root = fresh_dir(name);
    let lib = root.join("usr/lib/llvm-16/lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::create_dir_all(root.join("var/lib")).unwrap();
    for entry in std::fs::read_dir(format!("{LLVM16}/lib")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name == "libomptarget.so.16" || name.starts_with("libomptarget.rtl.") {
            let copied = Command::new("cp").arg("-a").arg(&path).arg(&lib).status().unwrap();
            assert!(copied.success());
        }
    }
    root
}

#[test]
fn system_install_then_uninstall_restores_every_byte() {
    let cache = fresh_dir("system-cache");
    let root = system_root("system-root");
    let lib = root.join("usr/lib/llvm-16/lib");
    let before = snapshot(&root);
    let plugin = std::fs::read(built_plugin()).unwrap();

    let system = |verb: &str| {
        omprpc(&cache)
            .args([verb, "--system", "--root"])
            .arg(&root)
            .output()
            .unwrap()
    };
    let install = || system("install");
    let out = install();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("omprpc installed in"), "{stdout}");
    for backend in ["x86_64", "cuda", "amdgpu"] {
        let name = format!("libomptarget.rtl.{backend}.nextgen.so");
        assert!(std::fs::read(lib.join(&name)).unwrap() == plugin, "{name} is omprpc");
        assert_eq!(
            std::fs::read_link(lib.join(format!("{name}.omprpc-stock"))).unwrap(),
            PathBuf::from(format!("{name}.16")),
            "the stock link is kept aside as it was"
        );
    }
    // A program loads it from there (libomptarget 16 reads the directory it was loaded from).
    let exe = build_program("target_basic.c");
    let ran = Command::new(&exe)
        .env("LD_LIBRARY_PATH", &lib)
        .env("LIBOMPTARGET_INFO", "16")
        .output()
        .unwrap();
    assert_served_by_omprpc(&ran);
    // Installing again updates in place; the stock files stay kept.
    let out = install();
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(text(&out).0.contains("omprpc updated in"));

    let uninstall = || system("uninstall");
    let out = uninstall();
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(snapshot(&root), before, "uninstall put every byte back");
    let out = uninstall();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("omprpc is not installed there"),
        "{}",
        text(&out).1
    );

    // A file changed since install (a package upgrade): uninstall refuses and changes nothing.
    assert!(install().status.success());
    let cuda = lib.join("libomptarget.rtl.cuda.nextgen.so");
    std::fs::write(&cuda, b"upgraded").unwrap();
    let changed = snapshot(&root);
    let out = uninstall();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{} is not the file omprpc installed", cuda.display())),
        "{stderr}"
    );
    assert_eq!(snapshot(&root), changed, "a refused uninstall changes nothing");

    // Without libomptarget 16 there is nothing to install over.
    let bare = fresh_dir("bare-root");
    let out = omprpc(&cache)
        .args(["install", "--system", "--root"])
        .arg(&bare)
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("libomptarget 16 is not installed"), "{stderr}");
    assert!(snapshot(&bare).is_empty(), "a refused install writes nothing");
}

#[test]
fn user_install_prints_the_profile_line_and_uninstall_takes_it_back() {
    let cache = fresh_dir("user-cache");
    let home = fresh_dir("home");
    let out = omprpc(&cache)
        .args(["install", "--user"])
        .env("HOME", &home)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let dir = home.join(".local/lib/omprpc");
    let line = format!(
        "    export LD_LIBRARY_PATH=\"{}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\"",
        dir.display()
    );
    assert!(stdout.lines().any(|l| l == line), "{stdout}");
    // The line works: a program run with it uses omprpc.
    let exe = build_program("target_basic.c");
    let ran = Command::new("sh")
        .arg("-c")
        .arg(format!("{}\nexec \"$0\"", line.trim()))
        .arg(&exe)
        .env_remove("LD_LIBRARY_PATH")
        .env("LIBOMPTARGET_INFO", "16")
        .output()
        .unwrap();
    assert_served_by_omprpc(&ran);
    // It leaves no empty entry (the current directory) in the search path when there was none.
    let value = line.trim().trim_start_matches("export LD_LIBRARY_PATH=");
    let path = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "unset LD_LIBRARY_PATH; export LD_LIBRARY_PATH={value}; printf %s \"$LD_LIBRARY_PATH\""
        ))
        .output()
        .unwrap();
    assert_eq!(text(&path).0, dir.display().to_string());
    // Nothing was written outside the directory (no profile edited).
    let written: Vec<PathBuf> = snapshot(&home).into_keys().collect();
    assert!(written.iter().all(|p| p.starts_with(".local")), "{written:?}");

    let out = omprpc(&cache)
        .args(["uninstall", "--user"])
        .env("HOME", &home)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("Remove the LD_LIBRARY_PATH line"), "{stdout}");
    assert!(!dir.exists(), "the directory install made is gone");
}
