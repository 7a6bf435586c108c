//! User-mode AQL queues whose packets a thread per queue processes once the doorbell is rung: barriers, and kernel dispatches run as registered closures.

use super::*;

pub(super) fn ring_layout(size: u32) -> Layout {
    Layout::from_size_align(size as usize * 64, 64).expect("a ring layout")
}

#[allow(clippy::too_many_arguments)]
pub(super) unsafe extern "C" fn hsa_queue_create(
    agent: HsaAgent,
    size: u32,
    queue_type: u32,
    callback: Option<QueueErrorCallback>,
    data: *mut c_void,
    _private_segment_size: u32,
    _group_segment_size: u32,
    queue: *mut *mut HsaQueue,
) -> HsaStatus {
    call("hsa_queue_create", |w| {
        let Some(index) = w.agent(agent) else {
            return sys::HSA_STATUS_ERROR_INVALID_AGENT;
        };
        if w.agents[index].gpu.is_none() {
            return sys::HSA_STATUS_ERROR_INVALID_AGENT;
        }
        if queue.is_null()
            || !size.is_power_of_two()
            || !(QUEUE_MIN..=QUEUE_MAX).contains(&size)
            || queue_type > sys::queue_type::COOPERATIVE
        {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        if w.queues.values().filter(|q| q.agent == index).count() >= QUEUES_MAX as usize {
            return sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        }
        // SAFETY: the layout is non-empty.
        let ring = unsafe { std::alloc::alloc_zeroed(ring_layout(size)) };
        if ring.is_null() {
            return sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        }
        for slot in 0..size as usize {
            // SAFETY: inside the ring just allocated; every header starts INVALID, as the runtime's.
            unsafe { ring.add(slot * 64).cast::<u16>().write(packet_type::INVALID) };
        }
        let doorbell = handle();
        w.signals.insert(
            doorbell,
            Signal {
                value: -1,
                doorbell: true,
            },
        );
        let id = handle();
        let q = Box::into_raw(Box::new(HsaQueue {
            queue_type,
            features: sys::agent_feature::KERNEL_DISPATCH,
            base_address: ring.cast(),
            doorbell_signal: HsaSignal { handle: doorbell },
            size,
            reserved1: 0,
            id,
        }));
        let key = q as usize;
        let generation = w.generation;
        let worker = std::thread::Builder::new()
            .name(format!("sim-hsa-queue-{id:x}"))
            .spawn(move || queue_worker(key, generation))
            .expect("a thread for a simulated queue");
        w.queues.insert(
            key,
            QueueState {
                id,
                agent: index,
                ring: ring as usize,
                size,
                read: 0,
                write: 0,
                doorbell,
                callback,
                data: data as usize,
                failed: false,
                worker: Some(worker),
            },
        );
        // SAFETY: writable per the API.
        unsafe { *queue = q };
        HSA_STATUS_SUCCESS
    })
}

pub(super) unsafe extern "C" fn hsa_queue_destroy(queue: *mut HsaQueue) -> HsaStatus {
    let removed = with(|w| {
        w.enter("hsa_queue_destroy")?;
        if w.initialized == 0 {
            return Err(sys::HSA_STATUS_ERROR_NOT_INITIALIZED);
        }
        let state = w
            .queues
            .remove(&(queue as usize))
            .ok_or(sys::HSA_STATUS_ERROR_INVALID_QUEUE)?;
        w.signals.remove(&state.doorbell);
        Ok(state)
    });
    let mut state = match removed {
        Ok(state) => state,
        Err(status) => return status,
    };
    // The worker sees its queue gone and ends; a kernel body that destroys its own queue is not waited
    // for (the worker touches the ring only while the queue exists).
    if let Some(worker) = state.worker.take() {
        if worker.thread().id() != std::thread::current().id() {
            let _ = worker.join();
        }
    }
    // SAFETY: the ring and the queue were allocated in hsa_queue_create with these layouts, and no
    // thread of the simulation uses them any more.
    unsafe {
        std::alloc::dealloc(state.ring as *mut u8, ring_layout(state.size));
        drop(Box::from_raw(queue));
    }
    HSA_STATUS_SUCCESS
}

pub(super) fn on_queue<R: Default>(
    name: &'static str,
    queue: *const HsaQueue,
    f: impl FnOnce(&mut QueueState) -> R,
) -> R {
    peek(name, |w| match w.queues.get_mut(&(queue as usize)) {
        Some(q) => f(q),
        None => {
            w.note(format!("{name} on queue {queue:p}, which does not exist"));
            R::default()
        }
    })
}

pub(super) unsafe extern "C" fn hsa_queue_load_read_index_scacquire(queue: *const HsaQueue) -> u64 {
    on_queue("hsa_queue_load_read_index_scacquire", queue, |q| q.read)
}

pub(super) unsafe extern "C" fn hsa_queue_load_write_index_relaxed(queue: *const HsaQueue) -> u64 {
    on_queue("hsa_queue_load_write_index_relaxed", queue, |q| q.write)
}

pub(super) unsafe extern "C" fn hsa_queue_store_write_index_relaxed(queue: *const HsaQueue, value: u64) {
    on_queue("hsa_queue_store_write_index_relaxed", queue, |q| q.write = value)
}

pub(super) unsafe extern "C" fn hsa_queue_add_write_index_relaxed(queue: *const HsaQueue, value: u64) -> u64 {
    on_queue("hsa_queue_add_write_index_relaxed", queue, |q| {
        let old = q.write;
        q.write += value;
        old
    })
}

/// What the packet processor does with the packet at the read index.
pub(super) enum Job {
    /// Nothing to run: the packet (a barrier) is done.
    Done { completion: u64 },
    /// Run a kernel body, then complete.
    Kernel {
        body: Option<KernelBody>,
        args: Vec<u64>,
        completion: u64,
    },
    /// The queue fails with this status.
    Fault(HsaStatus),
}

/// The header of slot `index` of a ring.
///
/// # Safety
/// `ring` holds at least `index + 1` 64-byte packets.
pub(super) unsafe fn header(ring: usize, index: usize) -> &'static AtomicU16 {
    // SAFETY: per this function's contract; headers are 2-byte aligned and accessed atomically by the
    // plugin and the simulation alike.
    unsafe { AtomicU16::from_ptr((ring + index * 64) as *mut u16) }
}

/// Looks at the packet at the read index of `q` (the world's lock held): `None` while there is none
/// ready (not yet published, doorbell not rung, or a barrier whose dependencies are not met).
pub(super) fn examine(w: &mut World, key: usize) -> Option<Job> {
    if w.held {
        return None;
    }
    let q = w.queues.get(&key)?;
    if q.failed {
        return None;
    }
    let rung = w.signal_value(q.doorbell).unwrap_or(-1);
    if rung < q.read as i64 {
        return None;
    }
    let slot = (q.read % u64::from(q.size)) as usize;
    // SAFETY: `slot` is inside the ring, which lives as long as the queue.
    let head = unsafe { header(q.ring, slot) }.load(Ordering::Acquire);
    let kind = head & 0xff;
    if kind == packet_type::INVALID {
        return None;
    }
    let at = q.ring + slot * 64;
    let (queue_id, agent) = (q.id, q.agent);
    match kind {
        packet_type::BARRIER_AND | packet_type::BARRIER_OR => {
            // SAFETY: the header's acquire load published the packet's other bytes.
            let packet = unsafe { (at as *const sys::BarrierAndPacket).read() };
            let deps: Vec<u64> = packet.dep_signal.iter().map(|s| s.handle).filter(|&h| h != 0).collect();
            let mut values = Vec::new();
            for d in &deps {
                match w.signal_value(*d) {
                    Some(v) => values.push(v),
                    None => {
                        w.note(format!(
                            "a barrier packet depends on signal {d:#x}, which does not exist"
                        ));
                        return Some(Job::Fault(sys::HSA_STATUS_ERROR_INVALID_PACKET_FORMAT));
                    }
                }
            }
            let met = if kind == packet_type::BARRIER_AND {
                values.iter().all(|&v| v == 0)
            } else {
                values.is_empty() || values.contains(&0)
            };
            met.then_some(Job::Done {
                completion: packet.completion_signal.handle,
            })
        }
        packet_type::KERNEL_DISPATCH => {
            // SAFETY: as above.
            let packet = unsafe { (at as *const KernelDispatchPacket).read() };
            Some(dispatch(w, queue_id, agent, &packet))
        }
        _ => Some(Job::Fault(sys::HSA_STATUS_ERROR_INVALID_PACKET_FORMAT)),
    }
}

/// Checks a kernel dispatch packet as the command processor would and prepares its run.
pub(super) fn dispatch(w: &mut World, queue: u64, agent: usize, packet: &KernelDispatchPacket) -> Job {
    let dimensions = packet.setup & 3;
    let Some(kernel) = w
        .kernel_objects
        .get(&packet.kernel_object)
        .and_then(|s| w.symbols.get(s))
        .and_then(|s| match &s.kind {
            SymbolKind::Kernel(k) => Some(k.clone()),
            SymbolKind::Variable { .. } => None,
        })
    else {
        w.note(format!(
            "a dispatch of kernel object {:#x}, which no loaded executable holds",
            packet.kernel_object
        ));
        return Job::Fault(sys::HSA_STATUS_ERROR_INVALID_PACKET_FORMAT);
    };
    if dimensions == 0
        || packet.workgroup_size_x == 0
        || packet.workgroup_size_x > 1024
        || packet.grid_size_x == 0
        || packet.group_segment_size as usize > GROUP_MEMORY
    {
        return Job::Fault(sys::HSA_STATUS_ERROR_INVALID_PACKET_FORMAT);
    }
    let words = kernel.kernarg_size as usize / 8;
    let kernargs = packet.kernarg_address as usize;
    if kernel.kernarg_size > 0 {
        let readable = w
            .region(kernargs, kernel.kernarg_size as usize)
            .is_some_and(|r| r.accessible_by(&w.agents, agent));
        if !readable {
            w.note(format!(
                "kernel {} read its arguments at {kernargs:#x}, which its GPU cannot access",
                kernel.name
            ));
            return Job::Fault(sys::HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION);
        }
    }
    // SAFETY: the kernarg range was checked to be simulated memory the agent may read.
    let args: Vec<u64> = (0..words)
        .map(|i| unsafe { (kernargs as *const u64).add(i).read_unaligned() })
        .collect();
    w.launches.push(Launch {
        kernel: kernel.name.clone(),
        grid_size_x: packet.grid_size_x,
        workgroup_size_x: u32::from(packet.workgroup_size_x),
        group_segment_size: packet.group_segment_size,
        private_segment_size: packet.private_segment_size,
        args: args.clone(),
        queue,
        static_group_segment_size: kernel.group,
    });
    Job::Kernel {
        body: w.bodies.get(&kernel.name).cloned(),
        args,
        completion: packet.completion_signal.handle,
    }
}

/// The packet processor of one queue: runs its packets in order, each once published and announced
/// on the doorbell; ends when the queue is destroyed or the world reset.
pub(super) fn queue_worker(key: usize, generation: u64) {
    loop {
        let job = {
            let mut guard = world();
            loop {
                let Some(w) = guard.as_mut().filter(|w| w.generation == generation) else {
                    return;
                };
                if !w.queues.contains_key(&key) {
                    return;
                }
                if let Some(job) = examine(w, key) {
                    break job;
                }
                guard = wait(guard);
            }
        };
        let (status, completion) = match job {
            Job::Done { completion } => (HSA_STATUS_SUCCESS, completion),
            Job::Kernel { body, args, completion } => {
                let status = match body {
                    Some(body) => body(&args).err().unwrap_or(HSA_STATUS_SUCCESS),
                    None => HSA_STATUS_SUCCESS,
                };
                (status, completion)
            }
            Job::Fault(status) => (status, 0),
        };
        let mut guard = world();
        let Some(w) = guard.as_mut().filter(|w| w.generation == generation) else {
            return;
        };
        let Some(q) = w.queues.get_mut(&key) else {
            return;
        };
        if status != HSA_STATUS_SUCCESS {
            // A queue in error runs nothing more, and the failed packet never completes, as on a GPU:
            // the plugin learns of it from the error callback.
            q.failed = true;
            let (id, callback, data) = (q.id, q.callback, q.data);
            w.faults.push((id, status));
            drop(guard);
            CHANGED.notify_all();
            if let Some(callback) = callback {
                // SAFETY: the callback was registered for this queue with this data pointer.
                unsafe { callback(status, key as *mut HsaQueue, data as *mut c_void) };
            }
            continue;
        }
        let slot = (q.read % u64::from(q.size)) as usize;
        // SAFETY: the queue still exists, so its ring does.
        unsafe { header(q.ring, slot) }.store(packet_type::INVALID, Ordering::Release);
        q.read += 1;
        if completion != 0 {
            match w.signals.get_mut(&completion) {
                Some(s) => s.value -= 1,
                None => w.note(format!("a packet's completion signal {completion:#x} does not exist")),
            }
        }
        drop(guard);
        CHANGED.notify_all();
    }
}
