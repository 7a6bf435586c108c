//! The HSA runtime as the plugin sees it: the types, structures and constants it uses, and one typed
//! function pointer per runtime entry point, resolved at run time from `libhsa-runtime64.so`.
//! Nothing here checks results; callers do.
//!
//! Hand-written from the C ABI of ROCm 5.2.3's `hsa.h` and `hsa_ext_amd.h` (Debian 12's
//! `libhsa-runtime-dev`), the runtime LLVM 16's AMDGPU plugin is built against. Enumerations are C
//! enums whose values are all non-negative, so they are passed as `u32`; every structure below has a
//! layout test against the header's offsets. Entry points carry their plain names: `libhsa-runtime64`
//! exports every one of them (versioned `ROCR_1`, which `dlsym` finds as the default version).

use std::ffi::{c_char, c_int, c_void};

use crate::backend::gpu::library::entry_points;

/// `hsa_status_t`: what every entry point returns. A C enum with only non-negative values, so
/// `unsigned int` in the ABI.
pub type HsaStatus = u32;
/// `hsa_signal_value_t`: a signal's value (64-bit on the large machine model every ROCm GPU uses).
pub type HsaSignalValue = i64;

/// Declares the status codes as constants and `status_name`, from one list, so the two never drift.
macro_rules! statuses {
    ($($(#[$doc:meta])* $name:ident = $value:expr,)*) => {
        $($(#[$doc])* pub const $name: HsaStatus = $value;)*

        /// The C name of a status code ("HSA_STATUS_ERROR_OUT_OF_RESOURCES"), for messages that show
        /// both the name and the number; `None` for codes neither header defines. Works without the
        /// runtime, which matters when the runtime is what failed.
        pub fn status_name(code: HsaStatus) -> Option<&'static str> {
            match code {
                $($name => Some(stringify!($name)),)*
                _ => None,
            }
        }
    };
}

statuses! {
    /// The call succeeded.
    HSA_STATUS_SUCCESS = 0x0,
    /// An iteration callback asked to stop early; not an error.
    HSA_STATUS_INFO_BREAK = 0x1,
    /// A generic error.
    HSA_STATUS_ERROR = 0x1000,
    /// An argument is invalid.
    HSA_STATUS_ERROR_INVALID_ARGUMENT = 0x1001,
    /// The queue could not be created as asked.
    HSA_STATUS_ERROR_INVALID_QUEUE_CREATION = 0x1002,
    /// The allocation is invalid.
    HSA_STATUS_ERROR_INVALID_ALLOCATION = 0x1003,
    /// The agent is invalid.
    HSA_STATUS_ERROR_INVALID_AGENT = 0x1004,
    /// The memory region is invalid.
    HSA_STATUS_ERROR_INVALID_REGION = 0x1005,
    /// The signal is invalid.
    HSA_STATUS_ERROR_INVALID_SIGNAL = 0x1006,
    /// The queue is invalid.
    HSA_STATUS_ERROR_INVALID_QUEUE = 0x1007,
    /// The runtime could not allocate what it needed (also what `hsa_init` says without a GPU driver).
    HSA_STATUS_ERROR_OUT_OF_RESOURCES = 0x1008,
    /// An AQL packet is malformed.
    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT = 0x1009,
    /// A resource was freed while still in use.
    HSA_STATUS_ERROR_RESOURCE_FREE = 0x100A,
    /// The runtime has not been initialised (`hsa_init`).
    HSA_STATUS_ERROR_NOT_INITIALIZED = 0x100B,
    /// The runtime's reference count would overflow.
    HSA_STATUS_ERROR_REFCOUNT_OVERFLOW = 0x100C,
    /// Arguments are incompatible with each other.
    HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS = 0x100D,
    /// An index is invalid.
    HSA_STATUS_ERROR_INVALID_INDEX = 0x100E,
    /// The instruction set architecture is invalid.
    HSA_STATUS_ERROR_INVALID_ISA = 0x100F,
    /// The code object is invalid.
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT = 0x1010,
    /// The executable is invalid.
    HSA_STATUS_ERROR_INVALID_EXECUTABLE = 0x1011,
    /// The executable is frozen: nothing more can be loaded into it.
    HSA_STATUS_ERROR_FROZEN_EXECUTABLE = 0x1012,
    /// No symbol has the given name.
    HSA_STATUS_ERROR_INVALID_SYMBOL_NAME = 0x1013,
    /// A variable is already defined.
    HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED = 0x1014,
    /// A variable is undefined.
    HSA_STATUS_ERROR_VARIABLE_UNDEFINED = 0x1015,
    /// An HSAIL operation raised an exception.
    HSA_STATUS_ERROR_EXCEPTION = 0x1016,
    /// The ISA name is invalid.
    HSA_STATUS_ERROR_INVALID_ISA_NAME = 0x1017,
    /// The code symbol is invalid.
    HSA_STATUS_ERROR_INVALID_CODE_SYMBOL = 0x1018,
    /// The executable symbol is invalid.
    HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL = 0x1019,
    /// The file descriptor is invalid.
    HSA_STATUS_ERROR_INVALID_FILE = 0x1020,
    /// The code object reader is invalid.
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER = 0x1021,
    /// The cache is invalid.
    HSA_STATUS_ERROR_INVALID_CACHE = 0x1022,
    /// The wavefront is invalid.
    HSA_STATUS_ERROR_INVALID_WAVEFRONT = 0x1023,
    /// The signal group is invalid.
    HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP = 0x1024,
    /// The runtime is in a state that does not allow the call.
    HSA_STATUS_ERROR_INVALID_RUNTIME_STATE = 0x1025,
    /// The runtime hit an error it cannot recover from.
    HSA_STATUS_ERROR_FATAL = 0x1026,
    /// `hsa_ext_amd.h`: the memory pool is invalid. (The AMD additions really are small decimals.)
    HSA_STATUS_ERROR_INVALID_MEMORY_POOL = 40,
    /// `hsa_ext_amd.h`: a kernel accessed memory beyond the largest legal address.
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION = 41,
    /// `hsa_ext_amd.h`: a kernel executed an invalid instruction.
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION = 42,
    /// `hsa_ext_amd.h`: a kernel accessed an inaccessible address (a memory fault).
    HSA_STATUS_ERROR_MEMORY_FAULT = 43,
    /// `hsa_ext_amd.h`: a CU mask was set but asked for CUs disabled for the process.
    HSA_STATUS_CU_MASK_REDUCED = 44,
}

/// Declares `{ handle: u64 }` handle types: the runtime's opaque objects are passed by value as one
/// 64-bit word.
macro_rules! handles {
    ($($(#[$doc:meta])* $name:ident;)*) => {
        $(
            $(#[$doc])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
            pub struct $name {
                /// The runtime's opaque value; 0 is never a live object (an absent signal, say).
                pub handle: u64,
            }
        )*
    };
}

handles! {
    /// `hsa_agent_t`: a CPU or GPU the runtime exposes.
    HsaAgent;
    /// `hsa_signal_t`: a 64-bit value shared by host and device, used for completion and doorbells.
    HsaSignal;
    /// `hsa_region_t`: a memory region (the core API's predecessor of memory pools).
    HsaRegion;
    /// `hsa_amd_memory_pool_t`: a memory pool of an agent, what device and host memory come from.
    HsaMemoryPool;
    /// `hsa_executable_t`: loaded code objects and their symbols.
    HsaExecutable;
    /// `hsa_executable_symbol_t`: a kernel or variable of an executable.
    HsaExecutableSymbol;
    /// `hsa_code_object_t`: a deserialised code object (the deprecated loader path LLVM 16 uses).
    HsaCodeObject;
    /// `hsa_code_object_reader_t`: a code object read from memory (the current loader path).
    HsaCodeObjectReader;
    /// `hsa_loaded_code_object_t`: a code object loaded into an executable for one agent.
    HsaLoadedCodeObject;
    /// `hsa_isa_t`: an instruction set architecture an agent supports.
    HsaIsa;
}

/// `hsa_dim3_t`: the value of `HSA_AGENT_INFO_GRID_MAX_DIM`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HsaDim3 {
    /// Extent in x.
    pub x: u32,
    /// Extent in y.
    pub y: u32,
    /// Extent in z.
    pub z: u32,
}

/// `hsa_queue_t`: a user-mode AQL queue as `hsa_queue_create` returns it. The runtime owns it; the
/// plugin reads `base_address`, `size` and `doorbell_signal` to write packets and ring the doorbell.
#[repr(C)]
#[derive(Debug)]
pub struct HsaQueue {
    /// C's `type` (`hsa_queue_type32_t`): one of [`queue_type`].
    pub queue_type: u32,
    /// `hsa_queue_feature_t` bits: 1 kernel dispatch, 2 agent dispatch.
    pub features: u32,
    /// The ring of `size` 64-byte packets.
    pub base_address: *mut c_void,
    /// Written with the packet id after a packet is published, to wake the packet processor.
    pub doorbell_signal: HsaSignal,
    /// Packets in the ring (a power of two).
    pub size: u32,
    /// Reserved.
    pub reserved1: u32,
    /// The queue's id, unique in the process.
    pub id: u64,
}

/// `hsa_kernel_dispatch_packet_t`: an AQL packet that launches a kernel (64 bytes). The header is
/// written last, together with `setup`, as one 32-bit release store, which publishes the packet.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KernelDispatchPacket {
    /// Packet type, barrier bit and fence scopes (see [`packet_header`]).
    pub header: u16,
    /// Dimensions used, in bits 0..2 (see [`KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS`]).
    pub setup: u16,
    /// Work-group size in x, in work-items.
    pub workgroup_size_x: u16,
    /// Work-group size in y.
    pub workgroup_size_y: u16,
    /// Work-group size in z.
    pub workgroup_size_z: u16,
    /// Reserved; 0.
    pub reserved0: u16,
    /// Grid size in x, in work-items (not work-groups).
    pub grid_size_x: u32,
    /// Grid size in y.
    pub grid_size_y: u32,
    /// Grid size in z.
    pub grid_size_z: u32,
    /// Private (scratch) bytes per work-item.
    pub private_segment_size: u32,
    /// Group (LDS) bytes per work-group, static plus dynamic.
    pub group_segment_size: u32,
    /// The kernel descriptor's address (`HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT`).
    pub kernel_object: u64,
    /// The kernel arguments, in memory the agent can read (a kernarg pool).
    pub kernarg_address: *mut c_void,
    /// Reserved; 0.
    pub reserved2: u64,
    /// Decremented when the kernel completes; handle 0 for none.
    pub completion_signal: HsaSignal,
}

/// `hsa_barrier_and_packet_t`: an AQL packet that waits until all of its dependency signals are 0
/// (64 bytes); how one queue operation waits on another.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BarrierAndPacket {
    /// Packet type, barrier bit and fence scopes (see [`packet_header`]).
    pub header: u16,
    /// Reserved; 0.
    pub reserved0: u16,
    /// Reserved; 0.
    pub reserved1: u32,
    /// Up to five signals to wait for; handle 0 for an unused slot.
    pub dep_signal: [HsaSignal; 5],
    /// Reserved; 0.
    pub reserved2: u64,
    /// Decremented when the barrier completes; handle 0 for none.
    pub completion_signal: HsaSignal,
}

/// `hsa_amd_pointer_info_t`: what `hsa_amd_pointer_info` knows about an address. The caller sets
/// `size` to `size_of::<PointerInfo>()` before the call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PointerInfo {
    /// Bytes of this structure the caller provides.
    pub size: u32,
    /// One of [`pointer_type`].
    pub pointer_type: u32,
    /// The range's start as agents see it.
    pub agent_base_address: *mut c_void,
    /// The range's start as the host sees it.
    pub host_base_address: *mut c_void,
    /// The range's length.
    pub size_in_bytes: usize,
    /// Whatever `hsa_amd_pointer_info_set_userdata` attached.
    pub user_data: *mut c_void,
    /// The agent that owns the range.
    pub agent_owner: HsaAgent,
    /// The owning pool's `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS`.
    pub global_flags: u32,
}

/// `hsa_amd_gpu_memory_fault_info_t`: the payload of a GPU memory fault event.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GpuMemoryFaultInfo {
    /// The agent that faulted.
    pub agent: HsaAgent,
    /// The faulting address.
    pub virtual_address: u64,
    /// [`memory_fault_reason`] bits.
    pub fault_reason_mask: u32,
}

/// `hsa_amd_event_t`: what a system event handler receives. In ROCm 5.2.3 the C union has one member,
/// the memory fault, so a structure has the same layout.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AmdEvent {
    /// One of [`event_type`].
    pub event_type: u32,
    /// Valid when `event_type` is [`event_type::GPU_MEMORY_FAULT`].
    pub memory_fault: GpuMemoryFaultInfo,
}

/// `hsa_iterate_agents`' callback: `HSA_STATUS_SUCCESS` continues, anything else stops and is returned.
pub type AgentCallback = unsafe extern "C" fn(agent: HsaAgent, data: *mut c_void) -> HsaStatus;
/// `hsa_agent_iterate_isas`' callback, with the same stop rule.
pub type IsaCallback = unsafe extern "C" fn(isa: HsaIsa, data: *mut c_void) -> HsaStatus;
/// `hsa_amd_agent_iterate_memory_pools`' callback, with the same stop rule.
pub type MemoryPoolCallback = unsafe extern "C" fn(pool: HsaMemoryPool, data: *mut c_void) -> HsaStatus;
/// `hsa_executable_iterate_symbols`' callback, with the same stop rule.
pub type ExecutableSymbolCallback =
    unsafe extern "C" fn(executable: HsaExecutable, symbol: HsaExecutableSymbol, data: *mut c_void) -> HsaStatus;
/// `hsa_queue_create`'s error callback: the runtime calls it on its own thread when a queue fails
/// (a kernel abort, say); a queue in error is unusable.
pub type QueueErrorCallback = unsafe extern "C" fn(status: HsaStatus, queue: *mut HsaQueue, data: *mut c_void);
/// `hsa_amd_signal_handler`: runs on the runtime's handler thread once the signal meets the
/// condition; returning `true` keeps it armed for the next time.
pub type SignalHandler = unsafe extern "C" fn(value: HsaSignalValue, arg: *mut c_void) -> bool;
/// `hsa_amd_system_event_callback_t`: receives system events such as GPU memory faults.
pub type SystemEventCallback = unsafe extern "C" fn(event: *const AmdEvent, data: *mut c_void) -> HsaStatus;
/// The allocator `hsa_amd_pointer_info` uses for the list of accessible agents.
pub type PointerInfoAlloc = unsafe extern "C" fn(bytes: usize) -> *mut c_void;

/// `hsa_agent_info_t` and `hsa_amd_agent_info_t`: what `hsa_agent_get_info` can be asked.
pub mod agent_info {
    /// `char[64]`, NUL-padded: the agent's name, for a GPU its target ("gfx90a").
    pub const NAME: u32 = 0;
    /// `char[64]`: the vendor's name.
    pub const VENDOR_NAME: u32 = 1;
    /// `hsa_agent_feature_t` bits (see [`super::agent_feature`]).
    pub const FEATURE: u32 = 2;
    /// `hsa_machine_model_t`.
    pub const MACHINE_MODEL: u32 = 3;
    /// `hsa_profile_t` (see [`super::profile`]).
    pub const PROFILE: u32 = 4;
    /// `hsa_default_float_rounding_mode_t`.
    pub const DEFAULT_FLOAT_ROUNDING_MODE: u32 = 5;
    /// `u32`: work-items in a wavefront (32 or 64).
    pub const WAVEFRONT_SIZE: u32 = 6;
    /// `u16[3]`: the largest work-group extent per dimension.
    pub const WORKGROUP_MAX_DIM: u32 = 7;
    /// `u32`: the most work-items in a work-group.
    pub const WORKGROUP_MAX_SIZE: u32 = 8;
    /// [`super::HsaDim3`]: the largest grid extent per dimension.
    pub const GRID_MAX_DIM: u32 = 9;
    /// `u32`: the most work-items in a grid.
    pub const GRID_MAX_SIZE: u32 = 10;
    /// `u32`: the most fbarriers per work-group.
    pub const FBARRIER_MAX_SIZE: u32 = 11;
    /// `u32`: the most queues the agent supports at once.
    pub const QUEUES_MAX: u32 = 12;
    /// `u32`: the fewest packets a queue may hold.
    pub const QUEUE_MIN_SIZE: u32 = 13;
    /// `u32`: the most packets a queue may hold.
    pub const QUEUE_MAX_SIZE: u32 = 14;
    /// `hsa_queue_type32_t`: the queue types the agent supports.
    pub const QUEUE_TYPE: u32 = 15;
    /// `u32`: the agent's NUMA node.
    pub const NODE: u32 = 16;
    /// `hsa_device_type_t` (see [`super::device_type`]).
    pub const DEVICE: u32 = 17;
    /// `u32[4]`: data cache sizes, L1 to L4.
    pub const CACHE_SIZE: u32 = 18;
    /// [`super::HsaIsa`]: the agent's (first) ISA.
    pub const ISA: u32 = 19;
    /// `u8[128]`: a bit mask of supported extensions.
    pub const EXTENSIONS: u32 = 20;
    /// `u16`: the HSA major version the agent supports.
    pub const VERSION_MAJOR: u32 = 21;
    /// `u16`: the HSA minor version the agent supports.
    pub const VERSION_MINOR: u32 = 22;
    /// `hsa_default_float_rounding_mode_t` mask for the base profile.
    pub const BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES: u32 = 23;
    /// `bool`: fast half-precision operations.
    pub const FAST_F16_OPERATION: u32 = 24;
    /// AMD, `u32`: the chip id.
    pub const CHIP_ID: u32 = 0xA000;
    /// AMD, `u32`: bytes in a cache line.
    pub const CACHELINE_SIZE: u32 = 0xA001;
    /// AMD, `u32`: compute units available; default teams are a multiple of it.
    pub const COMPUTE_UNIT_COUNT: u32 = 0xA002;
    /// AMD, `u32`: the highest clock, in MHz.
    pub const MAX_CLOCK_FREQUENCY: u32 = 0xA003;
    /// AMD, `u32`: the kernel driver's node id.
    pub const DRIVER_NODE_ID: u32 = 0xA004;
    /// AMD, `u32`: the most address watch points.
    pub const MAX_ADDRESS_WATCH_POINTS: u32 = 0xA005;
    /// AMD, `u32`: the PCI bus/device/function id.
    pub const BDFID: u32 = 0xA006;
    /// AMD, `u32`: the highest memory clock, in MHz.
    pub const MEMORY_MAX_FREQUENCY: u32 = 0xA008;
    /// AMD, `char[64]`: the marketing name ("AMD Instinct MI210").
    pub const PRODUCT_NAME: u32 = 0xA009;
    /// AMD, `u32`: the most wavefronts per compute unit.
    pub const MAX_WAVES_PER_CU: u32 = 0xA00A;
    /// AMD, `u32`: SIMDs per compute unit.
    pub const NUM_SIMDS_PER_CU: u32 = 0xA00B;
    /// AMD, `u32`: shader engines.
    pub const NUM_SHADER_ENGINES: u32 = 0xA00C;
    /// AMD, `u32`: shader arrays per shader engine.
    pub const NUM_SHADER_ARRAYS_PER_SE: u32 = 0xA00D;
    /// AMD, `u32`: the PCIe domain (pairs with [`BDFID`]).
    pub const DOMAIN: u32 = 0xA00F;
    /// AMD, `bool`: cooperative queues are supported.
    pub const COOPERATIVE_QUEUES: u32 = 0xA010;
    /// AMD, `char[21]`: "GPU-" and a 16-digit hex UUID, or "GPU-XX" without one.
    pub const UUID: u32 = 0xA011;
    /// AMD, `u32`: the ASIC revision.
    pub const ASIC_REVISION: u32 = 0xA012;
}

/// `hsa_agent_feature_t`: bits of `agent_info::FEATURE`.
pub mod agent_feature {
    /// The agent runs kernel dispatch packets: a GPU.
    pub const KERNEL_DISPATCH: u32 = 1;
    /// The agent runs agent dispatch packets.
    pub const AGENT_DISPATCH: u32 = 2;
}

/// `hsa_device_type_t`: the value of `agent_info::DEVICE`.
pub mod device_type {
    /// A CPU agent: owns the host's memory pools.
    pub const CPU: u32 = 0;
    /// A GPU agent: a device the plugin offers.
    pub const GPU: u32 = 1;
    /// A DSP agent.
    pub const DSP: u32 = 2;
}

/// `hsa_system_info_t`: what `hsa_system_get_info` can be asked.
pub mod system_info {
    /// `u16`: the HSA major version the runtime implements.
    pub const VERSION_MAJOR: u32 = 0;
    /// `u16`: the HSA minor version.
    pub const VERSION_MINOR: u32 = 1;
    /// `u64`: the current system timestamp.
    pub const TIMESTAMP: u32 = 2;
    /// `u64`: system timestamp ticks per second.
    pub const TIMESTAMP_FREQUENCY: u32 = 3;
    /// `u64`: the longest a signal wait may take, in timestamp ticks.
    pub const SIGNAL_MAX_WAIT: u32 = 4;
    /// `hsa_endianness_t`.
    pub const ENDIANNESS: u32 = 5;
    /// `hsa_machine_model_t`.
    pub const MACHINE_MODEL: u32 = 6;
    /// `u8[128]`: a bit mask of supported extensions.
    pub const EXTENSIONS: u32 = 7;
    /// AMD, `const char*`: the runtime's build version.
    pub const AMD_BUILD_VERSION: u32 = 0x200;
    /// AMD, `bool`: shared virtual memory is supported.
    pub const AMD_SVM_SUPPORTED: u32 = 0x201;
    /// AMD, `bool`: all agents can access shared virtual memory by default.
    pub const AMD_SVM_ACCESSIBLE_BY_DEFAULT: u32 = 0x202;
}

/// `hsa_amd_memory_pool_info_t`: what `hsa_amd_memory_pool_get_info` can be asked.
pub mod pool_info {
    /// `hsa_amd_segment_t` (see [`super::segment`]).
    pub const SEGMENT: u32 = 0;
    /// `u32` [`super::pool_global_flag`] bits; global-segment pools only.
    pub const GLOBAL_FLAGS: u32 = 1;
    /// `usize`: the pool's size in bytes.
    pub const SIZE: u32 = 2;
    /// `bool`: `hsa_amd_memory_pool_allocate` works on this pool.
    pub const RUNTIME_ALLOC_ALLOWED: u32 = 5;
    /// `usize`: allocations are rounded up to this many bytes.
    pub const RUNTIME_ALLOC_GRANULE: u32 = 6;
    /// `usize`: allocations are aligned to this many bytes.
    pub const RUNTIME_ALLOC_ALIGNMENT: u32 = 7;
    /// `bool`: every agent can access the pool by default.
    pub const ACCESSIBLE_BY_ALL: u32 = 15;
    /// `usize`: the largest single allocation.
    pub const ALLOC_MAX_SIZE: u32 = 16;
}

/// `hsa_amd_memory_pool_global_flag_t`: bits of `pool_info::GLOBAL_FLAGS`.
pub mod pool_global_flag {
    /// Kernel arguments can live here.
    pub const KERNARG_INIT: u32 = 1;
    /// Coherent between host and device while a kernel runs.
    pub const FINE_GRAINED: u32 = 2;
    /// Coherent only at dispatch boundaries: a GPU's own memory.
    pub const COARSE_GRAINED: u32 = 4;
}

/// `hsa_amd_segment_t`: the value of `pool_info::SEGMENT`.
pub mod segment {
    /// Global memory; the only segment the plugin allocates from.
    pub const GLOBAL: u32 = 0;
    /// Read-only memory.
    pub const READONLY: u32 = 1;
    /// Private (scratch) memory.
    pub const PRIVATE: u32 = 2;
    /// Group (LDS) memory.
    pub const GROUP: u32 = 3;
}

/// `hsa_amd_agent_memory_pool_info_t`: what `hsa_amd_agent_memory_pool_get_info` can be asked about
/// an agent and a pool.
pub mod agent_pool_info {
    /// `hsa_amd_memory_pool_access_t` (see [`super::pool_access`]).
    pub const ACCESS: u32 = 0;
    /// `u32`: link hops between the agent and the pool.
    pub const NUM_LINK_HOPS: u32 = 1;
    /// `hsa_amd_memory_pool_link_info_t[NUM_LINK_HOPS]`.
    pub const LINK_INFO: u32 = 2;
}

/// `hsa_amd_memory_pool_access_t`: the value of `agent_pool_info::ACCESS`.
pub mod pool_access {
    /// The agent can never access the pool.
    pub const NEVER_ALLOWED: u32 = 0;
    /// The agent can access the pool's allocations without `hsa_amd_agents_allow_access`.
    pub const ALLOWED_BY_DEFAULT: u32 = 1;
    /// The agent needs `hsa_amd_agents_allow_access` for each allocation.
    pub const DISALLOWED_BY_DEFAULT: u32 = 2;
}

/// `hsa_executable_symbol_info_t`: what `hsa_executable_symbol_get_info` can be asked.
pub mod symbol_info {
    /// `hsa_symbol_kind_t` (see [`super::symbol_kind`]).
    pub const TYPE: u32 = 0;
    /// `u32`: the name's length, without a NUL.
    pub const NAME_LENGTH: u32 = 1;
    /// `char[NAME_LENGTH]`, not NUL-terminated.
    pub const NAME: u32 = 2;
    /// `u32`: the module name's length.
    pub const MODULE_NAME_LENGTH: u32 = 3;
    /// `char[MODULE_NAME_LENGTH]`.
    pub const MODULE_NAME: u32 = 4;
    /// `hsa_symbol_linkage_t`.
    pub const LINKAGE: u32 = 5;
    /// `hsa_variable_allocation_t`.
    pub const VARIABLE_ALLOCATION: u32 = 6;
    /// `hsa_variable_segment_t`.
    pub const VARIABLE_SEGMENT: u32 = 7;
    /// `u32`: the variable's alignment.
    pub const VARIABLE_ALIGNMENT: u32 = 8;
    /// `u32`: the variable's size in bytes.
    pub const VARIABLE_SIZE: u32 = 9;
    /// `bool`: the variable is constant.
    pub const VARIABLE_IS_CONST: u32 = 10;
    /// `u32`: bytes of kernel arguments, implicit ones included.
    pub const KERNEL_KERNARG_SEGMENT_SIZE: u32 = 11;
    /// `u32`: the kernel arguments' alignment.
    pub const KERNEL_KERNARG_SEGMENT_ALIGNMENT: u32 = 12;
    /// `u32`: static group (LDS) bytes per work-group.
    pub const KERNEL_GROUP_SEGMENT_SIZE: u32 = 13;
    /// `u32`: static private (scratch) bytes per work-item.
    pub const KERNEL_PRIVATE_SEGMENT_SIZE: u32 = 14;
    /// `bool`: the kernel's call stack size is dynamic.
    pub const KERNEL_DYNAMIC_CALLSTACK: u32 = 15;
    /// `u32`: an indirect function's call convention.
    pub const INDIRECT_FUNCTION_CALL_CONVENTION: u32 = 16;
    /// `bool`: the symbol is a definition.
    pub const IS_DEFINITION: u32 = 17;
    /// `u32`: the kernel's call convention.
    pub const KERNEL_CALL_CONVENTION: u32 = 18;
    /// [`super::HsaAgent`]: the agent the symbol belongs to.
    pub const AGENT: u32 = 20;
    /// `u64`: the variable's device address.
    pub const VARIABLE_ADDRESS: u32 = 21;
    /// `u64`: the kernel descriptor's address, for the dispatch packet.
    pub const KERNEL_OBJECT: u32 = 22;
    /// `u64`: an indirect function's address.
    pub const INDIRECT_FUNCTION_OBJECT: u32 = 23;
}

/// `hsa_symbol_kind_t`: the value of `symbol_info::TYPE`.
pub mod symbol_kind {
    /// A variable.
    pub const VARIABLE: u32 = 0;
    /// A kernel (its `.kd` descriptor).
    pub const KERNEL: u32 = 1;
    /// An indirect function.
    pub const INDIRECT_FUNCTION: u32 = 2;
}

/// `hsa_isa_info_t`: what `hsa_isa_get_info_alt` can be asked.
pub mod isa_info {
    /// `u32`: the name's length, without a NUL.
    pub const NAME_LENGTH: u32 = 0;
    /// `char[NAME_LENGTH]`: the target id ("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-").
    pub const NAME: u32 = 1;
}

/// `hsa_queue_type_t`: the `type` argument of `hsa_queue_create`.
pub mod queue_type {
    /// Several producers may write packets.
    pub const MULTI: u32 = 0;
    /// One producer writes packets.
    pub const SINGLE: u32 = 1;
    /// A cooperative queue (AMD).
    pub const COOPERATIVE: u32 = 2;
}

/// `hsa_packet_type_t`: the type field of a packet header.
pub mod packet_type {
    /// Vendor-specific.
    pub const VENDOR_SPECIFIC: u16 = 0;
    /// Not yet published (or consumed): the packet processor stops at it.
    pub const INVALID: u16 = 1;
    /// [`super::KernelDispatchPacket`].
    pub const KERNEL_DISPATCH: u16 = 2;
    /// [`super::BarrierAndPacket`].
    pub const BARRIER_AND: u16 = 3;
    /// An agent dispatch packet.
    pub const AGENT_DISPATCH: u16 = 4;
    /// A barrier-OR packet.
    pub const BARRIER_OR: u16 = 5;
}

/// `hsa_packet_header_t` and `hsa_packet_header_width_t`: bit positions and widths of the fields of a
/// packet header.
pub mod packet_header {
    /// The packet type ([`super::packet_type`]).
    pub const TYPE: u32 = 0;
    /// The barrier bit: the packet starts only after every earlier packet of its queue completed.
    pub const BARRIER: u32 = 8;
    /// The acquire fence scope ([`super::fence_scope`]); `SCACQUIRE` in the header.
    pub const ACQUIRE_FENCE_SCOPE: u32 = 9;
    /// The release fence scope ([`super::fence_scope`]); `SCRELEASE` in the header.
    pub const RELEASE_FENCE_SCOPE: u32 = 11;
    /// Bits of the type field.
    pub const WIDTH_TYPE: u32 = 8;
    /// Bits of the barrier field.
    pub const WIDTH_BARRIER: u32 = 1;
    /// Bits of the acquire fence scope field.
    pub const WIDTH_ACQUIRE_FENCE_SCOPE: u32 = 2;
    /// Bits of the release fence scope field.
    pub const WIDTH_RELEASE_FENCE_SCOPE: u32 = 2;
}

/// `HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS`: bit position of the dimension count in `setup`.
pub const KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS: u32 = 0;
/// `HSA_KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS`: its width in bits.
pub const KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS: u32 = 2;

/// `hsa_fence_scope_t`: the fence scopes of a packet header.
pub mod fence_scope {
    /// No fence.
    pub const NONE: u16 = 0;
    /// Memory is coherent across the agent.
    pub const AGENT: u16 = 1;
    /// Memory is coherent across the system, host included.
    pub const SYSTEM: u16 = 2;
}

/// `hsa_signal_condition_t`: how a signal's value is compared in waits and async handlers.
pub mod signal_condition {
    /// Equal.
    pub const EQ: u32 = 0;
    /// Not equal.
    pub const NE: u32 = 1;
    /// Less than.
    pub const LT: u32 = 2;
    /// Greater than or equal.
    pub const GTE: u32 = 3;
}

/// `hsa_wait_state_t`: a hint on how to wait for a signal.
pub mod wait_state {
    /// Sleep in the kernel driver.
    pub const BLOCKED: u32 = 0;
    /// Spin.
    pub const ACTIVE: u32 = 1;
}

/// `hsa_profile_t`: the profile of `hsa_executable_create_alt`.
pub mod profile {
    /// The base profile: discrete GPUs.
    pub const BASE: u32 = 0;
    /// The full profile (what LLVM's plugin asks for).
    pub const FULL: u32 = 1;
}

/// `hsa_default_float_rounding_mode_t`: the rounding mode of `hsa_executable_create_alt`.
pub mod float_rounding_mode {
    /// Whatever the code objects say.
    pub const DEFAULT: u32 = 0;
    /// Round toward zero (what LLVM's plugin asks for).
    pub const ZERO: u32 = 1;
    /// Round to nearest.
    pub const NEAR: u32 = 2;
}

/// `hsa_executable_state_t`: the state argument of the deprecated `hsa_executable_create`.
pub mod executable_state {
    /// Code objects can still be loaded.
    pub const UNFROZEN: u32 = 0;
    /// Frozen: symbols can be queried.
    pub const FROZEN: u32 = 1;
}

/// `hsa_amd_signal_attribute_t`: attribute bits of `hsa_amd_signal_create`.
pub mod signal_attribute {
    /// Only GPUs consume the signal; the host never waits on it.
    pub const AMD_GPU_ONLY: u64 = 1;
    /// The signal can be shared with other processes.
    pub const IPC: u64 = 2;
}

/// `hsa_amd_event_type_t`: the value of `AmdEvent::event_type`.
pub mod event_type {
    /// A GPU memory fault; the payload is [`super::GpuMemoryFaultInfo`].
    pub const GPU_MEMORY_FAULT: u32 = 0;
}

/// `hsa_amd_memory_fault_reason_t`: bits of `GpuMemoryFaultInfo::fault_reason_mask`.
pub mod memory_fault_reason {
    /// The page was not present or is not supported.
    pub const PAGE_NOT_PRESENT: u32 = 1 << 0;
    /// A write to a read-only page.
    pub const READ_ONLY: u32 = 1 << 1;
    /// Execution of a page marked no-execute.
    pub const NX: u32 = 1 << 2;
    /// A GPU access to host-only memory.
    pub const HOST_ONLY: u32 = 1 << 3;
    /// An uncorrectable DRAM ECC error.
    pub const DRAMECC: u32 = 1 << 4;
    /// The fault address may be imprecise.
    pub const IMPRECISE: u32 = 1 << 5;
    /// An uncorrectable SRAM ECC error.
    pub const SRAMECC: u32 = 1 << 6;
    /// The GPU hung.
    pub const HANG: u32 = 1 << 31;
}

/// `hsa_amd_pointer_type_t`: the value of `PointerInfo::pointer_type`.
pub mod pointer_type {
    /// Not known to the runtime.
    pub const UNKNOWN: u32 = 0;
    /// Allocated by the runtime.
    pub const HSA: u32 = 1;
    /// Host memory locked with `hsa_amd_memory_lock`.
    pub const LOCKED: u32 = 2;
    /// A graphics interop buffer.
    pub const GRAPHICS: u32 = 3;
    /// Imported from another process.
    pub const IPC: u32 = 4;
}

entry_points! {
    /// The runtime's entry points the plugin uses, with the C signatures of ROCm 5.2.3's `hsa.h` and
    /// `hsa_ext_amd.h`: every entry point LLVM 16's AMDGPU plugin resolves, the two memory pool queries,
    /// the code object reader path that replaces the deprecated `hsa_code_object_*` loader, and the
    /// relaxed signal and write-index accessors.
    pub struct Functions, from the scope by hsa_functions_in_scope;
    // Runtime and agents.
    hsa_init: fn() -> HsaStatus;
    hsa_shut_down: fn() -> HsaStatus;
    hsa_status_string: fn(status: HsaStatus, text: *mut *const c_char) -> HsaStatus;
    hsa_system_get_info: fn(attribute: u32, value: *mut c_void) -> HsaStatus;
    hsa_iterate_agents: fn(callback: AgentCallback, data: *mut c_void) -> HsaStatus;
    hsa_agent_get_info: fn(agent: HsaAgent, attribute: u32, value: *mut c_void) -> HsaStatus;
    hsa_agent_iterate_isas: fn(agent: HsaAgent, callback: IsaCallback, data: *mut c_void) -> HsaStatus;
    hsa_isa_get_info_alt: fn(isa: HsaIsa, attribute: u32, value: *mut c_void) -> HsaStatus;
    hsa_amd_register_system_event_handler: fn(callback: SystemEventCallback, data: *mut c_void) -> HsaStatus;

    // Memory.
    hsa_amd_agent_iterate_memory_pools: fn(
        agent: HsaAgent,
        callback: MemoryPoolCallback,
        data: *mut c_void,
    ) -> HsaStatus;
    hsa_amd_memory_pool_get_info: fn(pool: HsaMemoryPool, attribute: u32, value: *mut c_void) -> HsaStatus;
    hsa_amd_agent_memory_pool_get_info: fn(
        agent: HsaAgent,
        pool: HsaMemoryPool,
        attribute: u32,
        value: *mut c_void,
    ) -> HsaStatus;
    hsa_amd_memory_pool_allocate: fn(
        pool: HsaMemoryPool,
        size: usize,
        flags: u32,
        ptr: *mut *mut c_void,
    ) -> HsaStatus;
    hsa_amd_memory_pool_free: fn(ptr: *mut c_void) -> HsaStatus;
    hsa_amd_agents_allow_access: fn(
        num_agents: u32,
        agents: *const HsaAgent,
        flags: *const u32,
        ptr: *const c_void,
    ) -> HsaStatus;
    hsa_amd_memory_lock: fn(
        host_ptr: *mut c_void,
        size: usize,
        agents: *mut HsaAgent,
        num_agent: c_int,
        agent_ptr: *mut *mut c_void,
    ) -> HsaStatus;
    hsa_amd_memory_unlock: fn(host_ptr: *mut c_void) -> HsaStatus;
    hsa_amd_memory_async_copy: fn(
        dst: *mut c_void,
        dst_agent: HsaAgent,
        src: *const c_void,
        src_agent: HsaAgent,
        size: usize,
        num_dep_signals: u32,
        dep_signals: *const HsaSignal,
        completion_signal: HsaSignal,
    ) -> HsaStatus;
    hsa_amd_memory_fill: fn(ptr: *mut c_void, value: u32, count: usize) -> HsaStatus;
    hsa_amd_pointer_info: fn(
        ptr: *const c_void,
        info: *mut PointerInfo,
        alloc: Option<PointerInfoAlloc>,
        num_agents_accessible: *mut u32,
        accessible: *mut *mut HsaAgent,
    ) -> HsaStatus;
    hsa_memory_copy: fn(dst: *mut c_void, src: *const c_void, size: usize) -> HsaStatus;

    // Signals.
    hsa_signal_create: fn(
        initial_value: HsaSignalValue,
        num_consumers: u32,
        consumers: *const HsaAgent,
        signal: *mut HsaSignal,
    ) -> HsaStatus;
    hsa_amd_signal_create: fn(
        initial_value: HsaSignalValue,
        num_consumers: u32,
        consumers: *const HsaAgent,
        attributes: u64,
        signal: *mut HsaSignal,
    ) -> HsaStatus;
    hsa_signal_destroy: fn(signal: HsaSignal) -> HsaStatus;
    hsa_signal_load_scacquire: fn(signal: HsaSignal) -> HsaSignalValue;
    hsa_signal_load_relaxed: fn(signal: HsaSignal) -> HsaSignalValue;
    hsa_signal_store_relaxed: fn(signal: HsaSignal, value: HsaSignalValue);
    hsa_signal_store_screlease: fn(signal: HsaSignal, value: HsaSignalValue);
    hsa_signal_subtract_screlease: fn(signal: HsaSignal, value: HsaSignalValue);
    hsa_signal_wait_scacquire: fn(
        signal: HsaSignal,
        condition: u32,
        compare_value: HsaSignalValue,
        timeout_hint: u64,
        wait_state_hint: u32,
    ) -> HsaSignalValue;
    hsa_amd_signal_async_handler: fn(
        signal: HsaSignal,
        condition: u32,
        value: HsaSignalValue,
        handler: SignalHandler,
        arg: *mut c_void,
    ) -> HsaStatus;

    // Queues.
    hsa_queue_create: fn(
        agent: HsaAgent,
        size: u32,
        queue_type: u32,
        callback: Option<QueueErrorCallback>,
        data: *mut c_void,
        private_segment_size: u32,
        group_segment_size: u32,
        queue: *mut *mut HsaQueue,
    ) -> HsaStatus;
    hsa_queue_destroy: fn(queue: *mut HsaQueue) -> HsaStatus;
    hsa_queue_load_read_index_scacquire: fn(queue: *const HsaQueue) -> u64;
    hsa_queue_load_write_index_relaxed: fn(queue: *const HsaQueue) -> u64;
    hsa_queue_store_write_index_relaxed: fn(queue: *const HsaQueue, value: u64);
    hsa_queue_add_write_index_relaxed: fn(queue: *const HsaQueue, value: u64) -> u64;

    // Code objects and executables.
    hsa_code_object_deserialize: fn(
        serialized: *mut c_void,
        size: usize,
        options: *const c_char,
        code_object: *mut HsaCodeObject,
    ) -> HsaStatus;
    hsa_code_object_destroy: fn(code_object: HsaCodeObject) -> HsaStatus;
    hsa_code_object_reader_create_from_memory: fn(
        code_object: *const c_void,
        size: usize,
        reader: *mut HsaCodeObjectReader,
    ) -> HsaStatus;
    hsa_code_object_reader_destroy: fn(reader: HsaCodeObjectReader) -> HsaStatus;
    hsa_executable_create: fn(
        profile: u32,
        executable_state: u32,
        options: *const c_char,
        executable: *mut HsaExecutable,
    ) -> HsaStatus;
    hsa_executable_create_alt: fn(
        profile: u32,
        default_float_rounding_mode: u32,
        options: *const c_char,
        executable: *mut HsaExecutable,
    ) -> HsaStatus;
    hsa_executable_destroy: fn(executable: HsaExecutable) -> HsaStatus;
    hsa_executable_load_code_object: fn(
        executable: HsaExecutable,
        agent: HsaAgent,
        code_object: HsaCodeObject,
        options: *const c_char,
    ) -> HsaStatus;
    hsa_executable_load_agent_code_object: fn(
        executable: HsaExecutable,
        agent: HsaAgent,
        reader: HsaCodeObjectReader,
        options: *const c_char,
        loaded_code_object: *mut HsaLoadedCodeObject,
    ) -> HsaStatus;
    hsa_executable_freeze: fn(executable: HsaExecutable, options: *const c_char) -> HsaStatus;
    hsa_executable_validate: fn(executable: HsaExecutable, result: *mut u32) -> HsaStatus;
    hsa_executable_get_symbol_by_name: fn(
        executable: HsaExecutable,
        symbol_name: *const c_char,
        agent: *const HsaAgent,
        symbol: *mut HsaExecutableSymbol,
    ) -> HsaStatus;
    hsa_executable_symbol_get_info: fn(symbol: HsaExecutableSymbol, attribute: u32, value: *mut c_void) -> HsaStatus;
    hsa_executable_iterate_symbols: fn(
        executable: HsaExecutable,
        callback: ExecutableSymbolCallback,
        data: *mut c_void,
    ) -> HsaStatus;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    // Offsets and sizes below are those of ROCm 5.2.3's hsa.h / hsa_ext_amd.h on x86-64, as a C
    // compiler lays them out.

    #[test]
    fn handles_are_one_word() {
        assert_eq!(size_of::<HsaAgent>(), 8);
        assert_eq!(size_of::<HsaSignal>(), 8);
        assert_eq!(size_of::<HsaMemoryPool>(), 8);
        assert_eq!(size_of::<HsaExecutableSymbol>(), 8);
        assert_eq!(size_of::<HsaCodeObjectReader>(), 8);
        assert_eq!(size_of::<HsaDim3>(), 12);
    }

    #[test]
    fn queue_layout() {
        assert_eq!(size_of::<HsaQueue>(), 40);
        assert_eq!(offset_of!(HsaQueue, queue_type), 0);
        assert_eq!(offset_of!(HsaQueue, features), 4);
        assert_eq!(offset_of!(HsaQueue, base_address), 8);
        assert_eq!(offset_of!(HsaQueue, doorbell_signal), 16);
        assert_eq!(offset_of!(HsaQueue, size), 24);
        assert_eq!(offset_of!(HsaQueue, reserved1), 28);
        assert_eq!(offset_of!(HsaQueue, id), 32);
    }

    #[test]
    fn kernel_dispatch_packet_layout() {
        assert_eq!(size_of::<KernelDispatchPacket>(), 64);
        assert_eq!(align_of::<KernelDispatchPacket>(), 8);
        assert_eq!(offset_of!(KernelDispatchPacket, header), 0);
        assert_eq!(offset_of!(KernelDispatchPacket, setup), 2);
        assert_eq!(offset_of!(KernelDispatchPacket, workgroup_size_x), 4);
        assert_eq!(offset_of!(KernelDispatchPacket, workgroup_size_y), 6);
        assert_eq!(offset_of!(KernelDispatchPacket, workgroup_size_z), 8);
        assert_eq!(offset_of!(KernelDispatchPacket, reserved0), 10);
        assert_eq!(offset_of!(KernelDispatchPacket, grid_size_x), 12);
        assert_eq!(offset_of!(KernelDispatchPacket, grid_size_y), 16);
        assert_eq!(offset_of!(KernelDispatchPacket, grid_size_z), 20);
        assert_eq!(offset_of!(KernelDispatchPacket, private_segment_size), 24);
        assert_eq!(offset_of!(KernelDispatchPacket, group_segment_size), 28);
        assert_eq!(offset_of!(KernelDispatchPacket, kernel_object), 32);
        assert_eq!(offset_of!(KernelDispatchPacket, kernarg_address), 40);
        assert_eq!(offset_of!(KernelDispatchPacket, reserved2), 48);
        assert_eq!(offset_of!(KernelDispatchPacket, completion_signal), 56);
    }

    #[test]
    fn barrier_and_packet_layout() {
        assert_eq!(size_of::<BarrierAndPacket>(), 64);
        assert_eq!(align_of::<BarrierAndPacket>(), 8);
        assert_eq!(offset_of!(BarrierAndPacket, header), 0);
        assert_eq!(offset_of!(BarrierAndPacket, reserved0), 2);
        assert_eq!(offset_of!(BarrierAndPacket, reserved1), 4);
        assert_eq!(offset_of!(BarrierAndPacket, dep_signal), 8);
        assert_eq!(offset_of!(BarrierAndPacket, reserved2), 48);
        assert_eq!(offset_of!(BarrierAndPacket, completion_signal), 56);
    }

    #[test]
    fn amd_structure_layouts() {
        assert_eq!(size_of::<PointerInfo>(), 56);
        assert_eq!(offset_of!(PointerInfo, pointer_type), 4);
        assert_eq!(offset_of!(PointerInfo, agent_base_address), 8);
        assert_eq!(offset_of!(PointerInfo, host_base_address), 16);
        assert_eq!(offset_of!(PointerInfo, size_in_bytes), 24);
        assert_eq!(offset_of!(PointerInfo, user_data), 32);
        assert_eq!(offset_of!(PointerInfo, agent_owner), 40);
        assert_eq!(offset_of!(PointerInfo, global_flags), 48);
        assert_eq!(size_of::<GpuMemoryFaultInfo>(), 24);
        assert_eq!(offset_of!(GpuMemoryFaultInfo, virtual_address), 8);
        assert_eq!(offset_of!(GpuMemoryFaultInfo, fault_reason_mask), 16);
        assert_eq!(size_of::<AmdEvent>(), 32);
        assert_eq!(offset_of!(AmdEvent, memory_fault), 8);
    }

    #[test]
    fn header_bits_give_the_stock_plugins_headers() {
        // LLVM 16's plugin writes 0x1402 for a kernel dispatch and 0x1403 for a barrier-AND: system
        // scope acquire and release fences, no barrier bit.
        let fences = (fence_scope::SYSTEM << packet_header::ACQUIRE_FENCE_SCOPE)
            | (fence_scope::SYSTEM << packet_header::RELEASE_FENCE_SCOPE);
        assert_eq!(packet_type::KERNEL_DISPATCH << packet_header::TYPE | fences, 0x1402);
        assert_eq!(packet_type::BARRIER_AND << packet_header::TYPE | fences, 0x1403);
        assert_eq!(1u16 << packet_header::BARRIER, 0x100);
    }

    #[test]
    fn status_names() {
        assert_eq!(status_name(0x1008), Some("HSA_STATUS_ERROR_OUT_OF_RESOURCES"));
        assert_eq!(status_name(HSA_STATUS_SUCCESS), Some("HSA_STATUS_SUCCESS"));
        assert_eq!(status_name(0x1), Some("HSA_STATUS_INFO_BREAK"));
        assert_eq!(status_name(0x100B), Some("HSA_STATUS_ERROR_NOT_INITIALIZED"));
        assert_eq!(status_name(0x1017), Some("HSA_STATUS_ERROR_INVALID_ISA_NAME"));
        assert_eq!(status_name(0x1026), Some("HSA_STATUS_ERROR_FATAL"));
        assert_eq!(status_name(43), Some("HSA_STATUS_ERROR_MEMORY_FAULT"));
        assert_eq!(status_name(0x1027), None);
        assert_eq!(status_name(0x101A), None);
        assert_eq!(status_name(2), None);
    }

    #[test]
    fn resolve_names_the_first_missing_entry_point() {
        // The C library is loaded in every test process and has no HSA entry points.
        // SAFETY: libc is already loaded; opening it again runs no initialisers.
        let library =
            unsafe { libloading::os::unix::Library::open(Some("libc.so.6"), libc::RTLD_NOW | libc::RTLD_LOCAL) }
                .expect("libc.so.6 opens");
        match Functions::resolve(&library) {
            Err(name) => assert_eq!(name, "hsa_init"),
            Ok(_) => panic!("libc resolved as the HSA runtime"),
        }
    }
}
