//! Serving one port at a time with libc's own server.
//!
//! libc 19.1's `rpc_handle_server` scans every port of its server on every call, so a round trip
//! costs time in proportion to the port count (`docs/measurements.md`, "Serving one port at a
//! time"). Its handlers stay the engine of every opcode; what
//! changes is how the plugin points them at a request. Besides the device's own libc server (which
//! owns the mailbox and hands out the client), the plugin creates, for each port that receives a
//! request, a *window*: a second libc server of one port whose view of the mailbox is moved onto that
//! port. `rpc_handle_server` on a window looks at that one port, serves it with libc's handlers, and
//! returns, however many ports the device has.
//!
//! Moving the view writes four pointers of libc's `Device` object, which its header does not
//! publish. [`libc_layout_matches`] therefore proves, on the device's own server and on every window, that
//! the object is laid out as libc 19.1.7 lays it out (every field compared with what the server must
//! hold); where it is not, the plugin serves through `rpc_handle_server` of the whole server as
//! before, and says so once.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::rpc::protocol::ffi;
use crate::rpc::protocol::mailbox::Layout;
use crate::util::error::{Error, Result};
use crate::util::sync::{lock, PerProcess};
use crate::util::{fault, log};

/// A callback as the device's server has it: opcode, function, data.
pub type Callback = (u16, ffi::OpcodeCallback, usize);

/// Every callback given to a device's server, in order (a list that only grows), with its length
/// readable without the lock, so that serving a port whose window has them all takes no lock.
#[derive(Default)]
pub struct Callbacks {
    list: Mutex<Vec<Callback>>,
    len: AtomicUsize,
}

impl Callbacks {
    /// Adds one; windows pick it up when next claimed.
    pub fn push(&self, callback: Callback) {
        let mut list = lock(&self.list);
        list.push(callback);
        self.len.store(list.len(), Ordering::Release);
    }

    /// Whether `op` has a callback.
    pub fn contains(&self, op: u16) -> bool {
        lock(&self.list).iter().any(|c| c.0 == op)
    }
}

/// A port's window, opened when the port first receives a request, and who is serving it. One
/// thread at a time uses a window (see [`PortWindow::claim`]), so it can be given callbacks registered
/// since it opened without a lock that serving would have to take: a thread held up in one port's
/// slow call then holds up no registration and no other port.
#[derive(Default)]
pub struct PortWindow {
    /// This process's window and claim. A forked child opens windows of its own: at the fork, a
    /// parent's thread that did not survive it may have held the claim, or the libc port lock inside
    /// the window, after replying to the device, and would never release them in the child.
    state: PerProcess<WindowState>,
    /// Requests served through the window (written by the claim's holder), so that the watchdog can
    /// tell one waiting request from the next.
    served: AtomicU32,
    /// Whether a failure to open the window was reported.
    failed: AtomicBool,
}

/// A port's window in one process, and who is serving it.
#[derive(Default)]
struct WindowState {
    window: OnceLock<Window>,
    busy: AtomicBool,
    /// How many of the device's callbacks (a list that only grows) the window has.
    synced: AtomicUsize,
}

/// What [`PortWindow::claim`] got.
pub enum Claim<'a> {
    /// The window, this thread's until the guard drops.
    Mine(WindowGuard<'a>),
    /// Another thread is serving the port.
    Busy,
    /// The window could not be opened now (said once); the request waits, and the next claim tries
    /// again. Serving it through libc's whole-server scan instead is not an option: that scan takes
    /// the device server's own port locks, which windows do not, so it could serve a port that a
    /// window is serving at the same moment.
    Unavailable,
}

/// A claimed window.
pub struct WindowGuard<'a> {
    slot: &'a PortWindow,
    state: &'a WindowState,
    window: &'a Window,
}

impl std::ops::Deref for WindowGuard<'_> {
    type Target = Window;
    fn deref(&self) -> &Window {
        self.window
    }
}

impl WindowGuard<'_> {
    /// Counts a request served through the window.
    pub fn count_served(&self) {
        let served = &self.slot.served;
        served.store(served.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }
}

impl Drop for WindowGuard<'_> {
    fn drop(&mut self) {
        self.state.busy.store(false, Ordering::Release);
    }
}

impl PortWindow {
    /// Requests served through the window so far.
    pub fn served(&self) -> u32 {
        self.served.load(Ordering::Relaxed)
    }

    /// Claims the window onto `port` of the device's mailbox (at `base`, laid out as `layout`), opening it on first use and giving it every
    /// callback of `callbacks` it lacks; `owner` names whose port it is in a message.
    pub fn claim<'a>(
        &'a self,
        owner: super::Owner,
        base: usize,
        layout: Layout,
        port: usize,
        callbacks: &Callbacks,
    ) -> Claim<'a> {
        let state = self.state.get_or_make(WindowState::default, |_| {});
        if state.busy.swap(true, Ordering::Acquire) {
            return Claim::Busy;
        }
        let release = |claim| {
            state.busy.store(false, Ordering::Release);
            claim
        };
        let window = match state.window.get() {
            Some(window) => window,
            None => {
                // Only the claim's holder opens, so nobody else sets the lock meanwhile.
                let list = lock(&callbacks.list);
                match Window::open(base, layout, port, &list) {
                    Ok(window) => {
                        state.synced.store(list.len(), Ordering::Relaxed);
                        drop(list);
                        state.window.get_or_init(|| window)
                    }
                    Err(e) => {
                        if !self.failed.swap(true, Ordering::Relaxed) {
                            log::error(format_args!(
                                "{owner}: port {port}'s request waits, and is tried again: {e}"
                            ));
                        }
                        drop(list);
                        return release(Claim::Unavailable);
                    }
                }
            }
        };
        let synced = state.synced.load(Ordering::Relaxed);
        if synced < callbacks.len.load(Ordering::Acquire) {
            let list = lock(&callbacks.list);
            for &(op, callback, data) in &list[synced..] {
                if let Err(e) = window.register(op, callback, data) {
                    log::error(format_args!("{owner}: port {port}: {e}"));
                }
            }
            state.synced.store(list.len(), Ordering::Relaxed);
        }
        Claim::Mine(WindowGuard {
            slot: self,
            state,
            window,
        })
    }
}

/// Byte offsets of the fields of libc 19.1.7's `Device` (`utils/gpu/server/rpc_server.cpp`) on a
/// 64-bit target: `uint32_t lane_size; void *buffer; rpc::Server server; rpc::Client client; ...`,
/// where both `server` and `client` are a `Process`: `uint32_t port_count; Atomic<uint32_t> *inbox,
/// *outbox; Header *header; Buffer *packet; Atomic<uint32_t> lock[128]` (552 bytes).
mod offsets {
    pub const LANE_SIZE: usize = 0;
    pub const BUFFER: usize = 8;
    pub const SERVER: usize = 16;
    pub const PORT_COUNT: usize = 0;
    pub const INBOX: usize = 8;
    pub const OUTBOX: usize = 16;
    pub const HEADER: usize = 24;
    pub const PACKET: usize = 32;
    pub const PROCESS_BYTES: usize = 552;
    pub const CLIENT: usize = SERVER + PROCESS_BYTES;
}

/// Whether `raw`'s object is laid out as the plugin expects for a mailbox at `base` with `layout`:
/// every field it reads or moves holds the value that a server of this mailbox must hold, and the
/// client libc hands out sits where the layout puts it.
fn laid_out_as_expected(raw: ffi::Device, base: usize, layout: Layout) -> bool {
    if raw.handle == 0 || !raw.handle.is_multiple_of(8) {
        return false;
    }
    // SAFETY: `raw` is a live server; the client libc hands out is inside its object.
    let client = unsafe { ffi::rpc_get_client_buffer(raw) } as usize;
    // SAFETY: `rpc_get_client_size` has no preconditions.
    let client_size = unsafe { ffi::rpc_get_client_size() } as usize;
    if client != raw.handle + offsets::CLIENT || client_size != offsets::PROCESS_BYTES {
        return false;
    }
    let server = raw.handle + offsets::SERVER;
    // SAFETY: the object spans at least up to the client, which starts after every field read here
    // (checked just above); the fields are plain integers and pointers written before the server
    // was handed out.
    let (lane_size, buffer, ports, inbox, outbox, header, packet) = unsafe {
        let at = |offset: usize| std::ptr::read((raw.handle + offset) as *const usize);
        (
            std::ptr::read((raw.handle + offsets::LANE_SIZE) as *const u32),
            at(offsets::BUFFER),
            std::ptr::read((server + offsets::PORT_COUNT) as *const u32),
            at(offsets::SERVER + offsets::INBOX),
            at(offsets::SERVER + offsets::OUTBOX),
            at(offsets::SERVER + offsets::HEADER),
            at(offsets::SERVER + offsets::PACKET),
        )
    };
    lane_size as usize == layout.lanes
        && buffer == base
        && ports as usize == layout.ports
        && inbox == base + layout.client_word(0)
        && outbox == base + layout.server_word(0)
        && header == base + layout.header(0)
        && packet == base + layout.packet(0, 0)
}

/// Whether windows can be opened onto the device's own server `raw` (mailbox at `base`); where
/// libc's object is not laid out as expected, says so (once per process).
pub fn libc_layout_matches(raw: ffi::Device, base: usize, layout: Layout) -> bool {
    if laid_out_as_expected(raw, base, layout) {
        return true;
    }
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        log::info(format_args!(
            "LLVM libc's RPC server is not laid out as libc 19.1.7's; host calls are served by \
             scanning every port, which is slower with many ports"
        ));
    }
    false
}

/// A libc server of one port whose view is moved onto one port of a device's mailbox.
pub struct Window {
    raw: ffi::Device,
}

// SAFETY: the object libc allocated is owned by this window; libc serialises serving one port with
// its per-port lock, so any thread may serve it.
unsafe impl Send for Window {}
// SAFETY: see `Send`.
unsafe impl Sync for Window {}

unsafe extern "C" fn alloc_own_mailbox(size: u64, _data: *mut c_void) -> *mut c_void {
    // SAFETY: calloc has no preconditions; libc frees it through `free_own_mailbox`.
    unsafe { libc::calloc(1, size as usize) }
}

unsafe extern "C" fn free_own_mailbox(ptr: *mut c_void, _data: *mut c_void) {
    // SAFETY: `ptr` came from `alloc_own_mailbox`.
    unsafe { libc::free(ptr) }
}

impl Window {
    /// Creates the window onto `port` of the device's mailbox (at `base`, laid out as `layout`), with
    /// every `(opcode, callback, data)` of `callbacks` registered as on the device's own server.
    pub fn open(base: usize, layout: Layout, port: usize, callbacks: &[Callback]) -> Result<Window> {
        let lane_size = layout.lanes as u32;
        let mut raw = ffi::Device::default();
        // SAFETY: `raw` is writable; the allocation callback ignores its data.
        let status = fault::call_or("rpc_server_init", ffi::STATUS_ERROR, || unsafe {
            ffi::rpc_server_init(&mut raw, 1, lane_size, alloc_own_mailbox, std::ptr::null_mut())
        });
        ffi::check("rpc_server_init (a port's window)", status)?;
        let window = Window { raw };
        // SAFETY: `raw` is a live server.
        let own = unsafe { std::ptr::read((raw.handle + offsets::BUFFER) as *const usize) };
        let own_layout = Layout {
            ports: 1,
            lanes: layout.lanes,
        };
        if !laid_out_as_expected(raw, own, own_layout) {
            return Err(Error::Rpc {
                call: "rpc_server_init (a port's window is not laid out as libc 19.1.7's)",
                status: ffi::STATUS_ERROR,
            });
        }
        for &(op, callback, data) in callbacks {
            window.register(op, callback, data)?;
        }
        let server = raw.handle + offsets::SERVER;
        // SAFETY: `laid_out_as_expected` proved these four fields are the server's mailbox pointers of this object,
        // which no thread uses yet; each new value is the same array of the device's mailbox,
        // advanced to `port` (inside it: `port` is below the device's port count).
        unsafe {
            let set = |offset: usize, value: usize| std::ptr::write((server + offset) as *mut usize, value);
            set(offsets::INBOX, base + layout.client_word(port));
            set(offsets::OUTBOX, base + layout.server_word(port));
            set(offsets::HEADER, base + layout.header(port));
            set(offsets::PACKET, base + layout.packet(port, 0));
        }
        Ok(window)
    }

    /// Gives `op` the callback it has on the device's own server.
    pub fn register(&self, op: u16, callback: ffi::OpcodeCallback, data: usize) -> Result<()> {
        // SAFETY: `raw` is a live server; callers have claimed the window (or not yet shared it), so no
        // thread reads libc's unlocked map meanwhile; `data` outlives the window.
        let status = unsafe { ffi::rpc_register_callback(self.raw, op, callback, data as *mut c_void) };
        ffi::check("rpc_register_callback", status)
    }

    /// Serves the port's request, if one is waiting and no other thread serves it.
    pub fn serve(&self) -> ffi::Status {
        // SAFETY: `raw` is a live server whose view lies inside the device's mailbox, which outlives
        // every window of it (the device's server drops its windows before freeing the mailbox).
        unsafe { ffi::rpc_handle_server(self.raw) }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: `raw` is live and nobody serves it any more (the window is being dropped); libc frees
        // the window's own small mailbox (its `buffer` field, which was never moved) and the object.
        unsafe { ffi::rpc_server_shutdown(self.raw, free_own_mailbox, std::ptr::null_mut()) };
    }
}
