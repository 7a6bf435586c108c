use super::*;
use crate::backend::amdgpu::tests::code_object;
use std::sync::atomic::AtomicU32;

fn f() -> &'static Functions {
    &runtime().functions
}

fn gpu(name: &'static str) -> SimAgent {
    SimAgent {
        name,
        compute_units: 104,
        wavefront_size: if name.starts_with("gfx1") { 32 } else { 64 },
        generic_isa: None,
    }
}

/// A fresh world with `gpus`, initialised; the guard keeps other tests out.
fn start(gpus: &[SimAgent]) -> MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    reset(gpus, HSA_STATUS_SUCCESS);
    // SAFETY: no preconditions.
    assert_eq!(unsafe { (f().hsa_init)() }, HSA_STATUS_SUCCESS);
    guard
}

unsafe extern "C" fn push_agent(agent: HsaAgent, data: *mut c_void) -> HsaStatus {
    // SAFETY: `data` is the Vec passed by `all_agents`.
    unsafe { &mut *data.cast::<Vec<HsaAgent>>() }.push(agent);
    HSA_STATUS_SUCCESS
}

fn all_agents() -> Vec<HsaAgent> {
    let mut agents: Vec<HsaAgent> = Vec::new();
    // SAFETY: the callback pushes into `agents`, alive for the call.
    let status = unsafe { (f().hsa_iterate_agents)(push_agent, (&mut agents as *mut Vec<HsaAgent>).cast()) };
    assert_eq!(status, HSA_STATUS_SUCCESS);
    agents
}

fn info<T: Copy + Default>(agent: HsaAgent, attribute: u32) -> T {
    let mut value = T::default();
    // SAFETY: `value` has the attribute's type.
    let status = unsafe { (f().hsa_agent_get_info)(agent, attribute, (&mut value as *mut T).cast()) };
    assert_eq!(status, HSA_STATUS_SUCCESS, "attribute {attribute:#x}");
    value
}

fn text(agent: HsaAgent, attribute: u32) -> String {
    let mut bytes = [0u8; 64];
    // SAFETY: a char[64] attribute.
    let status = unsafe { (f().hsa_agent_get_info)(agent, attribute, bytes.as_mut_ptr().cast()) };
    assert_eq!(status, HSA_STATUS_SUCCESS);
    CStr::from_bytes_until_nul(&bytes)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

unsafe extern "C" fn push_pool(pool: HsaMemoryPool, data: *mut c_void) -> HsaStatus {
    // SAFETY: `data` is the Vec passed by `pools`.
    unsafe { &mut *data.cast::<Vec<HsaMemoryPool>>() }.push(pool);
    HSA_STATUS_SUCCESS
}

fn pools(agent: HsaAgent) -> Vec<HsaMemoryPool> {
    let mut pools: Vec<HsaMemoryPool> = Vec::new();
    // SAFETY: the callback pushes into `pools`, alive for the call.
    let status = unsafe {
        (f().hsa_amd_agent_iterate_memory_pools)(agent, push_pool, (&mut pools as *mut Vec<HsaMemoryPool>).cast())
    };
    assert_eq!(status, HSA_STATUS_SUCCESS);
    pools
}

fn pool<T: Copy + Default>(pool: HsaMemoryPool, attribute: u32) -> T {
    let mut value = T::default();
    // SAFETY: `value` has the attribute's type.
    let status = unsafe { (f().hsa_amd_memory_pool_get_info)(pool, attribute, (&mut value as *mut T).cast()) };
    assert_eq!(status, HSA_STATUS_SUCCESS);
    value
}

fn access(agent: HsaAgent, p: HsaMemoryPool) -> u32 {
    let mut value = 0u32;
    // SAFETY: ACCESS is a u32.
    let status = unsafe {
        (f().hsa_amd_agent_memory_pool_get_info)(agent, p, agent_pool_info::ACCESS, (&mut value as *mut u32).cast())
    };
    assert_eq!(status, HSA_STATUS_SUCCESS);
    value
}

fn allocate(p: HsaMemoryPool, size: usize) -> Result<*mut c_void, HsaStatus> {
    let mut ptr = std::ptr::null_mut();
    // SAFETY: `ptr` is writable.
    match unsafe { (f().hsa_amd_memory_pool_allocate)(p, size, 0, &mut ptr) } {
        HSA_STATUS_SUCCESS => Ok(ptr),
        status => Err(status),
    }
}

fn free(ptr: *mut c_void) -> HsaStatus {
    // SAFETY: the simulation checks the pointer.
    unsafe { (f().hsa_amd_memory_pool_free)(ptr) }
}

fn signal(value: i64) -> HsaSignal {
    let mut s = HsaSignal::default();
    assert_eq!(
        // SAFETY: `s` is writable.
        unsafe { (f().hsa_amd_signal_create)(value, 0, std::ptr::null(), 0, &mut s) },
        0
    );
    s
}

fn load_signal(s: HsaSignal) -> i64 {
    // SAFETY: no preconditions in the simulation.
    unsafe { (f().hsa_signal_load_scacquire)(s) }
}

fn wait_eq(s: HsaSignal, value: i64, timeout_ns: u64) -> i64 {
    // SAFETY: no preconditions in the simulation.
    unsafe { (f().hsa_signal_wait_scacquire)(s, signal_condition::EQ, value, timeout_ns, sys::wait_state::BLOCKED) }
}

/// Loads `bytes` for `agent` through a code object reader, as a plugin would; frozen when asked.
fn load_image(agent: HsaAgent, bytes: &[u8], freeze: bool) -> Result<HsaExecutable, HsaStatus> {
    let mut reader = HsaCodeObjectReader::default();
    let mut exe = HsaExecutable::default();
    // SAFETY: for all calls, pointers to locals, `bytes` alive for the calls.
    unsafe {
        let status = (f().hsa_code_object_reader_create_from_memory)(bytes.as_ptr().cast(), bytes.len(), &mut reader);
        if status != 0 {
            return Err(status);
        }
        let status = (f().hsa_executable_create_alt)(
            sys::profile::FULL,
            sys::float_rounding_mode::ZERO,
            c"".as_ptr(),
            &mut exe,
        );
        assert_eq!(status, 0);
        let mut loaded = HsaLoadedCodeObject::default();
        let status = (f().hsa_executable_load_agent_code_object)(exe, agent, reader, c"".as_ptr(), &mut loaded);
        assert_eq!((f().hsa_code_object_reader_destroy)(reader), 0);
        if status != 0 {
            assert_eq!((f().hsa_executable_destroy)(exe), 0);
            return Err(status);
        }
        if freeze {
            assert_eq!((f().hsa_executable_freeze)(exe, c"".as_ptr()), 0);
            let mut result = 1u32;
            assert_eq!((f().hsa_executable_validate)(exe, &mut result), 0);
            assert_eq!(result, 0);
        }
    }
    Ok(exe)
}

unsafe extern "C" fn push_symbol(_: HsaExecutable, s: HsaExecutableSymbol, data: *mut c_void) -> HsaStatus {
    // SAFETY: `data` is the Vec passed by `symbol_names`.
    unsafe { &mut *data.cast::<Vec<HsaExecutableSymbol>>() }.push(s);
    HSA_STATUS_SUCCESS
}

fn symbol_info<T: Copy + Default>(s: HsaExecutableSymbol, attribute: u32) -> Result<T, HsaStatus> {
    let mut value = T::default();
    // SAFETY: `value` has the attribute's type.
    match unsafe { (f().hsa_executable_symbol_get_info)(s, attribute, (&mut value as *mut T).cast()) } {
        0 => Ok(value),
        status => Err(status),
    }
}

fn symbol_name(s: HsaExecutableSymbol) -> String {
    let len: u32 = symbol_info(s, symbol_info::NAME_LENGTH).unwrap();
    let mut name = vec![0u8; len as usize];
    assert_eq!(
        // SAFETY: NAME writes NAME_LENGTH bytes.
        unsafe { (f().hsa_executable_symbol_get_info)(s, symbol_info::NAME, name.as_mut_ptr().cast()) },
        0
    );
    String::from_utf8(name).unwrap()
}

fn symbol_names(exe: HsaExecutable) -> Vec<String> {
    let mut symbols: Vec<HsaExecutableSymbol> = Vec::new();
    // SAFETY: the callback pushes into `symbols`, alive for the call.
    let status = unsafe {
        (f().hsa_executable_iterate_symbols)(exe, push_symbol, (&mut symbols as *mut Vec<HsaExecutableSymbol>).cast())
    };
    assert_eq!(status, 0);
    symbols.into_iter().map(symbol_name).collect()
}

fn symbol(exe: HsaExecutable, agent: HsaAgent, name: &str) -> Result<HsaExecutableSymbol, HsaStatus> {
    let name = CString::new(name).unwrap();
    let mut s = HsaExecutableSymbol::default();
    // SAFETY: pointers to locals.
    match unsafe { (f().hsa_executable_get_symbol_by_name)(exe, name.as_ptr(), &agent, &mut s) } {
        0 => Ok(s),
        status => Err(status),
    }
}

fn kernel_named(exe: HsaExecutable, suffix: &str) -> String {
    symbol_names(exe)
        .into_iter()
        .find(|n| n.ends_with(suffix))
        .unwrap_or_else(|| panic!("no symbol ending {suffix}"))
}

#[test]
fn init_and_shut_down_balance() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    reset(&[gpu("gfx90a")], HSA_STATUS_SUCCESS);
    let mut agents: Vec<HsaAgent> = Vec::new();
    // SAFETY: for all calls, no preconditions, or pointers to locals.
    unsafe {
        let data = (&mut agents as *mut Vec<HsaAgent>).cast();
        assert_eq!(
            (f().hsa_iterate_agents)(push_agent, data),
            sys::HSA_STATUS_ERROR_NOT_INITIALIZED
        );
        assert_eq!((f().hsa_shut_down)(), sys::HSA_STATUS_ERROR_NOT_INITIALIZED);
        assert_eq!((f().hsa_init)(), 0);
        assert_eq!((f().hsa_init)(), 0);
        assert_eq!((f().hsa_shut_down)(), 0);
        assert_eq!((f().hsa_iterate_agents)(push_agent, data), 0, "still initialised once");
        assert_eq!((f().hsa_shut_down)(), 0);
        assert_eq!((f().hsa_shut_down)(), sys::HSA_STATUS_ERROR_NOT_INITIALIZED);
    }
    assert_eq!(calls("hsa_init"), 2);
    assert_eq!(calls("hsa_shut_down"), 4);

    reset(&[], sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES);
    // SAFETY: as above.
    unsafe {
        assert_eq!((f().hsa_init)(), sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES);
    }
}

unsafe extern "C" fn stop_at_second(_: HsaAgent, data: *mut c_void) -> HsaStatus {
    // SAFETY: `data` is a u32 counter.
    let seen = unsafe { &mut *data.cast::<u32>() };
    *seen += 1;
    if *seen == 2 {
        sys::HSA_STATUS_INFO_BREAK
    } else {
        HSA_STATUS_SUCCESS
    }
}

unsafe extern "C" fn push_isa(isa: HsaIsa, data: *mut c_void) -> HsaStatus {
    // SAFETY: `data` is a Vec of ISAs.
    unsafe { &mut *data.cast::<Vec<HsaIsa>>() }.push(isa);
    HSA_STATUS_SUCCESS
}

#[test]
fn agents_list_the_cpu_first_then_the_gpus() {
    let _serial = start(&[gpu("gfx90a"), gpu("gfx1030:xnack-")]);
    let agents = all_agents();
    assert_eq!(agents.len(), 3);
    assert_eq!(super::agents(), agents);
    assert_eq!(info::<u32>(agents[0], agent_info::DEVICE), device_type::CPU);
    assert_eq!(info::<u32>(agents[1], agent_info::DEVICE), device_type::GPU);
    assert_eq!(text(agents[1], agent_info::NAME), "gfx90a");
    assert_eq!(text(agents[2], agent_info::NAME), "gfx1030");
    assert_eq!(text(agents[1], agent_info::VENDOR_NAME), "AMD");
    assert_eq!(info::<u32>(agents[1], agent_info::WAVEFRONT_SIZE), 64);
    assert_eq!(info::<u32>(agents[2], agent_info::WAVEFRONT_SIZE), 32);
    assert_eq!(info::<u32>(agents[1], agent_info::COMPUTE_UNIT_COUNT), 104);
    assert_eq!(info::<[u16; 3]>(agents[1], agent_info::WORKGROUP_MAX_DIM), [1024; 3]);
    assert_eq!(info::<u32>(agents[1], agent_info::WORKGROUP_MAX_SIZE), 1024);
    assert_eq!(info::<HsaDim3>(agents[1], agent_info::GRID_MAX_DIM).x, u32::MAX);
    assert_eq!(info::<u32>(agents[1], agent_info::QUEUE_MAX_SIZE), 131072);
    assert_eq!(info::<u32>(agents[1], agent_info::QUEUES_MAX), 128);
    assert_eq!(
        info::<u32>(agents[1], agent_info::FEATURE),
        sys::agent_feature::KERNEL_DISPATCH
    );
    assert_eq!(info::<u32>(agents[0], agent_info::FEATURE), 0);
    assert!(text(agents[1], agent_info::PRODUCT_NAME).contains("gfx90a"));
    assert_eq!(info::<u32>(agents[2], agent_info::NODE), 2);
    let mut value = 0u64;
    // SAFETY: a pointer to a local.
    let status = unsafe { (f().hsa_agent_get_info)(agents[1], 0x7777, (&mut value as *mut u64).cast()) };
    assert_eq!(status, sys::HSA_STATUS_ERROR_INVALID_ARGUMENT);
    // SAFETY: as above.
    let status = unsafe {
        (f().hsa_agent_get_info)(
            HsaAgent { handle: 1 },
            agent_info::NAME,
            (&mut value as *mut u64).cast(),
        )
    };
    assert_eq!(status, sys::HSA_STATUS_ERROR_INVALID_AGENT);

    // A callback's INFO_BREAK stops the iteration and is passed through.
    let mut seen = 0u32;
    // SAFETY: the callback counts into `seen`.
    let status = unsafe { (f().hsa_iterate_agents)(stop_at_second, (&mut seen as *mut u32).cast()) };
    assert_eq!((status, seen), (sys::HSA_STATUS_INFO_BREAK, 2));

    // ISAs: none for the CPU; the GPUs' full names, features kept.
    for (agent, expected) in [
        (agents[1], Some("amdgcn-amd-amdhsa--gfx90a")),
        (agents[2], Some("amdgcn-amd-amdhsa--gfx1030:xnack-")),
        (agents[0], None),
    ] {
        let mut isas: Vec<HsaIsa> = Vec::new();
        // SAFETY: the callback pushes into `isas`.
        let status = unsafe { (f().hsa_agent_iterate_isas)(agent, push_isa, (&mut isas as *mut Vec<HsaIsa>).cast()) };
        assert_eq!(status, 0);
        assert_eq!(isas.len(), usize::from(expected.is_some()));
        if let Some(expected) = expected {
            let mut len = 0u32;
            // SAFETY: pointers to locals of the attributes' sizes.
            unsafe {
                assert_eq!(
                    (f().hsa_isa_get_info_alt)(isas[0], isa_info::NAME_LENGTH, (&mut len as *mut u32).cast()),
                    0
                );
                let mut name = vec![0u8; len as usize];
                assert_eq!(
                    (f().hsa_isa_get_info_alt)(isas[0], isa_info::NAME, name.as_mut_ptr().cast()),
                    0
                );
                assert_eq!(String::from_utf8(name).unwrap(), expected);
            }
        }
    }
}

#[test]
fn pools_have_rocms_flags_and_access() {
    let _serial = start(&[gpu("gfx90a")]);
    let agents = all_agents();
    let (cpu, gpu) = (agents[0], agents[1]);
    let host = pools(cpu);
    let device = pools(gpu);
    let flags = |p| pool::<u32>(p, pool_info::GLOBAL_FLAGS);
    assert_eq!(host.len(), 3);
    assert_eq!(flags(host[0]), pool_global_flag::FINE_GRAINED);
    assert_eq!(
        flags(host[1]),
        pool_global_flag::FINE_GRAINED | pool_global_flag::KERNARG_INIT
    );
    assert_eq!(flags(host[2]), pool_global_flag::COARSE_GRAINED);
    assert_eq!(device.len(), 2);
    assert_eq!(flags(device[0]), pool_global_flag::COARSE_GRAINED);
    for p in host.iter().chain(&device[..1]) {
        assert_eq!(pool::<u32>(*p, pool_info::SEGMENT), segment::GLOBAL);
        assert!(pool::<bool>(*p, pool_info::RUNTIME_ALLOC_ALLOWED));
        assert_eq!(pool::<usize>(*p, pool_info::RUNTIME_ALLOC_GRANULE), GRANULE);
        assert_eq!(pool::<usize>(*p, pool_info::RUNTIME_ALLOC_ALIGNMENT), GRANULE);
        assert!(!pool::<bool>(*p, pool_info::ACCESSIBLE_BY_ALL));
    }
    assert_eq!(pool::<u32>(device[1], pool_info::SEGMENT), segment::GROUP);
    assert!(!pool::<bool>(device[1], pool_info::RUNTIME_ALLOC_ALLOWED));
    assert_eq!(pool::<usize>(device[0], pool_info::SIZE), DEVICE_MEMORY);
    assert_eq!(access(cpu, host[0]), pool_access::ALLOWED_BY_DEFAULT);
    assert_eq!(access(gpu, host[0]), pool_access::DISALLOWED_BY_DEFAULT);
    assert_eq!(access(gpu, device[0]), pool_access::ALLOWED_BY_DEFAULT);
    assert_eq!(access(cpu, device[0]), pool_access::DISALLOWED_BY_DEFAULT);
    assert_eq!(access(cpu, device[1]), pool_access::NEVER_ALLOWED);
    let mut value = 0u32;
    // SAFETY: a pointer to a local.
    unsafe {
        assert_eq!(
            (f().hsa_amd_memory_pool_get_info)(host[0], 99, (&mut value as *mut u32).cast()),
            sys::HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            (f().hsa_amd_memory_pool_get_info)(HsaMemoryPool { handle: 3 }, 0, (&mut value as *mut u32).cast()),
            sys::HSA_STATUS_ERROR_INVALID_MEMORY_POOL
        );
    }
}

#[test]
fn memory_is_tracked_opened_to_agents_and_limited() {
    let _serial = start(&[gpu("gfx90a"), gpu("gfx90a")]);
    let agents = all_agents();
    let coarse = pools(agents[1])[0];
    let host = pools(agents[0])[0];
    let d = allocate(coarse, 100).unwrap();
    assert_eq!(d as usize % GRANULE, 0);
    let h = allocate(host, 64).unwrap();
    assert_eq!(live().memory, 2);
    assert_eq!(allocate(coarse, 0), Err(sys::HSA_STATUS_ERROR_INVALID_ARGUMENT));
    assert_eq!(
        allocate(pools(agents[1])[1], 64),
        Err(sys::HSA_STATUS_ERROR_INVALID_ALLOCATION)
    );

    // Host memory the GPUs touch is opened to them.
    assert_eq!(allowed_agents(h), Some(vec![]));
    let gpus = [agents[1], agents[2]];
    // SAFETY: `gpus` holds two agents.
    unsafe {
        assert_eq!(
            (f().hsa_amd_agents_allow_access)(2, gpus.as_ptr(), std::ptr::null(), h),
            0
        );
        assert_eq!(
            (f().hsa_amd_agents_allow_access)(2, gpus.as_ptr(), std::ptr::null(), h.cast::<u8>().add(8).cast()),
            sys::HSA_STATUS_ERROR_INVALID_ARGUMENT,
            "only a block's start"
        );
    }
    assert_eq!(allowed_agents(h), Some(gpus.to_vec()));

    // Locked host memory: the agent pointer is the host pointer; locks nest.
    let mut user = vec![0u8; 256];
    let mut agent_ptr = std::ptr::null_mut();
    // SAFETY: `user` is 256 bytes, alive until unlocked.
    unsafe {
        let p = user.as_mut_ptr().cast();
        assert_eq!(
            (f().hsa_amd_memory_lock)(p, 256, std::ptr::null_mut(), 0, &mut agent_ptr),
            0
        );
        assert_eq!(agent_ptr, p);
        assert_eq!(
            (f().hsa_amd_memory_lock)(p, 256, std::ptr::null_mut(), 0, &mut agent_ptr),
            0
        );
        assert_eq!(
            (f().hsa_amd_memory_lock)(p, 0, std::ptr::null_mut(), 0, &mut agent_ptr),
            sys::HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(live().locked, 1);
        assert_eq!((f().hsa_amd_memory_unlock)(p), 0);
        assert_eq!(live().locked, 1);
        assert_eq!((f().hsa_amd_memory_unlock)(p), 0);
        assert_eq!(live().locked, 0);
    }
    assert!(misuse().is_empty(), "{:?}", misuse());

    assert_eq!(free(d), 0);
    assert_eq!(free(d), sys::HSA_STATUS_ERROR_INVALID_ARGUMENT);
    assert_eq!(free(h), 0);

    assert_eq!(live(), Live::default());
}

#[test]
fn signals_block_waiters_until_the_condition_holds() {
    let _serial = start(&[gpu("gfx90a")]);
    let s = signal(1);
    assert_eq!(live().signals, 1);
    assert_eq!(wait_eq(s, 0, 5_000_000), 1, "times out with the value");
    // SAFETY: for all calls, `s` is a live signal.
    unsafe {
        let ws = sys::wait_state::ACTIVE;
        assert_eq!(
            (f().hsa_signal_wait_scacquire)(s, signal_condition::NE, 0, u64::MAX, ws),
            1
        );
        assert_eq!(
            (f().hsa_signal_wait_scacquire)(s, signal_condition::GTE, 1, u64::MAX, ws),
            1
        );
        assert_eq!(
            (f().hsa_signal_wait_scacquire)(s, signal_condition::LT, 5, u64::MAX, ws),
            1
        );
        (f().hsa_signal_store_relaxed)(s, 3);
        (f().hsa_signal_subtract_screlease)(s, 1);
        assert_eq!((f().hsa_signal_load_relaxed)(s), 2);
    }
    let storer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        // SAFETY: `s` is live until the wait below returns.
        unsafe { (f().hsa_signal_store_screlease)(s, 0) };
    });
    assert_eq!(wait_eq(s, 0, u64::MAX), 0);
    storer.join().unwrap();
    // SAFETY: as above.
    unsafe {
        assert_eq!((f().hsa_signal_destroy)(s), 0);
        assert_eq!((f().hsa_signal_destroy)(s), sys::HSA_STATUS_ERROR_INVALID_SIGNAL);
    }
    assert_eq!(load_signal(s), 0);
    assert_eq!(misuse().len(), 1, "a load of a destroyed signal is noted");
    assert_eq!(live().signals, 0);
}

static HANDLED: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn count_handler(value: HsaSignalValue, arg: *mut c_void) -> bool {
    assert_eq!(value, 0);
    HANDLED.fetch_add(arg as u32, Ordering::SeqCst);
    false
}

#[test]
fn async_handlers_run_when_the_condition_holds() {
    let _serial = start(&[gpu("gfx90a")]);
    HANDLED.store(0, Ordering::SeqCst);
    let s = signal(1);
    // SAFETY: `s` is live; the handler takes its argument as a number.
    unsafe {
        let status = (f().hsa_amd_signal_async_handler)(s, signal_condition::EQ, 0, count_handler, 5 as *mut c_void);
        assert_eq!(status, 0);
    }
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(HANDLED.load(Ordering::SeqCst), 0);
    // SAFETY: as above.
    unsafe { (f().hsa_signal_store_screlease)(s, 0) };
    let begun = Instant::now();
    while HANDLED.load(Ordering::SeqCst) == 0 && begun.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(HANDLED.load(Ordering::SeqCst), 5);
    // SAFETY: as above.
    assert_eq!(unsafe { (f().hsa_signal_destroy)(s) }, 0);
}

/// Writes `packet` into slot `index` of `queue`, its header last with a release store, as a plugin.
fn publish<P: Copy>(queue: *mut HsaQueue, index: u64, packet: P, header: u16, setup: u16) {
    // SAFETY: `queue` is live, `index` a slot the caller reserved; the packet is 64 bytes.
    unsafe {
        let q = &*queue;
        let slot = q
            .base_address
            .cast::<u8>()
            .add((index % u64::from(q.size)) as usize * 64);
        slot.cast::<P>().write(P::clone(&packet));
        slot.cast::<u16>().write(packet_type::INVALID);
        std::sync::atomic::AtomicU32::from_ptr(slot.cast::<u32>())
            .store(u32::from(header) | (u32::from(setup) << 16), Ordering::Release);
    }
}

fn barrier(deps: &[HsaSignal], completion: HsaSignal) -> sys::BarrierAndPacket {
    let mut dep_signal = [HsaSignal::default(); 5];
    dep_signal[..deps.len()].copy_from_slice(deps);
    sys::BarrierAndPacket {
        header: 0,
        reserved0: 0,
        reserved1: 0,
        dep_signal,
        reserved2: 0,
        completion_signal: completion,
    }
}

fn kernel_packet(object: u64, kernargs: *mut c_void, completion: HsaSignal) -> KernelDispatchPacket {
    KernelDispatchPacket {
        header: 0,
        setup: 0,
        workgroup_size_x: 64,
        workgroup_size_y: 1,
        workgroup_size_z: 1,
        reserved0: 0,
        grid_size_x: 256,
        grid_size_y: 1,
        grid_size_z: 1,
        private_segment_size: 16,
        group_segment_size: 512,
        kernel_object: object,
        kernarg_address: kernargs,
        reserved2: 0,
        completion_signal: completion,
    }
}

const DISPATCH: u16 = 0x1402;
const BARRIER_AND: u16 = 0x1403;

static QUEUE_ERROR: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn on_queue_error(status: HsaStatus, _queue: *mut HsaQueue, data: *mut c_void) {
    assert_eq!(data as usize, 0x77);
    QUEUE_ERROR.store(status, Ordering::SeqCst);
}

fn create_queue(agent: HsaAgent) -> *mut HsaQueue {
    let mut queue = std::ptr::null_mut();
    // SAFETY: `queue` is writable.
    let status = unsafe {
        (f().hsa_queue_create)(
            agent,
            64,
            sys::queue_type::MULTI,
            Some(on_queue_error),
            0x77 as *mut c_void,
            u32::MAX,
            u32::MAX,
            &mut queue,
        )
    };
    assert_eq!(status, 0);
    queue
}

/// A loaded gfx90a image, its main_l15 kernel's name and kernel object, and kernarg memory (from
/// the CPU's kernarg pool, opened to the GPU when `open`) holding `args`.
fn kernel_setup(agents: &[HsaAgent], args: &[u64], open: bool) -> (HsaExecutable, String, u64, *mut c_void) {
    let exe = load_image(agents[1], &code_object("gfx90a"), true).unwrap();
    let kd = kernel_named(exe, "_l15.kd");
    let object: u64 = symbol_info(symbol(exe, agents[1], &kd).unwrap(), symbol_info::KERNEL_OBJECT).unwrap();
    let kernargs = allocate(pools(agents[0])[1], 64 + args.len() * 8).unwrap();
    // SAFETY: the block holds the arguments.
    unsafe { std::ptr::copy_nonoverlapping(args.as_ptr(), kernargs.cast::<u64>(), args.len()) };
    if open {
        // SAFETY: one agent.
        let status = unsafe { (f().hsa_amd_agents_allow_access)(1, &agents[1], std::ptr::null(), kernargs) };
        assert_eq!(status, 0);
    }
    (exe, kd.strip_suffix(".kd").unwrap().to_string(), object, kernargs)
}

#[test]
fn a_queue_runs_a_barrier_then_a_kernel_once_the_doorbell_rings() {
    let _serial = start(&[gpu("gfx90a")]);
    let agents = all_agents();
    let (exe, name, object, kernargs) = kernel_setup(&agents, &[0xabcd, 0x1234], true);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    register_kernel(
        &name,
        Arc::new(move |args: &[u64]| {
            record.lock().unwrap().push(args.to_vec());
            Ok(())
        }),
    );
    let queue = create_queue(agents[1]);
    // SAFETY: `queue` is live.
    let q = unsafe { &*queue };
    assert_eq!(
        (q.size, q.queue_type, q.base_address as usize % 64),
        (64, sys::queue_type::MULTI, 0)
    );
    assert_eq!(live().signals, 0, "the doorbell is not counted");
    let (dep, done) = (signal(1), signal(1));
    // SAFETY: for the index calls, `queue` is live.
    let first = unsafe { (f().hsa_queue_add_write_index_relaxed)(queue, 2) };
    assert_eq!(first, 0);
    publish(queue, 0, barrier(&[dep], HsaSignal::default()), BARRIER_AND, 0);
    publish(queue, 1, kernel_packet(object, kernargs, done), DISPATCH, 1);
    assert_eq!(wait_eq(done, 0, 10_000_000), 1, "no doorbell yet");
    // SAFETY: the doorbell is the queue's signal.
    unsafe { (f().hsa_signal_store_relaxed)(q.doorbell_signal, 1) };
    assert_eq!(wait_eq(done, 0, 10_000_000), 1, "the barrier waits for its dependency");
    assert!(seen.lock().unwrap().is_empty());
    // SAFETY: `dep` is live.
    unsafe { (f().hsa_signal_store_screlease)(dep, 0) };
    assert_eq!(wait_eq(done, 0, u64::MAX), 0);
    // The l15 kernel has one explicit argument (kernarg_size 8).
    assert_eq!(*seen.lock().unwrap(), vec![vec![0xabcd]]);
    let launches = launches();
    assert_eq!(launches.len(), 1);
    assert_eq!(
        (
            launches[0].kernel.as_str(),
            launches[0].grid_size_x,
            launches[0].workgroup_size_x
        ),
        (name.as_str(), 256, 64)
    );
    assert_eq!(
        (launches[0].group_segment_size, launches[0].private_segment_size),
        (512, 16)
    );
    assert_eq!(launches[0].queue, q.id);
    // SAFETY: `queue` is live; slot headers are read as the plugin would.
    unsafe {
        assert_eq!((f().hsa_queue_load_read_index_scacquire)(queue), 2);
        assert_eq!((f().hsa_queue_load_write_index_relaxed)(queue), 2);
        assert_eq!(*q.base_address.cast::<u16>(), packet_type::INVALID);
        assert_eq!(*q.base_address.cast::<u8>().add(64).cast::<u16>(), packet_type::INVALID);
        assert_eq!((f().hsa_queue_destroy)(queue), 0);
        assert_eq!((f().hsa_signal_destroy)(dep), 0);
        assert_eq!((f().hsa_signal_destroy)(done), 0);
        assert_eq!((f().hsa_executable_destroy)(exe), 0);
    }
    assert_eq!(free(kernargs), 0);
    assert_eq!(live(), Live::default());
    assert!(misuse().is_empty(), "{:?}", misuse());
    clear_kernels();
}

#[test]
fn a_faulting_kernel_or_unreadable_kernargs_reach_the_error_callback() {
    let _serial = start(&[gpu("gfx90a")]);
    let agents = all_agents();
    QUEUE_ERROR.store(0, Ordering::SeqCst);
    let (exe, name, object, kernargs) = kernel_setup(&agents, &[1], true);
    register_kernel(
        &name,
        Arc::new(|_: &[u64]| Err(sys::HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION)),
    );
    let queue = create_queue(agents[1]);
    let done = signal(1);
    publish(queue, 0, kernel_packet(object, kernargs, done), DISPATCH, 1);
    // SAFETY: `queue` is live.
    unsafe { (f().hsa_signal_store_relaxed)((*queue).doorbell_signal, 0) };
    let begun = Instant::now();
    while QUEUE_ERROR.load(Ordering::SeqCst) == 0 && begun.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        QUEUE_ERROR.load(Ordering::SeqCst),
        sys::HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION
    );
    assert_eq!(load_signal(done), 1, "a failed packet never completes");
    // SAFETY: `queue` is live.
    unsafe { assert_eq!((f().hsa_queue_destroy)(queue), 0) };

    // Kernel arguments in host memory never opened to the GPU fault the queue.
    QUEUE_ERROR.store(0, Ordering::SeqCst);
    clear_kernels();
    let closed = allocate(pools(agents[0])[1], 64).unwrap();
    let queue = create_queue(agents[1]);
    publish(queue, 0, kernel_packet(object, closed, done), DISPATCH, 1);
    // SAFETY: `queue` is live.
    unsafe { (f().hsa_signal_store_relaxed)((*queue).doorbell_signal, 0) };
    let begun = Instant::now();
    while QUEUE_ERROR.load(Ordering::SeqCst) == 0 && begun.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        QUEUE_ERROR.load(Ordering::SeqCst),
        sys::HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION
    );
    assert_eq!(misuse().len(), 1, "{:?}", misuse());
    assert_eq!(with(|w| w.faults.len()), 2);
    // SAFETY: live objects.
    unsafe {
        assert_eq!((f().hsa_queue_destroy)(queue), 0);
        assert_eq!((f().hsa_executable_destroy)(exe), 0);
    }
    // A queue of a CPU agent, or of a size that is not a power of two, is refused.
    let mut q = std::ptr::null_mut();
    // SAFETY: `q` is writable.
    unsafe {
        let create = f().hsa_queue_create;
        let none = std::ptr::null_mut();
        assert_eq!(
            create(agents[0], 64, 0, None, none, 0, 0, &mut q),
            sys::HSA_STATUS_ERROR_INVALID_AGENT
        );
        assert_eq!(
            create(agents[1], 100, 0, None, none, 0, 0, &mut q),
            sys::HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            create(agents[1], 1 << 18, 0, None, none, 0, 0, &mut q),
            sys::HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
    }
}

#[test]
fn async_copies_wait_for_their_dependencies_and_complete_in_order() {
    let _serial = start(&[gpu("gfx90a")]);
    let agents = all_agents();
    let gpu = agents[1];
    let device = allocate(pools(gpu)[0], 64).unwrap();
    let staging = allocate(pools(agents[0])[0], 64).unwrap();
    // SAFETY: a 64-byte block.
    unsafe { std::ptr::copy_nonoverlapping([7u8; 64].as_ptr(), staging.cast::<u8>(), 64) };
    let mut user = vec![0u8; 64];
    let (dep, first, second) = (signal(1), signal(1), signal(1));
    let copy = f().hsa_amd_memory_async_copy;
    // SAFETY: for all calls, simulated or locked memory of 64 bytes, live signals.
    unsafe {
        // Pageable memory is refused until locked.
        let status = copy(
            user.as_mut_ptr().cast(),
            gpu,
            device,
            gpu,
            64,
            0,
            std::ptr::null(),
            second,
        );
        assert_eq!(status, sys::HSA_STATUS_ERROR_INVALID_ARGUMENT);
        let mut agent_ptr = std::ptr::null_mut();
        let locked = f().hsa_amd_memory_lock;
        assert_eq!(
            locked(user.as_mut_ptr().cast(), 64, std::ptr::null_mut(), 0, &mut agent_ptr),
            0
        );
        assert_eq!(copy(device, gpu, staging, gpu, 64, 1, &dep, first), 0);
        assert_eq!(copy(agent_ptr, gpu, device, gpu, 64, 1, &first, second), 0);
        assert_eq!(
            copy(device, gpu, staging, gpu, 64, 1, &HsaSignal { handle: 8 }, first),
            sys::HSA_STATUS_ERROR_INVALID_SIGNAL
        );
    }
    assert_eq!(wait_eq(second, 0, 10_000_000), 1, "both wait for the first dependency");
    assert_eq!(load_signal(first), 1);
    // SAFETY: `dep` is live.
    unsafe { (f().hsa_signal_store_screlease)(dep, 0) };
    assert_eq!(wait_eq(second, 0, u64::MAX), 0);
    assert_eq!(load_signal(first), 0);
    assert_eq!(user, vec![7u8; 64]);
    let kinds: Vec<CopyKind> = copies().iter().map(|c| c.kind).collect();
    assert_eq!(kinds, vec![CopyKind::HostToDevice, CopyKind::DeviceToHost]);
    assert_eq!(copies()[1].deps, vec![first.handle]);
    // SAFETY: live objects.
    unsafe {
        assert_eq!((f().hsa_amd_memory_unlock)(user.as_mut_ptr().cast()), 0);
        for s in [dep, first, second] {
            assert_eq!((f().hsa_signal_destroy)(s), 0);
        }
    }
    assert_eq!((free(device), free(staging)), (0, 0));
    assert_eq!(live(), Live::default());
}

#[test]
fn a_real_gfx90a_code_object_loads_with_its_kernels_and_globals() {
    let _serial = start(&[gpu("gfx90a")]);
    let agents = all_agents();
    let gfx90a = agents[1];
    let bytes = code_object("gfx90a");
    let exe = load_image(gfx90a, &bytes, false).unwrap();
    let names = symbol_names(exe);
    for wanted in ["counter", "__omp_rtl_device_environment", "__llvm_libc_rpc_client"] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} in {names:?}");
    }
    let kernels: Vec<&String> = names.iter().filter(|n| n.ends_with(".kd")).collect();
    assert_eq!(kernels.len(), 2, "{names:?}");
    assert!(kernels.iter().any(|n| n.ends_with("_l15.kd")) && kernels.iter().any(|n| n.ends_with("_l20.kd")));
    assert!(names.iter().any(|n| n.ends_with("_l15_exec_mode")));

    // Addresses are 0 until the executable is frozen, as the header says.
    let counter = symbol(exe, gfx90a, "counter").unwrap();
    assert_eq!(symbol_info::<u64>(counter, symbol_info::VARIABLE_ADDRESS), Ok(0));
    // SAFETY: `exe` is live.
    unsafe { assert_eq!((f().hsa_executable_freeze)(exe, c"".as_ptr()), 0) };
    // SAFETY: as above.
    unsafe {
        assert_eq!(
            (f().hsa_executable_freeze)(exe, c"".as_ptr()),
            sys::HSA_STATUS_ERROR_FROZEN_EXECUTABLE
        );
    }
    assert_eq!(
        symbol_info::<u32>(counter, symbol_info::TYPE),
        Ok(symbol_kind::VARIABLE)
    );
    assert_eq!(symbol_info::<u32>(counter, symbol_info::VARIABLE_SIZE), Ok(4));
    let address: u64 = symbol_info(counter, symbol_info::VARIABLE_ADDRESS).unwrap();
    // SAFETY: a variable's address is simulated device memory, initialised from the image.
    assert_eq!(unsafe { *(address as *const i32) }, 5);
    let environment = symbol(exe, gfx90a, "__omp_rtl_device_environment").unwrap();
    assert_eq!(symbol_info::<u32>(environment, symbol_info::VARIABLE_SIZE), Ok(16));
    // The image's one dynamic relocation points the RPC client at its object.
    let client: u64 = symbol_info(
        symbol(exe, gfx90a, "__llvm_libc_rpc_client").unwrap(),
        symbol_info::VARIABLE_ADDRESS,
    )
    .unwrap();
    // The object is hidden, so local in the code object: ROCr registers no local symbol that is not
    // a kernel, and neither does this runtime.
    assert_eq!(
        symbol(exe, gfx90a, "omprpc_client_object"),
        Err(sys::HSA_STATUS_ERROR_INVALID_SYMBOL_NAME)
    );
    let image = elf::Image::parse(&bytes).unwrap();
    let (pointer, object) = (
        image.symbol(b"__llvm_libc_rpc_client").unwrap(),
        image.symbol(b"omprpc_client_object").unwrap(),
    );
    assert!(object.is_local());
    assert_eq!(
        // SAFETY: as above.
        unsafe { *(client as *const u64) },
        client - pointer.value + object.value,
        "relocated by the image's load displacement"
    );

    // Kernels: their descriptors' fields.
    let image = elf::Image::parse(&bytes).unwrap();
    for kd in kernels {
        let s = symbol(exe, gfx90a, kd).unwrap();
        assert_eq!(symbol_info::<u32>(s, symbol_info::TYPE), Ok(symbol_kind::KERNEL));
        let object: u64 = symbol_info(s, symbol_info::KERNEL_OBJECT).unwrap();
        let descriptor = image.symbol_bytes(&image.symbol(kd.as_bytes()).unwrap()).unwrap();
        assert_eq!(
            // SAFETY: the kernel object is the loaded 64-byte descriptor.
            unsafe { std::slice::from_raw_parts(object as *const u8, 64) },
            descriptor
        );
        let field = |at: usize| u32::from_le_bytes(descriptor[at..at + 4].try_into().unwrap());
        assert_eq!(
            symbol_info::<u32>(s, symbol_info::KERNEL_GROUP_SEGMENT_SIZE),
            Ok(field(0))
        );
        assert_eq!(
            symbol_info::<u32>(s, symbol_info::KERNEL_PRIVATE_SEGMENT_SIZE),
            Ok(field(4))
        );
        assert_eq!(
            symbol_info::<u32>(s, symbol_info::KERNEL_KERNARG_SEGMENT_SIZE),
            Ok(field(8))
        );
        assert_eq!(
            symbol_info::<u32>(s, symbol_info::VARIABLE_SIZE),
            Err(sys::HSA_STATUS_ERROR_INVALID_ARGUMENT)
        );
        assert_eq!(symbol_name(s), *kd);
    }
    assert!(
        symbol_info::<u32>(
            symbol(exe, gfx90a, &kernel_named(exe, "_l15.kd")).unwrap(),
            symbol_info::KERNEL_KERNARG_SEGMENT_SIZE
        )
        .unwrap()
            >= 8
    );
    let l15 = kernel_named(exe, "_l15.kd");
    assert_eq!(
        symbol(exe, gfx90a, l15.strip_suffix(".kd").unwrap()),
        Err(sys::HSA_STATUS_ERROR_INVALID_SYMBOL_NAME),
        "kernels are found by their descriptors' names"
    );
    assert_eq!(
        symbol(exe, gfx90a, "missing"),
        Err(sys::HSA_STATUS_ERROR_INVALID_SYMBOL_NAME)
    );
    assert_eq!(live().executables, 1);
    assert_eq!(live().readers, 0);
    // SAFETY: `exe` is live.
    unsafe { assert_eq!((f().hsa_executable_destroy)(exe), 0) };
    assert_eq!(live(), Live::default());
}

#[test]
fn code_objects_are_checked_and_synthetic_ones_load_symbol_by_symbol() {
    let _serial = start(&[gpu("gfx90a"), gpu("gfx906"), gpu("gfx1030")]);
    let agents = all_agents();
    assert_eq!(
        load_image(agents[1], &code_object("gfx906"), true),
        Err(sys::HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS)
    );
    assert_eq!(
        load_image(agents[0], &code_object("gfx90a"), true),
        Err(sys::HSA_STATUS_ERROR_INVALID_AGENT)
    );
    assert_eq!(
        load_image(
            agents[1],
            b"not an ELF file at all, not at all, no; really not an ELF file",
            true
        ),
        Err(sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT)
    );
    let x86 = elf::tests::sample(elf::EM_X86_64, &[("g", 0, &[1, 2, 3, 4])]);
    assert_eq!(
        load_image(agents[1], &x86, true),
        Err(sys::HSA_STATUS_ERROR_INVALID_CODE_OBJECT)
    );
    for (agent, arch) in [(agents[2], "gfx906"), (agents[3], "gfx1030")] {
        let exe = load_image(agent, &code_object(arch), true).unwrap();
        assert!(symbol(exe, agent, &kernel_named(exe, "_l20.kd")).is_ok());
        // SAFETY: `exe` is live.
        unsafe { assert_eq!((f().hsa_executable_destroy)(exe), 0) };
    }

    // A synthetic image without segments: each symbol's bytes are loaded.
    let mut kd = [0u8; 64];
    kd[..12].copy_from_slice(&[16, 0, 0, 0, 32, 0, 0, 0, 24, 0, 0, 0]);
    let synthetic = elf::tests::sample(elf::EM_AMDGPU, &[("k.kd", 0, &kd), ("g", 0, &[1, 2, 3, 4])]);
    let exe = load_image(agents[1], &synthetic, true).unwrap();
    let k = symbol(exe, agents[1], "k.kd").unwrap();
    assert_eq!(symbol_info::<u32>(k, symbol_info::KERNEL_GROUP_SEGMENT_SIZE), Ok(16));
    assert_eq!(symbol_info::<u32>(k, symbol_info::KERNEL_PRIVATE_SEGMENT_SIZE), Ok(32));
    assert_eq!(symbol_info::<u32>(k, symbol_info::KERNEL_KERNARG_SEGMENT_SIZE), Ok(24));
    let g: u64 = symbol_info(symbol(exe, agents[1], "g").unwrap(), symbol_info::VARIABLE_ADDRESS).unwrap();
    // SAFETY: the variable's 4 loaded bytes.
    assert_eq!(unsafe { *(g as *const [u8; 4]) }, [1, 2, 3, 4]);
    // SAFETY: `exe` is live.
    unsafe { assert_eq!((f().hsa_executable_destroy)(exe), 0) };
    assert_eq!(live(), Live::default());
}

#[test]
fn fail_next_fails_one_call_and_calls_are_logged() {
    let _serial = start(&[gpu("gfx90a")]);
    let agents = all_agents();
    let coarse = pools(agents[1])[0];
    fail_next("hsa_amd_memory_pool_allocate", sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES);
    assert_eq!(allocate(coarse, 64), Err(sys::HSA_STATUS_ERROR_OUT_OF_RESOURCES));
    let ptr = allocate(coarse, 64).unwrap();
    assert_eq!(calls("hsa_amd_memory_pool_allocate"), 2);
    fail_next("hsa_init", sys::HSA_STATUS_ERROR);
    // SAFETY: no preconditions.
    unsafe {
        assert_eq!((f().hsa_init)(), sys::HSA_STATUS_ERROR);
        assert_eq!((f().hsa_init)(), 0);
        assert_eq!((f().hsa_shut_down)(), 0);
    }
    assert_eq!(free(ptr), 0);
    let log = with(|w| w.record.log.clone());
    assert_eq!(log[0], "hsa_init");
    assert!(log.ends_with(&["hsa_init", "hsa_init", "hsa_shut_down", "hsa_amd_memory_pool_free"]));
    let refused = std::panic::catch_unwind(|| fail_next("hsa_signal_load_relaxed", sys::HSA_STATUS_ERROR));
    assert!(refused.is_err(), "a call without a status cannot fail");
}

static FAULTS: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn on_event(event: *const AmdEvent, data: *mut c_void) -> HsaStatus {
    // SAFETY: the runtime passes a valid event.
    let event = unsafe { &*event };
    assert_eq!(
        (event.event_type, data as usize),
        (sys::event_type::GPU_MEMORY_FAULT, 9)
    );
    FAULTS.store(event.memory_fault.virtual_address, Ordering::SeqCst);
    HSA_STATUS_SUCCESS
}

#[test]
fn memory_fault_events_reach_the_registered_handler_and_reset_stops_queues() {
    let _serial = start(&[gpu("gfx90a")]);
    let agents = all_agents();
    assert_eq!(
        // SAFETY: the handler ignores nothing it is given.
        unsafe { (f().hsa_amd_register_system_event_handler)(on_event, 9 as *mut c_void) },
        0
    );
    assert_eq!(
        fire_memory_fault(agents[1], 0xdead_0000, sys::memory_fault_reason::PAGE_NOT_PRESENT),
        1
    );
    assert_eq!(FAULTS.load(Ordering::SeqCst), 0xdead_0000);
    let _left = create_queue(agents[1]);
    assert_eq!(live().queues, 1);
    reset(&[gpu("gfx90a")], HSA_STATUS_SUCCESS);
    assert_eq!(live(), Live::default());
}

#[test]
fn the_backend_opens_over_the_simulated_runtime() {
    use crate::backend::Backend;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    reset(&[gpu("gfx90a"), gpu("gfx1030")], HSA_STATUS_SUCCESS);
    let config = crate::util::config::Config::from_pairs(&[]);
    let backend =
        super::super::AmdgpuBackend::with_runtime(super::super::runtime::Api::new(runtime()), &config).unwrap();
    assert_eq!(backend.device_count(), 2);
    let reason = backend.device_count_reason();
    assert!(reason.contains("2 AMD GPU(s) (gfx90a, gfx1030)"), "{reason}");
    assert_eq!(
        with(|w| w.initialized),
        1,
        "the runtime stays initialised while the backend lives"
    );
}
