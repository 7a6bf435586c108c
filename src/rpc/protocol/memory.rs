//! The memory a server needs of its device: where device code's `malloc` takes from, and the
//! mailbox both sides see. The backends provide it; tests and benchmarks use the host's.

use std::ffi::c_void;

use crate::util::error::{Error, Result};

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

/// Host memory as a device's, for mailboxes that only this process uses: tests and benchmarks that play the device from a host thread.
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
