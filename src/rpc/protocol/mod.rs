//! LLVM libc's RPC protocol as the host sees it: the C library's server through FFI, the shared
//! mailbox's layout, a one-port window onto libc's server, and the port a handler serves.

#[cfg(feature = "rpc")]
pub mod client;
pub mod ffi;
pub mod mailbox;
pub mod memory;
#[cfg(feature = "rpc")]
pub mod port;
#[cfg(feature = "rpc")]
pub mod window;

/// The name of the symbol through which a device image asks for host services.
pub const CLIENT_SYMBOL: &std::ffi::CStr = c"__llvm_libc_rpc_client";

/// Whose calls come through a mailbox, as messages, the watchdog, the statistics and the trace name
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Owner {
    /// The device with this number.
    Device(usize),
}

impl std::fmt::Display for Owner {
    /// How messages name it: `device 3`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::Device(device) => write!(f, "device {device}"),
        }
    }
}
