//! What a host call does on the host for the plugin's own opcodes: device `malloc` and `free` from a
//! heap, `printf` through the host's C library, the C streams device code reaches, `assert`, LLVM libc's
//! `rpc_host_call`, and `strtod` converted by the host's C library.

pub mod assertion;
pub mod exit;
pub mod getenv;
pub mod heap;
pub mod host_call;
pub mod printf;
pub mod scan;
pub mod streams;
pub mod strtod;
