//! What the AMDGPU backend's suite harness (`rocr_harness.rs`: Debian's ROCr over the fake kernel
//! driver) knows of GPUs and runtime calls: the two GPU models it runs on, MI250s (gfx90a, wave64) and
//! RX 6900s (gfx1030, wave32), and which of the suite's operations each HSA entry point is part of.
//!
//! Where the AMDGPU backend differs from CUDA's by design, the harness says so and the suite checks
//! that instead: streams and events are the plugin's own (no runtime call makes or destroys one; the
//! HSA queues and signals they use are made and released with the device), interop has no context
//! (NULL) and names the device by its agent handle, and the GPU runs queued work on its own. A copy
//! between two GPUs goes peer to peer, as the suite checks for every backend.

use super::simulated::{CopyKind, SimAgent};
use crate::backend::suite::Op;

/// Which pool a `hsa_amd_memory_pool_allocate` or `_free` call was about, for tests that tell device
/// memory from host memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolUse {
    /// A GPU's pool.
    Device,
    /// The CPU's fine-grained pool.
    Host,
    /// The CPU's kernarg pool.
    Kernarg,
}

/// An MI250's GCD: gfx90a with SRAM ECC on and XNACK off (ROCm's defaults for it), 104 compute
/// units, 64-lane wavefronts.
pub(super) const MI250: SimAgent = SimAgent {
    name: "gfx90a:sramecc+:xnack-",
    compute_units: 104,
    wavefront_size: 64,
    generic_isa: None,
};

/// The runtime's entry points the backend calls while a program runs, each with the operation it is
/// part of. Pool calls are told apart by pool and copies by direction (see `RocrHarness::log`); the
/// first operation named for an entry point is the one a failure is armed on.
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

/// The operation a logged runtime `call` was part of, given the pool it allocated from or freed to
/// and the memory it copied between, where it did either (pool calls and copies make several
/// operations each).
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
