//! Test builds only: the global allocator counts, per thread, the allocations made while a count is
//! open, so that a test can show that a path (a kernel launch) allocates nothing on the host.
//! Simulated drivers pause the count while they run: their own bookkeeping is not the plugin's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static PAUSED: Cell<u32> = const { Cell::new(0) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn note_allocation() {
    // `try_with`: the thread's locals may already be gone while it exits.
    let counting = COUNTING.try_with(Cell::get).unwrap_or(false) && PAUSED.try_with(Cell::get).unwrap_or(1) == 0;
    if counting {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
    }
}

// SAFETY: every call is passed to the system allocator unchanged; counting touches only
// const-initialised thread locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING_ALLOCATOR: Counting = Counting;

/// The number of allocations this thread makes while `f` runs, not counting paused stretches.
pub fn allocations_during<R>(f: impl FnOnce() -> R) -> (R, u64) {
    COUNT.with(|c| c.set(0));
    COUNTING.with(|c| c.set(true));
    let result = f();
    COUNTING.with(|c| c.set(false));
    (result, COUNT.with(Cell::get))
}

/// Held by a simulated driver while it runs, so that its allocations are not counted.
pub struct Paused(());

/// Pauses this thread's count until the guard drops.
pub fn pause() -> Paused {
    PAUSED.with(|p| p.set(p.get() + 1));
    Paused(())
}

impl Drop for Paused {
    fn drop(&mut self) {
        PAUSED.with(|p| p.set(p.get() - 1));
    }
}
