//! AMD GPUs through the HSA runtime. Not implemented in this version: selecting it yields zero devices
//! and says so, rather than pretending.

use super::Backend;
use crate::plugin::error::{Error, Result};

/// Reports that this version has no AMDGPU backend yet.
pub fn open() -> Result<Box<dyn Backend>> {
    Err(Error::Unsupported(
        "the AMDGPU backend is not implemented in this version of omprpc; reporting 0 devices".into(),
    ))
}
