//! Host memory an AMD GPU reaches: buffers from a host pool kept for reuse (staging for small copies,
//! kernel arguments), and the host ranges that are pinned or were allocated from a host pool, which a
//! copy may hand to the device directly at the address the runtime gave for them.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Mutex;

use super::runtime::Api;
use super::sys::{HsaAgent, HsaMemoryPool};
use crate::util::error::Result;
use crate::util::sync::lock;

/// Smallest buffer handed out: a kernel's arguments and most staging fit, and sizes round up to
/// powers of two from here so that freed buffers are reused.
const SMALLEST: usize = 256;

/// A buffer of host memory the device may access.
pub struct HostBuffer {
    /// Its address (host and device see it at the same one).
    pub ptr: *mut c_void,
    /// Bytes it holds.
    pub capacity: usize,
}

// SAFETY: the buffer is plain host memory owned by whoever holds the `HostBuffer`.
unsafe impl Send for HostBuffer {}
// SAFETY: as above; shared references do not touch the memory.
unsafe impl Sync for HostBuffer {}

/// Buffers of one host pool, made accessible to a device's agent, kept for reuse.
pub struct HostBuffers {
    api: Api,
    pool: HsaMemoryPool,
    agent: HsaAgent,
    free: Mutex<Vec<HostBuffer>>,
}

impl HostBuffers {
    /// An empty cache over `pool`, whose buffers `agent` may access.
    pub fn new(api: Api, pool: HsaMemoryPool, agent: HsaAgent) -> HostBuffers {
        HostBuffers {
            api,
            pool,
            agent,
            free: Mutex::new(Vec::new()),
        }
    }

    /// A buffer of at least `size` bytes.
    pub fn take(&self, size: usize) -> Result<HostBuffer> {
        let capacity = size.max(SMALLEST).next_power_of_two();
        {
            let mut free = lock(&self.free);
            if let Some(at) = free.iter().position(|b| b.capacity == capacity) {
                return Ok(free.swap_remove(at));
            }
        }
        let ptr = self.api.pool_allocate_for(self.pool, capacity, &[self.agent])?;
        Ok(HostBuffer { ptr, capacity })
    }

    /// Keeps `buffer` for a later [`HostBuffers::take`]; the device no longer uses it.
    pub fn give_back(&self, buffer: HostBuffer) {
        lock(&self.free).push(buffer);
    }

    /// Frees every buffer given back; the first failure is reported, the rest still freed.
    pub fn free_all(&self) -> Result<()> {
        let buffers = std::mem::take(&mut *lock(&self.free));
        let mut result = Ok(());
        for buffer in buffers {
            // SAFETY: given-back buffers came from `pool_allocate` and nothing uses them.
            result = result.and(unsafe { self.api.pool_free(buffer.ptr) });
        }
        result
    }
}

/// One host range devices reach directly.
#[derive(Clone, Copy, Debug)]
struct Range {
    len: usize,
    /// Where agents see its first byte.
    agent_ptr: usize,
    /// Locks outstanding: 0 for a host-pool allocation, which is reached without one (a pinned range
    /// is forgotten when its last lock goes).
    locks: usize,
}

/// Host ranges that are pinned (`hsa_amd_memory_lock`, for every agent) or were allocated from a
/// host pool, by start address.
#[derive(Default)]
pub struct DirectRanges {
    ranges: Mutex<BTreeMap<usize, Range>>,
}

impl DirectRanges {
    /// Where agents see `[ptr, ptr + len)`, if it lies inside one range.
    pub fn agent_address(&self, ptr: *const c_void, len: usize) -> Option<*mut c_void> {
        let start = ptr as usize;
        let ranges = lock(&self.ranges);
        let (&base, range) = ranges.range(..=start).next_back()?;
        let end = start.checked_add(len)?;
        (end <= base + range.len).then(|| (range.agent_ptr + (start - base)) as *mut c_void)
    }

    /// Records a host-pool allocation, which agents see at its own address.
    pub fn add_allocation(&self, ptr: *mut c_void, len: usize) {
        lock(&self.ranges).insert(
            ptr as usize,
            Range {
                len,
                agent_ptr: ptr as usize,
                locks: 0,
            },
        );
    }

    /// Forgets every range (the runtime was shut down, and its pins and pools with it).
    pub fn clear(&self) {
        lock(&self.ranges).clear();
    }

    /// Forgets a host-pool allocation.
    pub fn remove_allocation(&self, ptr: *mut c_void) {
        lock(&self.ranges).remove(&(ptr as usize));
    }

    /// Pins `[ptr, ptr + len)` with `lock_range` the first time (several devices lock the same range:
    /// the runtime pins for every agent at once); returns where agents see it.
    pub fn lock(
        &self,
        ptr: *mut c_void,
        len: usize,
        lock_range: impl FnOnce() -> Result<*mut c_void>,
    ) -> Result<*mut c_void> {
        let mut ranges = lock(&self.ranges);
        if let Some(range) = ranges.get_mut(&(ptr as usize)) {
            // A host-pool allocation needs no pin: it is reached directly, and stays so until freed.
            if range.locks > 0 {
                range.locks += 1;
            }
            return Ok(range.agent_ptr as *mut c_void);
        }
        let agent_ptr = lock_range()?;
        ranges.insert(
            ptr as usize,
            Range {
                len,
                agent_ptr: agent_ptr as usize,
                locks: 1,
            },
        );
        Ok(agent_ptr)
    }

    /// Drops one lock of the range at `ptr`, unpinning it with `unlock_range` when it was the last.
    pub fn unlock(&self, ptr: *mut c_void, unlock_range: impl FnOnce() -> Result<()>) -> Result<()> {
        let mut ranges = lock(&self.ranges);
        let Some(range) = ranges.get_mut(&(ptr as usize)).filter(|r| r.locks > 0) else {
            return Ok(());
        };
        range.locks -= 1;
        if range.locks == 0 {
            ranges.remove(&(ptr as usize));
            return unlock_range();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_ranges_translate_addresses_and_count_locks() {
        let ranges = DirectRanges::default();
        let base = 0x10_000 as *mut c_void;
        let mut locked = 0;
        let agent = ranges
            .lock(base, 0x1000, || {
                locked += 1;
                Ok(0x90_000 as *mut c_void)
            })
            .unwrap();
        assert_eq!(agent as usize, 0x90_000);
        assert_eq!(ranges.lock(base, 0x1000, || panic!("locked twice")).unwrap(), agent);
        assert_eq!(locked, 1);
        assert_eq!(
            ranges
                .agent_address(0x10_800 as *const c_void, 0x800)
                .map(|p| p as usize),
            Some(0x90_800)
        );
        assert_eq!(
            ranges.agent_address(0x10_800 as *const c_void, 0x801),
            None,
            "runs past the end"
        );
        assert_eq!(
            ranges.agent_address(0xf_fff as *const c_void, 1),
            None,
            "before the start"
        );
        ranges.unlock(base, || panic!("unlocked while locked twice")).unwrap();
        let mut unlocked = false;
        ranges
            .unlock(base, || {
                unlocked = true;
                Ok(())
            })
            .unwrap();
        assert!(unlocked);
        assert_eq!(ranges.agent_address(0x10_000 as *const c_void, 1), None);
        ranges.add_allocation(0x20_000 as *mut c_void, 64);
        assert_eq!(
            ranges.agent_address(0x20_010 as *const c_void, 16).map(|p| p as usize),
            Some(0x20_010)
        );
        ranges
            .unlock(0x20_000 as *mut c_void, || panic!("an allocation is not unlocked"))
            .unwrap();
        ranges.remove_allocation(0x20_000 as *mut c_void);
        assert_eq!(ranges.agent_address(0x20_010 as *const c_void, 16), None);
    }
}
