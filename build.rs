//! Links the plugin with `-z nodelete`, and LLVM libc's RPC server (`libllvmlibc_rpc_server.a`, LLVM 19.1) when the `rpc` feature is on.
//! The library is found through `OMPRPC_LLVM_LIBC_DIR`, else `llvm-config-19 --libdir`, else
//! `/usr/lib/llvm-19/lib`.

use std::path::PathBuf;
use std::process::Command;

const LIBRARY: &str = "libllvmlibc_rpc_server.a";

fn main() {
    println!("cargo:rerun-if-env-changed=OMPRPC_LLVM_LIBC_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    // Like the stock plugins: libomptarget may dlclose the plugin at exit and still call
    // `__tgt_rtl_deinit_plugin` afterwards, so the plugin must stay mapped.
    println!("cargo:rustc-link-arg-cdylib=-Wl,-z,nodelete");
    if std::env::var_os("CARGO_FEATURE_RPC").is_none() {
        return;
    }
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::var_os("OMPRPC_LLVM_LIBC_DIR") {
        candidates.push(PathBuf::from(dir));
    }
    if let Ok(out) = Command::new("llvm-config-19").arg("--libdir").output() {
        if out.status.success() {
            candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
        }
    }
    candidates.push(PathBuf::from("/usr/lib/llvm-19/lib"));
    let Some(dir) = candidates.iter().find(|d| d.join(LIBRARY).exists()) else {
        let tried: Vec<String> = candidates.iter().map(|d| d.display().to_string()).collect();
        panic!(
            "{LIBRARY} (LLVM libc's RPC server) was not found in {}. Install it with \
             `apt-get install libllvmlibc-19-dev`, point OMPRPC_LLVM_LIBC_DIR at its directory, or build \
             without host services: `cargo build --no-default-features`.",
            tried.join(", ")
        );
    };
    println!("cargo:rerun-if-changed={}", dir.join(LIBRARY).display());
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=llvmlibc_rpc_server");
    println!("cargo:rustc-link-lib=dylib=stdc++");
    // libc's server calls exit() itself for a device's exit(); in the plugin that call goes to
    // rpc::services::exit's device_exit instead, which ends the process without running teardown that would
    // wait for the kernel that called exit.
    println!("cargo:rustc-link-arg-cdylib=-Wl,--wrap=exit");
    // libc's server hands the host's C library whatever FILE* the device sent; in the plugin its stdio
    // calls go to rpc::services::streams, which passes on only streams the device has open (the list is
    // rpc::services::streams::WRAPPED, checked against the library's undefined symbols by a test).
    for function in STDIO_WRAPPED {
        println!("cargo:rustc-link-arg-cdylib=-Wl,--wrap={function}");
    }
}

/// The stdio functions of libc's RPC server that take a device's stream (shared with the crate).
const STDIO_WRAPPED: [&str; 15] = include!("src/rpc/services/wrapped_stdio.in");
