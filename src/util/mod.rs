//! What every layer uses: the error type, settings, one clock, messages, poison-tolerant locking, a
//! doorbell threads sleep on (a futex), address-keyed
//! maps, a bounds-checked ELF reader, checked reads of memory others point us at, and test-time fault
//! injection. Nothing here knows about
//! libomptarget, a backend or RPC, so the layers above depend on it and it on none of them.

pub mod address_map;
#[cfg(test)]
pub mod alloc_count;
#[cfg(feature = "rpc")]
pub mod clock;
pub mod config;
pub mod doorbell;
pub mod elf;
pub mod error;
pub mod fault;
pub mod foreign_memory;
pub mod log;
pub mod raw_box;
pub mod sync;
