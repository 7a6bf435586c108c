//! Pools of queues and events. libomptarget holds them by raw pointer, so each lives at a fixed address
//! for the life of the process and is recycled rather than freed; a pointer that the pool did not hand
//! out, or that was already given back, is recognised and refused instead of being dereferenced.

use std::sync::Mutex;

use crate::plugin::address_map::AddressSet;
use crate::plugin::error::{Error, Result};
use crate::plugin::sync::lock;

/// A pool of `T`s with stable addresses.
pub struct Pool<T: 'static> {
    what: &'static str,
    inner: Mutex<Inner<T>>,
}

struct Inner<T: 'static> {
    free: Vec<&'static T>,
    in_use: AddressSet,
}

impl<T: Send + Sync + 'static> Pool<T> {
    /// An empty pool whose errors call its items `what`.
    pub fn new(what: &'static str) -> Pool<T> {
        Pool {
            what,
            inner: Mutex::new(Inner {
                free: Vec::new(),
                in_use: AddressSet::default(),
            }),
        }
    }

    /// Takes a free item, or makes one with `make`.
    pub fn acquire(&self, make: impl FnOnce() -> Result<T>) -> Result<&'static T> {
        let mut inner = lock(&self.inner);
        let item = match inner.free.pop() {
            Some(item) => item,
            None => Box::leak(Box::new(make()?)),
        };
        inner.in_use.insert(item as *const T as usize);
        Ok(item)
    }

    /// Adds `count` fresh items up front, as libomptarget's `LIBOMPTARGET_NUM_INITIAL_*` ask.
    pub fn prefill(&self, count: usize, mut make: impl FnMut() -> Result<T>) -> Result<()> {
        let mut inner = lock(&self.inner);
        for _ in 0..count {
            let item: &'static T = Box::leak(Box::new(make()?));
            inner.free.push(item);
        }
        Ok(())
    }

    /// The item at `addr`, if this pool handed it out and it was not given back.
    pub fn get(&self, addr: usize) -> Result<&'static T> {
        let inner = lock(&self.inner);
        if !inner.in_use.contains(&addr) {
            return Err(Error::UnknownHandle { what: self.what, addr });
        }
        // SAFETY: `addr` is in `in_use`, so it is the address of a leaked, never freed `T`.
        Ok(unsafe { &*(addr as *const T) })
    }

    /// Gives the item at `addr` back for reuse.
    pub fn release(&self, addr: usize) -> Result<()> {
        let mut inner = lock(&self.inner);
        if !inner.in_use.remove(&addr) {
            return Err(Error::UnknownHandle { what: self.what, addr });
        }
        // SAFETY: `addr` was in `in_use`: a leaked, never freed `T`.
        inner.free.push(unsafe { &*(addr as *const T) });
        Ok(())
    }

    /// Items handed out and not given back.
    pub fn in_use(&self) -> Vec<&'static T> {
        let inner = lock(&self.inner);
        // SAFETY: every address in `in_use` is a leaked, never freed `T`.
        inner.in_use.iter().map(|&a| unsafe { &*(a as *const T) }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycles_and_refuses_foreign_or_released_handles() {
        let pool: Pool<u64> = Pool::new("event");
        pool.prefill(1, || Ok(7)).unwrap();
        let a = pool.acquire(|| Ok(1)).unwrap();
        assert_eq!(*a, 7, "the prefilled item comes first");
        let b = pool.acquire(|| Ok(9)).unwrap();
        assert_eq!(*b, 9);
        let addr = a as *const u64 as usize;
        assert!(pool.get(addr).is_ok());
        pool.release(addr).unwrap();
        let err = pool.release(addr).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("event {addr:#x} was not created by this device or was already released")
        );
        assert!(pool.get(0x1234).is_err());
        let c = pool.acquire(|| Ok(0)).unwrap();
        assert_eq!(c as *const u64 as usize, addr, "a released item is reused");
        assert_eq!(pool.in_use().len(), 2);
    }
}
