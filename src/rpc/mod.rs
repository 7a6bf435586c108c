//! Host services for device code: LLVM libc's RPC server (19.1) wrapped safely, the plugin's own
//! handlers (MALLOC, FREE, device files in [`streams`], and user opcodes), and the thread that serves
//! every device.
//!
//! Device code reaches the host through a shared-memory mailbox ([`mailbox`]). A device image that
//! wants host services defines `__llvm_libc_rpc_client`, a pointer to its client object; when such an
//! image is loaded, the core gives it a server of its own ([`server::RpcServer`]) and copies the
//! server's client to that object (`plugin::rpc_link`); [`registry`] keeps the servers and the user
//! handlers, [`service`] serves every server while a kernel that may call the host is running, and
//! [`streams`] checks every stream that libc's handlers pass to the host's C library. This module offers safe operations only; the C-callable side of user handlers
//! lives in the ABI layer.

pub mod observing;
pub mod protocol;
#[cfg(feature = "rpc")]
pub mod services;
#[cfg(feature = "rpc")]
pub mod serving;
#[cfg(all(feature = "rpc", any(test, feature = "test-doubles")))]
pub mod simulated;

use std::ffi::c_void;

use crate::util::error::{Error, Result};

/// The name of the symbol through which a device image asks for host services.
pub const CLIENT_SYMBOL: &std::ffi::CStr = c"__llvm_libc_rpc_client";

/// Memory of one device as the RPC server needs it.
pub trait DeviceMemory: Send + Sync {
    /// Device memory for the device's `malloc` (a block, or a reservation the heap divides).
    fn alloc(&self, size: usize) -> Result<*mut c_void>;
    /// Frees what `alloc` returned.
    ///
    /// # Safety
    /// `ptr` came from `alloc` and was not freed since.
    unsafe fn free(&self, ptr: *mut c_void) -> Result<()>;
    /// Zeroed memory that the host and the device see at one address, for the mailbox.
    fn alloc_shared(&self, size: usize) -> Result<*mut c_void>;
    /// Frees what `alloc_shared` returned.
    ///
    /// # Safety
    /// `ptr` came from `alloc_shared` and was not freed since.
    unsafe fn free_shared(&self, ptr: *mut c_void) -> Result<()>;
}

/// Host memory as a device's, for mailboxes that only this process uses: the serving thread's
/// rehearsals ([`rehearsal`]), and tests and benchmarks that play the device from a host thread.
pub struct HostMemory;

impl DeviceMemory for HostMemory {
    fn alloc(&self, size: usize) -> Result<*mut c_void> {
        // SAFETY: malloc has no preconditions; null is handled.
        let ptr = unsafe { libc::malloc(size.max(1)) };
        if ptr.is_null() {
            return Err(Error::OutOfMemory { size });
        }
        Ok(ptr)
    }

    unsafe fn free(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: per the trait's contract, `ptr` came from `alloc`.
        unsafe { libc::free(ptr) };
        Ok(())
    }

    fn alloc_shared(&self, size: usize) -> Result<*mut c_void> {
        // Page-aligned, as a driver's pinned memory is: no other data of the process shares the
        // mailbox's cache lines (the server's and the client's words would bounce with it).
        let mut ptr = std::ptr::null_mut();
        // SAFETY: `ptr` is writable; the alignment is a power of two and a multiple of the pointer size.
        if unsafe { libc::posix_memalign(&mut ptr, 4096, size.max(1)) } != 0 || ptr.is_null() {
            return Err(Error::OutOfMemory { size });
        }
        // SAFETY: `ptr` holds `size` bytes; the mailbox must start zeroed.
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), 0, size) };
        Ok(ptr)
    }

    unsafe fn free_shared(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: per the trait's contract, `ptr` came from `alloc_shared`.
        unsafe { libc::free(ptr) };
        Ok(())
    }
}

/// Whether this build serves host services (the `rpc` cargo feature).
pub const AVAILABLE: bool = cfg!(feature = "rpc");
