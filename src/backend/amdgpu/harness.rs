//! The backend test suite's harness for the AMDGPU backend over the simulated HSA runtime, with the
//! real code object `tests/data/amdgpu/cuda_module-<target>.hsaco` as its program: on MI250s (gfx90a,
//! wave64) and on RX 6900s (gfx1030, wave32).
//!
//! Where the AMDGPU backend differs from CUDA's by design, the harness says so and the suite checks
//! that instead: streams and events are the plugin's own (no driver call makes or destroys one; the
//! HSA queues and signals they use are made and released with the device), interop has no context
//! (NULL) and names the device by its agent handle, and the simulated GPU runs queued work on its own,
//! as a real one does. A copy between two GPUs goes peer to peer, as the suite checks for every backend.

use std::sync::{Arc, MutexGuard};

use super::simulated::{self, CopyKind, PoolUse, SimAgent};
use super::tests::{code_object, core_on, serial};
use crate::backend::suite::{Harness, KernelBody, Live, Op, SeenLaunch, TestProgram};
use crate::plugin::PluginApi;

/// An MI250's GCD: gfx90a with SRAM ECC on and XNACK off (ROCm's defaults for it), 104 compute
/// units, 64-lane wavefronts.
pub(super) const MI250: SimAgent = SimAgent {
    name: "gfx90a:sramecc+:xnack-",
    compute_units: 104,
    wavefront_size: 64,
    generic_isa: None,
};

/// The runtime's entry points the backend calls while a program runs, each with the operation it is
/// part of. Pool calls are told apart by pool and copies by direction (see [`AmdgpuHarness::log`]); the
/// first operation named for an entry point is the one `fail_next` uses it for.
const CALLS: [(&str, Op); 25] = [
    ("hsa_queue_create", Op::InitDevice),
    ("hsa_amd_signal_create", Op::InitDevice),
    ("hsa_queue_destroy", Op::ReleaseDevice),
    ("hsa_signal_destroy", Op::ReleaseDevice),
    ("hsa_code_object_reader_create_from_memory", Op::LoadModule),
    ("hsa_executable_create_alt", Op::LoadModule),
    ("hsa_executable_load_agent_code_object", Op::LoadModule),
    ("hsa_executable_freeze", Op::LoadModule),
    ("hsa_executable_validate", Op::LoadModule),
    ("hsa_executable_destroy", Op::UnloadModule),
    ("hsa_code_object_reader_destroy", Op::UnloadModule),
    ("hsa_executable_get_symbol_by_name", Op::FindKernel),
    ("hsa_executable_symbol_get_info", Op::FindKernel),
    ("hsa_executable_get_symbol_by_name", Op::FindGlobal),
    ("hsa_executable_symbol_get_info", Op::FindGlobal),
    ("hsa_amd_memory_pool_allocate", Op::AllocDevice),
    ("hsa_amd_memory_pool_free", Op::FreeDevice),
    ("hsa_amd_memory_pool_allocate", Op::AllocHost),
    ("hsa_amd_memory_pool_free", Op::FreeHost),
    // Opening host memory to the GPUs, part of each host allocation (the mailbox, staging).
    ("hsa_amd_agents_allow_access", Op::AllocHost),
    ("hsa_amd_memory_async_copy", Op::CopyToDevice),
    ("hsa_amd_memory_async_copy", Op::CopyToHost),
    // The host half of a staged copy to the host, run on the runtime's handler thread.
    ("hsa_amd_signal_async_handler", Op::CopyToHost),
    ("hsa_amd_memory_lock", Op::Pin),
    ("hsa_amd_memory_unlock", Op::Unpin),
];

/// A Radeon RX 6900's GPU: gfx1030, 40 compute units, 32-lane wavefronts (wave32).
pub(super) const RX6900: SimAgent = SimAgent {
    name: "gfx1030",
    compute_units: 40,
    wavefront_size: 32,
    generic_isa: None,
};

/// The GPU a harness simulates, and the code object built for it.
pub(crate) trait SimulatedGpu {
    /// The agent.
    const AGENT: SimAgent;
}

/// MI250s (wavefronts of 64).
pub(crate) struct Mi250;

impl SimulatedGpu for Mi250 {
    const AGENT: SimAgent = MI250;
}

/// RX 6900s (wavefronts of 32).
pub(crate) struct Rx6900;

impl SimulatedGpu for Rx6900 {
    const AGENT: SimAgent = RX6900;
}

/// The AMDGPU backend on simulated GPUs of one kind; it holds the simulated runtime (one test at a
/// time).
pub(crate) struct AmdgpuHarness<G: SimulatedGpu = Mi250> {
    core: Box<dyn PluginApi>,
    _serial: MutexGuard<'static, ()>,
    _gpu: std::marker::PhantomData<G>,
}

/// The operation a logged runtime `call` was part of, given the pool it allocated from or freed to
/// and the memory it copied between, where it did either (pool calls and copies make several
/// operations each). Shared by the harnesses over the simulated and the real runtime.
pub(super) fn op_of_call(call: &str, pool: Option<PoolUse>, copy: Option<CopyKind>) -> Op {
    match call {
        "hsa_amd_memory_pool_allocate" | "hsa_amd_memory_pool_free" => {
            let allocate = call.ends_with("allocate");
            match pool {
                Some(PoolUse::Device) if allocate => Op::AllocDevice,
                Some(PoolUse::Device) => Op::FreeDevice,
                Some(PoolUse::Host) if allocate => Op::AllocHost,
                Some(PoolUse::Host) => Op::FreeHost,
                // Kernel arguments, and calls refused before a pool was named.
                _ => Op::Other,
            }
        }
        "hsa_amd_memory_async_copy" => match copy {
            Some(CopyKind::HostToDevice) => Op::CopyToDevice,
            Some(CopyKind::DeviceToHost) => Op::CopyToHost,
            Some(CopyKind::DeviceToDevice) => Op::CopyDeviceToDevice,
            Some(CopyKind::PeerToPeer) => Op::CopyPeer,
            _ => Op::Other,
        },
        // Parts of an allocation or a copy that the calls above already count.
        "hsa_amd_signal_async_handler" | "hsa_amd_agents_allow_access" => Op::Other,
        _ => CALLS.iter().find(|(c, _)| *c == call).map_or(Op::Other, |&(_, op)| op),
    }
}

/// The runtime's entry points that make up `op` (see [`CALLS`]).
pub(super) fn driver_calls_of(op: Op) -> Vec<&'static str> {
    let mut calls: Vec<&'static str> = CALLS.iter().filter(|(_, o)| *o == op).map(|&(c, _)| c).collect();
    if op == Op::CopyDeviceToDevice {
        calls.push("hsa_amd_memory_async_copy");
    }
    calls
}

/// What the error of a failed `call` says: its name and the status the harnesses make it return.
pub(super) fn failure_text_of(call: &str) -> Vec<String> {
    vec![call.to_string(), "HSA_STATUS_ERROR (0x1000)".into()]
}

impl<G: SimulatedGpu> Harness for AmdgpuHarness<G> {
    fn start(devices: usize, settings: &[(&str, &str)]) -> Self {
        let serial = serial();
        AmdgpuHarness {
            core: core_on(&vec![G::AGENT; devices], settings),
            _serial: serial,
            _gpu: std::marker::PhantomData,
        }
    }

    fn core(&self) -> &dyn PluginApi {
        &*self.core
    }

    fn program(&self) -> TestProgram {
        // Each kernel's argument segment holds one pointer; the backend refuses more.
        TestProgram::of_cuda_module(code_object(G::AGENT.processor()), 1)
    }

    fn default_geometry(&self) -> (u32, u32) {
        // LLVM 16's defaults for AMDGPU: 256 work-items, compute units × TEAMS_PER_CU (4) work-groups.
        (256, G::AGENT.compute_units * 4)
    }

    fn device_memory(&self) -> u64 {
        64 << 30 // the simulated GPU's coarse-grained pool
    }

    fn native_device_id(&self, device: usize) -> usize {
        simulated::agents()[device + 1].handle as usize // the CPU agent comes first
    }

    fn pinned_device_address(&self, _device: usize, host: usize) -> usize {
        host // the simulated runtime's hsa_amd_memory_lock gives the host address back
    }

    fn log(&self) -> Vec<Op> {
        let world = simulated::world();
        let world = world.as_ref().unwrap();
        world
            .record
            .log
            .iter()
            .enumerate()
            .map(|(i, call)| {
                op_of_call(
                    call,
                    world.pool_calls.get(&i).copied(),
                    world.copy_calls.get(&i).copied(),
                )
            })
            .collect()
    }

    fn calls(&self, op: Op) -> usize {
        // Pool calls and copies make several operations each: count them by what they were about.
        self.log().into_iter().filter(|o| *o == op).count()
    }

    fn driver_call_count(&self, call: &str) -> usize {
        simulated::calls(call)
    }

    fn driver_calls(op: Op) -> Vec<&'static str> {
        driver_calls_of(op)
    }

    fn fail_call(&self, call: &'static str) {
        simulated::fail_next(call, super::sys::HSA_STATUS_ERROR);
    }

    fn failure_text(call: &str) -> Vec<String> {
        failure_text_of(call)
    }

    fn live(&self) -> Live {
        let live = simulated::live();
        Live {
            memory: live.memory + live.locked,
            modules: live.executables + live.readers,
            // HSA queues and signals are the device's: while any is left, the device is not released.
            queues: 0,
            events: 0,
            devices: usize::from(live.queues + live.signals > 0),
        }
    }

    fn pinned(&self) -> usize {
        simulated::live().locked
    }

    fn launches(&self) -> Vec<SeenLaunch> {
        simulated::launches()
            .into_iter()
            .map(|l| SeenLaunch {
                kernel: l.kernel,
                geometry: (
                    l.grid_size_x / l.workgroup_size_x.max(1),
                    l.workgroup_size_x,
                    l.group_segment_size - l.static_group_segment_size,
                ),
                queue: l.queue as usize,
            })
            .collect()
    }

    fn register_kernel(&self, name: &str, _args: usize, body: KernelBody) {
        simulated::register_kernel(
            name,
            Arc::new(move |args: &[u64]| {
                body(args);
                Ok(())
            }),
        );
    }

    fn clear_kernels(&self) {
        simulated::clear_kernels();
    }

    fn limit_memory(&self, extra: usize) {
        simulated::set_capacity(Some(simulated::device_reserved() + extra));
    }

    fn within_memory_limit(&self) -> bool {
        let capacity = simulated::world().as_ref().unwrap().capacity;
        simulated::device_reserved() <= capacity.unwrap_or(usize::MAX)
    }

    fn memory_blocks(&self) -> Vec<(usize, usize)> {
        simulated::blocks()
    }

    fn violations(&self) -> Vec<String> {
        simulated::misuse()
    }

    fn module_global(&self, name: &str) -> Option<(usize, usize)> {
        simulated::variable(name)
    }

    fn device_can_ring() -> bool {
        true
    }

    fn ring_from_device(doorbell: u64) {
        simulated::device_signal_store(doorbell, 1);
    }

    fn streams_are_driver_objects() -> bool {
        false
    }

    fn interop_has_context() -> bool {
        false
    }

    fn runs_work_on_its_own() -> bool {
        true
    }

    fn hold(&self, on: bool) {
        simulated::hold(on);
    }

    fn lane_size(&self) -> u32 {
        G::AGENT.wavefront_size
    }

    fn device_owns_host_buffers() -> bool {
        true // staging and kernel-argument buffers, freed when the device is released
    }

    fn is_host_block(&self, addr: usize) -> bool {
        simulated::block_pool(addr) == Some(PoolUse::Host)
    }

    fn queues_fail_by_device_faults() -> bool {
        true
    }

    fn fail_kernel(&self, name: &str) -> String {
        simulated::register_kernel(name, Arc::new(|_: &[u64]| Err(super::sys::HSA_STATUS_ERROR_EXCEPTION)));
        "HSA_STATUS_ERROR_EXCEPTION (0x1016)".into()
    }

    fn fail_kernel_after(&self, name: &str, _args: usize, body: KernelBody) -> String {
        simulated::register_kernel(
            name,
            Arc::new(move |args: &[u64]| {
                body(args);
                Err(super::sys::HSA_STATUS_ERROR_EXCEPTION)
            }),
        );
        "HSA_STATUS_ERROR_EXCEPTION (0x1016)".into()
    }
}

impl<G: SimulatedGpu> Drop for AmdgpuHarness<G> {
    /// Kernel bodies hold what their tests captured; they go with the test, even one that failed, and
    /// held work is let go so that nothing waits for ever.
    fn drop(&mut self) {
        simulated::hold(false);
        simulated::clear_kernels();
    }
}
