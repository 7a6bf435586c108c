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

use super::device::{AmdDevice, Leftover, Ready};
use super::memory::{DirectRanges, HostBuffer};
use super::queue::{AqlQueue, Dispatch, PooledSignal, Signal};
use super::runtime::Api;
use super::sys::{HsaAgent, HsaSignal, HsaSignalValue};
use crate::util::error::Result;
use crate::util::sync::lock;

/// Bytes of implicit kernel arguments after the explicit ones, all zero, as the stock plugin writes
/// them (`AMDGPUImplicitArgsTy`: offsets, hostcall pointer, three unused words): the least a kernel
/// gets, whatever its metadata says.
pub const IMPLICIT_ARGS_BYTES: usize = 56;

/// What a launch writes into its kernarg segment.
pub struct KernelArguments<'a> {
    /// The explicit arguments, 8 bytes each.
    pub explicit: &'a [*mut c_void],
    /// The segment's size from the kernel's descriptor (code object v5: 256 bytes of hidden arguments
    /// after the explicit ones).
    pub segment_bytes: usize,
    /// Hidden arguments to fill; every other byte after the explicit arguments is zero.
    pub hidden: &'a [super::code_object::HiddenArg],
    pub values: super::code_object::HiddenValues,
}

impl KernelArguments<'_> {
    /// Bytes of the kernarg buffer: the segment, and at least the explicit and the stock implicit ones.
    fn bytes(&self) -> usize {
        self.segment_bytes.max(self.explicit.len() * 8 + IMPLICIT_ARGS_BYTES)
    }
}

/// What an operation needs while the GPU, the copy engine or the runtime's handler thread may still use
/// it: held, not read, until the signal beside it is 0.
enum Held {
    /// A signal that packets or copies still name (it is the `until` signal itself).
    Signal,
    /// A kernel's arguments; a failed queue never finishes its kernel, so these are free once the
    /// device's queues are destroyed.
    Kernargs(HostBuffer),
    /// A staging buffer of a small copy.
    Staging(HostBuffer),
    /// The host half of a staged copy, which the runtime's handler thread runs.
    HostCopy(HostCopyPtr),
    /// A host range pinned for one large copy, unpinned once the copy is done.
    Pinned(usize),
}

/// One thing held, and the signal that says it is no longer used (`None`: nothing in flight uses it).
struct Kept {
    held: Held,
    until: Option<PooledSignal>,
}

impl Kept {
    fn new(held: Held, until: Option<&PooledSignal>) -> Kept {
        Kept {
            held,
            until: until.cloned(),
        }
    }

    /// Whether nothing uses it any more (`queues_gone`: the device's queues were destroyed, so no
    /// kernel runs).
    fn is_free(&self, queues_gone: bool) -> bool {
        (queues_gone && matches!(self.held, Held::Kernargs(_))) || self.until.as_ref().is_none_or(|s| s.is_done())
    }

    /// Gives it back: buffers to their caches, host copies freed, pinned ranges unpinned.
    fn release(self, ready: &Ready, api: Api) -> Result<()> {
        match self.held {
            Held::Kernargs(buffer) => ready.kernargs.give_back(buffer),
            Held::Staging(buffer) => ready.staging.give_back(buffer),
            // SAFETY: the pointer came from `Box::into_raw` and its handler has run (or never will:
            // its registration failed), so nothing else refers to it.
            Held::HostCopy(copy) => drop(unsafe { Box::from_raw(copy.0) }),
            // SAFETY: the range was pinned for a copy that has finished.
            Held::Pinned(host) => return unsafe { api.memory_unlock(host as *mut c_void) },
            Held::Signal => {}
        }
        Ok(())
    }
}

/// A [`HostCopy`] handed to the runtime's handler thread, owned through this pointer until released.
struct HostCopyPtr(*mut HostCopy);

// SAFETY: the pointer is only dereferenced by the handler and freed once it has run (see
// `run_host_copy` and `Kept::release`).
unsafe impl Send for HostCopyPtr {}
// SAFETY: as above; shared references never touch it.
unsafe impl Sync for HostCopyPtr {}

/// What a stream still held when its device failed: released when the device is, once nothing uses
/// it (see [`Leftovers::settle`]).
#[derive(Default)]
pub struct Leftovers {
    kept: Vec<Kept>,
}

impl Leftover for Leftovers {
    /// What a copy or its handler holds is released once its signal is 0, waiting until `deadline`
    /// for the copy engine; kernel arguments at once; the stream's signals once none of its copies is
    /// still pending (a pending copy may wait on one).
    fn settle(self: Box<Self>, ready: &Ready, api: Api, deadline: std::time::Instant) -> (usize, Result<()>) {
        let copying = |k: &Kept| matches!(k.held, Held::Staging(_) | Held::HostCopy(_) | Held::Pinned(_));
        while self.kept.iter().any(|k| copying(k) && !k.is_free(true)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let copies_done = self.kept.iter().all(|k| !copying(k) || k.is_free(true));
        let mut result = Ok(());
        let mut left = 0;
        for kept in self.kept {
            let free = kept.is_free(true) || (copies_done && matches!(kept.held, Held::Signal));
            if free {
                result = result.and(kept.release(ready, api));
            } else {
                left += 1;
                std::mem::forget(kept);
            }
        }
        (left, result)
    }
}

/// A stream's state: the last operation's signal and what earlier ones still need.
#[derive(Default)]
struct State {
    last: Option<PooledSignal>,
    kept: Vec<Kept>,
}

impl State {
    /// The last operation's signal, if that operation has not finished.
    fn pending(&self) -> Option<HsaSignal> {
        self.last.as_ref().filter(|s| !s.is_done()).map(|s| s.raw())
    }

    /// Makes `signal` the last operation's, keeping the previous one alive for the packets that
    /// name it.
    fn follow(&mut self, signal: PooledSignal) {
        if let Some(previous) = self.last.replace(signal) {
            self.hold(Held::Signal, Some(&previous));
        }
    }

    fn hold(&mut self, held: Held, until: Option<&PooledSignal>) {
        self.kept.push(Kept::new(held, until));
    }
}

/// An ordered stream of work on one device: what the core's queue pool holds.
pub struct AmdStream {
    queue: Arc<AqlQueue>,
    ready: Arc<Ready>,
    /// A unique address, which libomptarget holds as the queue's handle.
    handle: Box<u8>,
    state: Mutex<State>,
}

/// An event: the signal of the operation that was last on a stream when it was recorded.
pub struct AmdEvent {
    handle: Box<u8>,
    recorded: Mutex<Option<PooledSignal>>,
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

impl HostCopy {
    /// Hands the copy to the runtime's handler thread, to run once `after` is 0 and then set `done`
    /// to 0; the returned pointer owns it until then.
    ///
    /// # Safety
    /// Both ranges stay valid for `size` bytes until `done` is 0.
    unsafe fn run_after(
        api: Api,
        after: HsaSignal,
        dst: *mut u8,
        src: *const u8,
        size: usize,
        done: &Signal,
    ) -> Result<HostCopyPtr> {
        let copy = Box::into_raw(Box::new(HostCopy {
            api,
            dst,
            src,
            size,
            done: done.raw(),
        }));
        // SAFETY: the caller holds the returned pointer until `done` is 0, which only the handler sets.
        match unsafe { api.on_zero(after, run_host_copy, copy.cast()) } {
            Ok(()) => Ok(HostCopyPtr(copy)),
            Err(e) => {
                // SAFETY: the handler was not registered; nothing else has the pointer.
                drop(unsafe { Box::from_raw(copy) });
                Err(e)
            }
        }
    }
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
    /// A stream of `amd` on its next HSA queue.
    pub fn new(amd: &AmdDevice, ready: Arc<Ready>) -> AmdStream {
        AmdStream {
            queue: amd.next_queue(&ready),
            ready,
            handle: Box::new(0),
            state: Mutex::new(State::default()),
        }
    }

    /// The handle libomptarget holds.
    pub fn handle(&self) -> *mut c_void {
        (&*self.handle as *const u8).cast_mut().cast()
    }

    /// Queues a kernel with its explicit arguments, then zeros, with the hidden arguments its metadata
    /// lists filled in.
    ///
    /// # Safety
    /// What the arguments point to stays valid until the stream is synchronised.
    pub unsafe fn launch(&self, device: &AmdDevice, launch: Dispatch, arguments: &KernelArguments<'_>) -> Result<()> {
        device.health.check()?;
        let bytes = arguments.bytes();
        let explicit = arguments.explicit.len() * 8;
        let kernargs = self.ready.kernargs.take(bytes)?;
        // SAFETY: the buffer holds at least `bytes` bytes and is not in use; nothing else refers to it
        // while the slice lives.
        let segment = unsafe { std::slice::from_raw_parts_mut(kernargs.ptr.cast::<u8>(), bytes) };
        // SAFETY: `explicit` bytes are the arguments' pointer values, which the caller passes.
        segment[..explicit]
            .copy_from_slice(unsafe { std::slice::from_raw_parts(arguments.explicit.as_ptr().cast::<u8>(), explicit) });
        segment[explicit..].fill(0);
        for hidden in arguments.hidden.iter().filter(|h| h.offset as usize >= explicit) {
            hidden.write(segment, arguments.values);
        }
        let mut state = lock(&self.state);
        let result = (|| {
            let signal = self.ready.signals.take()?;
            self.queue.dispatch(
                state.pending(),
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
                state.hold(Held::Kernargs(kernargs), Some(&signal));
                state.follow(signal);
                Ok(())
            }
            Err(e) => {
                self.ready.kernargs.give_back(kernargs);
                Err(e)
            }
        }
    }

    /// Copies `size` bytes between host memory at `host` and device memory at `device_ptr`, towards
    /// the device when `to_device`, the stock plugin's way: asynchronously when the device reaches the
    /// host memory directly, pinned and waited for when it is `max_async_bytes` or larger, else staged.
    ///
    /// # Safety
    /// Both ranges are valid for `size` bytes until the stream is synchronised.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn copy_host(
        &self,
        device: &AmdDevice,
        direct: &DirectRanges,
        max_async_bytes: usize,
        to_device: bool,
        host: *mut c_void,
        device_ptr: *mut c_void,
        size: usize,
    ) -> Result<()> {
        device.health.check()?;
        // (destination, source) of the copy, given where the device sees the host side.
        let ends = |host: *mut c_void| {
            if to_device {
                (device_ptr, host.cast_const())
            } else {
                (host, device_ptr.cast_const())
            }
        };
        if let Some(agent_host) = direct.agent_address(host, size) {
            let (dst, src) = ends(agent_host);
            // SAFETY: per this function's contract; the device reaches `agent_host` directly.
            return unsafe { self.async_copy(device, dst, src, size) };
        }
        if size >= max_async_bytes {
            // SAFETY: per this function's contract.
            return unsafe { self.copy_pinned_and_wait(device, host, size, ends) };
        }
        let (dst, src) = ends(host);
        if to_device {
            // SAFETY: per this function's contract.
            unsafe { self.stage_in(device, dst, src, size) }
        } else {
            // SAFETY: per this function's contract.
            unsafe { self.stage_out(device, dst, src, size) }
        }
    }

    /// A small copy of pageable host memory `src` to the device, through a staging buffer.
    ///
    /// # Safety
    /// As for [`AmdStream::copy_host`].
    unsafe fn stage_in(&self, device: &AmdDevice, dst: *mut c_void, src: *const c_void, size: usize) -> Result<()> {
        let api = self.api();
        let staging = self.ready.staging.take(size)?;
        let mut state = lock(&self.state);
        // The host buffer may still be written by the operation before: then the host half runs on
        // the runtime's handler thread once it is done, and the copy waits for that.
        let ready = match state.pending() {
            None => {
                // SAFETY: `staging` holds at least `size` bytes; `src` is readable per the contract.
                unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), staging.ptr.cast::<u8>(), size) };
                None
            }
            Some(previous) => {
                let done = match self.ready.signals.take() {
                    Ok(done) => done,
                    Err(e) => {
                        self.ready.staging.give_back(staging);
                        return Err(e);
                    }
                };
                // SAFETY: `staging` holds `size` bytes and is held until `done`; `src` per the contract.
                let copy =
                    match unsafe { HostCopy::run_after(api, previous, staging.ptr.cast(), src.cast(), size, &done) } {
                        Ok(copy) => copy,
                        Err(e) => {
                            self.ready.staging.give_back(staging);
                            return Err(e);
                        }
                    };
                // From here on the stream's next wait covers the handler.
                state.hold(Held::HostCopy(copy), Some(&done));
                state.follow(done.clone());
                Some(done)
            }
        };
        let copied = self.ready.signals.take().and_then(|signal| {
            let deps = ready.as_ref().map(|s| s.raw());
            // SAFETY: `staging` is host-pool memory the device's agent may access, held until the copy
            // is done; `dst` per this function's contract.
            unsafe {
                api.async_copy(
                    dst,
                    staging.ptr,
                    size,
                    device.facts.agent(),
                    deps.as_slice(),
                    signal.raw(),
                )
            }?;
            Ok(signal)
        });
        match copied {
            Ok(signal) => {
                state.hold(Held::Staging(staging), Some(&signal));
                state.follow(signal);
                Ok(())
            }
            Err(e) => {
                // Only the handler (if any) may still write the staging buffer.
                state.hold(Held::Staging(staging), ready.as_ref());
                Err(e)
            }
        }
    }

    /// A small copy from the device to pageable host memory `dst`, through a staging buffer.
    ///
    /// # Safety
    /// As for [`AmdStream::copy_host`].
    unsafe fn stage_out(&self, device: &AmdDevice, dst: *mut c_void, src: *const c_void, size: usize) -> Result<()> {
        let api = self.api();
        let staging = self.ready.staging.take(size)?;
        let mut state = lock(&self.state);
        let deps = state.pending();
        // Both signals first, so that nothing fails between the copy and its handler.
        let signals = self
            .ready
            .signals
            .take()
            .and_then(|arrived| Ok((arrived, self.ready.signals.take()?)));
        let (arrived, done) = match signals {
            Ok(both) => both,
            Err(e) => {
                self.ready.staging.give_back(staging);
                return Err(e);
            }
        };
        // SAFETY: `staging` is host-pool memory the device's agent may access, held until the handler
        // is done with it; `src` per this function's contract.
        if let Err(e) = unsafe {
            api.async_copy(
                staging.ptr,
                src,
                size,
                device.facts.agent(),
                deps.as_slice(),
                arrived.raw(),
            )
        } {
            self.ready.staging.give_back(staging);
            return Err(e);
        }
        // From here on the stream's next wait covers the copy.
        state.follow(arrived.clone());
        // SAFETY: `dst` per this function's contract; `staging` is held until `done`.
        let copy = match unsafe {
            HostCopy::run_after(
                api,
                arrived.raw(),
                dst.cast(),
                staging.ptr.cast_const().cast(),
                size,
                &done,
            )
        } {
            Ok(copy) => copy,
            Err(e) => {
                state.hold(Held::Staging(staging), Some(&arrived));
                return Err(e);
            }
        };
        state.hold(Held::HostCopy(copy), Some(&done));
        state.hold(Held::Staging(staging), Some(&done));
        state.follow(done);
        Ok(())
    }

    /// Copies `size` bytes from `src` to `dst`, both reached by the device directly.
    ///
    /// # Safety
    /// As for [`AmdStream::copy_host`].
    pub unsafe fn async_copy(
        &self,
        device: &AmdDevice,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.copy_to_peer(device, device.facts.agent(), dst, src, size) }
    }

    /// Copies `size` bytes from this device's memory at `src` to memory of the agent `dst_agent` at
    /// `dst` (this device's own, or a peer GPU's it was given access to).
    ///
    /// # Safety
    /// As for [`AmdStream::copy_host`].
    pub unsafe fn copy_to_peer(
        &self,
        device: &AmdDevice,
        dst_agent: HsaAgent,
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
    ) -> Result<()> {
        device.health.check()?;
        let mut state = lock(&self.state);
        let deps = state.pending();
        let signal = self.ready.signals.take()?;
        // SAFETY: per this function's contract.
        unsafe {
            self.api().async_copy_between(
                dst,
                dst_agent,
                src,
                device.facts.agent(),
                size,
                deps.as_slice(),
                signal.raw(),
            )
        }?;
        state.follow(signal);
        Ok(())
    }

    /// The stock plugin's way for large copies of pageable memory: wait for the stream, pin the host
    /// buffer, copy, wait, unpin. `ends` gives (destination, source) from the host buffer's pinned
    /// address.
    ///
    /// # Safety
    /// As for [`AmdStream::copy_host`].
    unsafe fn copy_pinned_and_wait(
        &self,
        device: &AmdDevice,
        host: *mut c_void,
        size: usize,
        ends: impl FnOnce(*mut c_void) -> (*mut c_void, *const c_void),
    ) -> Result<()> {
        self.synchronize(device)?;
        let api = self.api();
        // SAFETY: the host buffer is mapped for `size` bytes per the caller's contract; it is unpinned
        // once the copy is done.
        let pinned = unsafe { api.memory_lock(host, size) }?;
        let (dst, src) = ends(pinned);
        let signal = match self.ready.signals.take() {
            Ok(signal) => signal,
            Err(e) => {
                // SAFETY: locked above and used by nothing.
                let _ = unsafe { api.memory_unlock(host) };
                return Err(e);
            }
        };
        // SAFETY: both ends are reached by the device (device memory, pinned host memory).
        if let Err(e) = unsafe { api.async_copy(dst, src, size, device.facts.agent(), &[], signal.raw()) } {
            // SAFETY: the copy did not start; nothing uses the range.
            let _ = unsafe { api.memory_unlock(host) };
            return Err(e);
        }
        let waited = signal.wait(&device.health);
        let kept = Kept::new(Held::Pinned(host as usize), Some(&signal));
        if waited.is_err() {
            // The device failed; the copy engine may still be at work on the range.
            lock(&device.leftovers).push(Box::new(Leftovers { kept: vec![kept] }));
            return waited;
        }
        kept.release(&self.ready, api)
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
        let (first, own) = (recorded.raw(), state.pending());
        let deps: &[HsaSignal] = match &own {
            Some(own) => &[first, *own],
            None => &[first],
        };
        let signal = self.ready.signals.take()?;
        self.queue.barrier(deps, signal.raw(), &device.health)?;
        state.hold(Held::Signal, Some(&recorded));
        state.follow(signal);
        Ok(())
    }

    /// Marks `event` reached once the work queued so far has finished.
    pub fn record(&self, event: &AmdEvent) {
        let last = lock(&self.state).last.clone();
        *lock(&event.recorded) = last;
    }

    /// Waits for everything queued, then releases what the operations kept. When the device has
    /// failed (a queue error or memory fault), its work may never finish, or finish later on the copy
    /// engine: what it kept goes to the device, which releases it when it is released itself.
    pub fn synchronize(&self, device: &AmdDevice) -> Result<()> {
        let mut state = lock(&self.state);
        let waited = match &state.last {
            Some(last) => last.wait(&device.health),
            None => Ok(()),
        };
        match waited {
            Ok(()) => self.release(&mut state),
            Err(e) => {
                self.abandon(device, &mut state);
                Err(e)
            }
        }
    }

    /// Whether everything queued has finished; if so, releases what the operations kept (on a failed
    /// device, see [`AmdStream::synchronize`]).
    pub fn is_idle(&self, device: &AmdDevice) -> Result<bool> {
        let mut state = lock(&self.state);
        if let Err(e) = device.health.check() {
            self.abandon(device, &mut state);
            return Err(e);
        }
        if state.last.as_ref().is_some_and(|s| !s.is_done()) {
            return Ok(false);
        }
        self.release(&mut state)?;
        Ok(true)
    }

    /// Releases what the stream still holds as it is destroyed: at once when its work is done, else
    /// through the device (the core destroys streams at teardown, when their work is waited for).
    pub fn retire(&self, device: &AmdDevice) -> Result<()> {
        let mut state = lock(&self.state);
        if state.kept.iter().all(|k| k.is_free(false)) && state.last.as_ref().is_none_or(|s| s.is_done()) {
            return self.release(&mut state);
        }
        self.abandon(device, &mut state);
        Ok(())
    }

    /// Everything finished: gives back what the operations kept.
    fn release(&self, state: &mut State) -> Result<()> {
        state.last = None;
        let api = self.api();
        let mut result = Ok(());
        for kept in state.kept.drain(..) {
            result = result.and(kept.release(&self.ready, api));
        }
        result
    }

    /// The device failed: hands what the operations kept to the device, to be released with it.
    fn abandon(&self, device: &AmdDevice, state: &mut State) {
        let mut kept: Vec<Kept> = state.kept.drain(..).collect();
        if let Some(last) = state.last.take() {
            kept.push(Kept::new(Held::Signal, Some(&last)));
        }
        if !kept.is_empty() {
            lock(&device.leftovers).push(Box::new(Leftovers { kept }));
        }
    }

    fn api(&self) -> Api {
        self.ready.signals.api()
    }
}
