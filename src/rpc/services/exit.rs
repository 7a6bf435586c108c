//! A device's `exit`: the process ends, with what it wrote flushed and the reports at exit made,
//! without waiting for the kernel that will never return. Beside the C streams' wraps
//! ([`super::streams`]): the link points libc's server's `exit` here (see `build.rs`).

use std::panic::catch_unwind;

use crate::util::log;

// In the shared object, the link wraps `exit` (see build.rs): the only caller of `exit` there is
// libc's RPC server serving a device's EXIT, and it lands here. The symbol is hidden, so it is not
// exported.
core::arch::global_asm!(
    ".globl __wrap_exit",
    ".hidden __wrap_exit",
    ".type __wrap_exit, @function",
    "__wrap_exit:",
    "jmp {device_exit}",
    device_exit = sym device_exit,
);

/// A device called `exit(status)`. The kernel that called it never returns, so normal teardown
/// (libomptarget's destructors, libomp's shutdown, our deinit) could wait for it forever: flush every
/// output stream, as `exit` would, and end the process with `quick_exit`, as upstream LLVM does.
extern "C" fn device_exit(status: libc::c_int) -> ! {
    extern "C" {
        /// C11 `quick_exit` (glibc), which the libc crate does not declare.
        fn quick_exit(status: libc::c_int) -> !;
    }
    log::info(format_args!("a device called exit({status}); ending the process"));
    let _ = catch_unwind(crate::rpc::observing::report_at_exit);
    // SAFETY: fflush(NULL) flushes every output stream; quick_exit ends the process with `status`.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        quick_exit(status)
    }
}
