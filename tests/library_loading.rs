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

/// Builds the library (with offloading) and the main program (without OpenMP) once.
fn build() -> (PathBuf, PathBuf) {
    support::require_toolchain();
    let dir = support::scratch().join("dlopen");
    std::fs::create_dir_all(&dir).unwrap();
    let src = support::root().join("c_tests/dlopen");
    let lib = dir.join("liboffload.so");
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
        .arg(src.join("library.c"))
        .arg("-o")
        .arg(&lib)
        .status()
        .unwrap();
    assert!(status.success(), "building the offloading library");
    let exe = dir.join("dlopen_main");
    let status = Command::new("clang-16")
        .args(["-O1", "-Wall", "-Werror"])
        .arg(src.join("main.c"))
        .arg("-ldl")
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(status.success(), "building the main program");
    (lib, exe)
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
