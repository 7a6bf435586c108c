//! Host memory pinned for a device (`data_lock` / `data_unlock`, and `data_alloc` of host memory): the
//! ranges with their device addresses and reference counts, as libomptarget 16's
//! `PinnedAllocationMapTy` keeps them. A range is pinned by the backend once, when first locked, and
//! unpinned when its last user unlocks it; locking an address inside a pinned range only counts a user.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Mutex;

use crate::util::error::{Error, Result};
use crate::util::sync::lock;

struct Range {
    size: usize,
    device_addr: usize,
    users: usize,
    /// Allocated pinned by `data_alloc`: unpinned by `data_delete`, never by `data_unlock`.
    allocated: bool,
}

/// What [`PinnedRanges::unlock`] decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Unlock {
    /// Other users remain; nothing to do.
    StillUsed,
    /// The last user is gone: unpin the range that starts here.
    Unpin(*mut c_void),
}

/// One device's pinned host ranges, keyed by start address.
#[derive(Default)]
pub struct PinnedRanges {
    ranges: Mutex<BTreeMap<usize, Range>>,
}

impl PinnedRanges {
    /// The range that contains `addr`, as (start, range).
    fn containing(ranges: &mut BTreeMap<usize, Range>, addr: usize) -> Option<(usize, &mut Range)> {
        let (&start, range) = ranges.range_mut(..=addr).next_back()?;
        (addr < start + range.size.max(1)).then_some((start, range))
    }

    /// Locks `size` bytes at `ptr`: inside a pinned range, counts one more user and returns the device
    /// address of `ptr`; otherwise pins it with `pin` (which returns the device address of `ptr`).
    pub fn lock(
        &self,
        ptr: *mut c_void,
        size: usize,
        pin: impl FnOnce() -> Result<*mut c_void>,
    ) -> Result<*mut c_void> {
        let addr = ptr as usize;
        let mut ranges = lock(&self.ranges);
        if let Some((start, range)) = Self::containing(&mut ranges, addr) {
            range.users += 1;
            return Ok((range.device_addr + (addr - start)) as *mut c_void);
        }
        let device_addr = pin()?;
        ranges.insert(
            addr,
            Range {
                size,
                device_addr: device_addr as usize,
                users: 1,
                allocated: false,
            },
        );
        Ok(device_addr)
    }

    /// Unlocks the range that contains `ptr`; says whether it must now be unpinned (and forgets it).
    pub fn unlock(&self, ptr: *mut c_void) -> Result<Unlock> {
        let addr = ptr as usize;
        let mut ranges = lock(&self.ranges);
        let (start, range) = Self::containing(&mut ranges, addr).ok_or_else(|| not_locked(addr))?;
        let floor = usize::from(range.allocated);
        if range.users <= floor {
            return Err(not_locked(addr));
        }
        range.users -= 1;
        if range.users > 0 {
            return Ok(Unlock::StillUsed);
        }
        ranges.remove(&start);
        Ok(Unlock::Unpin(start as *mut c_void))
    }

    /// Records pinned host memory that `data_alloc` returned.
    pub fn add_allocation(&self, ptr: *mut c_void, size: usize) {
        lock(&self.ranges).insert(
            ptr as usize,
            Range {
                size,
                device_addr: ptr as usize,
                users: 1,
                allocated: true,
            },
        );
    }

    /// Forgets pinned host memory before `data_delete` frees it; refused while it is still locked.
    pub fn remove_allocation(&self, ptr: *mut c_void) -> Result<()> {
        let mut ranges = lock(&self.ranges);
        match ranges.get(&(ptr as usize)) {
            Some(range) if range.allocated && range.users > 1 => Err(Error::InvalidArg(format!(
                "host memory {ptr:p} is still locked by data_lock; unlock it before freeing it"
            ))),
            Some(range) if range.allocated => {
                ranges.remove(&(ptr as usize));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Forgets every range; returns the starts of those that were pinned by `lock` (to unpin them).
    pub fn drain_locked(&self) -> Vec<*mut c_void> {
        std::mem::take(&mut *lock(&self.ranges))
            .into_iter()
            .filter(|(_, r)| !r.allocated)
            .map(|(start, _)| start as *mut c_void)
            .collect()
    }
}

fn not_locked(addr: usize) -> Error {
    Error::InvalidArg(format!(
        "host memory {addr:#x} is not locked (data_unlock without data_lock)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(addr: usize) -> *mut c_void {
        addr as *mut c_void
    }

    #[test]
    fn counts_users_and_unpins_once() {
        let ranges = PinnedRanges::default();
        let mut pins = 0;
        let dev = ranges
            .lock(p(0x1000), 0x100, || {
                pins += 1;
                Ok(p(0xd000))
            })
            .unwrap();
        assert_eq!(dev, p(0xd000));
        // Inside the range: the device address at the same offset, no second pin.
        let inner = ranges.lock(p(0x1010), 8, || panic!("pinned twice")).unwrap();
        assert_eq!(inner, p(0xd010));
        assert_eq!(pins, 1);
        assert_eq!(ranges.unlock(p(0x1010)).unwrap(), Unlock::StillUsed);
        assert_eq!(ranges.unlock(p(0x1000)).unwrap(), Unlock::Unpin(p(0x1000)));
        assert!(ranges.unlock(p(0x1000)).is_err(), "unlocked too often");
        assert!(ranges.unlock(p(0x5000)).is_err(), "never locked");
        // Past the end of a range is another range.
        ranges.lock(p(0x2000), 0x10, || Ok(p(0x2000))).unwrap();
        let mut pinned_again = false;
        ranges
            .lock(p(0x2010), 0x10, || {
                pinned_again = true;
                Ok(p(0x2010))
            })
            .unwrap();
        assert!(pinned_again);
        let mut left = ranges.drain_locked();
        left.sort();
        assert_eq!(left, vec![p(0x2000), p(0x2010)]);
    }

    #[test]
    fn allocated_pinned_memory_is_not_unpinned_by_unlock() {
        let ranges = PinnedRanges::default();
        ranges.add_allocation(p(0x8000), 64);
        assert_eq!(
            ranges.lock(p(0x8008), 8, || panic!("already pinned")).unwrap(),
            p(0x8008)
        );
        assert!(ranges.remove_allocation(p(0x8000)).is_err(), "still locked");
        assert_eq!(ranges.unlock(p(0x8008)).unwrap(), Unlock::StillUsed);
        assert!(
            ranges.unlock(p(0x8000)).is_err(),
            "the allocation's own count is not the user's"
        );
        ranges.remove_allocation(p(0x8000)).unwrap();
        assert!(ranges.drain_locked().is_empty());
    }
}
