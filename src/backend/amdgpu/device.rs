//! One AMD GPU as the backend keeps it: its agent and what was read of it at start-up, and, while it
//! is initialised, its HSA queues, signals, kernarg and staging buffers.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::code_object::TargetId;
use super::doorbell::DeviceDoorbell;
use super::memory::HostBuffers;
use super::queue::{AqlQueue, Health, SignalPool};
use super::runtime::{Api, PoolSummary};
use super::sys::{agent_info, pool_global_flag, segment, HsaAgent, HsaMemoryPool};
use crate::util::config::AmdgpuSettings;
use crate::util::error::{Error, Result};
use crate::util::sync::lock;

/// The host's pools, gathered over the CPU agents as the stock plugin does: the first fine-grained
/// global pool (host and pinned memory, staging) and the first kernarg pool.
#[derive(Clone, Copy, Debug)]
pub struct HostPools {
    /// Fine-grained host memory every agent may be given access to.
    pub fine: HsaMemoryPool,
    /// Memory for kernel arguments.
    pub kernargs: HsaMemoryPool,
}

impl HostPools {
    /// Picks the host's pools from every CPU agent's pools, in order.
    pub fn choose(pools: &[PoolSummary]) -> Result<HostPools> {
        let usable = |p: &&PoolSummary| p.segment == segment::GLOBAL && p.alloc_allowed;
        let fine = pools
            .iter()
            .filter(usable)
            .find(|p| p.global_flags & pool_global_flag::FINE_GRAINED != 0)
            .ok_or_else(|| Error::Unsupported("the HSA runtime shows no fine-grained host memory pool".into()))?;
        let kernargs = pools
            .iter()
            .filter(usable)
            .find(|p| {
                p.global_flags & pool_global_flag::FINE_GRAINED != 0
                    && p.global_flags & pool_global_flag::KERNARG_INIT != 0
            })
            .ok_or_else(|| Error::Unsupported("the HSA runtime shows no kernel-argument memory pool".into()))?;
        Ok(HostPools {
            fine: fine.pool,
            kernargs: kernargs.pool,
        })
    }
}

/// What the plugin read of a GPU agent when the runtime was opened. The runtime's handles change when
/// it is shut down and started again (a library registered after teardown); the rest does not.
#[derive(Debug)]
pub struct AgentFacts {
    /// The runtime's handle on the agent.
    agent: AtomicU64,
    /// `HSA_AGENT_INFO_NAME` ("gfx90a").
    pub name: String,
    /// The target of its own ISA, e.g. "gfx90a:sramecc+:xnack-", which images are judged against.
    pub target: TargetId,
    /// The generic ISA the runtime lists beside it, if any ("gfx9-4-generic:sramecc+:xnack-"), whose
    /// code runs on the agent too.
    pub generic: Option<TargetId>,
    /// Compute units.
    pub compute_units: u32,
    /// Work-items per wavefront (64, or 32 on wave32 parts).
    pub wavefront_size: u32,
    /// `WORKGROUP_MAX_DIM[0]`: most work-items in a work-group along x.
    pub max_threads: u32,
    /// `GRID_MAX_DIM.x`: most work-items in a grid along x.
    pub max_grid: u32,
    /// Fewest packets one queue may hold (64 in ROCr).
    pub queue_min_size: u32,
    /// Most packets one queue may hold (131,072 in ROCr).
    pub queue_max_size: u32,
    /// Most queues the agent supports.
    pub queues_max: u32,
    /// The first coarse-grained global pool: device memory.
    device_pool: AtomicU64,
    /// Its size in bytes.
    pub memory_bytes: u64,
}

impl AgentFacts {
    /// Reads what the plugin needs of a GPU agent.
    pub fn read(api: Api, agent: HsaAgent, name: String) -> Result<AgentFacts> {
        let isas = api.isa_names(agent)?;
        // ROCm 6.2 and later list a generic ISA after the agent's own (gfx942, then gfx9-4-generic):
        // the agent's target is the specific one, and code built for the generic one runs too.
        let parsed: Vec<TargetId> = isas.iter().filter_map(|isa| TargetId::parse(isa)).collect();
        let target = match parsed.iter().find(|t| !t.is_generic()) {
            Some(target) => target.clone(),
            None if isas.is_empty() => {
                return Err(Error::Unsupported(format!(
                    "the HSA runtime shows no ISA for GPU agent {name}"
                )))
            }
            None => {
                return Err(Error::Unsupported(format!(
                    "GPU agent {name} has no ISA name omprpc can read: {isas:?}"
                )))
            }
        };
        let generic = parsed.into_iter().find(TargetId::is_generic);
        let u32_of = |attribute, call| api.agent_u32(agent, attribute, call);
        let workgroup: [u8; 6] = api.agent_bytes(
            agent,
            agent_info::WORKGROUP_MAX_DIM,
            "hsa_agent_get_info(WORKGROUP_MAX_DIM)",
        )?;
        let grid: [u8; 12] = api.agent_bytes(agent, agent_info::GRID_MAX_DIM, "hsa_agent_get_info(GRID_MAX_DIM)")?;
        let pools = api.pools(agent)?;
        let device_pool = pools
            .iter()
            .find(|p| {
                p.segment == segment::GLOBAL
                    && p.alloc_allowed
                    && p.global_flags & pool_global_flag::FINE_GRAINED == 0
                    && p.global_flags & pool_global_flag::COARSE_GRAINED != 0
            })
            .ok_or_else(|| Error::Unsupported(format!("GPU agent {name} has no coarse-grained memory pool")))?;
        Ok(AgentFacts {
            agent: AtomicU64::new(agent.handle),
            target,
            generic,
            compute_units: u32_of(agent_info::COMPUTE_UNIT_COUNT, "hsa_agent_get_info(COMPUTE_UNIT_COUNT)")?,
            wavefront_size: u32_of(agent_info::WAVEFRONT_SIZE, "hsa_agent_get_info(WAVEFRONT_SIZE)")?,
            max_threads: u32::from(u16::from_ne_bytes([workgroup[0], workgroup[1]])),
            max_grid: u32::from_ne_bytes(grid[0..4].try_into().expect("4 bytes")),
            queue_min_size: u32_of(agent_info::QUEUE_MIN_SIZE, "hsa_agent_get_info(QUEUE_MIN_SIZE)")?,
            queue_max_size: u32_of(agent_info::QUEUE_MAX_SIZE, "hsa_agent_get_info(QUEUE_MAX_SIZE)")?,
            queues_max: u32_of(agent_info::QUEUES_MAX, "hsa_agent_get_info(QUEUES_MAX)")?,
            device_pool: AtomicU64::new(device_pool.pool.handle),
            memory_bytes: device_pool.size,
            name,
        })
    }

    /// Whether code built for `image` runs on the agent: built for its own ISA or for the generic one
    /// the runtime lists beside it.
    pub fn runs(&self, image: &TargetId) -> bool {
        image.runs_on(&self.target) || self.generic.as_ref().is_some_and(|generic| image.runs_on(generic))
    }

    /// Packets per queue for `wanted` (`LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE`): a power of two, as
    /// `hsa_queue_create` requires, within the agent's limits (rounded down, but never below the
    /// smallest queue the agent takes), so that no setting makes every queue creation fail.
    pub fn queue_size(&self, wanted: usize) -> u32 {
        let most = self.queue_max_size.max(2);
        let least = self.queue_min_size.clamp(2, most).next_power_of_two().min(most);
        let wanted = u32::try_from(wanted).unwrap_or(u32::MAX).clamp(least, most);
        let power = 1u32 << (u32::BITS - 1 - wanted.leading_zeros());
        power.max(least)
    }

    /// The runtime's handle on the agent.
    pub fn agent(&self) -> HsaAgent {
        HsaAgent {
            handle: self.agent.load(Ordering::Acquire),
        }
    }

    /// The pool device memory comes from.
    pub fn device_pool(&self) -> HsaMemoryPool {
        HsaMemoryPool {
            handle: self.device_pool.load(Ordering::Acquire),
        }
    }

    /// Takes the handles of `fresh`, read from the same GPU after the runtime was started again.
    pub fn rebind(&self, fresh: &AgentFacts) {
        self.agent.store(fresh.agent().handle, Ordering::Release);
        self.device_pool.store(fresh.device_pool().handle, Ordering::Release);
    }
}

/// What a stream still held when its device failed, kept by the device and released with it. A
/// stream hands it over; the device only asks it to settle, without knowing what a stream holds.
pub trait Leftover: Send {
    /// Releases what nothing uses any more, once the device's queues are destroyed (no kernel or
    /// barrier runs), waiting until `deadline` for copies; returns how many things were left alone
    /// for good (a leak, not a use-after-free) and the first error.
    fn settle(self: Box<Self>, ready: &Ready, api: Api, deadline: std::time::Instant) -> (usize, Result<()>);
}

/// What an initialised device holds.
pub struct Ready {
    /// The HSA queues its streams share, handed out round robin.
    pub queues: Vec<Arc<AqlQueue>>,
    /// Signals for operations.
    pub signals: Arc<SignalPool>,
    /// Kernel-argument buffers.
    pub kernargs: HostBuffers,
    /// Staging buffers for small copies from and to pageable host memory.
    pub staging: HostBuffers,
}

/// One AMD GPU.
pub struct AmdDevice {
    /// What was read at start-up.
    pub facts: AgentFacts,
    /// Queue errors and memory faults, after which its waits fail.
    pub health: Arc<Health>,
    /// Its queues and pools while initialised.
    ready: Mutex<Option<Arc<Ready>>>,
    /// What streams held when the device failed, released with the device.
    pub leftovers: Mutex<Vec<Box<dyn Leftover>>>,
    next_queue: AtomicUsize,
    /// The signal device code rings after a host call's request, made by the first image with host
    /// services, released with the device.
    doorbell: Mutex<Option<Box<DeviceDoorbell>>>,
}

impl AmdDevice {
    /// A device not yet initialised.
    pub fn new(facts: AgentFacts) -> AmdDevice {
        AmdDevice {
            facts,
            health: Arc::new(Health::default()),
            ready: Mutex::new(None),
            leftovers: Mutex::new(Vec::new()),
            next_queue: AtomicUsize::new(0),
            doorbell: Mutex::new(None),
        }
    }

    /// Creates the queues, signals and buffer caches. A failure of an earlier use is forgotten: the
    /// queues it broke were destroyed with it.
    pub fn init(&self, api: Api, host: HostPools, settings: &AmdgpuSettings) -> Result<()> {
        self.health.reset();
        let count = settings.hsa_queues.min(self.facts.queues_max.max(1) as usize);
        let size = self.facts.queue_size(settings.hsa_queue_size);
        let mut queues = Vec::with_capacity(count);
        for _ in 0..count {
            match AqlQueue::create(api, self.facts.agent(), size, &self.health) {
                Ok(queue) => queues.push(Arc::new(queue)),
                Err(e) => {
                    for queue in queues {
                        let _ = queue.destroy();
                    }
                    return Err(e);
                }
            }
        }
        let signals = match SignalPool::new(api, settings.initial_signals, &self.health) {
            Ok(signals) => signals,
            Err(e) => {
                for queue in queues {
                    let _ = queue.destroy();
                }
                return Err(e);
            }
        };
        *lock(&self.ready) = Some(Arc::new(Ready {
            queues,
            signals,
            kernargs: HostBuffers::new(api, host.kernargs, self.facts.agent()),
            staging: HostBuffers::new(api, host.fine, self.facts.agent()),
        }));
        Ok(())
    }

    /// Its queues and pools, or the error of a device not initialised.
    pub fn ready(&self, index: usize) -> Result<Arc<Ready>> {
        lock(&self.ready)
            .clone()
            .ok_or(Error::DeviceNotInitialized(index as i32))
    }

    /// The handle of the device's host-call doorbell signal (made on first use), which rings
    /// `doorbell`.
    pub fn rpc_doorbell(&self, api: Api, doorbell: &'static crate::util::doorbell::Doorbell) -> Result<u64> {
        let mut slot = lock(&self.doorbell);
        if let Some(bell) = &*slot {
            return Ok(bell.handle());
        }
        let bell = DeviceDoorbell::create(api, doorbell)?;
        let handle = bell.handle();
        *slot = Some(bell);
        Ok(handle)
    }

    /// Rings of the device's host-call doorbell passed on so far (0 without one), for tests.
    pub fn rpc_doorbell_rings(&self) -> u64 {
        lock(&self.doorbell).as_ref().map_or(0, |bell| bell.rings())
    }

    /// The HSA queue the next stream uses.
    pub fn next_queue(&self, ready: &Ready) -> Arc<AqlQueue> {
        let at = self.next_queue.fetch_add(1, Ordering::Relaxed) % ready.queues.len();
        Arc::clone(&ready.queues[at])
    }

    /// Releases the queues, signals and buffers. The core destroyed every stream and event first
    /// (streams it still holds refuse work afterwards); every part is released even when one fails.
    /// The queues go first, so that no kernel runs; then what failed streams left, once the copy
    /// engine and the runtime's handler thread are done with it (what they never finish with stays
    /// allocated, and is reported); then the buffers and signals.
    pub fn release(&self, api: Api) -> Result<()> {
        let Some(ready) = lock(&self.ready).take() else {
            return Ok(());
        };
        let mut result = Ok(());
        for queue in &ready.queues {
            result = result.and(queue.destroy());
        }
        // No kernel runs now, so none rings the doorbell any more.
        if let Some(bell) = lock(&self.doorbell).take() {
            result = result.and(bell.release());
        }
        let mut stuck = 0;
        // One second in all for the copy engine, however many streams left something.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        for leftovers in std::mem::take(&mut *lock(&self.leftovers)) {
            let (left, released) = leftovers.settle(&ready, api, deadline);
            stuck += left;
            result = result.and(released);
        }
        if stuck > 0 {
            crate::util::log::error(format_args!(
                "AMD GPU {}: {stuck} buffer(s) or signal(s) of work that never finished after the device failed \
                 are left allocated",
                self.facts.name
            ));
        }
        result = result.and(ready.kernargs.free_all());
        result = result.and(ready.staging.free_all());
        result.and(ready.signals.destroy_all())
    }
}
