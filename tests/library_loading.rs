//! Programs that load an offloading library at run time, as a Python extension or a plugin host does:
//! the main program is built without OpenMP and `dlopen`s a library with target regions. At exit
//! libomptarget `dlclose`s the plugin and afterwards still calls `__tgt_rtl_deinit_plugin`, so a plugin
//! that can be unmapped crashes the process (the stock plugins are linked `-z nodelete`, and so is
//! omprpc). Closing and reopening the library must load its image afresh.

mod support;

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;

use support::{check_ours_ran, check_stock_ran, run_text, Plugin};

/// Builds an offloading shared library from `source` (relative to `c_tests`) with `flags`.
fn build_library(source: &str, flags: &[&str], name: &str) -> PathBuf {
    support::require_toolchain();
    let dir = support::scratch().join("dlopen");
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join(name);
    let status = Command::new("clang-16")
        .args([
            "-fopenmp",
            "-fopenmp-targets=x86_64-pc-linux-gnu",
            "-shared",
            "-fPIC",
            "-O1",
            "-Wall",
            "-Werror",
        ])
        .arg("-I")
        .arg(support::root().join("include"))
        .args(flags)
        .arg(support::root().join("c_tests").join(source))
        .arg("-o")
        .arg(&lib)
        .status()
        .unwrap();
    assert!(status.success(), "building {name}");
    lib
}

/// Builds a main program from `source` (relative to `c_tests`) without OpenMP.
fn build_main(source: &str, name: &str) -> PathBuf {
    let exe = support::scratch().join("dlopen").join(name);
    let status = Command::new("clang-16")
        .args(["-O1", "-Wall", "-Werror"])
        .arg(support::root().join("c_tests").join(source))
        .arg("-ldl")
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(status.success(), "building {name}");
    exe
}

/// Builds the library (with offloading) and the main program (without OpenMP) once.
fn build() -> (PathBuf, PathBuf) {
    let lib = build_library("dlopen/library.c", &[], "liboffload.so");
    (lib, build_main("dlopen/main.c", "dlopen_main"))
}

#[test]
fn a_program_without_openmp_loads_an_offloading_library_and_exits_cleanly() {
    let (lib, exe) = build();
    let lib = lib.to_str().unwrap();
    for (mode, expected) in [
        ("once", "first call: 41\nsecond call: 42\nexiting\n"),
        // Reopened, the library's image is loaded afresh: its counter starts at 1 again.
        ("reopen", "first call: 41\nafter reopening: 41\nexiting\n"),
    ] {
        let ours = run_text(&exe, &[lib, mode], Plugin::Ours, &[]);
        assert_eq!(
            ours.status.signal(),
            None,
            "{mode}: killed by a signal under omprpc; stderr:\n{}",
            ours.stderr
        );
        assert!(ours.status.success(), "{mode}: {}\n{}", ours.status, ours.stderr);
        assert_eq!(ours.stdout, expected, "{mode} under omprpc");
        check_ours_ran(&ours.stderr).unwrap();
        assert_eq!(support::other_stderr(&ours.stderr), "", "{mode}: silent");

        let stock = run_text(&exe, &[lib, mode], Plugin::Stock, &[]);
        assert!(
            stock.status.success(),
            "{mode} under the stock plugin: {}",
            stock.status
        );
        check_stock_ran(&stock.stderr).unwrap();
        assert_eq!(stock.stdout, ours.stdout, "{mode}: same output as the stock plugin");
    }
}

/// The plugin is marked to stay mapped, as the stock plugins are.
#[test]
fn the_plugin_is_linked_nodelete() {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(support::built_plugin())
        .output()
        .expect("readelf (binutils)");
    let text = String::from_utf8_lossy(&out.stdout);
    let flags = text.lines().find(|l| l.contains("FLAGS_1")).unwrap_or("");
    assert!(flags.contains("NODELETE"), "FLAGS_1 lacks NODELETE: {text}");
}

/// Two libraries with host services on one device: each image has its client object and its server,
/// so closing the library loaded first leaves the other one served, and a library loaded where a
/// closed one was gets a working client of its own.
#[test]
fn libraries_with_host_services_outlive_each_other() {
    let one = build_library("two_services/library.c", &["-DLIBRARY_ID=1"], "libservices1.so");
    // A different size, so that the second image's client object does not sit where the first's did.
    let two = build_library(
        "two_services/library.c",
        &["-DLIBRARY_ID=2", "-DPADDING=65536"],
        "libservices2.so",
    );
    let exe = build_main("two_services/main.c", "two_services_main");
    let (one, two) = (one.to_str().unwrap(), two.to_str().unwrap());
    for (mode, expected) in [
        (
            "overlap",
            "library 1, call 1 on the device: 1\nlibrary 1 returned 101\n\
             library 2, call 1 on the device: 2\nlibrary 2 returned 202\n\
             library 2, call 2 on the device: 3\nlibrary 2 after closing library 1 returned 203\n\
             exiting\n",
        ),
        (
            "sequence",
            "library 1, call 1 on the device: 1\nlibrary 1 returned 101\n\
             library 2, call 1 on the device: 2\nlibrary 2 after closing library 1 returned 202\n\
             exiting\n",
        ),
    ] {
        let ours = run_text(&exe, &[one, two, mode], Plugin::Ours, &[]);
        assert_eq!(
            ours.status.signal(),
            None,
            "{mode}: killed by a signal under omprpc; stderr:\n{}",
            ours.stderr
        );
        assert!(ours.status.success(), "{mode}: {}\n{}", ours.status, ours.stderr);
        assert_eq!(ours.stdout, expected, "{mode} under omprpc");
        check_ours_ran(&ours.stderr).unwrap();
        assert_eq!(support::other_stderr(&ours.stderr), "", "{mode}: silent");

        // The stock plugin has no host services: the same calls, printed by the fallback. (In the
        // sequence, libomptarget 16 with its stock plugin dies of SIGSEGV when the second library
        // is loaded, so only the overlap is compared.)
        if mode == "sequence" {
            continue;
        }
        let stock = run_text(&exe, &[one, two, mode], Plugin::Stock, &[]);
        assert!(
            stock.status.success(),
            "{mode} under the stock plugin: {}",
            stock.status
        );
        check_stock_ran(&stock.stderr).unwrap();
        assert_eq!(
            stock.stdout,
            expected.replace("on the device", "on the host fallback"),
            "{mode} under the stock plugin"
        );
    }
}
