//! What the GPU backends share and no CPU backend needs: opening a driver library and resolving its
//! entry points ([`library`]), driver handles released exactly once ([`owned`]), the per-device
//! caches of peer access ([`peers`]) and of host ranges a device pinned itself ([`pinned`]), and the
//! default number of RPC ports, and, for the tests, what a simulated driver records of its calls
//! (`sim_calls`) and device memory the host cannot touch (`sim_memory`). `cuda/` and `amdgpu/` keep
//! only their driver's calls.

pub mod library;
pub mod owned;
pub mod peers;
pub mod pinned;
#[cfg(test)]
pub(crate) mod sim_calls;
#[cfg(any(test, feature = "test-doubles"))]
#[cfg_attr(not(test), allow(dead_code))] // outside this crate's tests only the simulated warp's waits use it
pub mod sim_memory;

/// RPC ports when `OMPRPC_RPC_PORTS` does not say: eight per multiprocessor or compute unit (a warp or
/// wavefront waiting on a port in each of a quarter of its schedulers' slots), within 64 to 1024. The
/// warp benchmark (`docs/testing.md`) shows a call's cost flat up to 1024 ports and four times higher for a
/// single lane at 4096, because libc's server scans every port on every pass.
pub fn default_rpc_ports(multiprocessors: u32) -> u32 {
    multiprocessors.saturating_mul(8).clamp(64, 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn rpc_ports_follow_the_multiprocessors_within_bounds() {
        assert_eq!(super::default_rpc_ports(0), 64);
        assert_eq!(super::default_rpc_ports(20), 160);
        assert_eq!(super::default_rpc_ports(132), 1024);
        assert_eq!(super::default_rpc_ports(u32::MAX), 1024);
    }
}
