//! What every layer uses: the error type, settings, messages, poison-tolerant locking, address-keyed
//! maps and a bounds-checked ELF reader. Nothing here knows about libomptarget, a backend or RPC, so
//! the layers above depend on it and it on none of them.

pub mod address_map;
#[cfg(test)]
pub mod alloc_count;
pub mod config;
pub mod elf;
pub mod error;
pub mod log;
pub mod sync;
