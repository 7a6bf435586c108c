//! A port being served, as a user handler sees it: safe operations that move packets and byte
//! strings between the host and the port's active lanes, in the order the device-side call expects.

use std::ffi::c_void;
use std::marker::PhantomData;

use super::ffi;
use crate::util::error::{Error, Result};

/// One lane's 64-byte packet.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packet {
    /// The packet's eight words.
    pub data: [u64; 8],
}

/// A byte string received from one lane, in `malloc`ed memory so that a C handler can own it.
pub struct HostBytes {
    ptr: *mut u8,
    len: usize,
}

impl HostBytes {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        if self.ptr.is_null() {
            return &[];
        }
        // SAFETY: `ptr` holds `len` bytes written by libc's `recv_n`, owned by this value.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Gives up ownership: the caller frees the pointer with `free()`.
    pub fn into_raw(self) -> (*mut c_void, usize) {
        let raw = (self.ptr.cast(), self.len);
        std::mem::forget(self);
        raw
    }
}

impl Drop for HostBytes {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from malloc (see `malloc_for_recv_n`) or is null.
        unsafe { libc::free(self.ptr.cast()) }
    }
}

/// A port being served; valid only during the handler call that received it.
pub struct Port<'a> {
    raw: ffi::Port,
    _call: PhantomData<&'a mut ()>,
}

struct Cursor {
    packets: *mut Packet,
    count: u32,
}

unsafe extern "C" fn malloc_for_recv_n(size: u64, _data: *mut c_void) -> *mut c_void {
    // SAFETY: malloc has no preconditions; `HostBytes` frees the result.
    unsafe { libc::malloc((size as usize).max(1)) }
}

impl Port<'_> {
    /// Wraps the port libc's server passed to a callback.
    ///
    /// # Safety
    /// `raw` is the port of a callback that is running, and the result does not outlive it.
    pub(crate) unsafe fn from_raw<'a>(raw: ffi::Port) -> Port<'a> {
        Port {
            raw,
            _call: PhantomData,
        }
    }

    /// Lanes of the port's device (1 on the host device).
    pub fn lanes(&self) -> u32 {
        self.raw.lane_size
    }

    fn check_room(&self, len: usize) -> Result<()> {
        if len < self.lanes() as usize {
            return Err(Error::InvalidArg(format!(
                "room for {len} packets, but the port has {} lanes",
                self.lanes()
            )));
        }
        Ok(())
    }

    /// Receives one packet from each active lane into `packets` (lane order); returns how many.
    pub fn recv(&mut self, packets: &mut [Packet]) -> Result<u32> {
        self.check_room(packets.len())?;
        let mut cursor = Cursor {
            packets: packets.as_mut_ptr(),
            count: 0,
        };
        unsafe extern "C" fn take(buffer: *mut ffi::Buffer, data: *mut c_void) {
            // SAFETY: `data` is the cursor below and `buffer` a live packet; libc calls this once per
            // active lane, at most `lanes` times, and `packets` has room for `lanes`.
            unsafe {
                let cursor = &mut *data.cast::<Cursor>();
                *cursor.packets.add(cursor.count as usize) = Packet { data: (*buffer).data };
                cursor.count += 1;
            }
        }
        // SAFETY: the port is live (constructor contract); `take` matches the callback type.
        unsafe { ffi::rpc_recv(self.raw, take, (&mut cursor as *mut Cursor).cast()) };
        Ok(cursor.count)
    }

    /// Sends `packets` to the active lanes (lane order); returns how many.
    pub fn send(&mut self, packets: &[Packet]) -> Result<u32> {
        self.check_room(packets.len())?;
        let mut cursor = Cursor {
            packets: packets.as_ptr().cast_mut(),
            count: 0,
        };
        unsafe extern "C" fn fill(buffer: *mut ffi::Buffer, data: *mut c_void) {
            // SAFETY: as in `recv`; the packets are only read.
            unsafe {
                let cursor = &mut *data.cast::<Cursor>();
                (*buffer).data = (*cursor.packets.add(cursor.count as usize)).data;
                cursor.count += 1;
            }
        }
        // SAFETY: as in `recv`.
        unsafe { ffi::rpc_send(self.raw, fill, (&mut cursor as *mut Cursor).cast()) };
        Ok(cursor.count)
    }

    /// Receives a byte string from each lane (lane-indexed; inactive lanes give empty strings).
    pub fn recv_n(&mut self) -> Vec<HostBytes> {
        let lanes = self.lanes() as usize;
        let mut data = vec![std::ptr::null_mut::<c_void>(); lanes];
        let mut sizes = vec![0u64; lanes];
        // SAFETY: both arrays hold `lanes` entries, as libc writes one per lane; the allocator matches.
        unsafe {
            ffi::rpc_recv_n(
                self.raw,
                data.as_mut_ptr(),
                sizes.as_mut_ptr(),
                malloc_for_recv_n,
                std::ptr::null_mut(),
            )
        };
        data.into_iter()
            .zip(sizes)
            .map(|(ptr, len)| HostBytes {
                ptr: ptr.cast(),
                len: if ptr.is_null() { 0 } else { len as usize },
            })
            .collect()
    }

    /// Sends `data[lane]` to each lane; lanes beyond `data` get empty strings.
    pub fn send_n(&mut self, data: &[&[u8]]) {
        let lanes = self.lanes() as usize;
        let mut ptrs: Vec<*const c_void> = vec![std::ptr::null(); lanes];
        let mut sizes = vec![0u64; lanes];
        for (lane, bytes) in data.iter().take(lanes).enumerate() {
            ptrs[lane] = bytes.as_ptr().cast();
            sizes[lane] = bytes.len() as u64;
        }
        // SAFETY: both arrays hold `lanes` entries; libc reads `sizes[lane]` bytes at `ptrs[lane]`,
        // which `data` keeps alive for the call.
        unsafe { ffi::rpc_send_n(self.raw, ptrs.as_ptr(), sizes.as_mut_ptr()) }
    }
}
