//! Queues and events on the host device: identities only, because host work runs when it is submitted.
//!
//! libomptarget runs each `nowait` region as a task of its own (on libomp's hidden helper threads), so
//! the region is already asynchronous to the thread that met it. The stock host plugin therefore runs
//! every kernel and copy on the calling thread, and so does this backend: handing `nowait` kernels on
//! to a queue thread, as an earlier version did, added a wake-up and a later poll by libomp to every
//! region (chains of small `nowait` regions ran 1.5-9 times slower than with the stock plugin) and
//! gained nothing. A queue is therefore idle whenever libomptarget looks at it, and an event is reached
//! when it is recorded.

use std::ffi::c_void;

/// A queue's or an event's identity for libomptarget: an address that is non-null, stable, and not
/// shared with any other live queue or event (libomptarget and the core tell them apart by it).
pub struct HostHandle(Box<u8>);

impl HostHandle {
    /// A new identity.
    pub fn new() -> HostHandle {
        HostHandle(Box::new(0))
    }

    /// The handle libomptarget keeps.
    pub fn handle(&self) -> *mut c_void {
        (&*self.0 as *const u8).cast_mut().cast()
    }
}

impl Default for HostHandle {
    fn default() -> Self {
        HostHandle::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_handles_are_distinct_and_stable() {
        let a = HostHandle::new();
        let b = HostHandle::new();
        assert!(!a.handle().is_null());
        assert_ne!(a.handle(), b.handle());
        let before = a.handle();
        let moved = a;
        assert_eq!(moved.handle(), before, "the handle survives a move of its owner");
    }
}
