//! The doorbell AMD device code rings after writing a host call's request, so that the serving
//! threads sleep while a kernel computes. ROCm's hostcall works the same way: device code stores to an
//! HSA signal through ockl (`__ockl_hsa_signal_store`), which, for a signal with an event mailbox,
//! writes the signal's event id there and raises an interrupt (`s_sendmsg`); a host thread waiting on
//! the signal then wakes in the kernel driver instead of polling.
//!
//! One signal per device, made when the first image that asks for host services is loaded: the
//! runtime's handler thread waits on it (interrupt-backed) and, each time device code rings, sets it
//! back to 0 and rings the serving threads' doorbell ([`Doorbell`]), which wakes the scanner; the
//! scanner then looks at every port of every server. One signal for all of a device's images, not one
//! per image: a ring only says "look", and every server is looked at anyway.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::runtime::Api;
use super::sys::{signal_condition, HsaSignal, HsaSignalValue};
use crate::util::doorbell::Doorbell;
use crate::util::error::{Error, Result};

/// How long release waits for the runtime's handler thread to let go of the signal.
const RELEASE_WAIT: Duration = Duration::from_secs(1);

/// A device's doorbell signal and what its handler needs.
pub struct DeviceDoorbell {
    api: Api,
    signal: HsaSignal,
    /// The serving threads' doorbell, rung for each ring of the signal.
    doorbell: &'static Doorbell,
    /// Rings passed on, for tests and statistics.
    rings: AtomicU64,
    /// Set before the last store to the signal: the handler then lets go of it.
    retiring: AtomicBool,
    /// Set by the handler when it let go: the signal may be destroyed.
    retired: AtomicBool,
}

impl DeviceDoorbell {
    /// A signal at 0 whose every change to another value rings `doorbell`.
    pub fn create(api: Api, doorbell: &'static Doorbell) -> Result<Box<DeviceDoorbell>> {
        let signal = api.signal_create(0)?;
        let bell = Box::new(DeviceDoorbell {
            api,
            signal,
            doorbell,
            rings: AtomicU64::new(0),
            retiring: AtomicBool::new(false),
            retired: AtomicBool::new(false),
        });
        let arg = (&*bell as *const DeviceDoorbell).cast_mut().cast::<c_void>();
        // SAFETY: the box is not moved or freed before the handler has returned false (`release`
        // waits for that, and leaks the box when it does not happen); the handler only reads it.
        let registered = unsafe { api.on_condition(signal, signal_condition::NE, 0, pass_ring_on, arg) };
        if let Err(e) = registered {
            // SAFETY: made above; no handler was registered, and device code never saw it.
            let _ = unsafe { api.signal_destroy(signal) };
            return Err(e);
        }
        Ok(bell)
    }

    /// What device code stores to: the signal's handle, written into the image's
    /// `__omprpc_rpc_doorbell`.
    pub fn handle(&self) -> u64 {
        self.signal.handle
    }

    /// Rings passed on to the serving threads so far.
    pub fn rings(&self) -> u64 {
        self.rings.load(Ordering::Relaxed)
    }

    /// Destroys the signal once the runtime's handler has let go of it (no kernel of the device runs:
    /// its queues are gone). If the handler does not let go within a second, the signal and this
    /// record are left allocated rather than freed under it.
    pub fn release(self: Box<Self>) -> Result<()> {
        self.retiring.store(true, Ordering::SeqCst);
        self.api.signal_store(self.signal, 1);
        let deadline = Instant::now() + RELEASE_WAIT;
        while !self.retired.load(Ordering::SeqCst) {
            if Instant::now() > deadline {
                let handle = self.signal.handle;
                Box::leak(self);
                return Err(Error::Timeout(format!(
                    "the HSA runtime's handler did not let go of the host-call doorbell signal {handle:#x} \
                     within a second; it is left allocated"
                )));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        // SAFETY: made by `create`, destroyed once; the handler let go of it and no device code runs.
        unsafe { self.api.signal_destroy(self.signal) }
    }
}

/// The runtime's handler for a ring: sets the signal back to 0 first (a ring after that store makes
/// the value non-zero again, and the handler runs again), then rings the serving threads. Returns
/// false, letting go of the signal, once the device is being released.
unsafe extern "C" fn pass_ring_on(_value: HsaSignalValue, arg: *mut c_void) -> bool {
    let passed = std::panic::catch_unwind(|| {
        // SAFETY: `arg` is the `DeviceDoorbell` that registered this handler, alive until it returns
        // false (see `DeviceDoorbell::create`).
        let bell = unsafe { &*arg.cast::<DeviceDoorbell>() };
        if bell.retiring.load(Ordering::SeqCst) {
            bell.retired.store(true, Ordering::SeqCst);
            return false;
        }
        bell.api.signal_store(bell.signal, 0);
        bell.rings.fetch_add(1, Ordering::Relaxed);
        bell.doorbell.ring();
        true
    });
    // A panic here is a bug: keep the handler, as a missed ring would leave calls to the backoff.
    passed.unwrap_or(true)
}
