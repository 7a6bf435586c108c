//! Recycling of small device allocations, as libomptarget's `MemoryManagerTy` does for backends whose
//! allocations are expensive (a driver call, often a device synchronisation): a block of up to
//! `LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD` bytes (8 KiB by default, 0 turns it off) goes back to a free
//! list when freed and is handed out again for a request of the same size. When the device runs out
//! of memory, every cached block is freed and the allocation retried.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Mutex;

use crate::util::error::{Error, Result};
use crate::util::sync::lock;

/// One device's cache of freed small blocks, by exact size.
pub struct MemoryManager {
    threshold: usize,
    free: Mutex<HashMap<usize, Vec<usize>>>,
}

impl MemoryManager {
    /// A manager for blocks of up to `threshold` bytes.
    pub fn new(threshold: usize) -> MemoryManager {
        MemoryManager {
            threshold,
            free: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a block of `size` bytes is recycled.
    pub fn manages(&self, size: usize) -> bool {
        self.threshold > 0 && size <= self.threshold
    }

    /// A block of `size` (managed) bytes: a cached one, else one from `allocate`; when that reports
    /// out of memory, every cached block is given to `release` and `allocate` tried once more.
    pub fn allocate(
        &self,
        size: usize,
        mut allocate: impl FnMut(usize) -> Result<*mut c_void>,
        release: impl FnMut(*mut c_void),
    ) -> Result<*mut c_void> {
        if let Some(ptr) = lock(&self.free).get_mut(&size).and_then(Vec::pop) {
            return Ok(ptr as *mut c_void);
        }
        match allocate(size) {
            Err(Error::OutOfMemory { .. }) => {
                self.release_all(release);
                allocate(size)
            }
            other => other,
        }
    }

    /// Keeps a freed block of `size` bytes for reuse.
    pub fn recycle(&self, ptr: *mut c_void, size: usize) {
        lock(&self.free).entry(size).or_default().push(ptr as usize);
    }

    /// Gives every cached block to `release` and forgets them.
    pub fn release_all(&self, mut release: impl FnMut(*mut c_void)) {
        let cached = std::mem::take(&mut *lock(&self.free));
        for ptr in cached.into_values().flatten() {
            release(ptr as *mut c_void);
        }
    }

    /// Number of cached blocks.
    pub fn cached(&self) -> usize {
        lock(&self.free).values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_same_size_blocks_and_frees_them_when_memory_runs_out() {
        let manager = MemoryManager::new(8192);
        assert!(manager.manages(8192) && !manager.manages(8193));
        assert!(!MemoryManager::new(0).manages(1), "threshold 0 turns it off");
        let mut next = 0x1000usize;
        let mut fresh = |size: usize| {
            next += size;
            Ok(next as *mut c_void)
        };
        let a = manager.allocate(64, &mut fresh, |_| {}).unwrap();
        manager.recycle(a, 64);
        assert_eq!(
            manager.allocate(64, &mut fresh, |_| {}).unwrap(),
            a,
            "same size: reused"
        );
        manager.recycle(a, 64);
        let b = manager.allocate(32, &mut fresh, |_| {}).unwrap();
        assert_ne!(b, a, "another size is not served from the 64-byte list");
        assert_eq!(manager.cached(), 1);
        let mut released = Vec::new();
        let mut attempts = 0;
        let c = manager
            .allocate(
                128,
                |_| {
                    attempts += 1;
                    if attempts == 1 {
                        Err(Error::OutOfMemory { size: 128 })
                    } else {
                        Ok(0x9999 as *mut c_void)
                    }
                },
                |p| released.push(p),
            )
            .unwrap();
        assert_eq!(c as usize, 0x9999);
        assert_eq!(
            released,
            vec![a],
            "out of memory: cached blocks were released, then retried"
        );
        assert_eq!(manager.cached(), 0);
    }
}
