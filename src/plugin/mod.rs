//! The generic core: devices, images and their entries, kernels and launch geometry, memory records,
//! queues and events per async info, pinned ranges, the memory manager, the device environment, RPC
//! wiring and teardown. It validates everything libomptarget hands over, keeps the records that make
//! bad handles detectable, and calls one backend hook per operation.
//!
//! [`Core`] is generic over the [`Backend`](crate::backend::Backend); the ABI layer reaches it through
//! the object-safe [`PluginApi`], so that one shared object can drive any backend, chosen at run time.

pub mod api;
pub mod device;
pub mod generic;
pub mod image_loading;
pub mod launch;
pub mod memory_manager;
pub mod pinned;
pub mod pool;
pub mod rpc_link;
#[cfg(test)]
pub(crate) mod tests;

use crate::backend;
use crate::util::config::{BackendKind, Config};
use crate::util::error::{Error, Result};
use crate::util::log;

pub use self::api::{HostEntry, LoadedEntries, PluginApi, QueueField};
pub use self::generic::Core;
pub use launch::LaunchRequest;

/// The plugin: the backend family chosen at load and, when it has devices, the core driving it.
pub struct Plugin {
    kind: BackendKind,
    core: Option<Box<dyn PluginApi>>,
    /// Why the backend has the devices it has: what it found, or why it could not be opened (then
    /// also the error of every later call).
    reason: String,
}

impl Plugin {
    /// Selects the backend (`OMPRPC_BACKEND`, else the file name, else host) and opens it; a backend
    /// that cannot be opened leaves the plugin with zero devices and says why under `LIBOMPTARGET_INFO`.
    pub fn open(config: Config, loaded_as: Option<&str>) -> Plugin {
        log::set_info_level(config.info_level);
        let kind = select(&config, loaded_as);
        fn with_reason<B: backend::Backend>(backend: B, config: Config) -> (Box<dyn PluginApi>, String) {
            let reason = backend.device_count_reason();
            (Core::new_boxed(backend, config), reason)
        }
        let core = match kind {
            BackendKind::Host => Ok(with_reason(backend::host::HostBackend::from_config(&config), config)),
            BackendKind::Cuda => backend::cuda::CudaBackend::open(&config).map(|b| with_reason(b, config)),
            BackendKind::Amdgpu => backend::amdgpu::AmdgpuBackend::open(&config).map(|b| with_reason(b, config)),
        };
        match core {
            Ok((core, reason)) => Plugin {
                kind,
                core: Some(core),
                reason,
            },
            Err(e) => {
                log::info(&e);
                Plugin {
                    kind,
                    core: None,
                    reason: e.to_string(),
                }
            }
        }
    }

    /// Why the backend has the devices it has, in one line: the devices and the driver that found
    /// them, or why there are none (what `omprpc info` shows for each backend).
    pub fn device_count_reason(&self) -> &str {
        &self.reason
    }

    /// The backend family this plugin drives.
    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// Number of devices libomptarget may use.
    pub fn device_count(&self) -> usize {
        self.core.as_ref().map_or(0, |c| c.device_count())
    }

    /// The core, or why there is none.
    pub fn api(&self) -> Result<&dyn PluginApi> {
        self.core.as_deref().ok_or_else(|| {
            Error::Unsupported(format!(
                "the {} backend has no devices ({})",
                self.kind.display_name(),
                self.reason
            ))
        })
    }
}

fn select(config: &Config, loaded_as: Option<&str>) -> BackendKind {
    let from_name = loaded_as.and_then(BackendKind::from_plugin_file_name);
    let shown_name = loaded_as.unwrap_or("an unknown file");
    match (config.backend_override, from_name) {
        (Some(kind), _) => {
            log::info(format_args!(
                "{} backend selected by OMPRPC_BACKEND (plugin loaded as {shown_name})",
                kind.name()
            ));
            kind
        }
        (None, Some(kind)) => {
            log::info(format_args!(
                "{} backend selected: plugin loaded as {shown_name}",
                kind.name()
            ));
            kind
        }
        (None, None) => {
            log::info(format_args!(
                "host backend selected: plugin loaded as {shown_name}, which names no backend \
                 (set OMPRPC_BACKEND or install it as libomptarget.rtl.<x86_64|cuda|amdgpu>.nextgen.so)"
            ));
            BackendKind::Host
        }
    }
}
