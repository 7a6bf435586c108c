//! The crate's one error type. Its `Display` is the one-line message a user reads on stderr.

use std::fmt;

/// The name [`Error::Driver`] gives NVIDIA's driver.
pub const CUDA: &str = "CUDA";
/// The name [`Error::Driver`] gives AMD's runtime.
pub const HSA: &str = "HSA";

/// Everything that can go wrong between libomptarget and a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A required pointer argument was null.
    NullArg(&'static str),
    /// A device id outside `0..count`.
    InvalidDevice { id: i32, count: usize },
    /// An argument is out of range or inconsistent; the text says which and why.
    InvalidArg(String),
    /// The plugin was used before `init_device` succeeded for that device.
    DeviceNotInitialized(i32),
    /// An image that the backend cannot load.
    BadImage(String),
    /// An entry of the image's table has no counterpart in the loaded image.
    MissingSymbol { image: String, symbol: String },
    /// A handle (kernel, queue, event, allocation) that this plugin did not hand out or already released.
    UnknownHandle { what: &'static str, addr: usize },
    /// The device is out of memory.
    OutOfMemory { size: usize },
    /// An operating-system call failed.
    Os { call: &'static str, detail: String },
    /// A driver call failed: `driver` names the library ([`CUDA`], [`HSA`]), `call` the function,
    /// `code` and `name` the status it returned, in the driver's own words.
    Driver {
        driver: &'static str,
        call: &'static str,
        code: i64,
        name: String,
    },
    /// LLVM libc's RPC server returned a failure status from `call`.
    Rpc { call: &'static str, status: u32 },
    /// What the plugin was doing (loading kernel X, launching kernel Y) when `source` happened.
    Context { what: String, source: Box<Error> },
    /// The operation is not available with this backend or build.
    Unsupported(String),
    /// A panic inside the plugin, caught at the C boundary.
    Panic(String),
    /// Something the plugin waited for (a thread letting go of a server, a device finishing) did not
    /// happen in time; the text says what, and what was left as it was.
    Timeout(String),
}

/// Result alias used throughout the crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Adds what the plugin was doing to an error on its way up.
pub trait Context<T> {
    /// Wraps an error with `what` (computed only on failure).
    fn context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T>;
}

impl<T> Context<T> for Result<T> {
    #[inline]
    fn context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| e.context(what()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NullArg(what) => write!(f, "{what} is NULL"),
            Error::InvalidDevice { id, count } => {
                write!(f, "device id {id} is out of range: this plugin has {count} device(s)")
            }
            Error::InvalidArg(text) => f.write_str(text),
            Error::DeviceNotInitialized(id) => {
                write!(f, "device {id} is used before it was initialised")
            }
            Error::BadImage(text) => write!(f, "cannot load the device image: {text}"),
            Error::MissingSymbol { image, symbol } => {
                write!(
                    f,
                    "the device image {image} has no symbol '{symbol}' named in its entry table"
                )
            }
            Error::UnknownHandle { what, addr } => {
                write!(
                    f,
                    "{what} {addr:#x} was not created by this device or was already released"
                )
            }
            Error::OutOfMemory { size } => write!(f, "cannot allocate {size} bytes: out of memory"),
            Error::Os { call, detail } => write!(f, "{call} failed: {detail}"),
            Error::Driver {
                driver,
                call,
                code,
                name,
            } => {
                // HSA documents its statuses in hexadecimal (0x1008), CUDA in decimal (100): each is
                // shown as its own headers and messages write it.
                if *driver == HSA {
                    write!(f, "{driver} error in {call}: {name} ({code:#x})")
                } else {
                    write!(f, "{driver} error in {call}: {name} ({code})")
                }
            }
            Error::Rpc { call, status } => {
                write!(f, "LLVM libc's RPC server failed in {call} with status {status:#x}")
            }
            Error::Context { what, source } => write!(f, "{what}: {source}"),
            Error::Unsupported(text) => f.write_str(text),
            Error::Panic(text) => write!(f, "internal error (please report it): {text}"),
            Error::Timeout(text) => write!(f, "timed out: {text}"),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// The driver's status behind this error, through any context it was given.
    pub fn driver_code(&self) -> Option<i64> {
        match self {
            Error::Driver { code, .. } => Some(*code),
            Error::Context { source, .. } => source.driver_code(),
            _ => None,
        }
    }

    /// This error, said to have happened while doing `what`.
    pub fn context(self, what: impl Into<String>) -> Error {
        Error::Context {
            what: what.into(),
            source: Box::new(self),
        }
    }

    /// The error of a failed libc call, with `errno`'s text.
    pub fn last_os(call: &'static str) -> Error {
        Error::Os {
            call,
            detail: std::io::Error::last_os_error().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_and_name_the_problem() {
        let all = [
            Error::NullArg("image"),
            Error::InvalidDevice { id: 7, count: 4 },
            Error::UnknownHandle {
                what: "allocation",
                addr: 0x10,
            },
            Error::OutOfMemory { size: 12 },
        ];
        for e in &all {
            let text = e.to_string();
            assert!(!text.contains('\n'), "{text}");
        }
        assert_eq!(
            all[1].to_string(),
            "device id 7 is out of range: this plugin has 4 device(s)"
        );
        let driver = Error::Driver {
            driver: CUDA,
            call: "cuStreamCreate",
            code: 2,
            name: "CUDA_ERROR_OUT_OF_MEMORY".into(),
        };
        let launch: Result<()> = Err(driver);
        assert_eq!(
            launch.context(|| "launching kernel k").unwrap_err().to_string(),
            "launching kernel k: CUDA error in cuStreamCreate: CUDA_ERROR_OUT_OF_MEMORY (2)"
        );
        let hsa = Error::Driver {
            driver: HSA,
            call: "hsa_init",
            code: 0x1008,
            name: "HSA_STATUS_ERROR_OUT_OF_RESOURCES".into(),
        };
        assert_eq!(
            hsa.to_string(),
            "HSA error in hsa_init: HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)"
        );
    }
}
