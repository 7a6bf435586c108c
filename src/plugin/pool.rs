//! Pools of queues and events. libomptarget holds them by raw handle, so each lives at a fixed address
//! for the life of the process and is recycled rather than freed; a handle that the pool did not hand
//! out, or that was already given back, is recognised and refused instead of being dereferenced.
//!
//! libomptarget creates, records, waits for and destroys an event for every new mapping, so checking
//! a handle must be cheap: items live in chunks whose address ranges are known, a handle is checked by
//! range and alignment against those few chunks, then by the slot's `live` flag — no lock, no hash.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::plugin::error::{Error, Result};
use crate::plugin::sync::lock;

/// Items per chunk.
const CHUNK: usize = 64;
/// Most chunks a pool grows to (16,384 items), far above what a program keeps at once.
const MAX_CHUNKS: usize = 256;

struct Slot<T> {
    /// Handed out and not given back.
    live: AtomicBool,
    /// Made on first use, kept for reuse.
    value: OnceLock<T>,
}

/// A pool of `T`s with stable addresses, handed out as handles (slot addresses).
pub struct Pool<T: 'static> {
    what: &'static str,
    chunks: Box<[AtomicPtr<Slot<T>>]>,
    chunk_count: AtomicUsize,
    free: Mutex<Vec<&'static Slot<T>>>,
}

impl<T: Send + Sync + 'static> Pool<T> {
    /// An empty pool whose errors call its items `what`.
    pub fn new(what: &'static str) -> Pool<T> {
        Pool {
            what,
            chunks: (0..MAX_CHUNKS).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect(),
            chunk_count: AtomicUsize::new(0),
            free: Mutex::new(Vec::new()),
        }
    }

    /// Adds a chunk of empty slots to `free`. Called with the `free` lock held, which serialises growth.
    fn grow(&self, free: &mut Vec<&'static Slot<T>>) -> Result<()> {
        let count = self.chunk_count.load(Ordering::Acquire);
        if count == MAX_CHUNKS {
            return Err(Error::InvalidArg(format!(
                "more than {} {}s at once; release some",
                MAX_CHUNKS * CHUNK,
                self.what
            )));
        }
        let chunk: &'static [Slot<T>] = Box::leak(
            (0..CHUNK)
                .map(|_| Slot {
                    live: AtomicBool::new(false),
                    value: OnceLock::new(),
                })
                .collect::<Box<[_]>>(),
        );
        self.chunks[count].store(chunk.as_ptr().cast_mut(), Ordering::Release);
        self.chunk_count.store(count + 1, Ordering::Release);
        free.extend(chunk.iter().rev());
        Ok(())
    }

    fn take_free(&self, free: &mut Vec<&'static Slot<T>>) -> Result<&'static Slot<T>> {
        if free.is_empty() {
            self.grow(free)?;
        }
        Ok(free.pop().expect("grow added slots"))
    }

    /// Takes a free item (making its value with `make` on first use); returns its handle and value.
    pub fn acquire(&self, make: impl FnOnce() -> Result<T>) -> Result<(usize, &'static T)> {
        let mut free = lock(&self.free);
        let slot = self.take_free(&mut free)?;
        let value = match slot.value.get() {
            Some(value) => value,
            None => match make() {
                Ok(value) => slot.value.get_or_init(|| value),
                Err(e) => {
                    free.push(slot);
                    return Err(e);
                }
            },
        };
        slot.live.store(true, Ordering::Release);
        Ok((slot as *const Slot<T> as usize, value))
    }

    /// Makes `count` items up front, as libomptarget's `LIBOMPTARGET_NUM_INITIAL_*` ask.
    pub fn prefill(&self, count: usize, mut make: impl FnMut() -> Result<T>) -> Result<()> {
        let mut free = lock(&self.free);
        let mut made = Vec::with_capacity(count);
        for _ in 0..count {
            let slot = self.take_free(&mut free)?;
            if slot.value.get().is_none() {
                match make() {
                    Ok(value) => {
                        let _ = slot.value.set(value);
                    }
                    Err(e) => {
                        free.push(slot);
                        free.extend(made);
                        return Err(e);
                    }
                }
            }
            made.push(slot);
        }
        // Hand the prefilled items out first.
        free.extend(made.into_iter().rev());
        Ok(())
    }

    /// The slot at `handle`, if it is one of this pool's (whether live or not).
    fn slot(&self, handle: usize) -> Option<&'static Slot<T>> {
        let size = size_of::<Slot<T>>();
        let count = self.chunk_count.load(Ordering::Acquire);
        self.chunks[..count].iter().find_map(|chunk| {
            let base = chunk.load(Ordering::Acquire) as usize;
            let offset = handle.checked_sub(base)?;
            if offset < CHUNK * size && offset % size == 0 {
                // SAFETY: `handle` is the address of slot `offset / size` of a leaked, never freed
                // chunk of this pool.
                Some(unsafe { &*(handle as *const Slot<T>) })
            } else {
                None
            }
        })
    }

    /// The item behind `handle`, if this pool handed it out and it was not given back.
    pub fn get(&self, handle: usize) -> Result<&'static T> {
        self.slot(handle)
            .filter(|slot| slot.live.load(Ordering::Acquire))
            .and_then(|slot| slot.value.get())
            .ok_or(Error::UnknownHandle {
                what: self.what,
                addr: handle,
            })
    }

    /// Gives the item behind `handle` back for reuse.
    pub fn release(&self, handle: usize) -> Result<()> {
        let slot = self
            .slot(handle)
            .filter(|slot| {
                slot.live
                    .compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            })
            .ok_or(Error::UnknownHandle {
                what: self.what,
                addr: handle,
            })?;
        lock(&self.free).push(slot);
        Ok(())
    }

    /// Items handed out and not given back.
    pub fn in_use(&self) -> Vec<&'static T> {
        let count = self.chunk_count.load(Ordering::Acquire);
        let mut items = Vec::new();
        for chunk in &self.chunks[..count] {
            // SAFETY: every published chunk is a leaked array of CHUNK slots.
            let slots = unsafe { std::slice::from_raw_parts(chunk.load(Ordering::Acquire), CHUNK) };
            items.extend(
                slots
                    .iter()
                    .filter(|s| s.live.load(Ordering::Acquire))
                    .filter_map(|s| s.value.get()),
            );
        }
        items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycles_and_refuses_foreign_or_released_handles() {
        let pool: Pool<u64> = Pool::new("event");
        pool.prefill(1, || Ok(7)).unwrap();
        let (a, value) = pool.acquire(|| Ok(1)).unwrap();
        assert_eq!(*value, 7, "the prefilled item comes first");
        let (b, value) = pool.acquire(|| Ok(9)).unwrap();
        assert_eq!(*value, 9);
        assert_ne!(a, b);
        assert_eq!(*pool.get(a).unwrap(), 7);
        pool.release(a).unwrap();
        let err = pool.release(a).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("event {a:#x} was not created by this device or was already released")
        );
        assert!(pool.get(a).is_err(), "a released handle is refused");
        assert!(pool.get(0x1234).is_err());
        assert!(
            pool.get(b + 1).is_err(),
            "a misaligned address inside the chunk is refused"
        );
        let mut on_stack = 0u64;
        assert!(pool.get(&mut on_stack as *mut u64 as usize).is_err());
        let (c, value) = pool.acquire(|| Ok(0)).unwrap();
        assert_eq!(c, a, "a released item is reused");
        assert_eq!(*value, 7, "with its value");
        assert_eq!(pool.in_use().len(), 2);
    }

    #[test]
    fn grows_past_one_chunk_and_fails_cleanly_when_making_fails() {
        let pool: Pool<usize> = Pool::new("queue");
        let handles: Vec<usize> = (0..3 * CHUNK).map(|i| pool.acquire(|| Ok(i)).unwrap().0).collect();
        for (i, &h) in handles.iter().enumerate() {
            assert_eq!(*pool.get(h).unwrap(), i);
        }
        assert_eq!(pool.in_use().len(), 3 * CHUNK);
        assert!(pool.acquire(|| Err(Error::NullArg("x"))).is_err());
        assert_eq!(pool.in_use().len(), 3 * CHUNK);
    }
}
