//! AMD GPUs through the HSA runtime. Not implemented in this version: selecting it yields zero devices
//! and says so, rather than pretending.

pub mod sys;

use crate::util::error::Error;

/// Why this version has no AMDGPU devices.
pub fn unavailable() -> Error {
    Error::Unsupported("the AMDGPU backend is not implemented in this version of omprpc; reporting 0 devices".into())
}
