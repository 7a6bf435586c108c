//! The C boundary: the structures of the libomptarget 16 plugin ABI and the exported `__tgt_rtl_*` and
//! `omprpc_*` functions. Each export is a thin shim that checks its arguments, calls the generic core,
//! and turns an error or a panic into the documented failure value plus a one-line message.

pub mod api;
pub mod device_numbers;
pub mod exports;
pub mod handlers;
pub mod image_descriptors;
pub mod interop;
pub mod port;
pub mod types;

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::util::error::{Error, Result};
use crate::util::log;

/// The value an export returns when it fails.
pub trait FailValue {
    /// `OFFLOAD_FAIL`, NULL or 0, as the entry point documents.
    fn fail_value() -> Self;
}

impl FailValue for i32 {
    fn fail_value() -> i32 {
        types::OFFLOAD_FAIL
    }
}

impl FailValue for i64 {
    fn fail_value() -> i64 {
        types::OFFLOAD_FAIL as i64
    }
}

impl FailValue for u32 {
    fn fail_value() -> u32 {
        0
    }
}

impl FailValue for () {
    fn fail_value() {}
}

impl<T> FailValue for *mut T {
    fn fail_value() -> *mut T {
        std::ptr::null_mut()
    }
}

impl<T> FailValue for *const T {
    fn fail_value() -> *const T {
        std::ptr::null()
    }
}

/// Runs `body` for the export `entry`: a failure is reported on stderr and becomes `T::fail_value()`;
/// a panic never unwinds into C.
pub fn guard<T: FailValue>(entry: &'static str, body: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => {
            log::error(format_args!("{entry}: {error}"));
            T::fail_value()
        }
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            log::error(format_args!("{entry}: {}", Error::Panic(text)));
            T::fail_value()
        }
    }
}

/// A byte count from libomptarget, which uses `int64_t`: negative values are refused.
pub fn size_arg(size: i64) -> Result<usize> {
    usize::try_from(size).map_err(|_| Error::InvalidArg(format!("size {size} is negative")))
}

/// A pointer that must not be NULL.
pub fn non_null<T>(ptr: *mut T, what: &'static str) -> Result<*mut T> {
    if ptr.is_null() {
        Err(Error::NullArg(what))
    } else {
        Ok(ptr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_turns_errors_and_panics_into_fail_values() {
        assert_eq!(guard("t", || Ok(5i32)), 5);
        assert_eq!(guard::<i32>("t", || Err(Error::NullArg("x"))), types::OFFLOAD_FAIL);
        assert!(guard::<*mut u8>("t", || panic!("boom")).is_null());
        assert_eq!(guard::<i64>("t", || Err(Error::NullArg("x"))), -1);
    }

    #[test]
    fn argument_checks() {
        assert_eq!(size_arg(0).unwrap(), 0);
        assert_eq!(size_arg(i64::MAX).unwrap(), i64::MAX as usize);
        assert_eq!(size_arg(-1).unwrap_err().to_string(), "size -1 is negative");
        assert!(non_null(std::ptr::null_mut::<u8>(), "image").is_err());
        let mut x = 0u8;
        assert!(non_null(&mut x as *mut u8, "image").is_ok());
    }
}
