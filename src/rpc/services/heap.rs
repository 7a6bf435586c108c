//! What device code gets from `malloc`: one heap per device, shared by the servers of all its images.
//!
//! On a GPU the memory must be reserved *before* kernels that may call the host run: a driver
//! allocation or free while a kernel runs can deadlock (NVIDIA "cannot reliably update the MMU while a
//! kernel is running", llvm-project PR #124277), and device `malloc` is served exactly then. So the
//! heap reserves device memory in chunks when nothing that may call the host is in flight (when the
//! first image with host services is loaded, and before a launch once a `malloc` found no room), and
//! hands out blocks of it with [`offset_allocator`]: O(1) allocation and free, bookkeeping entirely on
//! the host (device memory is not host-writable), and a free makes the block reusable at once. The
//! crate was chosen over size classes of our own because its bins (a floating-point size split with at
//! most 1/8 rounding) keep external fragmentation bounded for mixed sizes without a tuning of ours, and
//! it is a small, dependency-light port of a well-known allocator; a free and malloc pair costs a
//! fraction of one host round trip (`docs/measurements.md`, "The device heap's allocator"). Blocks
//! are aligned to 16 bytes, as C's `malloc` promises.
//!
//! On the host device nothing can deadlock, so `malloc` is served by the backend's allocator directly
//! and has no limit but the host's.
//!
//! Either way the heap knows every live block, so a `free` of anything else (freed already, never
//! returned, the middle of a block) is refused with an error line instead of being obeyed.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use offset_allocator::{Allocation, Allocator};

use crate::rpc::protocol::ffi;

use crate::rpc::protocol::memory::DeviceMemory;
use crate::util::address_map::AddressMap;
use crate::util::error::Result;
use crate::util::log;
use crate::util::sync::lock;

/// Alignment and allocation unit of the reserved heap, in bytes.
const UNIT: usize = 16;

/// The setting that sizes each reservation, for messages.
pub const HEAP_SETTING: &str = "OMPRPC_DEVICE_HEAP_SIZE";

/// One reservation of device memory and the allocator of its units.
struct Chunk {
    base: usize,
    bytes: usize,
    allocator: Allocator,
}

/// Where a live block came from.
enum Block {
    /// From the backend's allocator directly (the host device).
    Direct,
    /// From reserved chunk `chunk`.
    Reserved { chunk: usize, allocation: Allocation },
}

struct State {
    chunks: Vec<Chunk>,
    blocks: AddressMap<Block>,
}

impl State {
    /// Bytes reserved so far.
    fn reserved(&self) -> usize {
        self.chunks.iter().map(|c| c.bytes).sum()
    }
}

/// The heap of one device's code.
pub struct DeviceHeap {
    device: usize,
    memory: Arc<dyn DeviceMemory>,
    /// Bytes of each reservation; `None` serves every block from `memory` directly.
    chunk_bytes: Option<usize>,
    state: Mutex<State>,
    /// A `malloc` found no room since the last reservation: reserve more before the next launch.
    exhausted: AtomicBool,
}

/// What became of a device's `free`.
#[derive(Debug, PartialEq, Eq)]
pub enum Freed {
    /// The block is free and reusable.
    Done,
    /// Not a live block of this heap; nothing was done.
    NotABlock,
}

impl DeviceHeap {
    /// A heap of `device` over `memory`: reserved in chunks of `chunk_bytes` (rounded up to the unit),
    /// or served directly by `memory` when `None`. The first chunk is reserved now; the caller makes
    /// sure no kernel that may call the host is in flight on the device.
    pub fn new(device: usize, memory: Arc<dyn DeviceMemory>, chunk_bytes: Option<usize>) -> Result<Arc<DeviceHeap>> {
        let heap = DeviceHeap {
            device,
            memory,
            chunk_bytes: chunk_bytes.map(|b| b.clamp(UNIT, u32::MAX as usize * UNIT).div_ceil(UNIT) * UNIT),
            state: Mutex::new(State {
                chunks: Vec::new(),
                blocks: AddressMap::default(),
            }),
            exhausted: AtomicBool::new(false),
        };
        if heap.chunk_bytes.is_some() {
            heap.reserve(&mut lock(&heap.state))?;
        }
        Ok(Arc::new(heap))
    }

    /// Bytes reserved so far (0 when served directly).
    #[cfg(test)]
    pub fn reserved_bytes(&self) -> usize {
        lock(&self.state).reserved()
    }

    fn reserve(&self, state: &mut State) -> Result<()> {
        let Some(bytes) = self.chunk_bytes else { return Ok(()) };
        let base = self.memory.alloc(bytes)? as usize;
        state.chunks.push(Chunk {
            base,
            bytes,
            allocator: Allocator::new((bytes / UNIT) as u32),
        });
        self.exhausted.store(false, Ordering::Release);
        Ok(())
    }

    /// Whether a `malloc` found no room since the last reservation (cheap: checked before launches).
    pub fn needs_more(&self) -> bool {
        self.exhausted.load(Ordering::Acquire)
    }

    /// Reserves another chunk if a `malloc` found no room since the last one. Only to be called while
    /// no kernel that may call the host is in flight on the device (before a launch).
    pub fn grow_if_exhausted(&self) -> Result<()> {
        let mut state = lock(&self.state);
        if !self.needs_more() {
            return Ok(());
        }
        self.reserve(&mut state)?;
        log::device_info(
            self.device,
            format_args!(
                "device malloc ran out of room; reserved another {} bytes ({} in all)",
                self.chunk_bytes.unwrap_or(0),
                state.reserved()
            ),
        );
        Ok(())
    }

    /// A block of at least `size` bytes for the device's `malloc`, or null (and one error line) when
    /// there is no room. Makes no driver call when the heap is reserved.
    pub fn malloc(&self, size: usize) -> *mut c_void {
        let size = size.max(1);
        if self.chunk_bytes.is_none() {
            // The backend's allocator outside the lock, as `free` does, so that threads serving
            // several images' calls at once do not queue behind one another's allocations.
            return match self.memory.alloc(size) {
                Ok(ptr) => {
                    lock(&self.state).blocks.insert(ptr as usize, Block::Direct);
                    ptr
                }
                // As C's malloc on the host: NULL, said only under LIBOMPTARGET_INFO.
                Err(e) => {
                    log::device_info(self.device, format_args!("device malloc({size}) failed: {e}"));
                    std::ptr::null_mut()
                }
            };
        }
        let mut state = lock(&self.state);
        let units = u32::try_from(size.div_ceil(UNIT)).ok();
        let found = units.and_then(|units| {
            state
                .chunks
                .iter_mut()
                .enumerate()
                .find_map(|(index, chunk)| chunk.allocator.allocate(units).map(|a| (index, chunk.base, a)))
        });
        match found {
            Some((chunk, base, allocation)) => {
                let ptr = base + allocation.offset as usize * UNIT;
                state.blocks.insert(ptr, Block::Reserved { chunk, allocation });
                ptr as *mut c_void
            }
            None => {
                self.exhausted.store(true, Ordering::Release);
                let reserved = state.reserved();
                log::error(format_args!(
                    "device {}: device malloc({size}) returned NULL: the {reserved} bytes reserved for device \
                     code's malloc have no room for it; raise {HEAP_SETTING} (bytes per reservation; more \
                     is reserved before the next kernel)",
                    self.device
                ));
                std::ptr::null_mut()
            }
        }
    }

    /// Frees a block from [`DeviceHeap::malloc`]; anything else is refused.
    pub fn free(&self, ptr: usize) -> Result<Freed> {
        let mut state = lock(&self.state);
        match state.blocks.remove(&ptr) {
            None => Ok(Freed::NotABlock),
            Some(Block::Direct) => {
                drop(state);
                // SAFETY: `ptr` was a live block from `memory.alloc`, now forgotten, so freed once.
                unsafe { self.memory.free(ptr as *mut c_void) }?;
                Ok(Freed::Done)
            }
            Some(Block::Reserved { chunk, allocation }) => {
                state.chunks[chunk].allocator.free(allocation);
                Ok(Freed::Done)
            }
        }
    }

    /// Gives every reservation back to the device, at teardown, when no image of the device is left.
    pub fn release(&self) -> Result<()> {
        let chunks = std::mem::take(&mut lock(&self.state).chunks);
        let mut first_error = None;
        for chunk in chunks {
            // SAFETY: the chunk came from `memory.alloc` and, with the device's images gone, no code
            // uses its blocks any more.
            if let Err(e) = unsafe { self.memory.free(chunk.base as *mut c_void) } {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// What the MALLOC and FREE callbacks need; boxed so that libc can hold a pointer to it.
pub(crate) struct HeapService {
    /// The device, for messages.
    pub(crate) device: usize,
    /// Its heap.
    pub(crate) heap: Arc<DeviceHeap>,
}

/// Serves MALLOC: the client sends the size, and receives the pointer (null when there is no room).
pub(crate) unsafe extern "C" fn serve_malloc(port: ffi::Port, data: *mut c_void) {
    unsafe extern "C" fn fill(buffer: *mut ffi::Buffer, data: *mut c_void) {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: `data` is the server's `HeapService`; `buffer` is a live packet of this port.
            let (state, buffer) = unsafe { (&*data.cast::<HeapService>(), &mut *buffer) };
            buffer.data[0] = state.heap.malloc(buffer.data[0] as usize) as u64;
            crate::rpc::calls::moved_to_host(|| 8);
            crate::rpc::calls::moved_to_device(|| 8);
        }));
    }
    // SAFETY: `port` is the port libc is serving; `fill` matches the callback type and `data` is ours.
    unsafe { ffi::rpc_recv_and_send(port, fill, data) };
}

/// Serves FREE: the client sends the pointer; no reply.
pub(crate) unsafe extern "C" fn serve_free(port: ffi::Port, data: *mut c_void) {
    unsafe extern "C" fn take(buffer: *mut ffi::Buffer, data: *mut c_void) {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: as in `serve_malloc`.
            let (state, buffer) = unsafe { (&*data.cast::<HeapService>(), &*buffer) };
            let ptr = buffer.data[0] as usize;
            crate::rpc::calls::moved_to_host(|| 8);
            if ptr == 0 {
                return;
            }
            match state.heap.free(ptr) {
                Ok(Freed::Done) => {}
                Ok(Freed::NotABlock) => log::error(format_args!(
                    "device {}: free({ptr:#x}) of memory that is not a live block of the device's malloc \
                     (freed already, or never returned by it); ignored",
                    state.device
                )),
                Err(e) => log::error(format_args!(
                    "device {}: free({ptr:#x}) from the device: {e}",
                    state.device
                )),
            }
        }));
    }
    // SAFETY: as in `serve_malloc`.
    unsafe { ffi::rpc_recv(port, take, data) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::serving::server::tests::CountingMemory;

    #[test]
    fn reserved_blocks_are_aligned_reused_at_once_and_refused_when_unknown() {
        let memory = Arc::new(CountingMemory::default());
        let heap = DeviceHeap::new(0, memory.clone(), Some(4096)).unwrap();
        assert_eq!(heap.reserved_bytes(), 4096);
        let a = heap.malloc(100) as usize;
        let b = heap.malloc(1) as usize;
        assert!(a != 0 && b != 0 && a != b);
        assert_eq!((a % UNIT, b % UNIT), (0, 0), "16-byte aligned");
        assert_eq!(heap.free(a).unwrap(), Freed::Done);
        assert_eq!(heap.free(a).unwrap(), Freed::NotABlock, "a second free");
        assert_eq!(heap.free(b + 16).unwrap(), Freed::NotABlock, "the middle of a block");
        // Everything but `b` is free again: a block of nearly the whole chunk fits.
        let big = heap.malloc(3000);
        assert!(!big.is_null(), "freed memory is reusable at once");
        assert!(heap.malloc(4096).is_null(), "no room: NULL");
        heap.grow_if_exhausted().unwrap();
        assert_eq!(heap.reserved_bytes(), 8192, "reserved more after running out");
        assert!(!heap.malloc(2048).is_null());
        assert_eq!(memory.live(), 2, "two reservations and no block of the driver's own");
        heap.release().unwrap();
        assert_eq!(memory.live(), 0);
    }

    #[test]
    fn a_direct_heap_serves_from_the_backend() {
        let memory = Arc::new(CountingMemory::default());
        let heap = DeviceHeap::new(0, memory.clone(), None).unwrap();
        let a = heap.malloc(1 << 20) as usize;
        assert_eq!(memory.live(), 1);
        assert_eq!(heap.free(a).unwrap(), Freed::Done);
        assert_eq!(heap.free(a).unwrap(), Freed::NotABlock);
        assert_eq!(memory.live(), 0);
    }
}
