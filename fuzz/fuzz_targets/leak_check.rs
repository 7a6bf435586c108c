//! A leak check that works without a sanitizer: the targets count the bytes live in Rust's heap, and
//! an input after which more bytes are live than before is run a second time. Growth on that second
//! run is a leak (a lazily built cache or setting grows once, on the first run only), and fails the
//! target like a crash, so that libFuzzer saves the input.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Bytes handed out by the allocator and not yet returned.
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, counting.
pub struct Counting;

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is only arithmetic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator with this layout (the caller's contract).
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as ours, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        }
        p
    }
}

fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// Runs `one_input` on `data`, and panics if the input leaks heap memory.
pub fn run(data: &[u8], one_input: fn(&[u8])) {
    let before = live_bytes();
    one_input(data);
    if live_bytes() == before {
        return;
    }
    let before = live_bytes();
    one_input(data);
    let grown = live_bytes() - before;
    assert!(
        grown == 0,
        "leak: {grown} more heap bytes live after running this input again"
    );
}
