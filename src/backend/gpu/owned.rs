//! A driver object's handle (a CUDA stream or event, an HSA signal or queue) released exactly once:
//! explicitly, where the caller wants the driver's answer, or else when dropped. The handle is taken
//! out on release, so whichever way comes first releases it and the other does nothing.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::util::error::Result;

/// Releases one live handle of one kind; called at most once per handle.
pub type Release = Box<dyn Fn(u64) -> Result<()> + Send + Sync>;

/// An owned handle, stored as its bits (a pointer or an HSA `handle` field; never 0 while live).
pub struct OwnedHandle {
    bits: AtomicU64,
    release: Release,
}

impl OwnedHandle {
    /// Owns `bits`, a live non-zero handle that `release` releases.
    pub fn new(bits: u64, release: Release) -> OwnedHandle {
        debug_assert_ne!(bits, 0, "a live driver handle is never 0");
        OwnedHandle {
            bits: AtomicU64::new(bits),
            release,
        }
    }

    /// The handle's bits (0 once released).
    #[inline]
    pub fn bits(&self) -> u64 {
        self.bits.load(Ordering::Acquire)
    }

    /// Releases the handle now, reporting the driver's answer; later calls do nothing.
    pub fn release(&self) -> Result<()> {
        match self.bits.swap(0, Ordering::AcqRel) {
            0 => Ok(()),
            bits => (self.release)(bits),
        }
    }
}

impl Drop for OwnedHandle {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn released_once_whichever_way_comes_first() {
        let released = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&released);
        let handle = OwnedHandle::new(
            0x1000,
            Box::new(move |bits| {
                assert_eq!(bits, 0x1000);
                count.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }),
        );
        assert_eq!(handle.bits(), 0x1000);
        handle.release().unwrap();
        handle.release().unwrap();
        assert_eq!(handle.bits(), 0);
        drop(handle);
        assert_eq!(released.load(Ordering::SeqCst), 1);

        let count = Arc::clone(&released);
        drop(OwnedHandle::new(
            7,
            Box::new(move |_| {
                count.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }),
        ));
        assert_eq!(released.load(Ordering::SeqCst), 2);
    }
}
