//! AMD GPUs through the HSA runtime, loaded at run time (`libhsa-runtime64.so.1`, then
//! `libhsa-runtime64.so`, the name the stock plugin opens, or `OMPRPC_HSA_LIBRARY`), so that the plugin
//! loads, and reports zero devices, on a machine without it.
//!
//! Layers, as for CUDA: [`sys`] (the runtime's types and entry points) and [`runtime`] (the opened
//! runtime and its checked calls). This version opens the runtime, initialises it and finds its GPU
//! agents, but does not run kernels on them yet: [`probe`] always ends with the reason there are no
//! devices, which `LIBOMPTARGET_INFO` prints.

pub mod runtime;
#[cfg(test)]
pub(crate) mod simulated;
pub mod sys;

use self::runtime::{Api, Runtime};
use crate::backend::gpu::library::OpenError;
use crate::util::config::Config;
use crate::util::error::Error;

/// The runtime's file names tried in turn: the soname the runtime package installs, then the
/// unversioned name that only its development package provides (and the stock plugin opens).
pub const RUNTIME_NAMES: [&str; 2] = ["libhsa-runtime64.so.1", "libhsa-runtime64.so"];

/// Opens the runtime named by `OMPRPC_HSA_LIBRARY`, else [`RUNTIME_NAMES`], initialises it and counts
/// its GPU agents; returns why this version reports no AMDGPU devices: no runtime, a runtime that lacks
/// an entry point, a failing `hsa_init` (no `/dev/kfd`: `HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)`),
/// no GPU agent, or GPUs it cannot run kernels on yet. The runtime is shut down again before it
/// returns.
pub fn probe(config: &Config) -> Error {
    let names: Vec<&str> = match &config.hsa_library {
        Some(path) => vec![path.as_str()],
        None => RUNTIME_NAMES.to_vec(),
    };
    let runtime = match Runtime::open(&names) {
        Ok(runtime) => runtime,
        Err(OpenError::Library(why)) => {
            return Error::Unsupported(format!(
                "no HSA runtime: cannot load {} ({why}); reporting 0 devices",
                names.join(" or ")
            ))
        }
        Err(OpenError::Symbol { library, symbol }) => {
            return Error::Unsupported(format!(
                "the HSA runtime {library} lacks {symbol} (too old?); reporting 0 devices"
            ))
        }
    };
    probe_runtime(Api::new(Box::leak(Box::new(runtime))))
}

/// [`probe`] over an opened runtime (the real one, or a simulated one in tests).
pub fn probe_runtime(api: Api) -> Error {
    if let Err(e) = api.init() {
        return Error::Unsupported(format!("{e} from {}; reporting 0 devices", api.library()));
    }
    let agents = api.agents();
    let shut_down = api.shut_down();
    let gpus: Vec<String> = match agents {
        Ok(agents) => agents.into_iter().filter(runtime::is_gpu).map(|a| a.name).collect(),
        Err(e) => return Error::Unsupported(format!("{e} from {}; reporting 0 devices", api.library())),
    };
    if let Err(e) = shut_down {
        return Error::Unsupported(format!("{e} from {}; reporting 0 devices", api.library()));
    }
    if gpus.is_empty() {
        return Error::Unsupported(format!(
            "the HSA runtime {} found no GPU agent; reporting 0 devices",
            api.library()
        ));
    }
    Error::Unsupported(format!(
        "the HSA runtime {} found {} AMD GPU(s) ({}), but this version of omprpc cannot run kernels on \
         them yet; reporting 0 devices",
        api.library(),
        gpus.len(),
        gpus.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_runtime_is_named() {
        let config = Config::from_pairs(&[("OMPRPC_HSA_LIBRARY", "/nonexistent/libhsa-runtime64.so.1")]);
        let text = probe(&config).to_string();
        assert!(
            text.starts_with("no HSA runtime: cannot load /nonexistent/libhsa-runtime64.so.1 (")
                && text.ends_with("; reporting 0 devices"),
            "{text}"
        );
    }

    #[test]
    fn a_library_that_is_not_the_runtime_is_named_by_the_first_missing_entry_point() {
        let config = Config::from_pairs(&[("OMPRPC_HSA_LIBRARY", "libc.so.6")]);
        assert_eq!(
            probe(&config).to_string(),
            "the HSA runtime libc.so.6 lacks hsa_init (too old?); reporting 0 devices"
        );
    }
}
