//! The one place that turns a launch request (`NumTeams`, `ThreadLimit`, the loop trip count and
//! `DynCGroupMem` of `KernelArgsTy`) into teams, threads and dynamic shared memory, by the rules of
//! libomptarget 16's generic plugin interface (`GenericKernelTy::getNumThreads` / `getNumBlocks`,
//! `PluginInterface.cpp`), so that a kernel gets the geometry it would get from a stock plugin.

use crate::backend::{DeviceLimits, ExecMode, LaunchGeometry};

/// What one `__tgt_rtl_launch_kernel` asks for, decoded from `KernelArgsTy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchRequest {
    /// `NumTeams[0]`: teams asked for, 0 when unspecified.
    pub teams: u32,
    /// `ThreadLimit[0]`: threads per team asked for, 0 when unspecified.
    pub thread_limit: u32,
    /// Trip count of the distributed loop, 0 when unknown.
    pub tripcount: u64,
    /// `DynCGroupMem`: dynamic shared memory asked for, in bytes.
    pub dynamic_shared_bytes: u32,
    /// Bit 0 of `Flags`: `nowait`.
    pub nowait: bool,
}

/// The limits that apply to one kernel on one device, after the environment's caps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelLimits {
    /// Threads in lock step (the warp size), added to a generic kernel's thread limit for its main
    /// thread's warp.
    pub lane_size: u32,
    /// Most threads per team for this kernel (device limit, `OMP_TEAMS_THREAD_LIMIT`, and the kernel's
    /// own limit).
    pub max_threads: u32,
    /// Most teams (device limit and `OMP_NUM_TEAMS`).
    pub max_teams: u32,
    /// Threads per team when unspecified.
    pub default_threads: u32,
    /// Upper bound on teams derived from a trip count.
    pub default_teams: u32,
    /// `LIBOMPTARGET_SHARED_MEMORY_SIZE`.
    pub shared_memory_bytes: u32,
}

impl KernelLimits {
    /// The limits of a kernel whose own thread limit is `kernel_max_threads`, on a device with
    /// `device` limits, under the caps `max_teams` (`OMP_NUM_TEAMS`) and `max_team_threads`
    /// (`OMP_TEAMS_THREAD_LIMIT`), 0 meaning no cap.
    pub fn new(
        device: &DeviceLimits,
        kernel_max_threads: Option<u32>,
        max_teams: u32,
        max_team_threads: u32,
        shared_memory_bytes: u32,
    ) -> KernelLimits {
        let cap = |value: u32, cap: u32| if cap > 0 { value.min(cap) } else { value };
        let threads = cap(device.max_threads, max_team_threads);
        KernelLimits {
            lane_size: device.lane_size,
            max_threads: kernel_max_threads.map_or(threads, |k| threads.min(k)).max(1),
            max_teams: cap(device.max_teams, max_teams).max(1),
            default_threads: device.default_threads.max(1),
            default_teams: device.default_teams.max(1),
            shared_memory_bytes,
        }
    }
}

/// Computes the geometry of one launch.
///
/// Threads: the `thread_limit` clause (plus one warp for a generic kernel's main thread) or the default,
/// at most the kernel's maximum. Teams: the `num_teams` clause, else enough teams for the trip count (one
/// iteration per thread for SPMD kernels, one per team for generic ones) but no more than the default
/// team count, at most the device's maximum. Dynamic shared memory: the larger of the request and
/// `LIBOMPTARGET_SHARED_MEMORY_SIZE`.
///
/// One deliberate difference: libomptarget 16 truncates a trip-count team number above 2^32 - 1 to 32
/// bits (which can yield 0 teams); here it saturates.
pub fn geometry(mode: ExecMode, limits: &KernelLimits, request: &LaunchRequest) -> LaunchGeometry {
    let asked_threads = if request.thread_limit > 0 && mode == ExecMode::Generic {
        request.thread_limit.saturating_add(limits.lane_size)
    } else {
        request.thread_limit
    };
    let threads = if asked_threads > 0 {
        asked_threads
    } else {
        limits.default_threads
    }
    .min(limits.max_threads);

    let teams = if request.teams > 0 {
        request.teams.min(limits.max_teams)
    } else {
        let from_tripcount = match (request.tripcount, mode) {
            (0, _) => u64::MAX,
            (trip, ExecMode::Spmd) => (trip - 1) / u64::from(threads) + 1,
            (trip, ExecMode::Generic | ExecMode::GenericSpmd) => trip,
        };
        let preferred = u32::try_from(from_tripcount)
            .unwrap_or(u32::MAX)
            .min(limits.default_teams);
        preferred.min(limits.max_teams)
    };
    LaunchGeometry {
        teams,
        threads,
        dynamic_shared_bytes: request.dynamic_shared_bytes.max(limits.shared_memory_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An H100/H200-like CUDA device as the stock plugin sees it: NVPTX grid values with the device's
    /// own maxima (`MAX_GRID_DIM_X`, `MAX_BLOCK_DIM_X`).
    fn cuda_device() -> DeviceLimits {
        DeviceLimits {
            lane_size: 32,
            max_threads: 1024,
            max_teams: 2_147_483_647,
            default_threads: 128,
            default_teams: 3200,
            multiprocessors: 132,
            memory_bytes: 0,
            default_exec_mode: ExecMode::Spmd,
            max_kernel_args: 1024,
            rpc_ports: 4096,
            recycle_allocations: true,
            team_caps_apply: true,
            reads_host_memory: false,
        }
    }

    fn limits(device: &DeviceLimits) -> KernelLimits {
        KernelLimits::new(device, None, 0, 0, 0)
    }

    fn request(teams: u32, thread_limit: u32, tripcount: u64) -> LaunchRequest {
        LaunchRequest {
            teams,
            thread_limit,
            tripcount,
            ..Default::default()
        }
    }

    fn launch(mode: ExecMode, limits: &KernelLimits, r: LaunchRequest) -> (u32, u32) {
        let g = geometry(mode, limits, &r);
        (g.teams, g.threads)
    }

    #[test]
    fn spmd_kernels_follow_the_stock_rules() {
        let l = limits(&cuda_device());
        use ExecMode::Spmd;
        // Nothing given: default threads, default team count.
        assert_eq!(launch(Spmd, &l, request(0, 0, 0)), (3200, 128));
        // A trip count: one iteration per thread, rounded up, capped by the default team count.
        assert_eq!(launch(Spmd, &l, request(0, 0, 1000)), (8, 128));
        assert_eq!(launch(Spmd, &l, request(0, 0, 1024)), (8, 128));
        assert_eq!(launch(Spmd, &l, request(0, 0, 1025)), (9, 128));
        assert_eq!(launch(Spmd, &l, request(0, 0, 1)), (1, 128));
        assert_eq!(launch(Spmd, &l, request(0, 0, 10_000_000)), (3200, 128));
        // thread_limit given: used as is (no warp added in SPMD mode), capped by the maximum.
        assert_eq!(launch(Spmd, &l, request(0, 256, 1000)), (4, 256));
        assert_eq!(launch(Spmd, &l, request(0, 4096, 0)), (3200, 1024));
        // num_teams given: used as is, capped by the device's maximum, not by the default.
        assert_eq!(launch(Spmd, &l, request(5000, 0, 1)), (5000, 128));
        assert_eq!(launch(Spmd, &l, request(7, 64, 1_000_000)), (7, 64));
    }

    #[test]
    fn generic_kernels_add_a_warp_and_take_one_team_per_iteration() {
        let l = limits(&cuda_device());
        use ExecMode::{Generic, GenericSpmd};
        // No warp is added to the default; one is added to an explicit thread limit.
        assert_eq!(launch(Generic, &l, request(0, 0, 0)), (3200, 128));
        assert_eq!(launch(Generic, &l, request(0, 64, 0)), (3200, 96));
        assert_eq!(launch(Generic, &l, request(0, 1024, 0)), (3200, 1024), "capped");
        // The trip count is the team count (each team runs one distribute iteration).
        assert_eq!(launch(Generic, &l, request(0, 0, 100)), (100, 128));
        assert_eq!(launch(Generic, &l, request(0, 0, 5000)), (3200, 128));
        assert_eq!(launch(GenericSpmd, &l, request(0, 0, 100)), (100, 128));
        assert_eq!(launch(GenericSpmd, &l, request(0, 64, 100)), (100, 64), "no warp added");
        assert_eq!(launch(Generic, &l, request(12, 0, 100)), (12, 128));
    }

    #[test]
    fn kernel_and_environment_caps_apply() {
        let device = cuda_device();
        // A kernel whose registers allow only 256 threads.
        let l = KernelLimits::new(&device, Some(256), 0, 0, 0);
        assert_eq!(launch(ExecMode::Spmd, &l, request(0, 1024, 0)).1, 256);
        // OMP_TEAMS_THREAD_LIMIT and OMP_NUM_TEAMS.
        let l = KernelLimits::new(&device, None, 16, 64, 0);
        assert_eq!(launch(ExecMode::Spmd, &l, request(0, 1024, 0)), (16, 64));
        assert_eq!(launch(ExecMode::Spmd, &l, request(100, 0, 0)), (16, 64));
        // The host: everything is one team of one thread.
        let host = DeviceLimits {
            lane_size: 1,
            max_threads: 1,
            max_teams: 1,
            default_threads: 1,
            default_teams: 1,
            ..device
        };
        let l = limits(&host);
        assert_eq!(launch(ExecMode::Generic, &l, request(8, 64, 1000)), (1, 1));
    }

    #[test]
    fn huge_trip_counts_saturate_instead_of_wrapping() {
        let mut device = cuda_device();
        device.default_teams = u32::MAX;
        device.max_teams = u32::MAX;
        let l = limits(&device);
        // 2^32 iterations in generic mode: libomptarget 16 would truncate to 0 teams.
        assert_eq!(launch(ExecMode::Generic, &l, request(0, 0, 1 << 32)).0, u32::MAX);
        assert_eq!(launch(ExecMode::Generic, &l, request(0, 0, (1 << 32) + 5)).0, u32::MAX);
    }

    #[test]
    fn dynamic_shared_memory_is_the_larger_of_request_and_environment() {
        let device = cuda_device();
        let l = KernelLimits::new(&device, None, 0, 0, 1024);
        let mut r = request(1, 1, 0);
        assert_eq!(geometry(ExecMode::Spmd, &l, &r).dynamic_shared_bytes, 1024);
        r.dynamic_shared_bytes = 4096;
        assert_eq!(geometry(ExecMode::Spmd, &l, &r).dynamic_shared_bytes, 4096);
    }
}
