//! Device memory for the simulated GPUs, which the host cannot touch: on a discrete GPU a device address
//! names nothing the host's processor can read, so a plugin that dereferences one crashes there and
//! must crash in the tests too. Every block is a mapping of its own that stays `PROT_NONE` except while
//! simulated device code runs — a kernel body, a queued copy, or a test reading back what a kernel
//! left, as a debugger would ([`device_access`]). A simulated kernel that waits for the host (a host
//! call) gives its access back while it waits ([`host_side`]), so that the serving thread, which runs
//! then, meets the protection.
//!
//! The protection is per process, not per thread: while any device code runs, every thread can reach
//! every block. What it shows is the host touching device memory outside the device's own work.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The live blocks, and how many threads run device code now (while any does, blocks are readable).
struct Window {
    blocks: BTreeMap<usize, usize>,
    open: usize,
}

static WINDOW: Mutex<Window> = Mutex::new(Window {
    blocks: BTreeMap::new(),
    open: 0,
});

std::thread_local! {
    /// How deeply this thread is inside device code (copies and kernel bodies nest).
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

fn window() -> std::sync::MutexGuard<'static, Window> {
    WINDOW.lock().unwrap_or_else(|e| e.into_inner())
}

fn protection(open: bool) -> libc::c_int {
    if open {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_NONE
    }
}

fn set_all(window: &Window, open: bool) {
    for (&start, &bytes) in &window.blocks {
        // SAFETY: each block is a whole mapping of `bytes` (page-rounded) made by `map` and not yet
        // unmapped; changing its protection touches no other memory.
        let changed = unsafe { libc::mprotect(start as *mut libc::c_void, bytes, protection(open)) };
        assert_eq!(changed, 0, "mprotect of simulated device memory");
    }
}

fn page_rounded(bytes: usize) -> usize {
    bytes.max(1).next_multiple_of(4096)
}

/// A zeroed block of device memory of at least `bytes`, or `None` when the host has no room for it.
pub fn map(bytes: usize) -> Option<usize> {
    let mut window = window();
    let length = page_rounded(bytes);
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing overlaps nothing.
    let start = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            length,
            protection(window.open > 0),
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if start == libc::MAP_FAILED {
        return None;
    }
    window.blocks.insert(start as usize, length);
    Some(start as usize)
}

/// Gives back a block from [`map`]; whether it was one.
pub fn unmap(start: usize) -> bool {
    let Some(length) = window().blocks.remove(&start) else {
        return false;
    };
    // SAFETY: the block was a whole mapping of `length` bytes, now out of the table, so nothing maps
    // it again before the kernel has it back.
    unsafe { libc::munmap(start as *mut libc::c_void, length) };
    true
}

fn enter() {
    if DEPTH.get() == 0 {
        let mut window = window();
        if window.open == 0 {
            set_all(&window, true);
        }
        window.open += 1;
    }
    DEPTH.set(DEPTH.get() + 1);
}

fn leave() {
    DEPTH.set(DEPTH.get() - 1);
    if DEPTH.get() == 0 {
        let mut window = window();
        window.open -= 1;
        if window.open == 0 {
            set_all(&window, false);
        }
    }
}

/// Leaves device code when dropped, even when the device code panicked.
struct Inside;

impl Drop for Inside {
    fn drop(&mut self) {
        leave();
    }
}

/// Runs `f` as device code: device memory is readable and writable while it runs.
pub fn device_access<R>(f: impl FnOnce() -> R) -> R {
    enter();
    let _inside = Inside;
    f()
}

/// Runs `f`, a wait of device code for the host, with this thread's access to device memory given
/// back (on a thread outside device code it just runs `f`).
pub fn host_side<R>(f: impl FnOnce() -> R) -> R {
    let depth = DEPTH.get();
    if depth == 0 {
        return f();
    }
    DEPTH.set(1);
    leave();
    /// Takes the access back when dropped, at the depth it had.
    struct Back(usize);
    impl Drop for Back {
        fn drop(&mut self) {
            enter();
            DEPTH.set(self.0);
        }
    }
    let _back = Back(depth);
    f()
}

/// Whether `address` lies in a live block.
pub fn is_device_memory(address: usize) -> bool {
    let window = window();
    window
        .blocks
        .range(..=address)
        .next_back()
        .is_some_and(|(&start, &length)| address < start + length)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether reading `address` faults, found in a child process (the fault kills it).
    fn read_faults(address: usize) -> bool {
        // SAFETY: the child only reads and exits; it calls nothing that is unsafe after a fork.
        match unsafe { libc::fork() } {
            0 => {
                // SAFETY: the read may fault, which is what is asked; the child exits either way.
                unsafe {
                    std::ptr::read_volatile(address as *const u8);
                    libc::_exit(0)
                }
            }
            child => {
                let mut status = 0;
                // SAFETY: waits for the child just forked.
                unsafe { libc::waitpid(child, &mut status, 0) };
                libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSEGV
            }
        }
    }

    #[test]
    fn device_memory_is_reachable_only_from_device_code() {
        // The window is the process's: no simulated GPU may run device code meanwhile.
        let _alone = crate::backend::cuda::simulated::SERIAL
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let block = map(100).unwrap();
        assert!(is_device_memory(block) && is_device_memory(block + 99));
        assert!(read_faults(block), "the host cannot read device memory");
        let seen = device_access(|| {
            // SAFETY: inside device code the block is readable and writable.
            unsafe { *(block as *mut u32) = 7 };
            let inside = read_faults(block);
            let while_waiting = host_side(|| read_faults(block));
            // SAFETY: as above; access is back after the wait.
            (inside, while_waiting, unsafe { *(block as *const u32) })
        });
        assert_eq!(
            seen,
            (false, true, 7),
            "readable in device code, not while it waits for the host"
        );
        assert!(read_faults(block), "and closed again after");
        assert!(unmap(block));
        assert!(!unmap(block) && !is_device_memory(block));
    }
}
