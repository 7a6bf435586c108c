//! Streams and events over HSA signals, as LLVM 16's stock AMDGPU plugin builds them: each operation
//! of a stream gets a signal (1 pending, 0 done) and depends on the previous operation's — through a
//! barrier-AND packet before a kernel, through the dependency list of an async copy. What an operation
//! needs until it finishes (kernel arguments, staging buffers, earlier signals that packets still
//! name) is kept until the stream is synchronised or found idle.
//!
//! Copies between the host and the device take one of the stock plugin's three ways: host memory the
//! device reaches directly (pinned, or from a host pool) is copied asynchronously; a large copy
//! (`LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES`, 1 MiB) pins the host buffer and waits; a small one goes
//! through a staging buffer, the host side of it copied on the runtime's handler thread when the
//! operation before it has finished.

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use super::device::{AmdDevice, Ready};
use super::memory::{DirectRanges, HostBuffer};
use super::queue::{AqlQueue, Dispatch, Signal};
use super::runtime::Api;
use super::sys::{HsaSignal, HsaSignalValue};
use crate::util::error::Result;
use crate::util::sync::lock;

/// Bytes of implicit kernel arguments after the explicit ones, all zero, as the stock plugin writes
/// them (`AMDGPUImplicitArgsTy`: offsets, hostcall pointer, three unused words).
pub const IMPLICIT_ARGS_BYTES: usize = 56;

/// What an operation needs until it has finished. Signals and host copies are held, not read: a
/// packet or handler of the runtime still names them.
#[allow(dead_code)]
enum Kept {
    Signal(Arc<Signal>),
    Kernargs(HostBuffer),
    Staging(HostBuffer),
    HostCopy(Box<HostCopy>),
}

/// A stream's state: the last operation's signal and what earlier ones still need.
#[derive(Default)]
struct State {
    last: Option<Arc<Signal>>,
    kept: Vec<Kept>,
}

impl State {
    /// The last operation's signal, if that operation has not finished.
    fn pending(&self) -> Option<HsaSignal> {
        self.last.as_ref().filter(|s| !s.is_done()).map(|s| s.raw())
    }

    /// Makes `signal` the last operation's, keeping the previous one alive for the packets that
    /// name it.
    fn follow(&mut self, signal: Arc<Signal>) {
        if let Some(previous) = self.last.replace(signal) {
            self.kept.push(Kept::Signal(previous));
        }
    }
}

/// An ordered stream of work on one device: what the core's queue pool holds.
pub struct AmdStream {
    device: usize,
    queue: Arc<AqlQueue>,
    ready: Arc<Ready>,
    /// A unique address, which libomptarget holds as the queue's handle.
    handle: Box<u8>,
    state: Mutex<State>,
}

/// An event: the signal of the operation that was last on a stream when it was recorded.
pub struct AmdEvent {
    handle: Box<u8>,
    recorded: Mutex<Option<Arc<Signal>>>,
}

impl AmdEvent {
    /// An event recorded nowhere yet (reached).
    pub fn new() -> AmdEvent {
        AmdEvent {
            handle: Box::new(0),
            recorded: Mutex::new(None),
        }
    }

    /// The handle libomptarget holds.
    pub fn handle(&self) -> *mut c_void {
        (&*self.handle as *const u8).cast_mut().cast()
    }

    /// Forgets the recorded operation, so that its signal can go back to the device's pool before
    /// the device is released.
    pub fn forget(&self) {
        lock(&self.recorded).take();
    }

    /// Waits until the recorded operation has finished.
    pub fn synchronize(&self, device: &AmdDevice) -> Result<()> {
        let recorded = lock(&self.recorded).clone();
        match recorded {
            Some(signal) => signal.wait(&device.health),
            None => Ok(()),
        }
    }
}

impl Default for AmdEvent {
    fn default() -> AmdEvent {
        AmdEvent::new()
    }
}

/// The host half of a staged copy, done on the runtime's handler thread once the signal it waits on
/// is 0; it then sets `done` to 0, which later operations depend on.
struct HostCopy {
    api: Api,
    dst: *mut u8,
    src: *const u8,
    size: usize,
    done: HsaSignal,
}

/// Runs a [`HostCopy`] (its address is `arg`) when its signal is 0. Returns false: once is enough.
unsafe extern "C" fn run_host_copy(_value: HsaSignalValue, arg: *mut c_void) -> bool {
    // SAFETY: `arg` is a `HostCopy` the stream keeps until the operation after it has finished, which
    // waits on `done`, set only below; its two ranges are valid for `size` bytes until then.
    unsafe {
        let copy = &*arg.cast::<HostCopy>();
        std::ptr::copy_nonoverlapping(copy.src, copy.dst, copy.size);
        copy.api.signal_store(copy.done, 0);
    }
    false
}

impl AmdStream {
    /// A stream of `device` on its next HSA queue.
    pub fn new(device: usize, amd: &AmdDevice, ready: Arc<Ready>) -> AmdStream {
        AmdStream {
            device,
            queue: amd.next_queue(&ready),
            ready,
            handle: Box::new(0),
            state: Mutex::new(State::default()),
        }
    }

    /// The device it belongs to.
    pub fn device(&self) -> usize {
        self.device
    }

    /// The handle libomptarget holds.
    pub fn handle(&self) -> *mut c_void {
        (&*self.handle as *const u8).cast_mut().cast()
    }

    /// Queues a kernel with `args` (8 bytes each) followed by the zeroed implicit arguments.
    ///
    /// # Safety
    /// What the arguments point to stays valid until the stream is synchronised.
    pub unsafe fn launch(&self, device: &AmdDevice, launch: Dispatch, args: &[*mut c_void]) -> Result<()> {
        device.health.check()?;
        let bytes = args.len() * 8 + IMPLICIT_ARGS_BYTES;
        let kernargs = self.ready.kernargs.take(bytes)?;
        // SAFETY: the buffer holds at least `bytes` bytes and is not in use.
        unsafe {
            let out = kernargs.ptr.cast::<u8>();
            std::ptr::copy_nonoverlapping(args.as_ptr().cast::<u8>(), out, args.len() * 8);
            std::ptr::write_bytes(out.add(args.len() * 8), 0, IMPLICIT_ARGS_BYTES);
        }
        let mut state = lock(&self.state);
        let result = (|| {
            if let Some(previous) = state.pending() {
                self.queue.barrier(&[previous], HsaSignal::default(), &device.health)?;
            }
            let signal = self.ready.signals.take()?;
            self.queue.dispatch(
                &Dispatch {
                    kernargs: kernargs.ptr,
                    ..launch
                },
                signal.raw(),
                &device.health,
            )?;
            Ok(signal)
        })();
        match result {
            Ok(signal) => {
                state.follow(signal);
                state.kept.push(Kept::Kernargs(kernargs));
                Ok(())
            }
            Err(e) => {
                self.ready.kernargs.give_back(kernargs);
                Err(e)
            }
        }
    }

    /// Copies `size` bytes from host memory `src` to device memory `dst`.
    ///
    /// # Safety
    /// Both ranges are valid for `size` bytes until the stream is synchronised.
    pub unsafe fn copy_to_device(
        &self,
        device: &AmdDevice,
        direct: &DirectRanges,
        max_async_bytes: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
    ) -> Result<()> {
        device.health.check()?;
        let api = self.api();
        if let Some(agent_src) = direct.agent_address(src, size) {
            // SAFETY: per this function's contract; the device reaches `agent_src` directly.
            return unsafe { self.async_copy(device, dst, agent_src, size) };
        }
        if size >= max_async_bytes {
            // SAFETY: per this function's contract.
            return unsafe { self.copy_pinned_and_wait(device, src.cast_mut(), size, |host| (dst, host.cast_const())) };
        }
        let staging = self.ready.staging.take(size)?;
        let mut state = lock(&self.state);
        let ready = match state.pending() {
            None => {
                // SAFETY: `staging` holds at least `size` bytes; `src` is readable per the contract.
                unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), staging.ptr.cast::<u8>(), size) };
                None
            }
            Some(previous) => {
                // The host buffer may still be written by the operation before: copy once it is done.
                let done = self.ready.signals.take()?;
                let copy = Box::new(HostCopy {
                    api,
                    dst: staging.ptr.cast(),
                    src: src.cast(),
                    size,
                    done: done.raw(),
                });
                let arg = (&*copy as *const HostCopy).cast_mut().cast();
                // SAFETY: the stream keeps `copy` (and `done`) until synchronised, which waits for
                // `done` and so for the handler.
                if let Err(e) = unsafe { api.on_zero(previous, run_host_copy, arg) } {
                    self.ready.staging.give_back(staging);
                    return Err(e);
                }
                state.kept.push(Kept::HostCopy(copy));
                state.kept.push(Kept::Signal(Arc::clone(&done)));
                Some(done)
            }
        };
        let signal = self.ready.signals.take()?;
        let deps: Vec<HsaSignal> = ready.iter().map(|s| s.raw()).collect();
        // SAFETY: `staging` is host-pool memory the device's agent may access, kept until the stream
        // is synchronised; `dst` per this function's contract.
        let copied = unsafe { api.async_copy(dst, staging.ptr, size, device.facts.agent(), &deps, signal.raw()) };
        state.kept.push(Kept::Staging(staging));
        copied?;
        state.follow(signal);
        Ok(())
    }

    /// Copies `size` bytes from device memory `src` to host memory `dst`.
    ///
    /// # Safety
    /// As for [`AmdStream::copy_to_device`].
    pub unsafe fn copy_to_host(
        &self,
        device: &AmdDevice,
        direct: &DirectRanges,
        max_async_bytes: usize,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
    ) -> Result<()> {
        device.health.check()?;
        let api = self.api();
        if let Some(agent_dst) = direct.agent_address(dst, size) {
            // SAFETY: per this function's contract; the device reaches `agent_dst` directly.
            return unsafe { self.async_copy(device, agent_dst, src, size) };
        }
        if size >= max_async_bytes {
            // SAFETY: per this function's contract.
            return unsafe { self.copy_pinned_and_wait(device, dst, size, |host| (host, src)) };
        }
        let staging = self.ready.staging.take(size)?;
        let mut state = lock(&self.state);
        let deps: Vec<HsaSignal> = state.pending().into_iter().collect();
        let arrived = self.ready.signals.take()?;
        // SAFETY: `staging` is host-pool memory the device's agent may access, kept until the stream
        // is synchronised; `src` per this function's contract.
        if let Err(e) = unsafe { api.async_copy(staging.ptr, src, size, device.facts.agent(), &deps, arrived.raw()) } {
            self.ready.staging.give_back(staging);
            return Err(e);
        }
        let done = self.ready.signals.take()?;
        let copy = Box::new(HostCopy {
            api,
            dst: dst.cast(),
            src: staging.ptr.cast_const().cast(),
            size,
            done: done.raw(),
        });
        let arg = (&*copy as *const HostCopy).cast_mut().cast();
        state.kept.push(Kept::Staging(staging));
        state.kept.push(Kept::Signal(Arc::clone(&arrived)));
        // SAFETY: the stream keeps `copy` until synchronised, which waits for `done`, which only the
        // handler sets.
        unsafe { api.on_zero(arrived.raw(), run_host_copy, arg) }?;
        state.kept.push(Kept::HostCopy(copy));
        state.follow(done);
        Ok(())
    }

    /// Copies `size` bytes from `src` to `dst`, both reached by the device directly.
    ///
    /// # Safety
    /// As for [`AmdStream::copy_to_device`].
    pub unsafe fn async_copy(
        &self,
        device: &AmdDevice,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
    ) -> Result<()> {
        device.health.check()?;
        let mut state = lock(&self.state);
        let deps: Vec<HsaSignal> = state.pending().into_iter().collect();
        let signal = self.ready.signals.take()?;
        // SAFETY: per this function's contract.
        unsafe {
            self.api()
                .async_copy(dst, src, size, device.facts.agent(), &deps, signal.raw())
        }?;
        state.follow(signal);
        Ok(())
    }

    /// The stock plugin's way for large copies of pageable memory: wait for the stream, pin the host
    /// buffer, copy, wait, unpin. `ends` gives (destination, source) from the host buffer's pinned
    /// address.
    ///
    /// # Safety
    /// As for [`AmdStream::copy_to_device`].
    unsafe fn copy_pinned_and_wait(
        &self,
        device: &AmdDevice,
        host: *mut c_void,
        size: usize,
        ends: impl FnOnce(*mut c_void) -> (*mut c_void, *const c_void),
    ) -> Result<()> {
        self.synchronize(device)?;
        let api = self.api();
        // SAFETY: the host buffer is mapped for `size` bytes per the caller's contract, and is unlocked
        // below before this returns.
        let pinned = unsafe { api.memory_lock(host, size) }?;
        let (dst, src) = ends(pinned);
        let copied = (|| {
            let signal = self.ready.signals.take()?;
            // SAFETY: both ends are reached by the device (device memory, pinned host memory).
            unsafe { api.async_copy(dst, src, size, device.facts.agent(), &[], signal.raw()) }?;
            signal.wait(&device.health)
        })();
        // SAFETY: locked above; the copy has finished (or failed to start) and uses it no more.
        let unlocked = unsafe { api.memory_unlock(host) };
        copied.and(unlocked)
    }

    /// Makes later work wait for `event`'s recorded operation.
    pub fn wait_event(&self, device: &AmdDevice, event: &AmdEvent) -> Result<()> {
        device.health.check()?;
        let Some(recorded) = lock(&event.recorded).clone() else {
            return Ok(());
        };
        if recorded.is_done() {
            return Ok(());
        }
        let mut state = lock(&self.state);
        let mut deps = vec![recorded.raw()];
        deps.extend(state.pending());
        let signal = self.ready.signals.take()?;
        self.queue.barrier(&deps, signal.raw(), &device.health)?;
        state.kept.push(Kept::Signal(recorded));
        state.follow(signal);
        Ok(())
    }

    /// Marks `event` reached once the work queued so far has finished.
    pub fn record(&self, event: &AmdEvent) {
        let last = lock(&self.state).last.clone();
        *lock(&event.recorded) = last;
    }

    /// Waits for everything queued, then releases what the operations kept. When the device has
    /// failed (a queue error or memory fault), the work will never finish: what it kept is released
    /// all the same, so that the device can still be torn down without leaking it.
    pub fn synchronize(&self, device: &AmdDevice) -> Result<()> {
        let mut state = lock(&self.state);
        let waited = match &state.last {
            Some(last) => last.wait(&device.health),
            None => Ok(()),
        };
        self.release(&mut state);
        waited
    }

    /// Whether everything queued has finished; if so, releases what the operations kept (as it does
    /// when the device has failed, see [`AmdStream::synchronize`]).
    pub fn is_idle(&self, device: &AmdDevice) -> Result<bool> {
        if let Err(e) = device.health.check() {
            self.release(&mut lock(&self.state));
            return Err(e);
        }
        let mut state = lock(&self.state);
        if state.last.as_ref().is_some_and(|s| !s.is_done()) {
            return Ok(false);
        }
        self.release(&mut state);
        Ok(true)
    }

    fn release(&self, state: &mut State) {
        state.last = None;
        for kept in state.kept.drain(..) {
            match kept {
                Kept::Kernargs(buffer) => self.ready.kernargs.give_back(buffer),
                Kept::Staging(buffer) => self.ready.staging.give_back(buffer),
                Kept::Signal(_) | Kept::HostCopy(_) => {}
            }
        }
    }

    fn api(&self) -> Api {
        self.ready.signals.api()
    }
}

// SAFETY: the raw pointers in `HostCopy` are only used by its handler and are kept valid by the
// stream (see `run_host_copy`); everything else is `Send`.
unsafe impl Send for HostCopy {}
// SAFETY: as above; shared references never touch the pointers.
unsafe impl Sync for HostCopy {}
