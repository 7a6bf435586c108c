//! The host ranges one device pinned itself. Another device of the process may have pinned a range
//! first (the driver then says it is registered already), and only the device that pinned a range may
//! unpin it, so each device keeps its own set, cleared when the device is released.

use std::sync::Mutex;

use crate::util::address_map::AddressSet;
use crate::util::sync::lock;

/// Start addresses of the ranges this device pinned.
#[derive(Default)]
pub struct PinnedByDevice {
    starts: Mutex<AddressSet>,
}

impl PinnedByDevice {
    /// Remembers that this device pinned the range that starts at `start`.
    pub fn insert(&self, start: usize) {
        lock(&self.starts).insert(start);
    }

    /// Whether this device pinned the range at `start`, forgetting it: true means the caller unpins it.
    pub fn take(&self, start: usize) -> bool {
        lock(&self.starts).remove(&start)
    }

    /// Forgets every range (the device was released, and its driver state with it).
    pub fn clear(&self) {
        lock(&self.starts).clear();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_range_is_unpinned_only_by_the_device_that_pinned_it() {
        let (first, second) = (super::PinnedByDevice::default(), super::PinnedByDevice::default());
        first.insert(0x1000);
        assert!(!second.take(0x1000));
        assert!(first.take(0x1000));
        assert!(!first.take(0x1000));
        first.insert(0x2000);
        first.clear();
        assert!(!first.take(0x2000));
    }
}
