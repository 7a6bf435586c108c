//! Fault injection for the calls into the operating system and its loader that have no simulated
//! layer of their own (the CUDA backend's driver has one): a test arms a call by name on its thread,
//! and the next such call on that thread fails as the real one can, through the same error path.
//! Outside test builds [`injected`] is a constant `false`, so release code pays nothing.

#[cfg(test)]
use std::cell::Cell;

#[cfg(test)]
thread_local! {
    static ARMED: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Makes the next call named `call` on this thread fail.
#[cfg(test)]
pub fn arm(call: &'static str) {
    ARMED.with(|a| a.set(Some(call)));
}

/// Whether a fault is still armed on this thread (the call it names was not made since).
#[cfg(test)]
pub fn armed() -> Option<&'static str> {
    ARMED.with(Cell::get)
}

/// Whether the call named `call`, about to be made, must fail instead (once per [`arm`]).
#[cfg(test)]
pub fn injected(call: &str) -> bool {
    ARMED.with(|a| {
        let hit = a.get() == Some(call);
        if hit {
            a.set(None);
        }
        hit
    })
}

/// Like [`injected`] for a call on one of several objects: fires when `call` is armed, or
/// "`call` `what`" (e.g. "dlsym counter", to fail the lookup of one symbol among many).
#[cfg(test)]
pub fn injected_for(call: &str, what: &[u8]) -> bool {
    let detailed = format!("{call} {}", String::from_utf8_lossy(what));
    injected(call) || injected(&detailed)
}

/// Makes the call named `call` through `real`, or, when a test armed it, returns `failure` (what the
/// real call returns when it fails) without making it.
#[inline(always)]
pub fn call_or<T>(call: &str, failure: T, real: impl FnOnce() -> T) -> T {
    if injected(call) {
        failure
    } else {
        real()
    }
}

/// Whether the call named `call` must fail: never, outside tests.
#[cfg(not(test))]
#[inline(always)]
pub fn injected(_call: &str) -> bool {
    false
}

/// Whether the call named `call` on `what` must fail: never, outside tests.
#[cfg(not(test))]
#[inline(always)]
pub fn injected_for(_call: &str, _what: &[u8]) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_fires_once_for_its_call_on_its_thread() {
        arm("dlopen");
        assert!(!injected("dlsym"));
        std::thread::spawn(|| assert!(!injected("dlopen"))).join().unwrap();
        assert!(injected("dlopen"));
        assert!(!injected("dlopen"));
        assert_eq!(armed(), None);
        arm("malloc");
        assert_eq!(call_or("malloc", 0, || 1), 0);
        assert_eq!(call_or("malloc", 0, || 1), 1);
        arm("dlsym counter");
        assert!(!injected_for("dlsym", b"other"));
        assert!(injected_for("dlsym", b"counter"));
        assert_eq!(armed(), None);
    }
}
