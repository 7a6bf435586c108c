//! Hash maps keyed by addresses, on the launch and allocation paths. The default SipHash costs more
//! than the rest of a lookup; addresses need only a multiply to spread them.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative hasher for pointer-sized keys.
#[derive(Default, Clone, Copy)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64 ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        // Fold the well-mixed high half into the low bits, which pick the bucket.
        self.0 ^ (self.0 >> 29)
    }
}

/// A map from addresses to `V`.
pub type AddressMap<V> = HashMap<usize, V, BuildHasherDefault<AddressHasher>>;
/// A set of addresses.
pub type AddressSet = HashSet<usize, BuildHasherDefault<AddressHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_addresses_spread_over_buckets() {
        let mut low_bits = std::collections::HashSet::new();
        for i in 0..64usize {
            let mut h = AddressHasher::default();
            h.write_usize(0x7f00_0000_0000 + i * 64);
            low_bits.insert(h.finish() & 63);
        }
        assert!(low_bits.len() > 32, "only {} distinct buckets of 64", low_bits.len());
        let mut map = AddressMap::default();
        map.insert(16, "a");
        assert_eq!(map.get(&16), Some(&"a"));
    }
}
