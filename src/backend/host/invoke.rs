//! Calls a host kernel, `void kernel(void *a0, ..., void *aN-1)`, with any number of pointer arguments.
//!
//! The compiler emits outlined target regions with one pointer-sized parameter per mapped argument, so
//! the arity is known only at run time. The stock plugin builds a libffi call frame per launch; here a
//! small System V trampoline moves the first six arguments into registers and the rest onto the stack,
//! and gives the stack back on return, so a launch costs a few instructions and no allocation.

use std::ffi::c_void;

/// Largest argument count accepted, far above what any compiler emits; guards the stack frame size.
pub const MAX_KERNEL_ARGS: usize = 1 << 14;

/// Calls `function` with `args` as its pointer-sized arguments.
///
/// # Safety
/// `function` must be the address of a function taking `args.len()` pointer-sized (integer-class)
/// arguments and returning nothing, following the System V x86-64 calling convention, and `args.len()`
/// must not exceed [`MAX_KERNEL_ARGS`].
pub unsafe fn call_with_pointer_args(function: *const c_void, args: &[*mut c_void]) {
    debug_assert!(args.len() <= MAX_KERNEL_ARGS);
    // SAFETY: the caller guarantees the signature; the trampoline reads exactly `args.len()` slots.
    unsafe { trampoline(function, args.as_ptr(), args.len()) }
}

/// rdi = function, rsi = argument array, rdx = argument count.
#[unsafe(naked)]
unsafe extern "sysv64" fn trampoline(function: *const c_void, args: *const *mut c_void, count: usize) {
    core::arch::naked_asm!(
        "push rbp",
        "mov rbp, rsp",
        // rsp is now 16-byte aligned; keep it so at the call by reserving a multiple of 16 bytes.
        "mov rax, rdi",
        "mov r10, rsi",
        "mov r11, rdx",
        "cmp r11, 6",
        "jbe 3f",
        // Stack arguments 6..count go to [rsp], [rsp+8], ... in order. They are written from the
        // last down, so the new stack is touched page by page from the top and a stack too small
        // faults on its guard page instead of writing past it.
        "lea rcx, [r11 - 6]",
        "lea rdx, [rcx*8 + 15]",
        "and rdx, -16",
        "sub rsp, rdx",
        "2:",
        "dec rcx",
        "mov r9, [r10 + rcx*8 + 48]",
        "mov [rsp + rcx*8], r9",
        "test rcx, rcx",
        "jnz 2b",
        "3:",
        // Register arguments, only as many as there are, so the array is never read past its end.
        "test r11, r11",
        "jz 4f",
        "mov rdi, [r10]",
        "cmp r11, 2",
        "jb 4f",
        "mov rsi, [r10 + 8]",
        "cmp r11, 3",
        "jb 4f",
        "mov rdx, [r10 + 16]",
        "cmp r11, 4",
        "jb 4f",
        "mov rcx, [r10 + 24]",
        "cmp r11, 5",
        "jb 4f",
        "mov r8, [r10 + 32]",
        "cmp r11, 6",
        "jb 4f",
        "mov r9, [r10 + 40]",
        "4:",
        "call rax",
        "mov rsp, rbp",
        "pop rbp",
        "ret",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static SEEN: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn zero() {
        SEEN.store(1000, Ordering::SeqCst);
    }
    extern "C" fn one(a: usize) {
        SEEN.store(a, Ordering::SeqCst);
    }
    extern "C" fn six(a: usize, b: usize, c: usize, d: usize, e: usize, f: usize) {
        SEEN.store(
            a + 10 * b + 100 * c + 1000 * d + 10_000 * e + 100_000 * f,
            Ordering::SeqCst,
        );
    }
    #[allow(clippy::too_many_arguments)]
    extern "C" fn nine(a: usize, b: usize, c: usize, d: usize, e: usize, f: usize, g: usize, h: usize, i: usize) {
        // Stack arguments must arrive in order, and the stack must be 16-byte aligned for SSE code.
        let local = 0u128;
        let aligned = (&local as *const u128 as usize).is_multiple_of(16);
        SEEN.store(
            a + 2 * b
                + 3 * c
                + 4 * d
                + 5 * e
                + 6 * f
                + 700 * g
                + 8000 * h
                + 90_000 * i
                + usize::from(aligned) * 1_000_000,
            Ordering::SeqCst,
        );
    }

    fn args(values: &[usize]) -> Vec<*mut c_void> {
        values.iter().map(|&v| v as *mut c_void).collect()
    }

    #[test]
    fn passes_register_and_stack_arguments_in_order() {
        // SAFETY: each function's signature matches the number of arguments passed.
        unsafe {
            call_with_pointer_args(zero as *const c_void, &[]);
            assert_eq!(SEEN.load(Ordering::SeqCst), 1000);
            call_with_pointer_args(one as *const c_void, &args(&[42]));
            assert_eq!(SEEN.load(Ordering::SeqCst), 42);
            call_with_pointer_args(six as *const c_void, &args(&[1, 2, 3, 4, 5, 6]));
            assert_eq!(SEEN.load(Ordering::SeqCst), 654_321);
            call_with_pointer_args(nine as *const c_void, &args(&[1, 1, 1, 1, 1, 1, 1, 1, 1]));
            assert_eq!(SEEN.load(Ordering::SeqCst), 1_000_000 + 21 + 700 + 8000 + 90_000);
        }
    }
}
