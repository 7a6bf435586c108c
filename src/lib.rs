//! omprpc: a plugin for LLVM's OpenMP offloading runtime (libomptarget 16).
//!
//! The arrows run one way: [`abi`] (the C types and the exported shims) calls [`plugin`](mod@plugin) (the generic
//! core), which calls a [`backend`] (one folder per device family) and [`rpc`] (host services for
//! device code); all of them use [`util`] (errors, settings, messages, locking, maps, ELF reading).

#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;
pub mod backend;
pub mod plugin;
pub mod rpc;
pub mod util;

use std::ffi::CStr;
use std::sync::OnceLock;

use plugin::Plugin;
use util::config::Config;

static PLUGIN: OnceLock<Plugin> = OnceLock::new();

/// The process-wide plugin, created on first use from the environment and the file name it was
/// loaded under.
pub fn plugin() -> &'static Plugin {
    PLUGIN.get_or_init(|| Plugin::open(Config::from_env(), loaded_file_name().as_deref()))
}

/// The file name (without directory) this shared object was loaded under, found with `dladdr`.
pub fn loaded_file_name() -> Option<String> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let anchor = plugin as fn() -> &'static Plugin as *const libc::c_void;
    // SAFETY: `anchor` is an address in this object and `info` is writable storage for a Dl_info.
    let found = unsafe { libc::dladdr(anchor, info.as_mut_ptr()) };
    if found == 0 {
        return None;
    }
    // SAFETY: dladdr succeeded, so it filled `info`.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the dynamic loader, valid while loaded.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    Some(path.rsplit('/').next().unwrap_or(&path).to_string())
}
