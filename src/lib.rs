//! omprpc: a plugin for LLVM's OpenMP offloading runtime (libomptarget 16).
//!
//! Layout: [`abi`] holds the C types and the exported shims; [`plugin`] is the generic core (devices,
//! images, kernels, memory, queues, events, settings, messages); [`backend`] has one folder per device
//! family, each implementing [`backend::Backend`]; [`rpc`] serves host services to device code.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;
pub mod backend;
pub mod plugin;
pub mod rpc;

use std::ffi::CStr;
use std::sync::OnceLock;

use plugin::config::Config;
use plugin::Plugin;

static PLUGIN: OnceLock<Plugin> = OnceLock::new();

/// The process-wide plugin, created on first use from the environment and the file name it was
/// loaded under.
pub fn plugin() -> &'static Plugin {
    PLUGIN.get_or_init(|| Plugin::new(Config::from_env(), loaded_file_name().as_deref()))
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
