//! Pools of queues and events, looked up by the backend's own handles.
//!
//! libomptarget holds queues and events by raw handle — for queues the driver's real stream, because
//! interop hands `__tgt_async_info::Queue` to users — and passes them back on every operation. So a
//! handle must be checked, and cheaply: libomptarget creates, records, waits for and destroys an event
//! per mapping. Items live in leaked, never freed slots (a stale handle can never reach freed memory);
//! a lock-free index maps each handle to its slot; a slot's `live` flag says whether it is handed out.
//! Items are recycled rather than destroyed, as LLVM's resource managers do, until [`Pool::teardown`].

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::util::error::{Error, Result};
use crate::util::raw_box::RawBox;
use crate::util::sync::lock;

/// Most items a pool holds at once, far above what a program keeps, so that a leak is reported.
const MAX_ITEMS: usize = 1 << 16;

/// Something kept in a pool, identified by the handle libomptarget holds for it.
pub trait Pooled: Send + Sync + 'static {
    /// The handle: non-zero, unique among the pool's items, fixed for the item's life.
    fn handle(&self) -> usize;
}

struct Slot<T> {
    /// Handed out and not given back.
    live: AtomicBool,
    value: T,
}

/// An item handed out by a pool: derefs to the value, and goes back with [`Pool::release`].
pub struct Item<T: 'static>(&'static Slot<T>);

impl<T> Clone for Item<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Item<T> {}

impl<T: Pooled> std::fmt::Debug for Item<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Item({:#x})", self.0.value.handle())
    }
}

impl<T> std::ops::Deref for Item<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0.value
    }
}

struct State<T: 'static> {
    /// Every slot made since the last teardown.
    all: Vec<&'static Slot<T>>,
    /// Slots not handed out (but for the one in `hot`).
    free: Vec<&'static Slot<T>>,
}

/// A pool of `T`s handed out by handle.
pub struct Pool<T: Pooled> {
    what: &'static str,
    state: Mutex<State<T>>,
    /// The last slot given back, taken first: most programs take and give back one item at a time, and
    /// this makes that two atomic swaps instead of two trips through the lock.
    hot: AtomicPtr<Slot<T>>,
    /// The slot most recently looked up by handle, checked before the index: a program passes the same
    /// queue and event back many times in a row.
    recent: AtomicPtr<Slot<T>>,
    index: HandleIndex,
}

impl<T: Pooled> Pool<T> {
    /// An empty pool whose errors call its items `what`.
    pub fn new(what: &'static str) -> Pool<T> {
        Pool {
            what,
            state: Mutex::new(State {
                all: Vec::new(),
                free: Vec::new(),
            }),
            hot: AtomicPtr::new(std::ptr::null_mut()),
            recent: AtomicPtr::new(std::ptr::null_mut()),
            index: HandleIndex::new(),
        }
    }

    /// Makes a slot for `value` and indexes it. Called with the state lock held.
    fn add(&self, state: &mut State<T>, value: T) -> Result<&'static Slot<T>> {
        let handle = value.handle();
        if handle == 0 || self.index.get(handle).is_some() {
            return Err(Error::InvalidArg(format!(
                "the backend gave a new {} the handle {handle:#x}, which is NULL or already in use",
                self.what
            )));
        }
        if state.all.len() >= MAX_ITEMS {
            return Err(Error::InvalidArg(format!(
                "more than {MAX_ITEMS} {}s at once; release some",
                self.what
            )));
        }
        let slot: &'static Slot<T> = Box::leak(Box::new(Slot {
            live: AtomicBool::new(false),
            value,
        }));
        self.index.insert(handle, slot as *const Slot<T> as usize);
        state.all.push(slot);
        Ok(slot)
    }

    /// Takes a free item, making one with `make` when none is free.
    pub fn acquire(&self, make: impl FnOnce() -> Result<T>) -> Result<Item<T>> {
        let hot = self.hot.swap(std::ptr::null_mut(), Ordering::Acquire);
        let slot = if hot.is_null() {
            let mut state = lock(&self.state);
            match state.free.pop() {
                Some(slot) => slot,
                None => {
                    let value = make()?;
                    self.add(&mut state, value)?
                }
            }
        } else {
            // SAFETY: `hot` holds only slots this pool leaked, which are never freed; swapping it out
            // made this thread its only taker.
            unsafe { &*hot }
        };
        slot.live.store(true, Ordering::Release);
        Ok(Item(slot))
    }

    /// Makes items until `count` are free, as libomptarget's `LIBOMPTARGET_NUM_INITIAL_*` ask.
    pub fn prefill(&self, count: usize, mut make: impl FnMut() -> Result<T>) -> Result<()> {
        let mut state = lock(&self.state);
        while state.free.len() < count {
            let value = make()?;
            let slot = self.add(&mut state, value)?;
            state.free.push(slot);
        }
        Ok(())
    }

    /// The slot whose handle is `handle`, if it is one of this pool's (live or not).
    fn slot(&self, handle: usize) -> Option<&'static Slot<T>> {
        let recent = self.recent.load(Ordering::Acquire);
        if !recent.is_null() {
            // SAFETY: `recent` holds only slots this pool leaked, which are never freed.
            let recent = unsafe { &*recent };
            if recent.value.handle() == handle && handle != 0 {
                return Some(recent);
            }
        }
        let addr = self.index.get(handle)?;
        // SAFETY: the index maps handles only to slots this pool leaked, which are never freed.
        let slot = unsafe { &*(addr as *const Slot<T>) };
        self.recent
            .store(slot as *const Slot<T> as *mut Slot<T>, Ordering::Release);
        Some(slot)
    }

    /// The item behind `handle`, if this pool handed it out and it was not given back.
    pub fn get(&self, handle: usize) -> Result<Item<T>> {
        match self.slot(handle) {
            Some(slot) if slot.live.load(Ordering::Acquire) => Ok(Item(slot)),
            _ => Err(Error::UnknownHandle {
                what: self.what,
                addr: handle,
            }),
        }
    }

    /// Gives an item back for reuse; an item given back twice is refused.
    pub fn release(&self, item: Item<T>) -> Result<()> {
        let slot = item.0;
        // An item is owned by one thread at a time (libomptarget's async info or event), so a plain
        // load and store find a second release without a read-modify-write on every release.
        if !slot.live.load(Ordering::Acquire) {
            return Err(Error::UnknownHandle {
                what: self.what,
                addr: slot.value.handle(),
            });
        }
        slot.live.store(false, Ordering::Release);
        let ptr = slot as *const Slot<T> as *mut Slot<T>;
        if self
            .hot
            .compare_exchange(std::ptr::null_mut(), ptr, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            lock(&self.state).free.push(slot);
        }
        Ok(())
    }

    /// Gives the item behind `handle` back; a handle not handed out, or given back already, is refused.
    pub fn release_handle(&self, handle: usize) -> Result<()> {
        self.release(self.get(handle)?)
    }

    /// Items handed out and not given back.
    pub fn in_use(&self) -> Vec<Item<T>> {
        lock(&self.state)
            .all
            .iter()
            .filter(|s| s.live.load(Ordering::Acquire))
            .map(|&s| Item(s))
            .collect()
    }

    /// Number of items made since the last teardown.
    pub fn len(&self) -> usize {
        lock(&self.state).all.len()
    }

    /// Whether the pool holds no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Destroys every item with `destroy` and empties the pool; handles given out before are refused
    /// afterwards. Items still handed out are destroyed too (their owner is gone). Returns the first
    /// failure, after trying every item.
    pub fn teardown(&self, mut destroy: impl FnMut(&T) -> Result<()>) -> Result<()> {
        let mut state = lock(&self.state);
        self.index.clear();
        self.hot.store(std::ptr::null_mut(), Ordering::Release);
        self.recent.store(std::ptr::null_mut(), Ordering::Release);
        let mut first_error = None;
        for slot in state.all.drain(..) {
            slot.live.store(false, Ordering::Release);
            if let Err(e) = destroy(&slot.value) {
                first_error.get_or_insert(e);
            }
        }
        state.free.clear();
        first_error.map_or(Ok(()), Err)
    }
}

/// An insert-only, lock-free map from handles to slot addresses: open addressing with linear probing,
/// at most half full, replaced by a table twice the size when it would be fuller. Writers are
/// serialised by the pool's lock; readers never wait. Replaced tables are kept (they are small and few)
/// so that a reader still probing one is never left with freed memory.
struct HandleIndex {
    current: AtomicPtr<Table>,
    /// Every table ever published, including `current`, owned here.
    tables: Mutex<Vec<RawBox<Table>>>,
    /// Entries in `current`; changed only by writers.
    len: AtomicUsize,
}

struct Table {
    keys: Box<[AtomicUsize]>,
    values: Box<[AtomicUsize]>,
}

impl Table {
    fn new(capacity: usize) -> Box<Table> {
        Box::new(Table {
            keys: (0..capacity).map(|_| AtomicUsize::new(0)).collect(),
            values: (0..capacity).map(|_| AtomicUsize::new(0)).collect(),
        })
    }

    fn mask(&self) -> usize {
        self.keys.len() - 1
    }

    fn start(&self, key: usize) -> usize {
        // Handles are addresses allocated a fixed stride apart, which a single multiply spreads
        // into runs that linear probing then walks; the finaliser of MurmurHash3 mixes every bit.
        let mut x = key as u64;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^= x >> 33;
        x as usize & self.mask()
    }

    fn get(&self, key: usize) -> Option<usize> {
        let mut i = self.start(key);
        loop {
            match self.keys[i].load(Ordering::Acquire) {
                0 => return None,
                k if k == key => return Some(self.values[i].load(Ordering::Relaxed)),
                _ => i = (i + 1) & self.mask(),
            }
        }
    }

    /// Stores `key` (not present, table not full); the value is written before the key is published.
    fn put(&self, key: usize, value: usize) {
        let mut i = self.start(key);
        while self.keys[i].load(Ordering::Relaxed) != 0 {
            i = (i + 1) & self.mask();
        }
        self.values[i].store(value, Ordering::Relaxed);
        self.keys[i].store(key, Ordering::Release);
    }
}

const INITIAL_CAPACITY: usize = 64;

impl HandleIndex {
    fn new() -> HandleIndex {
        let table = RawBox::new(Table::new(INITIAL_CAPACITY));
        let current = AtomicPtr::new(table.as_ptr());
        HandleIndex {
            current,
            tables: Mutex::new(vec![table]),
            len: AtomicUsize::new(0),
        }
    }

    fn table(&self) -> &Table {
        // SAFETY: `current` always points to a table owned by `tables`, which only grows (tables are
        // dropped with the index, and the index lives as long as its pool).
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    fn get(&self, key: usize) -> Option<usize> {
        if key == 0 {
            return None;
        }
        self.table().get(key)
    }

    /// Adds `key` (non-zero, absent). Only one writer at a time (the pool's lock).
    fn insert(&self, key: usize, value: usize) {
        let len = self.len.load(Ordering::Relaxed);
        let mut table = self.table();
        if (len + 1) * 2 > table.keys.len() {
            let bigger = RawBox::new(Table::new(table.keys.len() * 2));
            for (k, v) in table.keys.iter().zip(table.values.iter()) {
                let k = k.load(Ordering::Relaxed);
                if k != 0 {
                    bigger.get().put(k, v.load(Ordering::Relaxed));
                }
            }
            self.publish(bigger);
            table = self.table();
        }
        table.put(key, value);
        self.len.store(len + 1, Ordering::Relaxed);
    }

    /// Forgets every entry. Only one writer at a time.
    fn clear(&self) {
        self.publish(RawBox::new(Table::new(INITIAL_CAPACITY)));
        self.len.store(0, Ordering::Relaxed);
    }

    fn publish(&self, table: RawBox<Table>) {
        let mut tables = lock(&self.tables);
        self.current.store(table.as_ptr(), Ordering::Release);
        tables.push(table);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Thing {
        handle: usize,
        value: u64,
    }

    impl Pooled for Thing {
        fn handle(&self) -> usize {
            self.handle
        }
    }

    fn item(handle: usize, value: u64) -> Result<Thing> {
        Ok(Thing { handle, value })
    }

    #[test]
    fn recycles_and_refuses_foreign_or_released_handles() {
        let pool: Pool<Thing> = Pool::new("event");
        pool.prefill(1, || item(0x7000, 7)).unwrap();
        let first = pool.acquire(|| item(0x1000, 1)).unwrap();
        let a = first.handle;
        assert_eq!((a, first.value), (0x7000, 7), "the prefilled item comes first");
        let second = pool.acquire(|| item(0x9000, 9)).unwrap();
        assert_eq!((second.handle, second.value), (0x9000, 9));
        assert_eq!(pool.get(a).unwrap().value, 7);
        pool.release(first).unwrap();
        let err = pool.release_handle(a).unwrap_err();
        assert_eq!(
            err.to_string(),
            "event 0x7000 was not created by this device or was already released"
        );
        assert!(pool.get(a).is_err(), "a released handle is refused");
        assert!(pool.get(0x1234).is_err());
        assert!(pool.get(0).is_err());
        assert!(pool.release(first).is_err(), "released twice");
        let again = pool.acquire(|| item(0x5000, 0)).unwrap();
        assert_eq!(
            (again.handle, again.value),
            (a, 7),
            "a released item is reused, with its value"
        );
        assert_eq!(pool.in_use().len(), 2);
        // Many items given back at once: the hot slot and the list both hand them out again.
        let many: Vec<Item<Thing>> = (0..5u64)
            .map(|i| pool.acquire(|| item(0x100 * (i as usize + 1), i)).unwrap())
            .collect();
        let mut handles: Vec<usize> = many.iter().map(|i| i.handle).collect();
        for i in many {
            pool.release(i).unwrap();
        }
        let mut back: Vec<usize> = (0..5)
            .map(|_| pool.acquire(|| item(0xdead, 0)).unwrap().handle)
            .collect();
        handles.sort();
        back.sort();
        assert_eq!(back, handles, "every released item comes back, none is made anew");
    }

    #[test]
    fn duplicate_or_null_handles_from_the_backend_are_refused() {
        let pool: Pool<Thing> = Pool::new("queue");
        pool.acquire(|| item(0x10, 1)).unwrap();
        let err = pool.acquire(|| item(0x10, 2)).unwrap_err().to_string();
        assert!(err.contains("already in use"), "{err}");
        assert!(pool.acquire(|| item(0, 2)).is_err());
        assert_eq!(pool.len(), 1);
    }

    #[test]
    fn grows_and_finds_every_handle_while_readers_run() {
        let pool: &'static Pool<Thing> = Box::leak(Box::new(Pool::new("queue")));
        let first = pool.acquire(|| item(64, 0)).unwrap().handle;
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let reader = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut reads = 0u64;
                loop {
                    assert_eq!(pool.get(first).unwrap().value, 0, "never lost during growth");
                    reads += 1;
                    if stop.load(Ordering::Relaxed) {
                        return reads;
                    }
                }
            })
        };
        let handles: Vec<usize> = (1..2000)
            .map(|i| pool.acquire(|| item(64 * (i + 1), i as u64)).unwrap().handle)
            .collect();
        stop.store(true, Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
        for (i, &h) in handles.iter().enumerate() {
            assert_eq!(pool.get(h).unwrap().value, i as u64 + 1);
        }
        assert_eq!(pool.in_use().len(), 2000);
    }

    #[test]
    fn teardown_destroys_everything_and_forgets_handles() {
        let pool: Pool<Thing> = Pool::new("queue");
        pool.prefill(3, {
            let mut n = 0;
            move || {
                n += 1;
                item(n * 16, n as u64)
            }
        })
        .unwrap();
        let h = pool.acquire(|| item(999, 0)).unwrap().handle;
        let mut destroyed = Vec::new();
        pool.teardown(|i| {
            destroyed.push(i.handle);
            if i.handle == 32 {
                Err(Error::NullArg("x"))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        destroyed.sort();
        assert_eq!(destroyed, vec![16, 32, 48], "every item is destroyed despite a failure");
        assert!(pool.get(h).is_err(), "handles from before the teardown are refused");
        assert!(pool.is_empty());
        let again = pool.acquire(|| item(16, 5)).unwrap();
        assert_eq!(again.handle, 16, "a handle value may be reused after teardown");
    }
}
