//! Agents, their ISAs and memory pools as ROCm 5.2.3 lists them, and system events.

use super::*;

/// Calls `callback` for each of `items` outside the world's lock (it may call back into the runtime),
/// stopping at the first status other than success, which is returned.
pub(super) fn iterate<T: Copy>(
    items: Result<Vec<T>, HsaStatus>,
    mut callback: impl FnMut(T) -> HsaStatus,
) -> HsaStatus {
    match items {
        Err(status) => status,
        Ok(items) => {
            for item in items {
                let status = callback(item);
                if status != HSA_STATUS_SUCCESS {
                    return status;
                }
            }
            HSA_STATUS_SUCCESS
        }
    }
}

/// Like [`call`], for the iterations: the items to visit, or the status that stops them before the
/// first.
pub(super) fn listed<T>(
    name: &'static str,
    f: impl FnOnce(&mut World) -> Result<Vec<T>, HsaStatus>,
) -> Result<Vec<T>, HsaStatus> {
    with(|w| match w.enter(name) {
        Err(status) => Err(status),
        Ok(()) if w.initialized == 0 => Err(sys::HSA_STATUS_ERROR_NOT_INITIALIZED),
        Ok(()) => f(w),
    })
}

pub(super) unsafe extern "C" fn hsa_iterate_agents(callback: AgentCallback, data: *mut c_void) -> HsaStatus {
    let agents = listed("hsa_iterate_agents", |w| {
        Ok(w.agents.iter().map(|a| HsaAgent { handle: a.handle }).collect())
    });
    // SAFETY: the callback and its data are the caller's, called as the API promises.
    iterate(agents, |agent| unsafe { callback(agent, data) })
}

pub(super) unsafe extern "C" fn hsa_agent_get_info(agent: HsaAgent, attribute: u32, value: *mut c_void) -> HsaStatus {
    call("hsa_agent_get_info", |w| {
        let Some(index) = w.agent(agent) else {
            return sys::HSA_STATUS_ERROR_INVALID_AGENT;
        };
        if value.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let a = &w.agents[index];
        let gpu = a.gpu;
        let is_gpu = gpu.is_some();
        let name = gpu.map_or("Simulated x86-64 CPU", |g| g.name.split(':').next().unwrap_or(g.name));
        let pick = |cpu: u32, gpu: u32| if is_gpu { gpu } else { cpu };
        use agent_info as i;
        // SAFETY: in every arm, `value` is writable for the attribute's documented type.
        unsafe {
            match attribute {
                i::NAME => put_text(value, name, 64),
                i::VENDOR_NAME => put_text(value, if is_gpu { "AMD" } else { "CPU" }, 64),
                i::FEATURE => put(value, pick(0, sys::agent_feature::KERNEL_DISPATCH)),
                i::MACHINE_MODEL => put(value, 1u32),
                i::PROFILE => put(value, pick(sys::profile::FULL, sys::profile::BASE)),
                i::DEFAULT_FLOAT_ROUNDING_MODE => put(value, sys::float_rounding_mode::NEAR),
                i::BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES => put(value, 3u32),
                i::FAST_F16_OPERATION => put(value, is_gpu),
                i::WAVEFRONT_SIZE => put(value, gpu.map_or(0, |g| g.wavefront_size)),
                i::WORKGROUP_MAX_DIM => put(value, if is_gpu { [1024u16; 3] } else { [0u16; 3] }),
                i::WORKGROUP_MAX_SIZE => put(value, pick(0, 1024)),
                i::GRID_MAX_DIM => {
                    let m = pick(0, u32::MAX);
                    put(value, HsaDim3 { x: m, y: m, z: m })
                }
                i::GRID_MAX_SIZE => put(value, pick(0, u32::MAX)),
                i::FBARRIER_MAX_SIZE => put(value, pick(0, 32)),
                i::QUEUES_MAX => put(value, pick(0, QUEUES_MAX)),
                i::QUEUE_MIN_SIZE => put(value, pick(0, QUEUE_MIN)),
                i::QUEUE_MAX_SIZE => put(value, pick(0, QUEUE_MAX)),
                i::QUEUE_TYPE => put(value, sys::queue_type::MULTI),
                i::NODE | i::DRIVER_NODE_ID => put(value, index as u32),
                i::DEVICE => put(value, pick(device_type::CPU, device_type::GPU)),
                i::CACHE_SIZE => put(
                    value,
                    if is_gpu {
                        [16u32 << 10, 8 << 20, 0, 0]
                    } else {
                        [32 << 10, 512 << 10, 32 << 20, 0]
                    },
                ),
                i::ISA => put(
                    value,
                    HsaIsa {
                        handle: a.isas.first().copied().unwrap_or(0),
                    },
                ),
                i::EXTENSIONS => put(value, [0u8; 128]),
                i::VERSION_MAJOR | i::VERSION_MINOR => put(value, 1u16),
                i::CHIP_ID => put(value, pick(0, 0x740f)),
                i::CACHELINE_SIZE => put(value, 64u32),
                i::COMPUTE_UNIT_COUNT => put(value, gpu.map_or(16, |g| g.compute_units)),
                i::MAX_CLOCK_FREQUENCY => put(value, pick(2450, 1700)),
                i::MAX_ADDRESS_WATCH_POINTS => put(value, pick(0, 4)),
                i::BDFID => put(value, pick(0, (index as u32 + 2) << 8)),
                i::MEMORY_MAX_FREQUENCY => put(value, pick(0, 1600)),
                i::PRODUCT_NAME => put_text(
                    value,
                    &gpu.map_or_else(|| name.to_string(), |_| format!("Simulated AMD GPU ({name})")),
                    64,
                ),
                i::MAX_WAVES_PER_CU => put(value, pick(0, 32)),
                i::NUM_SIMDS_PER_CU => put(value, pick(0, 4)),
                i::NUM_SHADER_ENGINES => put(value, pick(0, 8)),
                i::NUM_SHADER_ARRAYS_PER_SE => put(value, pick(0, 1)),
                i::DOMAIN => put(value, 0u32),
                i::COOPERATIVE_QUEUES => put(value, is_gpu),
                i::UUID => put_text(
                    value,
                    &if is_gpu {
                        format!("GPU-{:016x}", 0x5111_0000_0000_0000u64 + index as u64)
                    } else {
                        "CPU-XX".into()
                    },
                    21,
                ),
                i::ASIC_REVISION => put(value, pick(0, 1)),
                _ => return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
            }
        }
        HSA_STATUS_SUCCESS
    })
}

pub(super) unsafe extern "C" fn hsa_agent_iterate_isas(
    agent: HsaAgent,
    callback: IsaCallback,
    data: *mut c_void,
) -> HsaStatus {
    let isas = listed("hsa_agent_iterate_isas", |w| {
        let index = w.agent(agent).ok_or(sys::HSA_STATUS_ERROR_INVALID_AGENT)?;
        Ok(w.agents[index].isas.iter().map(|&handle| HsaIsa { handle }).collect())
    });
    // SAFETY: the callback and its data are the caller's, called as the API promises.
    iterate(isas, |isa| unsafe { callback(isa, data) })
}

pub(super) unsafe extern "C" fn hsa_isa_get_info_alt(isa: HsaIsa, attribute: u32, value: *mut c_void) -> HsaStatus {
    call("hsa_isa_get_info_alt", |w| {
        let Some(name) = w.isas.get(&isa.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_ISA;
        };
        if value.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        match attribute {
            // SAFETY: a u32 attribute.
            isa_info::NAME_LENGTH => unsafe { put(value, name.len() as u32) },
            // SAFETY: the caller provides NAME_LENGTH bytes; the name is written without a NUL.
            isa_info::NAME => unsafe { std::ptr::copy_nonoverlapping(name.as_ptr(), value.cast(), name.len()) },
            _ => return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
        }
        HSA_STATUS_SUCCESS
    })
}

pub(super) unsafe extern "C" fn hsa_amd_register_system_event_handler(
    callback: SystemEventCallback,
    data: *mut c_void,
) -> HsaStatus {
    call("hsa_amd_register_system_event_handler", |w| {
        w.system_handlers.push((callback, data as usize));
        HSA_STATUS_SUCCESS
    })
}

pub(super) unsafe extern "C" fn hsa_amd_agent_iterate_memory_pools(
    agent: HsaAgent,
    callback: MemoryPoolCallback,
    data: *mut c_void,
) -> HsaStatus {
    let pools = listed("hsa_amd_agent_iterate_memory_pools", |w| {
        let index = w.agent(agent).ok_or(sys::HSA_STATUS_ERROR_INVALID_AGENT)?;
        Ok(w.agents[index]
            .pools
            .iter()
            .map(|&handle| HsaMemoryPool { handle })
            .collect())
    });
    // SAFETY: the callback and its data are the caller's, called as the API promises.
    iterate(pools, |pool| unsafe { callback(pool, data) })
}

pub(super) fn pool_size(kind: PoolKind) -> usize {
    match kind {
        PoolKind::HostFine | PoolKind::HostKernarg | PoolKind::HostCoarse => HOST_MEMORY,
        PoolKind::DeviceCoarse => DEVICE_MEMORY,
        PoolKind::DeviceGroup => GROUP_MEMORY,
    }
}

pub(super) unsafe extern "C" fn hsa_amd_memory_pool_get_info(
    pool: HsaMemoryPool,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    call("hsa_amd_memory_pool_get_info", |w| {
        let Some(p) = w.pools.get(&pool.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
        };
        if value.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let kind = p.kind;
        let allocatable = kind != PoolKind::DeviceGroup;
        // SAFETY: in every arm, `value` is writable for the attribute's documented type.
        unsafe {
            match attribute {
                pool_info::SEGMENT => put(value, kind.segment()),
                pool_info::GLOBAL_FLAGS => put(value, kind.flags()),
                pool_info::SIZE | pool_info::ALLOC_MAX_SIZE => put(value, pool_size(kind)),
                pool_info::RUNTIME_ALLOC_ALLOWED => put(value, allocatable),
                pool_info::RUNTIME_ALLOC_GRANULE | pool_info::RUNTIME_ALLOC_ALIGNMENT => {
                    put(value, if allocatable { GRANULE } else { 0 })
                }
                pool_info::ACCESSIBLE_BY_ALL => put(value, false),
                _ => return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
            }
        }
        HSA_STATUS_SUCCESS
    })
}

pub(super) unsafe extern "C" fn hsa_amd_agent_memory_pool_get_info(
    agent: HsaAgent,
    pool: HsaMemoryPool,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    call("hsa_amd_agent_memory_pool_get_info", |w| {
        let Some(index) = w.agent(agent) else {
            return sys::HSA_STATUS_ERROR_INVALID_AGENT;
        };
        let Some(p) = w.pools.get(&pool.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
        };
        if value.is_null() {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let own = p.agent == index;
        let access = if own {
            pool_access::ALLOWED_BY_DEFAULT
        } else if p.kind == PoolKind::DeviceGroup {
            pool_access::NEVER_ALLOWED
        } else {
            pool_access::DISALLOWED_BY_DEFAULT
        };
        match attribute {
            // SAFETY: a u32 attribute.
            agent_pool_info::ACCESS => unsafe { put(value, access) },
            // SAFETY: a u32 attribute.
            agent_pool_info::NUM_LINK_HOPS => unsafe { put(value, u32::from(!own)) },
            _ => return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
        }
        HSA_STATUS_SUCCESS
    })
}
