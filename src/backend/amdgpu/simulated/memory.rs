//! Memory: pool blocks the simulation tracks (with the agents each was opened to), locked host ranges, and asynchronous copies done by a copy engine thread once their dependencies reach 0.

use super::*;

pub(super) unsafe extern "C" fn hsa_amd_memory_pool_allocate(
    pool: HsaMemoryPool,
    size: usize,
    flags: u32,
    ptr: *mut *mut c_void,
) -> HsaStatus {
    call("hsa_amd_memory_pool_allocate", |w| {
        let Some(p) = w.pools.get(&pool.handle) else {
            return sys::HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
        };
        if ptr.is_null() || size == 0 || flags != 0 {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let (agent, kind) = (p.agent, p.kind);
        if kind == PoolKind::DeviceGroup || size > pool_size(kind) {
            return sys::HSA_STATUS_ERROR_INVALID_ALLOCATION;
        }
        let reserved = size.div_ceil(GRANULE) * GRANULE;
        let Ok(layout) = Layout::from_size_align(reserved, GRANULE) else {
            return sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        };
        // SAFETY: the layout's size is non-zero.
        let block = unsafe { std::alloc::alloc_zeroed(layout) } as usize;
        if block == 0 {
            return sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        }
        w.memory.insert(
            block,
            Block {
                agent,
                size,
                reserved,
                device: kind.device(),
                allowed: Vec::new(),
            },
        );
        // SAFETY: writable per the API.
        unsafe { *ptr = block as *mut c_void };
        HSA_STATUS_SUCCESS
    })
}

pub(super) unsafe extern "C" fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> HsaStatus {
    call("hsa_amd_memory_pool_free", |w| match w.memory.remove(&(ptr as usize)) {
        Some(block) => {
            // SAFETY: allocated in hsa_amd_memory_pool_allocate with this layout.
            unsafe { std::alloc::dealloc(ptr.cast(), Layout::from_size_align_unchecked(block.reserved, GRANULE)) };
            HSA_STATUS_SUCCESS
        }
        None => sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
    })
}

/// The agents of a C array, or the status for an invalid one.
///
/// # Safety
/// `agents` points to `count` agents when it is not null.
pub(super) unsafe fn agent_list(w: &World, count: usize, agents: *const HsaAgent) -> Result<Vec<u64>, HsaStatus> {
    if count == 0 || agents.is_null() {
        return Err(sys::HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }
    // SAFETY: per this function's contract.
    let agents = unsafe { std::slice::from_raw_parts(agents, count) };
    agents
        .iter()
        .map(|a| w.agent(*a).map(|_| a.handle).ok_or(sys::HSA_STATUS_ERROR_INVALID_AGENT))
        .collect()
}

pub(super) unsafe extern "C" fn hsa_amd_agents_allow_access(
    num_agents: u32,
    agents: *const HsaAgent,
    _flags: *const u32,
    ptr: *const c_void,
) -> HsaStatus {
    call("hsa_amd_agents_allow_access", |w| {
        // SAFETY: the caller passes `num_agents` agents.
        let list = match unsafe { agent_list(w, num_agents as usize, agents) } {
            Ok(list) => list,
            Err(status) => return status,
        };
        let Some(block) = w.memory.get_mut(&(ptr as usize)) else {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        for agent in list {
            if !block.allowed.contains(&agent) {
                block.allowed.push(agent);
            }
        }
        HSA_STATUS_SUCCESS
    })
}

pub(super) unsafe extern "C" fn hsa_amd_memory_lock(
    host_ptr: *mut c_void,
    size: usize,
    agents: *mut HsaAgent,
    num_agent: c_int,
    agent_ptr: *mut *mut c_void,
) -> HsaStatus {
    call("hsa_amd_memory_lock", |w| {
        if size == 0 || host_ptr.is_null() || agent_ptr.is_null() || agents.is_null() != (num_agent == 0) {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let list = if agents.is_null() {
            Vec::new()
        } else {
            // SAFETY: the caller passes `num_agent` agents.
            match unsafe { agent_list(w, num_agent.max(0) as usize, agents) } {
                Ok(list) => list,
                Err(status) => return status,
            }
        };
        let at = host_ptr as usize;
        if let Some(lock) = w.locked.get_mut(&at) {
            lock.count += 1;
            lock.size = lock.size.max(size);
        } else {
            w.locked.insert(
                at,
                Lock {
                    size,
                    agents: list,
                    count: 1,
                },
            );
        }
        // SAFETY: writable per the API. Agents see locked memory at its host address here.
        unsafe { *agent_ptr = host_ptr };
        HSA_STATUS_SUCCESS
    })
}

pub(super) unsafe extern "C" fn hsa_amd_memory_unlock(host_ptr: *mut c_void) -> HsaStatus {
    call("hsa_amd_memory_unlock", |w| {
        let at = host_ptr as usize;
        match w.locked.get_mut(&at) {
            Some(lock) if lock.count > 1 => lock.count -= 1,
            Some(_) => {
                w.locked.remove(&at);
            }
            // The real runtime says nothing either.
            None => w.note(format!("hsa_amd_memory_unlock of {at:#x}, which is not locked")),
        }
        HSA_STATUS_SUCCESS
    })
}

/// Starts the copy engine thread of the current world if it has none.
pub(super) fn ensure_engine(w: &mut World) {
    if w.engine.is_none() {
        let generation = w.generation;
        w.engine = Some(
            std::thread::Builder::new()
                .name("sim-hsa-copy".into())
                .spawn(move || copy_engine(generation))
                .expect("a thread for the simulated copy engine"),
        );
    }
}

/// Performs the pending copies, each once its dependencies are 0, in the order they were asked for
/// among those ready; then decrements its completion signal.
pub(super) fn copy_engine(generation: u64) {
    loop {
        let job = {
            let mut guard = world();
            loop {
                let Some(w) = guard.as_mut().filter(|w| w.generation == generation) else {
                    return;
                };
                let ready = w
                    .pending
                    .iter()
                    .position(|c| !w.held && c.deps.iter().all(|d| w.signal_value(*d).is_none_or(|v| v == 0)));
                if let Some(i) = ready {
                    break w.pending.remove(i).expect("a pending copy");
                }
                guard = wait(guard);
            }
        };
        // SAFETY: both ranges were checked to be simulated memory when the copy was asked for; the
        // plugin keeps them alive until the completion signal says the copy is done.
        unsafe { std::ptr::copy(job.src as *const u8, job.dst as *mut u8, job.size) };
        let mut guard = world();
        if let Some(w) = guard.as_mut().filter(|w| w.generation == generation) {
            match w.signals.get_mut(&job.completion) {
                Some(s) => s.value -= 1,
                None => w.note(format!(
                    "the completion signal {:#x} of a copy was destroyed before the copy finished",
                    job.completion
                )),
            }
        }
        drop(guard);
        CHANGED.notify_all();
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) unsafe extern "C" fn hsa_amd_memory_async_copy(
    dst: *mut c_void,
    dst_agent: HsaAgent,
    src: *const c_void,
    src_agent: HsaAgent,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const HsaSignal,
    completion_signal: HsaSignal,
) -> HsaStatus {
    call("hsa_amd_memory_async_copy", |w| {
        if w.agent(dst_agent).is_none() || w.agent(src_agent).is_none() {
            return sys::HSA_STATUS_ERROR_INVALID_AGENT;
        }
        if dst.is_null() || src.is_null() || (num_dep_signals > 0 && dep_signals.is_null()) {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let deps: Vec<u64> = if num_dep_signals == 0 {
            Vec::new()
        } else {
            // SAFETY: the caller passes `num_dep_signals` signals.
            unsafe { std::slice::from_raw_parts(dep_signals, num_dep_signals as usize) }
                .iter()
                .map(|s| s.handle)
                .collect()
        };
        if !w.signals.contains_key(&completion_signal.handle) || deps.iter().any(|d| !w.signals.contains_key(d)) {
            return sys::HSA_STATUS_ERROR_INVALID_SIGNAL;
        }
        // Both sides must be memory an agent can reach: pool blocks, loaded code objects or locked
        // host ranges. Pageable host memory is refused, as the copy engines cannot reach it.
        let (Some(to), Some(from)) = (w.region(dst as usize, size), w.region(src as usize, size)) else {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        let kind = match (from.device, to.device) {
            (false, true) => CopyKind::HostToDevice,
            (true, false) => CopyKind::DeviceToHost,
            (true, true) if from.owner == to.owner => CopyKind::DeviceToDevice,
            (true, true) => CopyKind::PeerToPeer,
            (false, false) => CopyKind::HostToHost,
        };
        // Between two GPUs, the source's agent copies: it must have been given access to the
        // destination, as on ROCm (a GPU's own memory is disallowed to others by default).
        if kind == CopyKind::PeerToPeer {
            let Some(source_agent) = w.agent(src_agent) else {
                return sys::HSA_STATUS_ERROR_INVALID_AGENT;
            };
            if !to.accessible_by(&w.agents, source_agent) {
                return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
            }
        }
        w.copies.push(AsyncCopy {
            dst: dst as usize,
            src: src as usize,
            size,
            kind,
            deps: deps.clone(),
            completion: completion_signal.handle,
        });
        w.pending.push_back(PendingCopy {
            dst: dst as usize,
            src: src as usize,
            size,
            deps,
            completion: completion_signal.handle,
        });
        ensure_engine(w);
        HSA_STATUS_SUCCESS
    })
}

pub(super) unsafe extern "C" fn hsa_amd_memory_fill(_ptr: *mut c_void, _value: u32, _count: usize) -> HsaStatus {
    unused("hsa_amd_memory_fill")
}

pub(super) unsafe extern "C" fn hsa_amd_pointer_info(
    _ptr: *const c_void,
    _info: *mut PointerInfo,
    _alloc: Option<PointerInfoAlloc>,
    _num_agents_accessible: *mut u32,
    _accessible: *mut *mut HsaAgent,
) -> HsaStatus {
    unused("hsa_amd_pointer_info")
}

pub(super) unsafe extern "C" fn hsa_memory_copy(_dst: *mut c_void, _src: *const c_void, _size: usize) -> HsaStatus {
    unused("hsa_memory_copy")
}
