//! One server of a device: owns libc's `rpc_device_t` and the shared mailbox, gives libc the
//! callbacks of the device's services (MALLOC and FREE from its heap, PRINTF, FORMAT_TO_BUFFER, ASSERT)
//! and of the user opcodes (`super::handlers::dispatch`), finds the ports whose requests wait and
//! serves them, and turns a request nobody handles into a clear error instead of a hang.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::rpc::protocol::ffi::{self, opcode};
use crate::rpc::protocol::mailbox::{Layout, Mailbox};
use crate::rpc::protocol::memory::DeviceMemory;
use crate::rpc::protocol::window::{self, Callbacks, Claim, PortWindow};
use crate::rpc::protocol::Owner;
use crate::rpc::services::heap::{serve_free, serve_malloc, DeviceHeap, HeapService};
use crate::rpc::serving::handlers::{dispatch, Registered, UserOpcode};
use crate::util::error::{Error, Result};
use crate::util::raw_box::RawBox;
use crate::util::sync::{lock, read, write};
use crate::util::{fault, log};

/// The RPC server of one device.
pub struct RpcServer {
    owner: Owner,
    raw: ffi::Device,
    ports: u32,
    lane_size: u32,
    /// The shared mailbox.
    mailbox: Mailbox,
    memory: Arc<dyn DeviceMemory>,
    /// Its heap, for MALLOC and FREE (boxed: libc's callbacks hold its address).
    callback_state: Box<HeapService>,
    /// Serving through libc's whole-server scan holds it shared; adding a callback to that server's
    /// (unlocked) map holds it exclusively. Windows need no gate (see [`PortWindow`]).
    gate: RwLock<()>,
    /// What libc's callback map points at for each user opcode installed here; owned by the server,
    /// which outlives its libc server's callbacks, so that nothing is leaked per server. libc holds
    /// their addresses, which must stay valid while the list grows.
    user_opcodes: Mutex<Vec<RawBox<UserOpcode>>>,
    /// Every opcode given a callback here (the plugin's own and user opcodes) with its callback and
    /// data, so that a port's window gets them all and a request nobody serves can be named.
    callbacks: Callbacks,
    /// Whether requests are served port by port through windows; otherwise by libc's whole-server
    /// scan (libc not laid out as expected, or `OMPRPC_RPC_SERVE=scan`).
    port_by_port: bool,
    /// One window per port, opened when the port first receives a request (see [`crate::rpc::protocol::window`]);
    /// none when not serving port by port, as only that mode uses them.
    windows: Box<[PortWindow]>,
    /// Ports that received requests lately, looked at before every part of the scan, so that a warp
    /// that keeps its port is answered without waiting for a scan of every port.
    recent: [AtomicU32; RECENT_PORTS],
    /// Which of `recent` the next newly used port replaces.
    recent_next: AtomicUsize,
    /// Where the next part of the scan starts.
    cursor: AtomicUsize,
    /// Per port (when serving port by port), whether a thread is inside a call on it: the calls
    /// [`RpcServer::answer_for_lost_device`] may have to end.
    in_call: Box<[AtomicBool]>,
    /// Whether the device was lost: its calls are answered for it from then on.
    lost: AtomicBool,
    /// Whether the device's code rings the doorbell after writing a request
    /// ([`crate::util::doorbell`]), so that the serving threads may sleep until it does.
    rung: AtomicBool,
}

/// How many recently used ports each server watches between parts of its scan.
const RECENT_PORTS: usize = 8;
/// Ports looked at in one part of the scan, between looks at the recently used ports: the largest
/// part that keeps a call at 4,096 ports within a few percent of one at 16; smaller parts did no
/// better (`docs/measurements.md`, "The size of one part of the scan").
const SCAN_PART: usize = 64;
/// No port.
const NO_PORT: u32 = u32::MAX;

// SAFETY: `raw` and `mailbox` refer to memory owned by this server for its whole life; libc's server
// allows several threads to serve one device (per-port locks), and its callback map is only changed
// under `gate` held exclusively, when no thread is serving.
unsafe impl Send for RpcServer {}
// SAFETY: see `Send`.
unsafe impl Sync for RpcServer {}

struct MailboxRequest {
    memory: Arc<dyn DeviceMemory>,
    result: Option<Result<*mut c_void>>,
}

unsafe extern "C" fn alloc_mailbox(size: u64, data: *mut c_void) -> *mut c_void {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` is the `MailboxRequest` that `RpcServer::new` passed to `rpc_server_init`.
        let request = unsafe { &mut *data.cast::<MailboxRequest>() };
        let result = request.memory.alloc_shared(size as usize);
        let ptr = *result.as_ref().unwrap_or(&std::ptr::null_mut());
        request.result = Some(result);
        ptr
    }));
    outcome.unwrap_or(std::ptr::null_mut())
}

/// What `shutdown` hands libc for freeing the mailbox, and how that went.
struct MailboxRelease {
    memory: Arc<dyn DeviceMemory>,
    result: Result<()>,
}

unsafe extern "C" fn free_mailbox(ptr: *mut c_void, data: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` is the `MailboxRelease` that `shutdown` passed to `rpc_server_shutdown`.
        let release = unsafe { &mut *data.cast::<MailboxRelease>() };
        // SAFETY: libc hands back the mailbox it got from `alloc_mailbox`.
        release.result = unsafe { release.memory.free_shared(ptr) };
    }));
}

impl RpcServer {
    /// Creates a server of `device` with `ports` ports of `lane_size` lanes, its mailbox from
    /// `memory`, and a heap of its own served directly by `memory`; see [`RpcServer::with_heap`].
    pub fn new(device: usize, ports: u32, lane_size: u32, memory: Arc<dyn DeviceMemory>) -> Result<Arc<RpcServer>> {
        let heap = DeviceHeap::new(device, Arc::clone(&memory), None)?;
        RpcServer::with_heap(device, ports, lane_size, memory, heap)
    }

    /// Creates a server of `device` with `ports` ports of `lane_size` lanes, its mailbox from
    /// `memory`, MALLOC/FREE served from `heap` (which the device's other servers share).
    pub fn with_heap(
        device: usize,
        ports: u32,
        lane_size: u32,
        memory: Arc<dyn DeviceMemory>,
        heap: Arc<DeviceHeap>,
    ) -> Result<Arc<RpcServer>> {
        if ports == 0 || ports as usize > crate::rpc::protocol::mailbox::MAX_PORTS {
            return Err(Error::InvalidArg(format!(
                "{ports} RPC ports is not from 1 to {}",
                crate::rpc::protocol::mailbox::MAX_PORTS
            )));
        }
        let mut request = MailboxRequest {
            memory: Arc::clone(&memory),
            result: None,
        };
        let mut raw = ffi::Device::default();
        // SAFETY: `raw` is writable, `alloc_mailbox` matches the callback type and `request` outlives
        // the call, which is the only time libc uses it.
        let status = fault::call_or("rpc_server_init", ffi::STATUS_ERROR, || unsafe {
            ffi::rpc_server_init(
                &mut raw,
                u64::from(ports),
                lane_size,
                alloc_mailbox,
                (&mut request as *mut MailboxRequest).cast(),
            )
        });
        if let Some(Err(e)) = request.result {
            return Err(e);
        }
        ffi::check("rpc_server_init", status)?;
        let Some(Ok(mailbox)) = request.result else {
            return Err(Error::Rpc {
                call: "rpc_server_init (no mailbox was allocated)",
                status,
            });
        };
        let callback_state = Box::new(HeapService { device, heap });
        let layout = Layout {
            ports: ports as usize,
            lanes: lane_size as usize,
        };
        let port_by_port = crate::util::config::host_services().serve == crate::util::config::ServeMode::PortByPort
            && window::libc_layout_matches(raw, mailbox as usize, layout);
        let server = Arc::new(RpcServer {
            owner: Owner::Device(device),
            raw,
            ports,
            lane_size,
            // SAFETY: libc allocated the mailbox through `alloc_mailbox` (8-byte aligned, the layout's
            // size) and frees it only in `shutdown`, which takes the server; libc's own accesses to
            // words are atomic.
            mailbox: unsafe { Mailbox::new(mailbox.cast(), layout) },
            memory,
            callback_state,
            gate: RwLock::new(()),
            user_opcodes: Mutex::new(Vec::new()),
            callbacks: Callbacks::default(),
            port_by_port,
            windows: (0..if port_by_port { ports } else { 0 })
                .map(|_| PortWindow::default())
                .collect(),
            recent: std::array::from_fn(|_| AtomicU32::new(NO_PORT)),
            recent_next: AtomicUsize::new(0),
            cursor: AtomicUsize::new(0),
            in_call: (0..if port_by_port { ports } else { 0 })
                .map(|_| AtomicBool::new(false))
                .collect(),
            lost: AtomicBool::new(false),
            rung: AtomicBool::new(false),
        });
        let state = (&*server.callback_state as *const HeapService).cast_mut().cast();
        let registered = server
            .register(opcode::MALLOC, serve_malloc, state)
            .and_then(|()| server.register(opcode::FREE, serve_free, state))
            .and_then(|()| server.register(opcode::PRINTF, crate::rpc::services::printf::serve, state))
            .and_then(|()| server.register(opcode::ASSERT_FAIL, crate::rpc::services::assertion::serve, state))
            .and_then(|()| server.register(opcode::HOST_FUNCTION, crate::rpc::services::host_call::serve, state))
            .and_then(|()| {
                server.register(
                    opcode::FORMAT_TO_BUFFER,
                    crate::rpc::services::printf::serve_format_to_buffer,
                    state,
                )
            })
            .and_then(|()| server.register(opcode::STRTOD, crate::rpc::services::strtod::serve, state))
            .and_then(|()| server.register(opcode::SCAN, crate::rpc::services::scan::serve, state))
            .and_then(|()| server.register(opcode::GETENV, crate::rpc::services::getenv::serve, state));
        if let Err(e) = registered {
            // The only reference: shutting down frees libc's server and the mailbox.
            let _ = server.shutdown();
            return Err(e);
        }
        Ok(server)
    }

    /// Whose calls it serves.
    pub fn owner(&self) -> Owner {
        self.owner
    }

    /// Number of ports.
    pub fn ports(&self) -> u32 {
        self.ports
    }

    /// Whether requests are served port by port through windows (see [`crate::rpc::protocol::window`]), rather than
    /// by libc's scan of every port.
    #[cfg(test)]
    pub fn serves_port_by_port(&self) -> bool {
        self.port_by_port
    }

    /// Lanes per port.
    pub fn lane_size(&self) -> u32 {
        self.lane_size
    }

    /// Installs `callback` for `op` in libc's map, waiting until no thread is serving.
    fn register(&self, op: u16, callback: ffi::OpcodeCallback, data: *mut c_void) -> Result<()> {
        let _exclusive = write(&self.gate);
        // SAFETY: `raw` is a live server; no thread is inside `rpc_handle_server` while `gate` is held
        // exclusively, so libc's unlocked map is not read concurrently; `data` lives as long as `self`.
        let status = fault::call_or("rpc_register_callback", ffi::STATUS_ERROR, || unsafe {
            ffi::rpc_register_callback(self.raw, op, callback, data)
        });
        ffi::check("rpc_register_callback", status)?;
        // Windows pick it up when next claimed.
        self.callbacks.push((op, callback, data as usize));
        Ok(())
    }

    /// Routes the user opcode of `registered` to its handler.
    pub fn install_user_opcode(&self, registered: &'static Registered) -> Result<()> {
        let data = RawBox::new(Box::new(UserOpcode {
            registered,
            owner: self.owner,
        }));
        let pointer = data.as_ptr().cast();
        lock(&self.user_opcodes).push(data);
        self.register(registered.opcode, dispatch, pointer)
    }

    /// Host address of the mailbox.
    pub fn mailbox_address(&self) -> usize {
        self.mailbox.address()
    }

    /// The mailbox, for a client to play the device's side (simulated warps).
    pub fn mailbox(&self) -> Mailbox {
        self.mailbox
    }

    /// The client object (552 bytes in libc 19) to copy to where an image's `__llvm_libc_rpc_client`
    /// points, so that the image's calls reach this server's mailbox.
    pub fn client_bytes(&self) -> Vec<u8> {
        // SAFETY: `raw` is a live server; the size comes from the same library.
        unsafe {
            let size = ffi::rpc_get_client_size() as usize;
            let ptr = ffi::rpc_get_client_buffer(self.raw).cast::<u8>();
            std::slice::from_raw_parts(ptr, size).to_vec()
        }
    }

    /// Whether port `i` holds a request waiting for the server.
    fn pending(&self, i: usize) -> bool {
        self.mailbox.holds_request(i)
    }

    /// Whether any port holds a request now (being served by another thread counts until it is done):
    /// [`RpcServer::waiting_now`] without its list, so that the common case, nothing waiting, allocates
    /// nothing at the end of every host-calling kernel.
    pub fn has_waiting(&self) -> bool {
        let mut any = false;
        self.for_each_pending(0, self.ports as usize, |_| any = true);
        any
    }

    /// The ports holding a request now, each with its server word, which changes when the request has
    /// been served: for [`RpcServer::served_all`].
    pub fn waiting_now(&self) -> Vec<(usize, u32)> {
        let mut waiting = Vec::new();
        self.for_each_pending(0, self.ports as usize, |port| {
            waiting.push((port, self.mailbox.server_word(port).load(Ordering::Acquire)));
        });
        waiting
    }

    /// Whether every request of `waiting` (from [`RpcServer::waiting_now`]) has been served since.
    pub fn served_all(&self, waiting: &[(usize, u32)]) -> bool {
        waiting
            .iter()
            .all(|&(port, word)| self.mailbox.server_word(port).load(Ordering::Acquire) != word)
    }

    /// The ports holding a request now, with their opcode and a number that tells one request on a
    /// port from the next (requests served through the port's window; without windows, the client's
    /// word, which only tells them apart every other request), for the watchdog.
    pub fn waiting_requests(&self) -> Vec<(u32, u16, u32)> {
        let mut waiting = Vec::new();
        self.for_each_pending(0, self.ports as usize, |port| {
            let which = if self.port_by_port {
                self.windows[port].served()
            } else {
                self.mailbox.client_word(port).load(Ordering::Acquire)
            };
            waiting.push((port as u32, self.opcode_of(port), which));
        });
        waiting
    }

    /// Calls `found` with each port of `start..start + count` (wrapping at the port count) that holds a
    /// request. The words are looked at with relaxed loads, which only nominate a port;
    /// [`RpcServer::pending`] confirms each with acquiring ones, as libc's server does again before
    /// serving.
    fn for_each_pending(&self, start: usize, count: usize, mut found: impl FnMut(usize)) {
        let ports = self.ports as usize;
        for offset in 0..count {
            let port = (start + offset) % ports;
            let nominated = self.mailbox.server_word(port).load(Ordering::Relaxed)
                != self.mailbox.client_word(port).load(Ordering::Relaxed);
            if nominated && self.pending(port) {
                found(port);
            }
        }
    }

    /// Starts fetching port `i`'s header and packet, which the device just wrote, so that their cache
    /// lines travel while the server gets ready instead of one after the other.
    fn prefetch_request(&self, i: usize) {
        let header = self.mailbox.lane_mask(i) as *const std::sync::atomic::AtomicU64;
        let packet = self.mailbox.packet(i, 0);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetching never faults, and both addresses lie inside the mailbox anyway.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(header.cast());
            _mm_prefetch::<_MM_HINT_T0>(packet.cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (header, packet);
    }

    /// Adds a served call to the statistics and the trace, when asked for (`OMPRPC_STATS`,
    /// `OMPRPC_TRACE`).
    fn account(&self, device: usize, port: u32, opcode: u16, lanes: u32, began: u64, moved: crate::rpc::calls::Moved) {
        let ended = moved.ended_ns.unwrap_or_else(crate::util::clock::now_ns);
        if crate::rpc::observing::stats::enabled() {
            crate::rpc::observing::stats::global().record(&crate::rpc::observing::stats::Call {
                device,
                opcode,
                lanes,
                latency_ns: ended.saturating_sub(began),
                bytes_to_host: moved.to_host,
                bytes_to_device: moved.to_device,
            });
        }
        if let Some(trace) = crate::rpc::observing::trace::global() {
            trace.host_call(device, port, opcode, began, ended);
        }
    }

    /// When a call was seen, for the statistics, the trace and the watchdog; `None` (and no clock
    /// read) when none is asked for.
    fn seen_at() -> Option<u64> {
        crate::rpc::observing::asked().then(crate::util::clock::now_ns)
    }

    /// The mask of active lanes in port `i`'s header.
    fn lane_mask_of(&self, i: usize) -> u64 {
        self.mailbox.lane_mask(i).load(Ordering::Relaxed)
    }

    /// The opcode in port `i`'s header.
    fn opcode_of(&self, i: usize) -> u16 {
        // Written by the client before it handed the port over (see `pending`).
        self.mailbox.opcode(i).load(Ordering::Relaxed)
    }

    /// Serves waiting requests: those of recently used ports, then those of the next part of the scan
    /// (every port when there are few). Returns whether there was any. Called over and over by the
    /// serving threads; a request waits for at most one pass over all ports before it is seen.
    pub fn serve_once(&self) -> bool {
        if !self.port_by_port {
            return self.serve_whole();
        }
        let mut served = false;
        for slot in &self.recent {
            let port = slot.load(Ordering::Relaxed);
            if port != NO_PORT && self.pending(port as usize) {
                served |= self.serve_port(port as usize);
            }
        }
        let ports = self.ports as usize;
        let (start, count) = if ports <= SCAN_PART {
            (0, ports)
        } else {
            // A plain load and store, not a read-modify-write (a locked instruction on every pass):
            // two threads that move the cursor at once only look at some ports twice.
            let at = self.cursor.load(Ordering::Relaxed);
            self.cursor.store(at.wrapping_add(SCAN_PART), Ordering::Relaxed);
            (at % ports, SCAN_PART)
        };
        self.serve_pending(start, count) || served
    }

    /// Serves every port once, scanning them all (for threads that wait for a device's work).
    pub fn serve_all_ports(&self) -> bool {
        if !self.port_by_port {
            return self.serve_whole();
        }
        self.serve_pending(0, self.ports as usize)
    }

    /// Serves the waiting requests of `start..start + count` (wrapping), remembering the ports served.
    fn serve_pending(&self, start: usize, count: usize) -> bool {
        let mut served = false;
        self.for_each_pending(start, count, |port| {
            if self.serve_port(port) {
                served = true;
                self.remember(port);
            }
        });
        served
    }

    /// Puts `port` among the recently used ones (unless it is there already).
    fn remember(&self, port: usize) {
        let port = port as u32;
        if self.recent.iter().any(|slot| slot.load(Ordering::Relaxed) == port) {
            return;
        }
        let slot = self.recent_next.fetch_add(1, Ordering::Relaxed) % RECENT_PORTS;
        self.recent[slot].store(port, Ordering::Relaxed);
    }

    /// Serves `port`'s request through its window (opened on first use). Returns whether it was
    /// served here (not by another thread that got there first). Only when serving port by port.
    fn serve_port(&self, port: usize) -> bool {
        self.prefetch_request(port);
        let window = match self.windows[port].claim(
            self.owner,
            self.mailbox.address(),
            self.mailbox.layout(),
            port,
            &self.callbacks,
        ) {
            Claim::Mine(window) => window,
            Claim::Busy | Claim::Unavailable => return false,
        };
        // Another thread may have served the request between our look and our claim; only the
        // claim's holder serves the port, so this look is exact. A lost device's requests are not its
        // own any more (see `answer_for_lost_device`).
        if !self.pending(port) || self.device_lost() {
            return false;
        }
        let opcode = self.opcode_of(port);
        if crate::rpc::serving::handlers::user_opcode_running(opcode) {
            // Its handler serves another call: this one waits in its port rather than tie up this
            // thread on the handler's lock.
            return false;
        }
        self.in_call[port].store(true, Ordering::Release);
        let status = self.observed(port, opcode, || window.serve());
        self.in_call[port].store(false, Ordering::Release);
        window.count_served();
        drop(window);
        self.check_served(status, Some(port));
        true
    }

    /// Serves every waiting request through libc's whole-server scan.
    fn serve_whole(&self) -> bool {
        if self.device_lost() {
            return false;
        }
        let Some(first) = (0..self.ports as usize).find(|&i| self.pending(i)) else {
            return false;
        };
        self.prefetch_request(first);
        let status = {
            let _shared = read(&self.gate);
            // libc serves every waiting port; the call is accounted to the first.
            // SAFETY: `raw` is a live server; libc serializes ports with its own locks.
            self.observed(first, self.opcode_of(first), || unsafe {
                ffi::rpc_handle_server(self.raw)
            })
        };
        self.check_served(status, None);
        true
    }

    /// Runs `serve` as the call of `opcode` on `port`: shown to the stand-by thread and the watchdog
    /// while it runs, and added to the statistics and the trace when asked for. A handler that waits
    /// for the device may serve again on this thread, so what the thread served before is restored.
    fn observed(&self, port: usize, opcode: u16, serve: impl FnOnce() -> ffi::Status) -> ffi::Status {
        let Owner::Device(device) = self.owner;
        let began = Self::seen_at();
        // Read before serving: the header is the client's again once the reply is sent.
        let lanes = began.map_or(0, |_| self.lane_mask_of(port).count_ones());
        let outer = crate::rpc::calls::begin(
            device,
            port as u32,
            opcode,
            crate::rpc::observing::stats::enabled(),
            began,
        );
        let status = serve();
        let moved = crate::rpc::calls::end(outer);
        if let Some(began) = began {
            self.account(device, port as u32, opcode, lanes, began, moved);
        }
        status
    }

    /// Reports what libc's server returned; ends the program on an opcode nobody handles (on `port`,
    /// when known).
    fn check_served(&self, status: ffi::Status, port: Option<usize>) {
        match status {
            ffi::STATUS_SUCCESS => {}
            ffi::STATUS_UNHANDLED_OPCODE => self.unhandled_opcode(port),
            other => log::error(format_args!(
                "{}: LLVM libc's RPC server failed with status {other:#x}",
                self.owner
            )),
        }
    }

    /// A device asked for an opcode nobody handles (on `port`, when known): libc leaves that port
    /// locked and the device thread would wait forever. Say which opcode, flush what was written, and
    /// end the program.
    fn unhandled_opcode(&self, port: Option<usize>) -> ! {
        let known = |op: &u16| opcode::is_built_in(*op) || self.callbacks.contains(*op);
        let unknown = match port {
            Some(port) => Some(self.opcode_of(port)).filter(|op| !known(op)),
            None => (0..self.ports as usize)
                .filter(|&i| self.pending(i))
                .map(|i| self.opcode_of(i))
                .find(|op| !known(op)),
        };
        let what = unknown.map_or_else(|| "an opcode".to_string(), |op| format!("opcode {op:#06x}"));
        log::error(format_args!(
            "{} called host service {what}, which has no handler; register one with \
             omprpc_register_handler (user opcodes start at 0x8000) before the kernel calls it. Ending the program.",
            self.owner
        ));
        let _ = catch_unwind(crate::rpc::observing::report_at_exit);
        // SAFETY: fflush(NULL) flushes every output stream; _exit ends the process without running
        // teardown that could wait for the device thread that now waits forever.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::_exit(1)
        }
    }

    /// The device faulted or was lost and will never take its turn again: every call a serving
    /// thread is in the middle of (waiting for the device's next packet, or for it to take a reply) is
    /// answered for the device with empty packets, so that the handler runs to its end instead of
    /// waiting for ever; a lost device's server opens no new call (an answer given just as a call
    /// ended looks like one). Returns how many ports were answered now; called over and over,
    /// after the server was taken out of service, until no thread holds it. The device's memory is no
    /// longer the device's to write once it is lost, so the host may write it. Serving through libc's
    /// whole-server scan, which keeps no record of the ports it is in, answers nothing.
    pub fn answer_for_lost_device(&self) -> usize {
        self.lost.store(true, Ordering::Release);
        let mut answered = 0;
        for port in (0..self.in_call.len()).filter(|&p| self.in_call[p].load(Ordering::Acquire)) {
            if self.pending(port) {
                continue; // the server's turn: it is running the handler, not waiting
            }
            for lane in 0..self.mailbox.layout().lanes {
                // SAFETY: the packet lies inside the mailbox, which lives as long as `self`; the
                // device that would write it is lost, and the server does not touch it while it
                // waits for its turn.
                unsafe { self.mailbox.packet(port, lane).write_volatile([0; 8]) };
            }
            self.mailbox.client_word(port).fetch_xor(1, Ordering::AcqRel);
            answered += 1;
        }
        answered
    }

    /// Whether a thread is in the middle of a call on any port (known only when serving port by port).
    pub fn in_a_call(&self) -> bool {
        self.in_call.iter().any(|c| c.load(Ordering::Acquire))
    }

    /// Whether the device was lost ([`RpcServer::answer_for_lost_device`]).
    pub fn device_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// Whether the device's code rings the doorbell after each request: the serving threads then sleep
    /// until it does, instead of looking on a backoff.
    pub fn rung(&self) -> bool {
        self.rung.load(Ordering::Relaxed)
    }

    /// The device's code was told where to ring the doorbell (before the server is put in service).
    pub fn rings_doorbell(&self) {
        self.rung.store(true, Ordering::Relaxed);
    }

    /// Frees the server and its mailbox. Only for servers no thread serves any more.
    pub fn shutdown(self: Arc<Self>) -> Result<()> {
        let server = Arc::try_unwrap(self).map_err(|_| Error::InvalidArg("the RPC server is still in use".into()))?;
        let memory = Arc::clone(&server.memory);
        // The windows look into the mailbox: close them first.
        drop(server.windows);
        let mut release = MailboxRelease { memory, result: Ok(()) };
        // SAFETY: no other reference to the server exists, so nothing serves it; `free_mailbox`
        // matches the callback type and `release` outlives the call.
        let status = fault::call_or("rpc_server_shutdown", ffi::STATUS_ERROR, || unsafe {
            ffi::rpc_server_shutdown(server.raw, free_mailbox, (&mut release as *mut MailboxRelease).cast())
        });
        ffi::check("rpc_server_shutdown", status)?;
        release.result
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rpc::protocol::port::Port;
    use crate::rpc::simulated::{SimulatedDevice, SimulatedWarp};
    use std::sync::atomic::AtomicUsize;

    /// Host memory that counts what is live, to check that shutdown frees the mailbox.
    #[derive(Default)]
    pub(crate) struct CountingMemory {
        live: AtomicUsize,
        last_shared: AtomicUsize,
    }

    impl CountingMemory {
        /// Allocations not yet freed.
        pub(crate) fn live(&self) -> usize {
            self.live.load(Ordering::SeqCst)
        }

        /// Size of the last shared (mailbox) allocation.
        pub(crate) fn last_shared_size(&self) -> usize {
            self.last_shared.load(Ordering::SeqCst)
        }
    }

    impl DeviceMemory for CountingMemory {
        fn alloc(&self, size: usize) -> Result<*mut c_void> {
            self.live.fetch_add(1, Ordering::SeqCst);
            // SAFETY: malloc has no preconditions.
            Ok(unsafe { libc::malloc(size) })
        }
        unsafe fn free(&self, ptr: *mut c_void) -> Result<()> {
            self.live.fetch_sub(1, Ordering::SeqCst);
            // SAFETY: `ptr` came from `alloc`.
            unsafe { libc::free(ptr) };
            Ok(())
        }
        fn alloc_shared(&self, size: usize) -> Result<*mut c_void> {
            self.live.fetch_add(1, Ordering::SeqCst);
            self.last_shared.store(size, Ordering::SeqCst);
            // SAFETY: calloc has no preconditions.
            Ok(unsafe { libc::calloc(1, size) })
        }
        unsafe fn free_shared(&self, ptr: *mut c_void) -> Result<()> {
            self.live.fetch_sub(1, Ordering::SeqCst);
            // SAFETY: `ptr` came from `alloc_shared`.
            unsafe { libc::free(ptr) };
            Ok(())
        }
    }

    /// Serves `server` on a thread of its own until `done` is set.
    fn serve_in_background(
        server: Arc<RpcServer>,
        done: Arc<std::sync::atomic::AtomicBool>,
    ) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                if !server.serve_once() {
                    std::thread::yield_now();
                }
            }
        })
    }

    /// Waits up to 5 s for `cond` (a FREE has no reply, so its effect shows a little later).
    fn eventually(what: &str, cond: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !cond() {
            assert!(std::time::Instant::now() < deadline, "{what}");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn serves_malloc_and_free_per_lane_and_refuses_bad_frees() {
        for lanes in [1u32, 32, 64] {
            let memory = Arc::new(CountingMemory::default());
            let server = RpcServer::new(3, 8, lanes, memory.clone()).unwrap();
            assert_eq!(memory.live.load(Ordering::SeqCst), 1, "the mailbox");
            let client = server.client_bytes();
            assert_eq!(client.len(), 552);
            assert_eq!(
                u32::from_ne_bytes(client[..4].try_into().unwrap()),
                8,
                "the client knows the port count"
            );
            assert!(!server.serve_once(), "nothing pending");
            assert!(server.serves_port_by_port(), "libc 19.1.7's layout is recognised");
            let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let serving = serve_in_background(Arc::clone(&server), Arc::clone(&done));
            {
                let device = SimulatedDevice::new(Arc::clone(&server));
                let warp = SimulatedWarp::new(&device, 0);
                let mask = warp.full_mask() & 0x5555_5555_5555_5555; // every other lane
                let sizes: Vec<u64> = (0..lanes as u64).map(|l| 8 + l).collect();
                let ptrs = warp.malloc(mask, &sizes);
                let active = mask.count_ones() as usize;
                for (lane, &p) in ptrs.iter().enumerate() {
                    assert_eq!(p != 0, mask & (1 << lane) != 0, "lane {lane} of {lanes}");
                }
                assert_eq!(
                    memory.live.load(Ordering::SeqCst),
                    1 + active,
                    "each active lane's block came from device memory"
                );
                warp.free(mask, &ptrs);
                eventually("freed", || memory.live.load(Ordering::SeqCst) == 1);
                warp.free(mask, &ptrs);
                warp.free(mask, &vec![0x1234; lanes as usize]);
                // A round trip after the frees: by its reply they have been served.
                let again = warp.malloc(1, &[16]);
                warp.free(1, &again);
                eventually("only the mailbox is left", || memory.live.load(Ordering::SeqCst) == 1);
            }
            done.store(true, Ordering::SeqCst);
            serving.join().unwrap();
            server.shutdown().unwrap();
            assert_eq!(memory.live.load(Ordering::SeqCst), 0, "shutdown frees the mailbox");
        }
    }

    /// Receives, then panics: the device must still get a reply.
    struct PanicsAfterReceiving;

    impl crate::rpc::serving::handlers::UserHandler for PanicsAfterReceiving {
        fn serve(&self, port: &mut Port<'_>) {
            let mut packets = port.lane_packets();
            port.recv(&mut packets).unwrap();
            panic!("a bug in the handler");
        }
    }

    /// Tries every step out of turn; the refused ones leave the exchange intact.
    struct OutOfTurn;

    impl crate::rpc::serving::handlers::UserHandler for OutOfTurn {
        fn serve(&self, port: &mut Port<'_>) {
            let mut packets = port.lane_packets();
            assert!(port.send(&packets).is_err(), "a reply before the request");
            let n = port.recv(&mut packets).unwrap();
            assert!(port.recv(&mut packets).is_err(), "a second receive");
            assert!(port.recv_n().is_err(), "a second receive of bytes");
            for p in packets.iter_mut().take(n as usize) {
                p.data[0] += 1;
            }
            port.send(&packets).unwrap();
            assert!(port.send(&packets).is_err(), "a second reply");
            assert!(port.send_n(&[]).is_err(), "a second reply of bytes");
        }
    }

    #[test]
    fn a_handler_that_panics_or_steps_out_of_turn_leaves_the_device_a_reply() {
        const OP_PANIC: u16 = 0xBAD0;
        const OP_OUT_OF_TURN: u16 = 0xBAD1;
        crate::rpc::serving::registry::register_handler(OP_PANIC, Box::new(PanicsAfterReceiving)).unwrap();
        crate::rpc::serving::registry::register_handler(OP_OUT_OF_TURN, Box::new(OutOfTurn)).unwrap();
        let server = RpcServer::new(9, 4, 32, Arc::new(CountingMemory::default())).unwrap();
        for op in [OP_PANIC, OP_OUT_OF_TURN] {
            server
                .install_user_opcode(crate::rpc::serving::registry::registered(op).unwrap())
                .unwrap();
        }
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let serving = serve_in_background(Arc::clone(&server), Arc::clone(&done));
        {
            let device = SimulatedDevice::new(Arc::clone(&server));
            let warp = SimulatedWarp::new(&device, 0);
            let mask = 0xFFFF_0000u64;
            let packets: Vec<[u64; 8]> = (0..32).map(|l| [l + 10, 0, 0, 0, 0, 0, 0, 0]).collect();
            for round in 0..2 {
                let replies = warp.call(OP_PANIC, mask, &packets);
                assert!(replies.iter().all(|r| *r == [0; 8]), "round {round}: an empty reply");
                let replies = warp.call(OP_OUT_OF_TURN, mask, &packets);
                for (lane, reply) in replies.iter().enumerate().skip(16) {
                    assert_eq!(reply[0], lane as u64 + 11, "round {round}, lane {lane}");
                }
            }
        }
        done.store(true, Ordering::SeqCst);
        serving.join().unwrap();
        server.shutdown().unwrap();
    }

    #[test]
    fn refuses_bad_port_counts_and_lane_sizes() {
        let memory: Arc<dyn DeviceMemory> = Arc::new(CountingMemory::default());
        assert!(RpcServer::new(0, 0, 1, memory.clone()).is_err());
        assert!(RpcServer::new(0, 4097, 1, memory.clone()).is_err());
        let err = RpcServer::new(0, 4, 3, memory).err().unwrap().to_string();
        assert!(err.contains("rpc_server_init") && err.contains("0x1002"), "{err}");
    }
}
