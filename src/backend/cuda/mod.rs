//! NVIDIA GPUs through the CUDA driver. Not implemented in this version: selecting it yields zero devices
//! and says so, rather than pretending.

use crate::util::error::Error;

/// Why this version has no CUDA devices.
pub fn unavailable() -> Error {
    Error::Unsupported("the CUDA backend is not implemented in this version of omprpc; reporting 0 devices".into())
}
