//! LLVM libc's RPC protocol as the host sees it: the C library's server through FFI, the shared
//! mailbox's layout, a one-port window onto libc's server, and the port a handler serves.

pub mod ffi;
pub mod mailbox;
#[cfg(feature = "rpc")]
pub mod port;
#[cfg(feature = "rpc")]
pub mod window;
