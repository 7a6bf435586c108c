//! The HSA runtime opened and its entry points as functions that return `Result`: a failing
//! `hsa_status_t` becomes [`Error::Driver`] naming the call and the status by its header name and
//! hexadecimal value (`HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)`). This is the one place where HSA
//! statuses become errors.

use std::ffi::{c_void, CStr};

use super::sys::{
    self, agent_info, device_type, isa_info, pool_info, signal_condition, symbol_info, wait_state, HsaAgent,
    HsaCodeObjectReader, HsaExecutable, HsaExecutableSymbol, HsaMemoryPool, HsaQueue, HsaSignal, HsaSignalValue,
    HsaStatus, HSA_STATUS_ERROR_INVALID_SYMBOL_NAME, HSA_STATUS_ERROR_OUT_OF_RESOURCES, HSA_STATUS_SUCCESS,
};
use crate::backend::gpu::library::Opened;
use crate::util::error::{Error, Result, HSA};

/// An opened runtime: its entry points and the file they came from ("libhsa-runtime64.so.1", a
/// simulated runtime's name). It stays loaded for the life of the process.
pub type Runtime = Opened<sys::Functions>;

/// Collects what an HSA iteration hands its callback into the `Vec<T>` behind `data`.
///
/// # Safety
/// `data` is a `Vec<T>` alive and not otherwise borrowed for the iteration it is passed to.
unsafe extern "C" fn collect<T>(item: T, data: *mut c_void) -> HsaStatus {
    // SAFETY: per this function's contract.
    unsafe { &mut *data.cast::<Vec<T>>() }.push(item);
    HSA_STATUS_SUCCESS
}

/// The error of an HSA `call` that returned `status`: the status's header name and hexadecimal value.
pub fn hsa_error(call: &'static str, status: HsaStatus) -> Error {
    Error::Driver {
        driver: HSA,
        call,
        code: i64::from(status),
        name: sys::status_name(status)
            .map(str::to_string)
            .unwrap_or_else(|| "an unknown hsa_status_t".into()),
    }
}

/// Checked calls into an opened runtime.
#[derive(Clone, Copy)]
pub struct Api {
    runtime: &'static Runtime,
}

/// What the plugin needs to know of one agent to decide whether it is a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentSummary {
    /// The runtime's handle.
    pub agent: HsaAgent,
    /// `HSA_AGENT_INFO_DEVICE`: CPU, GPU or DSP.
    pub device_type: u32,
    /// `HSA_AGENT_INFO_NAME`: for a GPU its target, e.g. "gfx90a".
    pub name: String,
}

impl Api {
    /// Checked calls into `runtime`.
    pub fn new(runtime: &'static Runtime) -> Api {
        Api { runtime }
    }

    /// The library the runtime came from.
    pub fn library(&self) -> &str {
        &self.runtime.library
    }

    fn f(&self) -> &sys::Functions {
        &self.runtime.functions
    }

    /// `Ok` for success, else the error naming `call` and the status.
    pub fn check(&self, call: &'static str, status: HsaStatus) -> Result<()> {
        if status == HSA_STATUS_SUCCESS {
            return Ok(());
        }
        Err(hsa_error(call, status))
    }

    /// `hsa_init`: counted by the runtime, so every success is matched by one [`Api::shut_down`].
    pub fn init(&self) -> Result<()> {
        // SAFETY: hsa_init has no preconditions.
        self.check("hsa_init", unsafe { (self.f().hsa_init)() })
    }

    /// `hsa_shut_down`, once per successful [`Api::init`].
    pub fn shut_down(&self) -> Result<()> {
        // SAFETY: hsa_shut_down has no preconditions; the runtime refuses it when not initialised.
        self.check("hsa_shut_down", unsafe { (self.f().hsa_shut_down)() })
    }

    /// Every agent the runtime offers, with its type and name, in the runtime's order.
    pub fn agents(&self) -> Result<Vec<AgentSummary>> {
        let mut agents: Vec<HsaAgent> = Vec::new();
        // SAFETY: the callback matches hsa_iterate_agents' and only pushes into `agents`.
        self.check("hsa_iterate_agents", unsafe {
            (self.f().hsa_iterate_agents)(collect::<HsaAgent>, (&mut agents as *mut Vec<HsaAgent>).cast())
        })?;
        agents
            .into_iter()
            .map(|agent| {
                Ok(AgentSummary {
                    agent,
                    device_type: self.agent_u32(agent, agent_info::DEVICE, "hsa_agent_get_info(DEVICE)")?,
                    name: self.agent_name(agent)?,
                })
            })
            .collect()
    }

    /// A 4-byte attribute of `agent`.
    pub fn agent_u32(&self, agent: HsaAgent, attribute: u32, call: &'static str) -> Result<u32> {
        let mut value = 0u32;
        // SAFETY: every attribute read through here is documented as 4 bytes, which `value` holds.
        self.check(call, unsafe {
            (self.f().hsa_agent_get_info)(agent, attribute, (&mut value as *mut u32).cast())
        })?;
        Ok(value)
    }

    /// A 2- or 4-byte-element array attribute of `agent` (`WORKGROUP_MAX_DIM`: 3 × u16,
    /// `GRID_MAX_DIM`: 3 × u32), read into `N` bytes.
    pub fn agent_bytes<const N: usize>(&self, agent: HsaAgent, attribute: u32, call: &'static str) -> Result<[u8; N]> {
        let mut value = [0u8; N];
        // SAFETY: callers pass `N` at least the attribute's documented size.
        self.check(call, unsafe {
            (self.f().hsa_agent_get_info)(agent, attribute, value.as_mut_ptr().cast())
        })?;
        Ok(value)
    }

    /// The names of `agent`'s ISAs (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`), in the runtime's
    /// order.
    pub fn isa_names(&self, agent: HsaAgent) -> Result<Vec<String>> {
        let mut isas: Vec<sys::HsaIsa> = Vec::new();
        // SAFETY: the callback matches hsa_agent_iterate_isas' and only pushes into `isas`.
        self.check("hsa_agent_iterate_isas", unsafe {
            (self.f().hsa_agent_iterate_isas)(
                agent,
                collect::<sys::HsaIsa>,
                (&mut isas as *mut Vec<sys::HsaIsa>).cast(),
            )
        })?;
        isas.into_iter()
            .map(|isa| {
                let mut len = 0u32;
                // SAFETY: NAME_LENGTH is a u32.
                self.check("hsa_isa_get_info_alt(NAME_LENGTH)", unsafe {
                    (self.f().hsa_isa_get_info_alt)(isa, isa_info::NAME_LENGTH, (&mut len as *mut u32).cast())
                })?;
                let mut name = vec![0u8; len.min(1 << 12) as usize + 1];
                // SAFETY: NAME writes NAME_LENGTH bytes, which `name` holds with a NUL to spare.
                self.check("hsa_isa_get_info_alt(NAME)", unsafe {
                    (self.f().hsa_isa_get_info_alt)(isa, isa_info::NAME, name.as_mut_ptr().cast())
                })?;
                Ok(CStr::from_bytes_until_nul(&name)
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default())
            })
            .collect()
    }

    /// `agent`'s memory pools, in the runtime's order.
    pub fn pools(&self, agent: HsaAgent) -> Result<Vec<PoolSummary>> {
        let mut pools: Vec<HsaMemoryPool> = Vec::new();
        // SAFETY: the callback matches the iterator's and only pushes into `pools`.
        self.check("hsa_amd_agent_iterate_memory_pools", unsafe {
            (self.f().hsa_amd_agent_iterate_memory_pools)(
                agent,
                collect::<HsaMemoryPool>,
                (&mut pools as *mut Vec<HsaMemoryPool>).cast(),
            )
        })?;
        pools
            .into_iter()
            .map(|pool| {
                let get = |attribute: u32, value: *mut c_void| {
                    // SAFETY: each attribute below is read into storage of its documented size.
                    self.check("hsa_amd_memory_pool_get_info", unsafe {
                        (self.f().hsa_amd_memory_pool_get_info)(pool, attribute, value)
                    })
                };
                let (mut segment, mut global_flags, mut alloc_allowed, mut size) = (0u32, 0u32, false, 0usize);
                get(pool_info::SEGMENT, (&mut segment as *mut u32).cast())?;
                if segment == sys::segment::GLOBAL {
                    get(pool_info::GLOBAL_FLAGS, (&mut global_flags as *mut u32).cast())?;
                }
                get(
                    pool_info::RUNTIME_ALLOC_ALLOWED,
                    (&mut alloc_allowed as *mut bool).cast(),
                )?;
                get(pool_info::SIZE, (&mut size as *mut usize).cast())?;
                Ok(PoolSummary {
                    pool,
                    segment,
                    global_flags,
                    alloc_allowed,
                    size: size as u64,
                })
            })
            .collect()
    }

    /// `size` bytes from `pool`; a pool without room is [`Error::OutOfMemory`], which the core answers
    /// by freeing the blocks it caches and trying again.
    pub fn pool_allocate(&self, pool: HsaMemoryPool, size: usize) -> Result<*mut c_void> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: `ptr` is writable.
        let status = unsafe { (self.f().hsa_amd_memory_pool_allocate)(pool, size, 0, &mut ptr) };
        if status == HSA_STATUS_ERROR_OUT_OF_RESOURCES {
            return Err(Error::OutOfMemory { size });
        }
        self.check("hsa_amd_memory_pool_allocate", status)?;
        Ok(ptr)
    }

    /// `size` bytes from `pool` that `agents` may access too (none: only the pool's own agent); freed
    /// again when access cannot be given.
    pub fn pool_allocate_for(&self, pool: HsaMemoryPool, size: usize, agents: &[HsaAgent]) -> Result<*mut c_void> {
        let ptr = self.pool_allocate(pool, size)?;
        if agents.is_empty() {
            return Ok(ptr);
        }
        // SAFETY: just allocated from a pool.
        if let Err(e) = unsafe { self.allow_access(agents, ptr) } {
            // SAFETY: just allocated and used by nothing.
            let _ = unsafe { self.pool_free(ptr) };
            return Err(e);
        }
        Ok(ptr)
    }

    /// Frees what [`Api::pool_allocate`] returned.
    ///
    /// # Safety
    /// `ptr` came from `pool_allocate` and nothing uses it any more.
    pub unsafe fn pool_free(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("hsa_amd_memory_pool_free", unsafe {
            (self.f().hsa_amd_memory_pool_free)(ptr)
        })
    }

    /// Lets `agents` access the pool allocation at `ptr`.
    ///
    /// # Safety
    /// `ptr` came from [`Api::pool_allocate`] and is not freed.
    pub unsafe fn allow_access(&self, agents: &[HsaAgent], ptr: *const c_void) -> Result<()> {
        // SAFETY: `agents` is readable for its length; `ptr` per this function's contract.
        self.check("hsa_amd_agents_allow_access", unsafe {
            (self.f().hsa_amd_agents_allow_access)(agents.len() as u32, agents.as_ptr(), std::ptr::null(), ptr)
        })
    }

    /// Pins `size` bytes of host memory at `ptr` for every agent; returns the address agents use.
    ///
    /// # Safety
    /// `[ptr, ptr + size)` is mapped host memory that stays mapped until it is unlocked.
    pub unsafe fn memory_lock(&self, ptr: *mut c_void, size: usize) -> Result<*mut c_void> {
        let mut agent_ptr = std::ptr::null_mut();
        // SAFETY: per this function's contract; with no agent list the runtime pins for all agents;
        // `agent_ptr` is writable.
        self.check("hsa_amd_memory_lock", unsafe {
            (self.f().hsa_amd_memory_lock)(ptr, size, std::ptr::null_mut(), 0, &mut agent_ptr)
        })?;
        Ok(agent_ptr)
    }

    /// Undoes [`Api::memory_lock`] for the range that starts at `ptr`.
    ///
    /// # Safety
    /// `ptr` starts a range this process locked, which no copy in flight uses.
    pub unsafe fn memory_unlock(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("hsa_amd_memory_unlock", unsafe {
            (self.f().hsa_amd_memory_unlock)(ptr)
        })
    }

    /// How `agent` may reach `pool` (`HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS`: never, allowed by
    /// default, or once given access).
    pub fn pool_access(&self, agent: HsaAgent, pool: HsaMemoryPool) -> Result<u32> {
        let mut access = 0u32;
        // SAFETY: ACCESS is a u32.
        self.check("hsa_amd_agent_memory_pool_get_info(ACCESS)", unsafe {
            (self.f().hsa_amd_agent_memory_pool_get_info)(
                agent,
                pool,
                sys::agent_pool_info::ACCESS,
                (&mut access as *mut u32).cast(),
            )
        })?;
        Ok(access)
    }

    /// Copies `size` bytes from `src` to `dst` once every signal of `deps` is 0, then decrements
    /// `completion`. As the stock plugin does, the GPU agent is named for both ends.
    ///
    /// # Safety
    /// Both ranges are device-accessible (device memory, or pinned or pool host memory) and stay valid
    /// until `completion` reaches 0.
    pub unsafe fn async_copy(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        agent: HsaAgent,
        deps: &[HsaSignal],
        completion: HsaSignal,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.async_copy_between(dst, agent, src, agent, size, deps, completion) }
    }

    /// [`Api::async_copy`] between two agents' memory: `src_agent` copies, so it must reach `dst`.
    ///
    /// # Safety
    /// As for [`Api::async_copy`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn async_copy_between(
        &self,
        dst: *mut c_void,
        dst_agent: HsaAgent,
        src: *const c_void,
        src_agent: HsaAgent,
        size: usize,
        deps: &[HsaSignal],
        completion: HsaSignal,
    ) -> Result<()> {
        // SAFETY: per this function's contract; `deps` is readable for its length.
        self.check("hsa_amd_memory_async_copy", unsafe {
            (self.f().hsa_amd_memory_async_copy)(
                dst,
                dst_agent,
                src,
                src_agent,
                size,
                deps.len() as u32,
                if deps.is_empty() {
                    std::ptr::null()
                } else {
                    deps.as_ptr()
                },
                completion,
            )
        })
    }

    /// A new signal holding `initial`.
    pub fn signal_create(&self, initial: HsaSignalValue) -> Result<HsaSignal> {
        let mut signal = HsaSignal::default();
        // SAFETY: no consumer list; `signal` is writable.
        self.check("hsa_amd_signal_create", unsafe {
            (self.f().hsa_amd_signal_create)(initial, 0, std::ptr::null(), 0, &mut signal)
        })?;
        Ok(signal)
    }

    /// Destroys a signal nothing waits on or will signal.
    ///
    /// # Safety
    /// `signal` came from [`Api::signal_create`] and is destroyed once.
    pub unsafe fn signal_destroy(&self, signal: HsaSignal) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("hsa_signal_destroy", unsafe { (self.f().hsa_signal_destroy)(signal) })
    }

    /// The signal's value, with acquire ordering.
    pub fn signal_load(&self, signal: HsaSignal) -> HsaSignalValue {
        // SAFETY: the plugin passes only live signals it created.
        unsafe { (self.f().hsa_signal_load_scacquire)(signal) }
    }

    /// Sets the signal's value, with release ordering.
    pub fn signal_store(&self, signal: HsaSignal, value: HsaSignalValue) {
        // SAFETY: as for `signal_load`.
        unsafe { (self.f().hsa_signal_store_screlease)(signal, value) }
    }

    /// Rings a queue's doorbell with the index of the packet last written.
    pub fn ring_doorbell(&self, doorbell: HsaSignal, index: u64) {
        // SAFETY: `doorbell` is a live queue's doorbell signal.
        unsafe { (self.f().hsa_signal_store_relaxed)(doorbell, index as HsaSignalValue) }
    }

    /// Waits up to `timeout_ns` (a hint) for the signal to reach 0; returns its value then.
    pub fn signal_wait_zero(&self, signal: HsaSignal, timeout_ns: u64) -> HsaSignalValue {
        // SAFETY: as for `signal_load`.
        unsafe {
            (self.f().hsa_signal_wait_scacquire)(signal, signal_condition::EQ, 0, timeout_ns, wait_state::BLOCKED)
        }
    }

    /// Runs `handler(arg)` on the runtime's thread once the signal reaches 0.
    ///
    /// # Safety
    /// `arg` stays valid until the handler has run, and the handler is sound to run on another thread.
    pub unsafe fn on_zero(&self, signal: HsaSignal, handler: sys::SignalHandler, arg: *mut c_void) -> Result<()> {
        // SAFETY: per this function's contract.
        unsafe { self.on_condition(signal, signal_condition::EQ, 0, handler, arg) }
    }

    /// Runs `handler(value, arg)` on the runtime's thread whenever the signal's value meets
    /// `condition` against `value`, for as long as the handler returns true.
    ///
    /// # Safety
    /// `arg` stays valid until the handler has returned false, and the handler is sound to run on
    /// another thread.
    pub unsafe fn on_condition(
        &self,
        signal: HsaSignal,
        condition: u32,
        value: HsaSignalValue,
        handler: sys::SignalHandler,
        arg: *mut c_void,
    ) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("hsa_amd_signal_async_handler", unsafe {
            (self.f().hsa_amd_signal_async_handler)(signal, condition, value, handler, arg)
        })
    }

    /// A queue of `size` packets on `agent`, whose errors reach `on_error` with `data`.
    ///
    /// # Safety
    /// `data` is what `on_error` expects, alive until the queue is destroyed.
    pub unsafe fn queue_create(
        &self,
        agent: HsaAgent,
        size: u32,
        on_error: sys::QueueErrorCallback,
        data: *mut c_void,
    ) -> Result<*mut HsaQueue> {
        let mut queue = std::ptr::null_mut();
        // SAFETY: `queue` is writable; `data` per this function's contract.
        self.check("hsa_queue_create", unsafe {
            (self.f().hsa_queue_create)(
                agent,
                size,
                sys::queue_type::MULTI,
                Some(on_error),
                data,
                u32::MAX,
                u32::MAX,
                &mut queue,
            )
        })?;
        Ok(queue)
    }

    /// Destroys a queue with no packets in flight.
    ///
    /// # Safety
    /// `queue` came from [`Api::queue_create`] and is destroyed once.
    pub unsafe fn queue_destroy(&self, queue: *mut HsaQueue) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("hsa_queue_destroy", unsafe { (self.f().hsa_queue_destroy)(queue) })
    }

    /// Reserves the next packet slot of `queue`; returns its index.
    ///
    /// # Safety
    /// `queue` is a live queue.
    pub unsafe fn queue_reserve(&self, queue: *const HsaQueue) -> u64 {
        // SAFETY: per this function's contract.
        unsafe { (self.f().hsa_queue_add_write_index_relaxed)(queue, 1) }
    }

    /// The index of the next packet the agent will read.
    ///
    /// # Safety
    /// `queue` is a live queue.
    pub unsafe fn queue_read_index(&self, queue: *const HsaQueue) -> u64 {
        // SAFETY: per this function's contract.
        unsafe { (self.f().hsa_queue_load_read_index_scacquire)(queue) }
    }

    /// Loads a code object onto `agent` in a new frozen executable.
    pub fn load_executable(&self, agent: HsaAgent, image: &[u8]) -> Result<(HsaExecutable, HsaCodeObjectReader)> {
        let mut reader = HsaCodeObjectReader::default();
        // SAFETY: `image` is readable for its length and outlives the reader (the caller keeps the
        // bytes until the executable is destroyed); `reader` is writable.
        self.check("hsa_code_object_reader_create_from_memory", unsafe {
            (self.f().hsa_code_object_reader_create_from_memory)(image.as_ptr().cast(), image.len(), &mut reader)
        })?;
        let mut executable = HsaExecutable::default();
        let built = (|| {
            // SAFETY: `executable` is writable; empty options.
            self.check("hsa_executable_create_alt", unsafe {
                (self.f().hsa_executable_create_alt)(
                    sys::profile::FULL,
                    sys::float_rounding_mode::ZERO,
                    c"".as_ptr(),
                    &mut executable,
                )
            })?;
            // SAFETY: live executable and reader; no loaded-code-object handle wanted.
            self.check("hsa_executable_load_agent_code_object", unsafe {
                (self.f().hsa_executable_load_agent_code_object)(
                    executable,
                    agent,
                    reader,
                    c"".as_ptr(),
                    std::ptr::null_mut(),
                )
            })?;
            // SAFETY: a live executable.
            self.check("hsa_executable_freeze", unsafe {
                (self.f().hsa_executable_freeze)(executable, c"".as_ptr())
            })?;
            let mut result = 0u32;
            // SAFETY: a live executable; `result` is writable.
            self.check("hsa_executable_validate", unsafe {
                (self.f().hsa_executable_validate)(executable, &mut result)
            })?;
            if result != 0 {
                return Err(Error::BadImage(format!(
                    "the HSA runtime found the code object invalid (hsa_executable_validate result {result:#x})"
                )));
            }
            Ok(())
        })();
        match built {
            Ok(()) => Ok((executable, reader)),
            Err(e) => {
                // SAFETY: both are live and used by nothing else; errors here add nothing to `e`.
                unsafe {
                    if executable.handle != 0 {
                        (self.f().hsa_executable_destroy)(executable);
                    }
                    (self.f().hsa_code_object_reader_destroy)(reader);
                }
                Err(e)
            }
        }
    }

    /// Destroys an executable and the reader it was loaded from.
    ///
    /// # Safety
    /// Both came from one [`Api::load_executable`] and are destroyed once; no kernel of it runs.
    pub unsafe fn destroy_executable(&self, executable: HsaExecutable, reader: HsaCodeObjectReader) -> Result<()> {
        // SAFETY: per this function's contract.
        let destroyed = self.check("hsa_executable_destroy", unsafe {
            (self.f().hsa_executable_destroy)(executable)
        });
        // SAFETY: as above.
        let released = self.check("hsa_code_object_reader_destroy", unsafe {
            (self.f().hsa_code_object_reader_destroy)(reader)
        });
        destroyed.and(released)
    }

    /// The symbol `name` of `executable` for `agent`; `Ok(None)` when it has none of that name.
    pub fn symbol(
        &self,
        executable: HsaExecutable,
        agent: HsaAgent,
        name: &CStr,
    ) -> Result<Option<HsaExecutableSymbol>> {
        let mut symbol = HsaExecutableSymbol::default();
        // SAFETY: `name` is NUL-terminated; `agent` and `symbol` are readable/writable.
        let status =
            unsafe { (self.f().hsa_executable_get_symbol_by_name)(executable, name.as_ptr(), &agent, &mut symbol) };
        if status == HSA_STATUS_ERROR_INVALID_SYMBOL_NAME {
            return Ok(None);
        }
        self.check("hsa_executable_get_symbol_by_name", status)?;
        Ok(Some(symbol))
    }

    fn symbol_u32(&self, symbol: HsaExecutableSymbol, attribute: u32) -> Result<u32> {
        let mut value = 0u32;
        // SAFETY: every attribute read through here is a u32.
        self.check("hsa_executable_symbol_get_info", unsafe {
            (self.f().hsa_executable_symbol_get_info)(symbol, attribute, (&mut value as *mut u32).cast())
        })?;
        Ok(value)
    }

    fn symbol_u64(&self, symbol: HsaExecutableSymbol, attribute: u32) -> Result<u64> {
        let mut value = 0u64;
        // SAFETY: every attribute read through here is a u64.
        self.check("hsa_executable_symbol_get_info", unsafe {
            (self.f().hsa_executable_symbol_get_info)(symbol, attribute, (&mut value as *mut u64).cast())
        })?;
        Ok(value)
    }

    /// The symbol's kind (`HSA_SYMBOL_KIND_*`).
    pub fn symbol_kind(&self, symbol: HsaExecutableSymbol) -> Result<u32> {
        self.symbol_u32(symbol, symbol_info::TYPE)
    }

    /// A kernel symbol's descriptor address and segment sizes.
    pub fn kernel_info(&self, symbol: HsaExecutableSymbol) -> Result<KernelSymbolInfo> {
        Ok(KernelSymbolInfo {
            object: self.symbol_u64(symbol, symbol_info::KERNEL_OBJECT)?,
            kernarg_segment_size: self.symbol_u32(symbol, symbol_info::KERNEL_KERNARG_SEGMENT_SIZE)?,
            group_segment_size: self.symbol_u32(symbol, symbol_info::KERNEL_GROUP_SEGMENT_SIZE)?,
            private_segment_size: self.symbol_u32(symbol, symbol_info::KERNEL_PRIVATE_SEGMENT_SIZE)?,
        })
    }

    /// A variable symbol's device address and size.
    pub fn variable_info(&self, symbol: HsaExecutableSymbol) -> Result<(u64, u32)> {
        Ok((
            self.symbol_u64(symbol, symbol_info::VARIABLE_ADDRESS)?,
            self.symbol_u32(symbol, symbol_info::VARIABLE_SIZE)?,
        ))
    }

    /// Sends memory-fault and other system events to `handler` with `data`.
    ///
    /// # Safety
    /// `data` is what `handler` expects, alive for the rest of the process.
    pub unsafe fn on_system_event(&self, handler: sys::SystemEventCallback, data: *mut c_void) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("hsa_amd_register_system_event_handler", unsafe {
            (self.f().hsa_amd_register_system_event_handler)(handler, data)
        })
    }

    /// `HSA_AGENT_INFO_NAME`: a 64-byte NUL-padded string.
    pub fn agent_name(&self, agent: HsaAgent) -> Result<String> {
        let mut name = [0u8; 65];
        // SAFETY: the runtime writes at most 64 bytes for this attribute; the last byte stays 0.
        self.check("hsa_agent_get_info(NAME)", unsafe {
            (self.f().hsa_agent_get_info)(agent, agent_info::NAME, name.as_mut_ptr().cast())
        })?;
        Ok(CStr::from_bytes_until_nul(&name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default())
    }
}

/// One memory pool of an agent, as the plugin classifies pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSummary {
    /// The runtime's handle.
    pub pool: HsaMemoryPool,
    /// `HSA_AMD_MEMORY_POOL_INFO_SEGMENT` (only global pools hold allocations the plugin makes).
    pub segment: u32,
    /// `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS`: kernarg, fine- or coarse-grained.
    pub global_flags: u32,
    /// Whether the plugin may allocate from it.
    pub alloc_allowed: bool,
    /// Its size in bytes.
    pub size: u64,
}

/// A kernel's descriptor as the executable reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSymbolInfo {
    /// The address of its kernel descriptor, which a dispatch packet names.
    pub object: u64,
    /// Bytes the kernel reads from its kernarg segment.
    pub kernarg_segment_size: u32,
    /// Static group (LDS) memory per work-group.
    pub group_segment_size: u32,
    /// Scratch per work-item.
    pub private_segment_size: u32,
}

/// Whether an agent is a GPU the plugin offers as a device.
pub fn is_gpu(agent: &AgentSummary) -> bool {
    agent.device_type == device_type::GPU
}
