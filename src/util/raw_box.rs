//! A heap value owned through a raw pointer, for memory that other code keeps pointers into while its
//! owner moves (libomptarget holds an entry table; a reader probes a hash table the writer replaced).
//! A `Box` would not do: moving a `Box` asserts unique access to its contents, which under Rust's
//! aliasing rules (what Miri checks as Stacked Borrows) invalidates every pointer derived from it
//! before the move. Moving a `RawBox` moves only a raw pointer.

use std::ptr::NonNull;

/// Owns a `T` on the heap; frees it on drop.
pub struct RawBox<T: ?Sized>(NonNull<T>);

impl<T: ?Sized> RawBox<T> {
    /// Takes ownership of `value`.
    pub fn new(value: Box<T>) -> RawBox<T> {
        RawBox(NonNull::from(Box::leak(value)))
    }

    /// The value's address; valid until this `RawBox` drops.
    pub fn as_ptr(&self) -> *mut T {
        self.0.as_ptr()
    }

    /// The value.
    pub fn get(&self) -> &T {
        // SAFETY: the pointer came from `Box::leak` and stays valid until `drop`; only shared
        // references are handed out.
        unsafe { self.0.as_ref() }
    }
}

impl<T: ?Sized> Drop for RawBox<T> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `Box::leak` in `new` and is freed only here, once.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

// SAFETY: a `RawBox<T>` owns its `T` as a `Box<T>` does, so it may move between threads when `T` may.
unsafe impl<T: ?Sized + Send> Send for RawBox<T> {}
// SAFETY: shared access hands out only `&T`, as `Box<T>` does.
unsafe impl<T: ?Sized + Sync> Sync for RawBox<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_taken_before_a_move_stay_valid() {
        let owned = RawBox::new(Box::new([1u32, 2, 3]));
        let before = owned.as_ptr();
        let moved = [owned];
        // SAFETY: `moved[0]` owns the array `before` points to.
        assert_eq!(unsafe { (*before)[2] }, 3);
        assert_eq!(moved[0].get()[0], 1);
    }
}
