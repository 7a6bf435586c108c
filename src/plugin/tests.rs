//! The core driven by a fake GPU backend: device memory the host cannot touch directly (so every copy
//! must go the right way), queues whose work runs only when they are synchronised or queried, events
//! that mark positions in them, queues and events with non-pointer handles (as CUDA's are), modules
//! read from real ELF bytes, pinned memory at a different device address, kernels run as Rust closures,
//! and a log of every hook called, any of which can be made to fail once. The core's own rules — queues
//! per async info, launch geometry, the device environment, global checks, the memory manager, pinned
//! ranges, exchange, interop and teardown order — are checked here without a GPU, and the backend test
//! suite (`backend::suite`) runs on the fake through [`FakeHarness`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{Core, HostEntry, LaunchRequest, PluginApi};
use crate::backend::gpu::sim_calls::CallRecord;
use crate::backend::suite::{Harness, KernelBody, Live, Op, SeenLaunch, TestProgram};
use crate::backend::{
    AllocKind, Backend, DeviceLimits, ExecMode, GlobalSymbol, KernelSymbol, LaunchGeometry, NativeDevice,
};
use crate::util::config::{BackendKind, Config};
use crate::util::elf;
use crate::util::error::{Error, Result};

/// Work queued on a fake queue.
enum Work {
    Copy { dst: usize, src: usize, len: usize },
    Run { body: Option<KernelBody>, args: Vec<u64> },
    Record { event: usize },
}

/// What the fake backend saw.
#[derive(Default)]
struct World {
    log: Vec<String>,
    /// Every hook called, in order, and the one whose next call fails (see `FakeGpu::enter`).
    record: CallRecord<()>,
    /// Device allocations: address -> size.
    device_memory: HashMap<usize, usize>,
    /// Pinned host allocations: address -> size.
    host_memory: HashMap<usize, usize>,
    /// Modules' globals: address -> size, freed with their module.
    module_memory: HashMap<usize, usize>,
    /// Modules' globals by name: name -> (address, size).
    module_globals: HashMap<String, (usize, usize)>,
    /// Calls that would deadlock on a real GPU: an allocation or free while serving a kernel's host
    /// call (so while that kernel is in flight).
    #[cfg_attr(not(feature = "rpc"), allow(dead_code))] // without host services nothing is served
    violations: Vec<String>,
    device_allocs: usize,
    /// Bytes of device and host memory that may be allocated at once, when a test says.
    capacity: Option<usize>,
    next_handle: usize,
    modules: HashSet<usize>,
    queues: HashMap<usize, VecDeque<Work>>,
    /// Event -> (queue recorded on, whether the recording was reached).
    events: HashMap<usize, Option<(usize, bool)>>,
    /// Initialised devices.
    devices: HashSet<usize>,
    /// Pinned host ranges -> the devices that pinned them.
    pinned: HashMap<usize, HashSet<usize>>,
    bodies: HashMap<String, (usize, KernelBody)>,
    launches: Vec<(String, LaunchGeometry, Vec<usize>, usize)>,
    fail_alloc_once: bool,
    exchangeable: bool,
}

impl World {
    fn note(&mut self, what: impl Into<String>) {
        self.log.push(what.into());
    }

    fn is_device(&self, ptr: *const c_void, size: usize) -> bool {
        let p = ptr as usize;
        self.device_memory
            .iter()
            .chain(&self.module_memory)
            .any(|(&start, &len)| p >= start && p + size <= start + len)
    }

    fn allocated_bytes(&self) -> usize {
        self.device_memory.values().chain(self.host_memory.values()).sum()
    }
}

/// The world, locked, with this thread's allocations not counted (the fake's bookkeeping is not the
/// plugin's, which `a_launch_allocates_nothing_on_the_host` counts).
struct Locked<'a> {
    world: MutexGuard<'a, World>,
    _paused: crate::util::alloc_count::Paused,
}

impl std::ops::Deref for Locked<'_> {
    type Target = World;
    fn deref(&self) -> &World {
        &self.world
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut World {
        &mut self.world
    }
}

fn lock(world: &Mutex<World>) -> Locked<'_> {
    let paused = crate::util::alloc_count::pause();
    Locked {
        world: world.lock().unwrap_or_else(|e| e.into_inner()),
        _paused: paused,
    }
}

struct FakeGpu {
    world: Arc<Mutex<World>>,
    devices: usize,
}

struct FakeModule {
    id: usize,
    bytes: Vec<u8>,
    /// Device copies of the image's globals: name -> (address, size).
    globals: HashMap<Vec<u8>, (usize, usize)>,
}

/// The error of a hook made to fail.
fn injected(call: &'static str) -> Error {
    Error::Driver {
        driver: "fake",
        call,
        code: 999,
        name: "FAKE_ERROR_INJECTED".into(),
    }
}

impl FakeGpu {
    fn world(&self) -> Locked<'_> {
        lock(&self.world)
    }

    /// Logs a call of hook `call`; fails it when a test armed it. An allocation or free made while
    /// serving a kernel's host call (so while that kernel is in flight) is recorded in `violations` and
    /// fails, as the simulated CUDA driver does: on a real GPU it can deadlock.
    fn enter(&self, call: &'static str) -> Result<()> {
        let mut world = self.world();
        let armed = world.record.enter(call);
        #[cfg(feature = "rpc")]
        if (call.starts_with("alloc") || call.starts_with("free")) && crate::rpc::calls::this_thread_is_serving() {
            world
                .violations
                .push(format!("{call} while serving a host call of a running kernel"));
            return Err(injected(call));
        }
        armed.map_err(|()| injected(call))
    }

    fn device_alloc(&self, size: usize) -> *mut c_void {
        // SAFETY: calloc has no preconditions.
        let ptr = unsafe { libc::calloc(1, size) };
        let mut world = self.world();
        world.device_memory.insert(ptr as usize, size);
        world.device_allocs += 1;
        ptr
    }

    fn handle(&self) -> usize {
        let mut world = self.world();
        world.next_handle += 1;
        world.next_handle
    }

    /// Queues `work` on `queue`.
    fn queue(&self, queue: usize, work: Work) -> Result<()> {
        let mut world = self.world();
        let q = world
            .queues
            .get_mut(&queue)
            .ok_or_else(|| Error::InvalidArg(format!("fake queue {queue} does not exist")))?;
        q.push_back(work);
        Ok(())
    }

    /// Runs a queue's work in order, outside the lock (a kernel body may call the core).
    fn drain(&self, queue: usize) {
        loop {
            let work = self.world().queues.get_mut(&queue).and_then(VecDeque::pop_front);
            match work {
                None => return,
                Some(Work::Copy { dst, src, len }) => {
                    // SAFETY: the core queued a copy between ranges valid for `len` bytes until the
                    // queue is synchronised, which is now.
                    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) }
                }
                Some(Work::Run { body, args }) => {
                    if let Some(body) = body {
                        body(&args);
                    }
                }
                Some(Work::Record { event }) => {
                    if let Some(Some((_, reached))) = self.world().events.get_mut(&event) {
                        *reached = true;
                    }
                }
            }
        }
    }

    /// A failed queue loses its work, as a driver's failed stream does.
    fn fail_queue(&self, queue: usize, err: Error) -> Error {
        if let Some(q) = self.world().queues.get_mut(&queue) {
            q.clear();
        }
        err
    }

    /// A copy that must go `direction` ("h2d": host to device memory, "d2h": the other way).
    ///
    /// # Safety
    /// Both ranges hold `size` bytes until `queue` is synchronised.
    unsafe fn copy(
        &self,
        direction: &str,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: usize,
    ) -> Result<()> {
        {
            let mut world = self.world();
            let to_device = direction == "h2d";
            assert_eq!(
                world.is_device(dst, size),
                to_device,
                "{direction}: destination on the wrong side"
            );
            assert_eq!(
                world.is_device(src, size),
                !to_device,
                "{direction}: source on the wrong side"
            );
            world.note(format!("{direction} {size} on {queue}"));
        }
        self.queue(
            queue,
            Work::Copy {
                dst: dst as usize,
                src: src as usize,
                len: size,
            },
        )
    }
}

impl Backend for FakeGpu {
    type Module = FakeModule;
    type Kernel = String;
    type Queue = usize;
    type Event = usize;

    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn device_count(&self) -> usize {
        self.devices
    }

    fn device_count_reason(&self) -> String {
        format!("{} fake GPUs", self.devices)
    }

    fn is_compatible_image(&self, header: &[u8], _image_len: usize, arch: Option<&str>) -> bool {
        elf::header(header).is_some_and(|h| h.machine == elf::EM_CUDA) && arch.is_none_or(|a| a == "sm_90")
    }

    fn init_device(&self, device: usize) -> Result<DeviceLimits> {
        self.enter("init_device")?;
        let mut world = self.world();
        world.note(format!("init {device}"));
        world.devices.insert(device);
        Ok(DeviceLimits {
            lane_size: 32,
            max_threads: 1024,
            max_teams: 65536,
            default_threads: 128,
            default_teams: 3200,
            multiprocessors: 132,
            memory_bytes: 1 << 30,
            default_exec_mode: ExecMode::Spmd,
            max_kernel_args: 64,
            rpc_ports: 64,
            recycle_allocations: true,
            team_caps_apply: true,
            reads_host_memory: false,
        })
    }

    fn deinit_device(&self, device: usize) -> Result<()> {
        self.enter("deinit_device")?;
        let mut world = self.world();
        world.note(format!("deinit {device}"));
        world.devices.remove(&device);
        Ok(())
    }

    fn load_module(&self, device: usize, image: &[u8]) -> Result<FakeModule> {
        self.enter("load_module")?;
        let parsed = elf::Image::parse(image).ok_or_else(|| Error::BadImage("not ELF".into()))?;
        let mut globals = HashMap::new();
        let mut placed = Vec::new();
        for name in [
            &b"__omp_rtl_device_environment"[..],
            b"counter",
            b"table",
            b"__llvm_libc_rpc_client",
            b"client_object",
            b"__omprpc_rpc_lanes",
        ] {
            if let Some(symbol) = parsed.symbol(name) {
                let size = symbol.size as usize;
                // SAFETY: calloc has no preconditions.
                let addr = unsafe { libc::calloc(1, size) } as usize;
                let mut world = self.world();
                world.module_memory.insert(addr, size);
                world
                    .module_globals
                    .insert(String::from_utf8_lossy(name).into_owned(), (addr, size));
                drop(world);
                if let Some(bytes) = parsed.symbol_bytes(&symbol) {
                    // SAFETY: `addr` holds `size` bytes, as many as `bytes`.
                    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), addr as *mut u8, size) };
                }
                globals.insert(name.to_vec(), (addr, size));
                placed.push((symbol.value, addr));
            }
        }
        // A pointer global initialised with another global's address is relocated to that global's
        // device copy, as the CUDA driver applies a cubin's `T *p = &object;` (each global placed on
        // its own).
        for relocation in parsed.relocations() {
            let patched = placed
                .iter()
                .find(|(image_address, _)| *image_address == relocation.offset);
            let target = relocation
                .target
                .and_then(|t| placed.iter().find(|(image_address, _)| *image_address == t.value));
            if let (Some(&(_, addr)), Some(&(_, target))) = (patched, target) {
                let value = (target as i64 + relocation.addend) as u64;
                // SAFETY: the fake's device memory is host memory; the pointer global holds 8 bytes.
                unsafe { std::ptr::write_unaligned(addr as *mut u64, value) };
            }
        }
        let id = self.handle();
        let mut world = self.world();
        world.note(format!("load {device}"));
        world.modules.insert(id);
        Ok(FakeModule {
            id,
            bytes: image.to_vec(),
            globals,
        })
    }

    fn unload_module(&self, device: usize, module: FakeModule) -> Result<()> {
        self.enter("unload_module")?;
        let mut world = self.world();
        world.note(format!("unload {device}"));
        world.modules.remove(&module.id);
        for &(addr, _) in module.globals.values() {
            world.module_memory.remove(&addr);
            world.module_globals.retain(|_, (a, _)| *a != addr);
            // SAFETY: the module's globals came from calloc in `load_module` and die with it.
            unsafe { libc::free(addr as *mut c_void) };
        }
        Ok(())
    }

    fn kernel(&self, _device: usize, module: &FakeModule, name: &CStr) -> Result<KernelSymbol<String>> {
        self.enter("kernel")?;
        let image = elf::Image::parse(&module.bytes).unwrap();
        image.symbol(name.to_bytes()).ok_or_else(|| Error::MissingSymbol {
            image: "fake".into(),
            symbol: name.to_string_lossy().into(),
        })?;
        Ok(KernelSymbol {
            kernel: name.to_string_lossy().into(),
            max_threads: (name.to_bytes() == b"small_kernel").then_some(256),
        })
    }

    fn global(&self, _device: usize, module: &FakeModule, name: &CStr) -> Result<GlobalSymbol> {
        self.enter("global")?;
        let &(addr, size) = module
            .globals
            .get(name.to_bytes())
            .ok_or_else(|| Error::MissingSymbol {
                image: "fake".into(),
                symbol: name.to_string_lossy().into(),
            })?;
        Ok(GlobalSymbol {
            addr: addr as *mut c_void,
            size,
        })
    }

    fn alloc(&self, _device: usize, size: usize, kind: AllocKind) -> Result<*mut c_void> {
        self.enter(if kind == AllocKind::Host {
            "alloc_host"
        } else {
            "alloc_device"
        })?;
        {
            let mut world = self.world();
            let full = world
                .capacity
                .is_some_and(|capacity| world.allocated_bytes() + size > capacity);
            if std::mem::take(&mut world.fail_alloc_once) || full {
                return Err(Error::OutOfMemory { size });
            }
        }
        Ok(match kind {
            AllocKind::Host => {
                // SAFETY: malloc has no preconditions.
                let ptr = unsafe { libc::malloc(size) };
                self.world().host_memory.insert(ptr as usize, size);
                ptr
            }
            _ => self.device_alloc(size),
        })
    }

    unsafe fn free(&self, _device: usize, ptr: *mut c_void, kind: AllocKind) -> Result<()> {
        self.enter(if kind == AllocKind::Host {
            "free_host"
        } else {
            "free_device"
        })?;
        {
            let mut world = self.world();
            let memory = if kind == AllocKind::Host {
                &mut world.host_memory
            } else {
                &mut world.device_memory
            };
            assert!(memory.remove(&(ptr as usize)).is_some(), "freeing unknown memory");
        }
        // SAFETY: the pointer came from calloc/malloc above.
        unsafe { libc::free(ptr) };
        Ok(())
    }

    unsafe fn copy_to_device(
        &self,
        _device: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: &usize,
    ) -> Result<()> {
        self.enter("copy_to_device")?;
        // SAFETY: forwarded from the trait method's contract.
        unsafe { self.copy("h2d", dst, src, size, *queue) }
    }

    unsafe fn copy_to_host(
        &self,
        _device: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        queue: &usize,
    ) -> Result<()> {
        self.enter("copy_to_host")?;
        // SAFETY: forwarded from the trait method's contract.
        unsafe { self.copy("d2h", dst, src, size, *queue) }
    }

    fn can_exchange(&self, _src: usize, _dst: usize) -> bool {
        self.world().exchangeable
    }

    unsafe fn copy_between_devices(
        &self,
        src_device: usize,
        src: *const c_void,
        dst_device: usize,
        dst: *mut c_void,
        size: usize,
        queue: &usize,
    ) -> Result<()> {
        self.enter(if src_device == dst_device {
            "copy_within_device"
        } else {
            "copy_between_devices"
        })?;
        {
            let mut world = self.world();
            assert!(world.is_device(src, size) && world.is_device(dst, size));
            world.note(format!("d2d {src_device}->{dst_device} {size} on {queue}"));
        }
        self.queue(
            *queue,
            Work::Copy {
                dst: dst as usize,
                src: src as usize,
                len: size,
            },
        )
    }

    unsafe fn launch(
        &self,
        _device: usize,
        kernel: &String,
        args: &[*mut c_void],
        geometry: LaunchGeometry,
        _asynchronous: bool,
        queue: &usize,
    ) -> Result<()> {
        self.enter("launch")?;
        let work = {
            let mut world = self.world();
            let values: Vec<usize> = args.iter().map(|&a| a as usize).collect();
            let body = world.bodies.get(kernel).map(|(count, body)| {
                let args = values.iter().take(*count).map(|&a| a as u64).collect();
                Work::Run {
                    body: Some(Arc::clone(body)),
                    args,
                }
            });
            world.launches.push((kernel.clone(), geometry, values, *queue));
            body.unwrap_or(Work::Run {
                body: None,
                args: Vec::new(),
            })
        };
        self.queue(*queue, work)
    }

    fn create_queue(&self, _device: usize) -> Result<usize> {
        self.enter("create_queue")?;
        let queue = self.handle();
        self.world().queues.insert(queue, VecDeque::new());
        Ok(queue)
    }

    fn destroy_queue(&self, _device: usize, queue: &usize) -> Result<()> {
        self.enter("destroy_queue")?;
        let mut world = self.world();
        world.note(format!("destroy queue {queue}"));
        world.queues.remove(queue);
        Ok(())
    }

    fn queue_handle(&self, queue: &usize) -> *mut c_void {
        (0x5_0000 + *queue) as *mut c_void
    }

    fn synchronize(&self, _device: usize, queue: &usize) -> Result<()> {
        self.enter("synchronize").map_err(|e| self.fail_queue(*queue, e))?;
        self.world().note(format!("sync {queue}"));
        self.drain(*queue);
        Ok(())
    }

    fn is_idle(&self, _device: usize, queue: &usize) -> Result<bool> {
        self.enter("is_idle").map_err(|e| self.fail_queue(*queue, e))?;
        // Work left is "not done" once; the query then lets it run, as time passing would.
        let pending = self.world().queues.get(queue).is_some_and(|q| !q.is_empty());
        if pending {
            self.drain(*queue);
        }
        Ok(!pending)
    }

    fn create_event(&self, _device: usize) -> Result<usize> {
        self.enter("create_event")?;
        let event = self.handle();
        self.world().events.insert(event, None);
        Ok(event)
    }

    fn destroy_event(&self, _device: usize, event: &usize) -> Result<()> {
        self.enter("destroy_event")?;
        let mut world = self.world();
        world.note(format!("destroy event {event}"));
        world.events.remove(event);
        Ok(())
    }

    fn event_handle(&self, event: &usize) -> *mut c_void {
        (0xe_0000 + *event) as *mut c_void
    }

    fn record_event(&self, _device: usize, event: &usize, queue: &usize) -> Result<()> {
        self.enter("record_event")?;
        {
            let mut world = self.world();
            world.note(format!("record {event} on {queue}"));
            world.events.insert(*event, Some((*queue, false)));
        }
        self.queue(*queue, Work::Record { event: *event })
    }

    fn wait_event(&self, _device: usize, event: &usize, queue: &usize) -> Result<()> {
        self.enter("wait_event")?;
        let recorded = {
            let mut world = self.world();
            world.note(format!("wait {event} on {queue}"));
            world.events.get(event).copied().flatten()
        };
        // The waiting queue's later work runs after the recording: run the recording's queue now.
        if let Some((on, false)) = recorded {
            self.drain(on);
        }
        Ok(())
    }

    fn sync_event(&self, _device: usize, event: &usize) -> Result<()> {
        self.enter("sync_event")?;
        let recorded = {
            let mut world = self.world();
            world.note(format!("sync event {event}"));
            world.events.get(event).copied().flatten()
        };
        if let Some((on, false)) = recorded {
            self.drain(on);
        }
        Ok(())
    }

    fn lock_host_memory(&self, device: usize, ptr: *mut c_void, size: usize) -> Result<*mut c_void> {
        self.enter("lock_host_memory")?;
        let mut world = self.world();
        world.note(format!("pin {size}"));
        world.pinned.entry(ptr as usize).or_default().insert(device);
        Ok((ptr as usize + 0x1000_0000) as *mut c_void)
    }

    fn unlock_host_memory(&self, device: usize, ptr: *mut c_void) -> Result<()> {
        self.enter("unlock_host_memory")?;
        let mut world = self.world();
        world.note("unpin");
        if let Some(devices) = world.pinned.get_mut(&(ptr as usize)) {
            devices.remove(&device);
            if devices.is_empty() {
                world.pinned.remove(&(ptr as usize));
            }
        }
        Ok(())
    }

    fn native_device(&self, device: usize) -> NativeDevice {
        NativeDevice {
            context: (0xc000 + device) as *mut c_void,
            device: device as *mut c_void,
        }
    }

    fn describe_device(&self, device: usize) -> Vec<(&'static str, String)> {
        vec![("Device", format!("fake {device}"))]
    }
}

fn fake_with(devices: usize, pairs: &[(&str, &str)]) -> (Box<dyn PluginApi>, Arc<Mutex<World>>) {
    let world = Arc::new(Mutex::new(World::default()));
    let core = Core::new_boxed(
        FakeGpu {
            world: Arc::clone(&world),
            devices,
        },
        Config::from_pairs(pairs),
    );
    (core, world)
}

fn fake(pairs: &[(&str, &str)]) -> (Box<dyn PluginApi>, Arc<Mutex<World>>) {
    fake_with(2, pairs)
}

/// A cubin-like image: kernels `spmd_kernel` (mode 2), `generic_kernel` (mode 1) and `small_kernel` (no
/// mode: the device default), a 4-byte `counter` holding 7, a 16-byte `table`, and a device environment.
fn image() -> Vec<u8> {
    elf::tests::sample(
        elf::EM_CUDA,
        &[
            ("spmd_kernel", 0, &[0]),
            ("spmd_kernel_exec_mode", 0, &[2]),
            ("generic_kernel", 0, &[0]),
            ("generic_kernel_exec_mode", 0, &[1]),
            ("small_kernel", 0, &[0]),
            ("counter", 0, &7u32.to_le_bytes()),
            ("table", 0, &[0; 16]),
            ("__omp_rtl_device_environment", 0, &[0xff; 16]),
        ],
    )
}

fn entries(specs: &[(&str, usize)]) -> Vec<HostEntry> {
    specs
        .iter()
        .map(|&(name, size)| HostEntry {
            name: CString::new(name).unwrap(),
            size,
            flags: 0,
            host_addr: 0,
        })
        .collect()
}

fn standard_entries() -> Vec<HostEntry> {
    entries(&[
        ("spmd_kernel", 0),
        ("counter", 4),
        ("generic_kernel", 0),
        ("small_kernel", 0),
        ("table", 16),
    ])
}

fn read_device<T: Copy>(addr: usize) -> T {
    // SAFETY: the fake's device memory is host memory in disguise; tests read what the core wrote.
    unsafe { std::ptr::read_unaligned(addr as *const T) }
}

#[test]
fn loading_writes_the_environment_resolves_entries_and_checks_globals() {
    let (core, _world) = fake(&[
        ("LIBOMPTARGET_SHARED_MEMORY_SIZE", "64"),
        ("LIBOMPTARGET_DEVICE_RTL_DEBUG", "1"),
    ]);
    assert!(core.is_valid_image(&image(), image().len(), Some("sm_90")));
    assert!(
        !core.is_valid_image(&image(), image().len(), Some("sm_70")),
        "the arch string reaches the backend"
    );
    core.init_device(1).unwrap();
    let bytes = image();
    let loaded = core.load_image(1, 0x1000, &bytes, &standard_entries()).unwrap();
    assert!(!loaded.already_loaded);
    assert_eq!(loaded.addresses.len(), 5, "one address per entry, in order");
    assert_eq!(read_device::<u32>(loaded.addresses[1]), 7, "the global's device copy");
    let again = core.load_image(1, 0x1000, &bytes, &standard_entries()).unwrap();
    assert!(
        again.already_loaded,
        "a second load of the same image returns the first"
    );
    assert_eq!(again.addresses, loaded.addresses);
    let mismatched = entries(&[("counter", 8)]);
    let err = core
        .load_image(1, 0x2000, &bytes, &mismatched)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("global 'counter' has 4 bytes in the device image but 8 on the host"),
        "{err}"
    );
    let missing = entries(&[("no_such_kernel", 0)]);
    let err = core.load_image(1, 0x3000, &bytes, &missing).err().unwrap().to_string();
    assert!(err.contains("loading kernel no_such_kernel"), "names the kernel: {err}");
}

#[test]
fn the_device_environment_is_written_with_llvm_16_layout() {
    let (core, _world) = fake(&[
        ("LIBOMPTARGET_SHARED_MEMORY_SIZE", "64"),
        ("LIBOMPTARGET_DEVICE_RTL_DEBUG", "1"),
    ]);
    core.init_device(1).unwrap();
    let entries = entries(&[("spmd_kernel", 0)]);
    core.load_image(1, 0x1000, &image(), &entries).unwrap();
    // The fake module keeps its globals; find the environment through a global entry of its own.
    let with_env = super::HostEntry {
        name: CString::new("__omp_rtl_device_environment").unwrap(),
        size: 16,
        flags: 0,
        host_addr: 0,
    };
    let loaded = core.load_image(1, 0x4000, &image(), &[with_env]).unwrap();
    let env: [u32; 4] = read_device(loaded.addresses[0]);
    assert_eq!(env, [1, 2, 1, 64], "debug kind, devices, device number, dynamic memory");
}

#[test]
fn launches_get_stock_geometry_on_a_queue_of_the_async_info() {
    let (core, world) = fake(&[]);
    core.init_device(0).unwrap();
    let loaded = core.load_image(0, 0x1000, &image(), &standard_entries()).unwrap();
    let (spmd, generic, small) = (loaded.addresses[0], loaded.addresses[2], loaded.addresses[3]);
    let args = [0x10 as *mut c_void, 0x20 as *mut c_void];
    let mut queue: *mut c_void = std::ptr::null_mut();
    let request = |teams, threads, trip| LaunchRequest {
        teams,
        thread_limit: threads,
        tripcount: trip,
        ..Default::default()
    };
    // SAFETY: for all launches, the fake backend only records the arguments.
    unsafe {
        core.launch(0, spmd, &args, &request(0, 0, 1000), Some(&mut queue))
            .unwrap();
        assert!(!queue.is_null(), "the launch took a queue for the async info");
        let handle = queue as usize;
        assert!(
            handle > 0x5_0000 && handle < 0x6_0000,
            "libomptarget holds the backend's own handle"
        );
        core.launch(0, generic, &args, &request(0, 64, 100), Some(&mut queue))
            .unwrap();
        assert_eq!(queue as usize, handle, "later work goes to the same queue");
        core.launch(0, small, &[], &request(0, 1024, 0), None).unwrap();
    }
    core.synchronize(0, &mut queue).unwrap();
    assert!(queue.is_null(), "synchronize gives the queue back");
    let world = world.lock().unwrap();
    let got: Vec<(&str, u32, u32)> = world
        .launches
        .iter()
        .map(|(k, g, _, _)| (k.as_str(), g.teams, g.threads))
        .collect();
    assert_eq!(
        got,
        vec![
            ("spmd_kernel", 8, 128),
            ("generic_kernel", 100, 96),
            ("small_kernel", 3200, 256)
        ],
        "SPMD: one iteration per thread; generic: a warp added, one team per iteration; the kernel's own limit"
    );
    assert_eq!(world.launches[0].2, vec![0x10, 0x20], "arguments forwarded");
    assert_eq!(world.launches[0].3, world.launches[1].3, "one queue for one async info");
    assert_ne!(
        world.launches[2].3, world.launches[0].3,
        "a synchronous launch uses a queue of its own"
    );
    assert!(
        world.log.iter().any(|l| l == &format!("sync {}", world.launches[2].3)),
        "and waits for it before returning"
    );
}

#[test]
fn stale_and_foreign_queue_handles_are_refused() {
    let (core, _world) = fake(&[]);
    core.init_device(0).unwrap();
    let mut bogus = 0x1234 as *mut c_void;
    let err = core.synchronize(0, &mut bogus).unwrap_err().to_string();
    assert!(err.contains("queue 0x1234 was not created by this device"), "{err}");
    let mut queue = core.interop_queue(0).unwrap();
    let stale = queue;
    core.synchronize(0, &mut queue).unwrap();
    let mut again = stale;
    assert!(core.synchronize(0, &mut again).is_err(), "a released queue is refused");
}

#[test]
fn small_device_allocations_are_recycled_and_out_of_memory_releases_the_cache() {
    let (core, world) = fake(&[]);
    core.init_device(0).unwrap();
    let allocs = || world.lock().unwrap().device_allocs;
    let start = allocs();
    let a = core.alloc(0, 64, AllocKind::Default).unwrap();
    core.free(0, a as usize).unwrap();
    let b = core.alloc(0, 64, AllocKind::Default).unwrap();
    assert_eq!(a, b, "the same block comes back");
    assert_eq!(allocs(), start + 1, "without a second device allocation");
    assert!(core.free(0, a as usize).is_ok());
    assert!(
        core.free(0, a as usize).is_err(),
        "a double free is refused even for recycled blocks"
    );
    let big = core.alloc(0, 1 << 20, AllocKind::Device).unwrap();
    core.free(0, big as usize).unwrap();
    let big_again = core.alloc(0, 1 << 20, AllocKind::Device).unwrap();
    assert_eq!(
        allocs(),
        start + 3,
        "above the threshold every allocation goes to the device"
    );
    core.free(0, big_again as usize).unwrap();
    // The device runs out: the cached 64-byte block is released, and the allocation retried.
    world.lock().unwrap().fail_alloc_once = true;
    let c = core.alloc(0, 128, AllocKind::Device).unwrap();
    assert!(
        !world.lock().unwrap().device_memory.contains_key(&(a as usize)),
        "the cached block was freed"
    );
    core.free(0, c as usize).unwrap();

    let (core, world) = fake(&[("LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD", "0")]);
    core.init_device(0).unwrap();
    let start = world.lock().unwrap().device_allocs;
    let a = core.alloc(0, 64, AllocKind::Default).unwrap();
    core.free(0, a as usize).unwrap();
    core.alloc(0, 64, AllocKind::Default).unwrap();
    assert_eq!(
        world.lock().unwrap().device_allocs,
        start + 2,
        "threshold 0 turns recycling off"
    );
}

#[test]
fn pinned_ranges_are_counted_and_host_allocations_are_pinned() {
    let (core, world) = fake(&[]);
    core.init_device(0).unwrap();
    let mut buffer = vec![0u8; 256];
    let host = buffer.as_mut_ptr().cast::<c_void>();
    let dev = core.lock_host(0, host, 256).unwrap();
    assert_eq!(
        dev as usize,
        host as usize + 0x1000_0000,
        "the backend's device address"
    );
    let inner = core.lock_host(0, host.wrapping_byte_add(16), 8).unwrap();
    assert_eq!(
        inner as usize,
        dev as usize + 16,
        "inside a pinned range: the same offset"
    );
    core.unlock_host(0, host.wrapping_byte_add(16)).unwrap();
    core.unlock_host(0, host).unwrap();
    assert!(core.unlock_host(0, host).is_err());
    let pins = world
        .lock()
        .unwrap()
        .log
        .iter()
        .filter(|l| l.starts_with("pin"))
        .count();
    let unpins = world.lock().unwrap().log.iter().filter(|l| *l == "unpin").count();
    assert_eq!((pins, unpins), (1, 1), "pinned once, unpinned once");
    let pinned = core.alloc(0, 32, AllocKind::Host).unwrap();
    assert_eq!(
        core.lock_host(0, pinned, 32).unwrap(),
        pinned,
        "host allocations are already pinned"
    );
    assert!(core.free(0, pinned as usize).is_err(), "still locked");
    core.unlock_host(0, pinned).unwrap();
    core.free(0, pinned as usize).unwrap();
}

#[test]
fn copies_go_the_right_way_and_exchange_needs_the_backend() {
    let (core, world) = fake(&[]);
    core.init_device(0).unwrap();
    core.init_device(1).unwrap();
    let d0 = core.alloc(0, 8, AllocKind::Device).unwrap();
    let d1 = core.alloc(1, 8, AllocKind::Device).unwrap();
    let value = 42u64;
    let mut back = 0u64;
    // SAFETY: the pointers hold 8 bytes each; the fake asserts the directions.
    unsafe {
        core.submit(0, d0, (&value as *const u64).cast(), 8, None).unwrap();
        let err = core.exchange(0, d0, 1, d1, 8, None).unwrap_err().to_string();
        assert!(err.contains("device 0 cannot copy to device 1 directly"), "{err}");
        world.lock().unwrap().exchangeable = true;
        assert!(core.can_exchange(0, 1).unwrap());
        core.exchange(0, d0, 1, d1, 8, None).unwrap();
        core.retrieve(1, (&mut back as *mut u64).cast(), d1, 8, None).unwrap();
    }
    assert_eq!(back, 42);
    assert!(world.lock().unwrap().log.iter().any(|l| l.starts_with("d2d 0->1 8")));
}

#[test]
fn events_are_recorded_and_waited_on_the_async_info_queue() {
    let (core, world) = fake(&[]);
    core.init_device(0).unwrap();
    let event = core.create_event(0).unwrap();
    assert!(event as usize > 0xe_0000, "the backend's event handle");
    let mut queue: *mut c_void = std::ptr::null_mut();
    core.record_event(0, event, &mut queue).unwrap();
    assert!(!queue.is_null(), "recording takes a queue for the async info");
    core.wait_event(0, event, &mut queue).unwrap();
    core.sync_event(0, event).unwrap();
    core.synchronize(0, &mut queue).unwrap();
    core.destroy_event(0, event).unwrap();
    assert!(core.destroy_event(0, event).is_err());
    let log = world.lock().unwrap().log.clone();
    let recorded = log.iter().position(|l| l.starts_with("record")).unwrap();
    let waited = log.iter().position(|l| l.starts_with("wait")).unwrap();
    assert!(recorded < waited);
    assert_eq!(
        log[recorded].split(" on ").nth(1),
        log[waited].split(" on ").nth(1),
        "same queue"
    );
}

#[test]
fn interop_gets_native_handles() {
    let (core, _world) = fake(&[]);
    core.init_device(1).unwrap();
    let native = core.native_device(1).unwrap();
    assert_eq!((native.context as usize, native.device as usize), (0xc001, 1));
    let queue = core.interop_queue(1).unwrap();
    assert!(queue as usize > 0x5_0000, "a real stream handle, not a pool slot");
}

#[test]
fn deinit_tears_down_in_order_and_devices_come_back() {
    let (core, world) = fake(&[
        ("LIBOMPTARGET_NUM_INITIAL_STREAMS", "2"),
        ("LIBOMPTARGET_NUM_INITIAL_EVENTS", "1"),
    ]);
    core.register_library();
    core.register_library();
    core.init_device(0).unwrap();
    let loaded = core.load_image(0, 0x1000, &image(), &standard_entries()).unwrap();
    let cached = core.alloc(0, 64, AllocKind::Default).unwrap();
    core.free(0, cached as usize).unwrap();
    let mut pinned = [0u8; 8];
    core.lock_host(0, pinned.as_mut_ptr().cast(), 8).unwrap();
    assert!(
        !core.deinit().unwrap(),
        "another library is still registered: no teardown"
    );
    assert!(!world.lock().unwrap().log.iter().any(|l| l.starts_with("deinit")));
    assert_eq!(
        core.unregister_library(&[(0x5000, 0x6000)]).unwrap(),
        vec![],
        "not this library's image"
    );
    assert!(core.deinit().unwrap(), "the last library: teardown");
    core.unregister_library(&[(0x0, 0x2000)]).unwrap();
    let log = world.lock().unwrap().log.clone();
    let at = |prefix: &str| {
        log.iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {log:?}"))
    };
    assert!(at("unload 0") < at("unpin"));
    assert!(at("unpin") < at("destroy event"));
    assert!(at("destroy event") < at("destroy queue"));
    assert!(at("destroy queue") < at("deinit 0"));
    assert!(
        !world.lock().unwrap().device_memory.contains_key(&(cached as usize)),
        "cached blocks freed"
    );
    // SAFETY: the kernel entry is refused before anything is dereferenced.
    let err = unsafe { core.launch(0, loaded.addresses[0], &[], &LaunchRequest::default(), None) }
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("kernel entry"),
        "kernels of torn-down images are refused: {err}"
    );
    // libomptarget does not call init_device again: the next use initialises the device again.
    let again = core.load_image(0, 0x1000, &image(), &standard_entries()).unwrap();
    assert!(!again.already_loaded, "loaded afresh");
    assert_eq!(
        world
            .lock()
            .unwrap()
            .log
            .iter()
            .filter(|l| l.starts_with("init 0"))
            .count(),
        2
    );
}

#[test]
fn unregistering_a_library_unloads_only_its_images() {
    let (core, world) = fake(&[]);
    core.register_library();
    core.register_library();
    core.init_device(0).unwrap();
    core.init_device(1).unwrap();
    let kept = core.load_image(0, 0x1000, &image(), &standard_entries()).unwrap();
    let gone = core.load_image(1, 0x8000, &image(), &standard_entries()).unwrap();
    let unloaded = core.unregister_library(&[(0x7000, 0x9000)]).unwrap();
    assert_eq!(unloaded, vec![(1, 0x8000)]);
    assert_eq!(
        world
            .lock()
            .unwrap()
            .log
            .iter()
            .filter(|l| l.starts_with("unload"))
            .count(),
        1
    );
    // SAFETY: the fake backend only records the launch.
    unsafe {
        assert!(core
            .launch(1, gone.addresses[0], &[], &LaunchRequest::default(), None)
            .is_err());
        core.launch(0, kept.addresses[0], &[], &LaunchRequest::default(), None)
            .unwrap();
    }
    let fresh = core.load_image(1, 0x8000, &image(), &standard_entries()).unwrap();
    assert!(!fresh.already_loaded, "an image at an old address is loaded afresh");
    let set: HashSet<usize> = fresh.addresses.iter().copied().collect();
    assert!(!set.contains(&gone.addresses[0]), "with new kernel records");
}

/// An image with host services as LLVM libc's client lays them out: `client_object` (the client, 552
/// bytes) and `__llvm_libc_rpc_client`, relocated to the symbol `pointer` names (`client_object` when
/// `None`; no relocation, so a null pointer, when empty), and a lane count when `lanes` says.
#[cfg(feature = "rpc")]
fn rpc_image(pointer: Option<&str>, lanes: Option<u32>) -> Vec<u8> {
    let lanes = lanes.map(u32::to_le_bytes);
    let mut symbols: Vec<(&str, u64, &[u8])> = vec![
        ("client_object", 0, &[0u8; 552]),
        ("__llvm_libc_rpc_client", 0, &[0u8; 8]),
        ("counter", 0, &[0u8; 4]),
    ];
    if let Some(lanes) = &lanes {
        symbols.push(("__omprpc_rpc_lanes", 0, lanes));
    }
    let target = pointer.unwrap_or("client_object");
    let relocations: &[(&str, &str)] = if target.is_empty() {
        &[]
    } else {
        &[("__llvm_libc_rpc_client", target)]
    };
    elf::tests::sample_with_relocations(elf::EM_CUDA, &symbols, relocations)
}

/// The servers now in service whose mailbox the client object at `object` names.
#[cfg(feature = "rpc")]
fn server_of(object: usize) -> Option<Arc<crate::rpc::serving::server::RpcServer>> {
    let mailbox = read_device::<u64>(object + 8) as usize;
    crate::rpc::serving::registry::servers()
        .iter()
        .find(|s| s.mailbox_address() == mailbox && mailbox != 0)
        .cloned()
}

/// LLVM's plugin contract: the client bytes go to the object the image's pointer names, the pointer
/// is left alone, each image gets ports (a server) of its own, and unloading one image leaves the
/// other's server in service.
#[cfg(feature = "rpc")]
#[test]
fn each_image_gets_its_client_copied_to_its_own_object_and_a_server_of_its_own() {
    let (core, _world) = fake(&[("OMPRPC_RPC_PORTS", "8")]);
    core.init_device(0).unwrap();
    let image = rpc_image(None, None);
    let specs = entries(&[("__llvm_libc_rpc_client", 8), ("client_object", 552)]);
    let first = core.load_image(0, 0x10_000, &image, &specs).unwrap();
    let second = core.load_image(0, 0x20_000, &image, &specs).unwrap();
    let mut servers = Vec::new();
    for loaded in [&first, &second] {
        let (pointer, object) = (loaded.addresses[0], loaded.addresses[1]);
        assert_eq!(
            read_device::<u64>(pointer) as usize,
            object,
            "the pointer still names the object"
        );
        assert_eq!(read_device::<u32>(object), 8, "the client knows its port count");
        let server = server_of(object).expect("the object names a server's mailbox");
        assert_eq!(
            (server.ports(), server.lane_size()),
            (8, 32),
            "the device's lanes (a warp)"
        );
        servers.push(server);
    }
    assert_ne!(
        servers[0].mailbox_address(),
        servers[1].mailbox_address(),
        "two images never share ports: each client has its own port locks"
    );
    let (first_object, second_object) = (first.addresses[1], second.addresses[1]);
    drop(servers);
    core.unregister_library(&[(0x10_000, 0x10_001)]).unwrap();
    assert!(server_of(second_object).is_some(), "the other image is still served");
    assert!(
        !crate::rpc::serving::registry::servers()
            .iter()
            .any(|s| s.mailbox_address() == read_device::<u64>(first_object + 8) as usize),
        "the unloaded image's server is out of service"
    );
    assert!(core.deinit().unwrap());
}

#[cfg(feature = "rpc")]
#[test]
fn a_client_pointer_that_is_null_or_names_no_client_sized_object_fails_the_load() {
    let (core, world) = fake(&[]);
    core.init_device(0).unwrap();
    let specs = entries(&[("counter", 4)]);
    let null = core.load_image(0, 0x10_000, &rpc_image(Some(""), None), &specs);
    let text = null.err().expect("a null client pointer").to_string();
    assert!(text.contains("__llvm_libc_rpc_client is a null pointer"), "{text}");
    // `counter` (4 bytes): inside the image, but no room for a client.
    let small = core.load_image(0, 0x20_000, &rpc_image(Some("counter"), None), &specs);
    let text = small.err().expect("a pointer at a 4-byte object").to_string();
    assert!(
        text.contains("__llvm_libc_rpc_client points at") && text.contains("not a writable object of 552 bytes"),
        "{text}"
    );
    assert!(
        !world.lock().unwrap().log.iter().any(|l| l.starts_with("h2d 552")),
        "no client bytes were written anywhere"
    );
    assert!(core.deinit().unwrap());
}

/// An image built for a lane count no server serves is loaded without host services (its calls fail
/// as with no server) instead of corrupting a mailbox of another lane size.
#[cfg(feature = "rpc")]
#[test]
fn an_image_built_for_an_impossible_lane_count_gets_no_server() {
    let (core, _world) = fake(&[]);
    core.init_device(0).unwrap();
    let specs = entries(&[("__llvm_libc_rpc_client", 8), ("client_object", 552)]);
    let loaded = core.load_image(0, 0x10_000, &rpc_image(None, Some(7)), &specs).unwrap();
    assert_eq!(
        read_device::<u32>(loaded.addresses[1]),
        0,
        "the client object stays empty: no ports"
    );
    let loaded = core
        .load_image(0, 0x20_000, &rpc_image(None, Some(64)), &specs)
        .unwrap();
    let server = server_of(loaded.addresses[1]).expect("a 64-lane image is served");
    assert_eq!(
        server.lane_size(),
        64,
        "with the image's lane count, not the device's 32"
    );
    drop(server);
    assert!(core.deinit().unwrap());
}

/// The fake's hooks, each with the operation it is.
const FAKE_CALLS: [(&str, Op); 26] = [
    ("init_device", Op::InitDevice),
    ("deinit_device", Op::ReleaseDevice),
    ("load_module", Op::LoadModule),
    ("unload_module", Op::UnloadModule),
    ("kernel", Op::FindKernel),
    ("global", Op::FindGlobal),
    ("alloc_device", Op::AllocDevice),
    ("free_device", Op::FreeDevice),
    ("alloc_host", Op::AllocHost),
    ("free_host", Op::FreeHost),
    ("create_queue", Op::CreateQueue),
    ("destroy_queue", Op::DestroyQueue),
    ("create_event", Op::CreateEvent),
    ("destroy_event", Op::DestroyEvent),
    ("copy_to_device", Op::CopyToDevice),
    ("copy_to_host", Op::CopyToHost),
    ("copy_between_devices", Op::CopyPeer),
    ("copy_within_device", Op::CopyDeviceToDevice),
    ("launch", Op::Launch),
    ("synchronize", Op::SynchronizeQueue),
    ("is_idle", Op::QueryQueue),
    ("record_event", Op::RecordEvent),
    ("wait_event", Op::WaitEvent),
    ("sync_event", Op::SynchronizeEvent),
    ("lock_host_memory", Op::Pin),
    ("unlock_host_memory", Op::Unpin),
];

/// The suite's program on the fake: an SPMD and a generic kernel, a 4-byte `counter`, a device
/// environment, and host services as LLVM libc's client lays them out (`__llvm_libc_rpc_client`
/// relocated to `client_object`), as the test cubin has them.
fn suite_image() -> Vec<u8> {
    elf::tests::sample_with_relocations(
        elf::EM_CUDA,
        &[
            ("client_object", 0, &[0u8; 552]),
            ("__llvm_libc_rpc_client", 0, &[0u8; 8]),
            ("spmd_kernel", 0, &[0]),
            ("spmd_kernel_exec_mode", 0, &[2]),
            ("generic_kernel", 0, &[0]),
            ("generic_kernel_exec_mode", 0, &[1]),
            ("counter", 0, &7u32.to_le_bytes()),
            ("__omp_rtl_device_environment", 0, &[0xff; 16]),
        ],
        &[("__llvm_libc_rpc_client", "client_object")],
    )
}

/// The backend test suite's harness for the fake backend.
pub(crate) struct FakeHarness {
    core: Box<dyn PluginApi>,
    world: Arc<Mutex<World>>,
}

impl FakeHarness {
    fn world(&self) -> Locked<'_> {
        lock(&self.world)
    }
}

impl Harness for FakeHarness {
    fn start(devices: usize, settings: &[(&str, &str)]) -> Self {
        let (core, world) = fake_with(devices, settings);
        world.lock().unwrap().exchangeable = true;
        FakeHarness { core, world }
    }

    fn core(&self) -> &dyn PluginApi {
        &*self.core
    }

    fn program(&self) -> TestProgram {
        TestProgram {
            image: suite_image(),
            entries: entries(&[("spmd_kernel", 0), ("generic_kernel", 0), ("counter", 4)]),
            spmd: 0,
            spmd_name: "spmd_kernel".into(),
            generic: 1,
            generic_name: "generic_kernel".into(),
            global: 2,
            arguments: 2,
            client_object: "client_object",
        }
    }

    fn default_geometry(&self) -> (u32, u32) {
        (128, 3200)
    }

    fn device_memory(&self) -> u64 {
        1 << 30
    }

    fn native_device_id(&self, device: usize) -> usize {
        device
    }

    fn pinned_device_address(&self, _device: usize, host: usize) -> usize {
        host + 0x1000_0000
    }

    fn log(&self) -> Vec<Op> {
        self.world()
            .record
            .log
            .iter()
            .map(|call| {
                FAKE_CALLS
                    .iter()
                    .find(|(c, _)| c == call)
                    .map_or(Op::Other, |&(_, op)| op)
            })
            .collect()
    }

    fn driver_call_count(&self, call: &str) -> usize {
        self.world().record.count(call)
    }

    fn driver_calls(op: Op) -> Vec<&'static str> {
        FAKE_CALLS.iter().filter(|(_, o)| *o == op).map(|&(c, _)| c).collect()
    }

    fn fail_call(&self, call: &'static str) {
        self.world().record.arm(call, ());
    }

    fn failure_text(call: &str) -> Vec<String> {
        vec![format!("fake error in {call}: FAKE_ERROR_INJECTED (999)")]
    }

    fn live(&self) -> Live {
        let world = self.world();
        Live {
            memory: world.device_memory.len() + world.host_memory.len(),
            modules: world.modules.len(),
            queues: world.queues.len(),
            events: world.events.len(),
            devices: world.devices.len(),
        }
    }

    fn pinned(&self) -> usize {
        self.world().pinned.len()
    }

    fn launches(&self) -> Vec<SeenLaunch> {
        self.world()
            .launches
            .iter()
            .map(|(kernel, g, _, queue)| SeenLaunch {
                kernel: kernel.clone(),
                geometry: (g.teams, g.threads, g.dynamic_shared_bytes),
                queue: 0x5_0000 + queue,
            })
            .collect()
    }

    fn register_kernel(&self, name: &str, args: usize, body: KernelBody) {
        self.world().bodies.insert(name.to_string(), (args, body));
    }

    fn clear_kernels(&self) {
        self.world().bodies.clear();
    }

    fn limit_memory(&self, extra: usize) {
        let mut world = self.world();
        world.capacity = Some(world.allocated_bytes() + extra);
    }

    fn within_memory_limit(&self) -> bool {
        let world = self.world();
        world.allocated_bytes() <= world.capacity.unwrap_or(usize::MAX)
    }

    fn memory_blocks(&self) -> Vec<(usize, usize)> {
        let world = self.world();
        world
            .device_memory
            .iter()
            .chain(&world.host_memory)
            .map(|(&a, &s)| (a, s))
            .collect()
    }

    fn violations(&self) -> Vec<String> {
        self.world().violations.clone()
    }

    fn module_global(&self, name: &str) -> Option<(usize, usize)> {
        self.world().module_globals.get(name).copied()
    }
}
