//! Signals that block their waiters, and async handlers run on a handler thread.

use super::*;

pub(super) fn create_signal(
    w: &mut World,
    initial: i64,
    consumers: u32,
    list: *const HsaAgent,
    out: *mut HsaSignal,
) -> HsaStatus {
    if out.is_null() || (consumers > 0 && list.is_null()) {
        return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let h = handle();
    w.signals.insert(
        h,
        Signal {
            value: initial,
            doorbell: false,
        },
    );
    // SAFETY: writable per the API.
    unsafe { *out = HsaSignal { handle: h } };
    HSA_STATUS_SUCCESS
}

pub(super) unsafe extern "C" fn hsa_signal_create(
    initial_value: HsaSignalValue,
    num_consumers: u32,
    consumers: *const HsaAgent,
    signal: *mut HsaSignal,
) -> HsaStatus {
    call("hsa_signal_create", |w| {
        create_signal(w, initial_value, num_consumers, consumers, signal)
    })
}

pub(super) unsafe extern "C" fn hsa_amd_signal_create(
    initial_value: HsaSignalValue,
    num_consumers: u32,
    consumers: *const HsaAgent,
    _attributes: u64,
    signal: *mut HsaSignal,
) -> HsaStatus {
    call("hsa_amd_signal_create", |w| {
        create_signal(w, initial_value, num_consumers, consumers, signal)
    })
}

pub(super) unsafe extern "C" fn hsa_signal_destroy(signal: HsaSignal) -> HsaStatus {
    call("hsa_signal_destroy", |w| match w.signals.get(&signal.handle) {
        Some(s) if !s.doorbell => {
            w.signals.remove(&signal.handle);
            w.handlers.retain(|h| h.signal != signal.handle);
            HSA_STATUS_SUCCESS
        }
        _ => sys::HSA_STATUS_ERROR_INVALID_SIGNAL,
    })
}

/// A signal operation without a status: `f` on its value, or misuse noted for an unknown signal.
pub(super) fn on_signal<R: Default>(name: &'static str, signal: HsaSignal, f: impl FnOnce(&mut i64) -> R) -> R {
    peek(name, |w| match w.signals.get_mut(&signal.handle) {
        Some(s) => f(&mut s.value),
        None => {
            w.note(format!("{name} on signal {:#x}, which does not exist", signal.handle));
            R::default()
        }
    })
}

pub(super) unsafe extern "C" fn hsa_signal_load_scacquire(signal: HsaSignal) -> HsaSignalValue {
    on_signal("hsa_signal_load_scacquire", signal, |v| *v)
}

pub(super) unsafe extern "C" fn hsa_signal_load_relaxed(signal: HsaSignal) -> HsaSignalValue {
    on_signal("hsa_signal_load_relaxed", signal, |v| *v)
}

pub(super) unsafe extern "C" fn hsa_signal_store_relaxed(signal: HsaSignal, value: HsaSignalValue) {
    on_signal("hsa_signal_store_relaxed", signal, |v| *v = value)
}

pub(super) unsafe extern "C" fn hsa_signal_store_screlease(signal: HsaSignal, value: HsaSignalValue) {
    on_signal("hsa_signal_store_screlease", signal, |v| *v = value)
}

pub(super) unsafe extern "C" fn hsa_signal_subtract_screlease(signal: HsaSignal, value: HsaSignalValue) {
    on_signal("hsa_signal_subtract_screlease", signal, |v| *v -= value)
}

pub(super) unsafe extern "C" fn hsa_signal_wait_scacquire(
    signal: HsaSignal,
    condition: u32,
    compare_value: HsaSignalValue,
    timeout_hint: u64,
    _wait_state_hint: u32,
) -> HsaSignalValue {
    let known = peek("hsa_signal_wait_scacquire", |w| {
        let known = w.signals.contains_key(&signal.handle);
        if !known {
            w.note(format!(
                "hsa_signal_wait_scacquire on signal {:#x}, which does not exist",
                signal.handle
            ));
        }
        known.then_some(w.generation)
    });
    let Some(generation) = known else { return 0 };
    let deadline = (timeout_hint != u64::MAX)
        .then(|| Instant::now().checked_add(Duration::from_nanos(timeout_hint)))
        .flatten();
    let mut guard = world();
    loop {
        let Some(value) = guard
            .as_ref()
            .filter(|w| w.generation == generation)
            .and_then(|w| w.signal_value(signal.handle))
        else {
            return 0;
        };
        if check(condition, value, compare_value) {
            return value;
        }
        guard = match deadline {
            None => wait(guard),
            Some(deadline) => {
                let now = Instant::now();
                if now >= deadline {
                    return value;
                }
                wait_for(guard, deadline - now)
            }
        };
    }
}

/// Starts the signal handler thread of the current world if it has none.
pub(super) fn ensure_handler_thread(w: &mut World) {
    if w.handler_thread.is_none() {
        let generation = w.generation;
        w.handler_thread = Some(
            std::thread::Builder::new()
                .name("sim-hsa-handlers".into())
                .spawn(move || handler_thread(generation))
                .expect("a thread for the simulated signal handlers"),
        );
    }
}

/// Calls each registered handler once its signal meets its condition, outside the lock (a handler may
/// call the runtime), and keeps it armed when it returns true.
pub(super) fn handler_thread(generation: u64) {
    loop {
        let (handler, value) = {
            let mut guard = world();
            loop {
                let Some(w) = guard.as_mut().filter(|w| w.generation == generation) else {
                    return;
                };
                let ready = w
                    .handlers
                    .iter()
                    .position(|h| w.signal_value(h.signal).is_some_and(|v| check(h.condition, v, h.value)));
                if let Some(i) = ready {
                    let h = w.handlers.remove(i);
                    let value = w.signal_value(h.signal).unwrap_or_default();
                    break (h, value);
                }
                guard = wait(guard);
            }
        };
        // SAFETY: the handler was registered with this argument for exactly this call.
        let again = unsafe { (handler.handler)(value, handler.arg as *mut c_void) };
        let mut guard = world();
        if let Some(w) = guard.as_mut().filter(|w| w.generation == generation) {
            if again && w.signals.contains_key(&handler.signal) {
                w.handlers.push(handler);
            }
        }
    }
}

pub(super) unsafe extern "C" fn hsa_amd_signal_async_handler(
    signal: HsaSignal,
    condition: u32,
    value: HsaSignalValue,
    handler: SignalHandler,
    arg: *mut c_void,
) -> HsaStatus {
    call("hsa_amd_signal_async_handler", |w| {
        if !w.signals.contains_key(&signal.handle) {
            return sys::HSA_STATUS_ERROR_INVALID_SIGNAL;
        }
        if condition > signal_condition::GTE {
            return sys::HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        w.handlers.push(Handler {
            signal: signal.handle,
            condition,
            value,
            handler,
            arg: arg as usize,
        });
        ensure_handler_thread(w);
        HSA_STATUS_SUCCESS
    })
}
