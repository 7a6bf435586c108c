//! A port being served, as a user handler sees it: safe operations that move packets and byte
//! strings between the host and the port's active lanes, in the order the device-side call expects.

use std::ffi::c_void;
use std::marker::PhantomData;

use crate::rpc::protocol::ffi;
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

    /// Whether the lane sent a string (it was active), however short: an inactive lane's is absent.
    pub fn sent(&self) -> bool {
        !self.ptr.is_null()
    }

    /// The bytes, for a call that may write them (the host's copy; the device's are not touched).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
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
///
/// A user handler's port follows the device-side calls of `omprpc_device.h`, which send one request
/// (a packet per lane, or a byte string per lane) and wait for one reply of the same kind: it
/// receives once and replies once. Another receive would take the device's *next* call as this one's
/// data and hand the port back early, which desynchronises the protocol (the device then reads
/// garbage, or both sides wait for ever); so it is refused, as is a reply before the request was read
/// or a second reply, and a handler that returns without replying gets an empty one sent for it
/// (`Port::finish`).
pub struct Port<'a> {
    raw: ffi::Port,
    /// For a user handler, whose port it is and the opcode: the protocol above is enforced, and
    /// refusals name them. The plugin's own services are trusted.
    handler_of: Option<(super::Owner, u16)>,
    state: Exchange,
    /// Bytes the call moved so far: to the host (what the device sent) and to the device, for
    /// whoever keeps the call's record ([`Port::moved`]); the protocol layer keeps no records.
    moved: (u64, u64),
    _call: PhantomData<&'a mut ()>,
}

/// Where a port is in its request and reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exchange {
    /// The device's request has not been read.
    Unread,
    /// The request was read: packets, or byte strings.
    Read { bytes: bool },
    /// The reply was sent.
    Replied,
}

/// What `Port::finish` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    /// The handler received and replied.
    Complete,
    /// The handler received but did not reply: an empty reply was sent.
    RepliedForHandler,
    /// The handler neither received nor replied.
    Untouched,
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
            handler_of: None,
            state: Exchange::Unread,
            moved: (0, 0),
            _call: PhantomData,
        }
    }

    /// Wraps the port that libc's server passed to the user handler of `opcode` on `owner`'s server:
    /// receive once, reply once.
    ///
    /// # Safety
    /// As for [`Port::from_raw`].
    pub(crate) unsafe fn for_user_handler<'a>(raw: ffi::Port, owner: super::Owner, opcode: u16) -> Port<'a> {
        Port {
            handler_of: Some((owner, opcode)),
            // SAFETY: forwarded from this function's contract.
            ..unsafe { Port::from_raw(raw) }
        }
    }

    /// Bytes moved through this port so far: to the host (requests read) and to the device (replies
    /// sent).
    pub fn moved(&self) -> (u64, u64) {
        self.moved
    }

    /// Ends a user handler's exchange: a request read but not answered gets an empty reply (zeroed
    /// packets, or empty byte strings), so that the device does not wait for ever.
    pub(crate) fn finish(&mut self) -> Finished {
        match self.state {
            Exchange::Replied => Finished::Complete,
            Exchange::Unread => Finished::Untouched,
            Exchange::Read { bytes: false } => {
                let zeros = self.lane_packets();
                let _ = self.send(&zeros);
                Finished::RepliedForHandler
            }
            Exchange::Read { bytes: true } => {
                let _ = self.send_n(&[]);
                Finished::RepliedForHandler
            }
        }
    }

    /// Refuses what the exchange does not allow next (user handlers only).
    fn check_step(&self, receiving: bool) -> Result<()> {
        let Some((owner, opcode)) = self.handler_of else {
            return Ok(());
        };
        let refusal = match (self.state, receiving) {
            (Exchange::Unread, true) | (Exchange::Read { .. }, false) => return Ok(()),
            (_, true) => "a host handler receives the device's call once; this second receive was refused",
            (Exchange::Unread, false) => {
                "a host handler must receive the device's call before it replies; this reply was refused"
            }
            (Exchange::Replied, false) => "a host handler replies once; this second reply was refused",
        };
        Err(Error::InvalidArg(format!("{owner}, opcode {opcode:#06x}: {refusal}")))
    }

    /// Lanes of the port's device (1 on the host device).
    pub fn lanes(&self) -> u32 {
        self.raw.lane_size
    }

    /// Zeroed packets, one per lane: room for [`Port::recv`], or an empty reply.
    pub fn lane_packets(&self) -> Vec<Packet> {
        vec![Packet::default(); self.lanes() as usize]
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
        self.check_step(true)?;
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
        self.moved.0 += 64 * u64::from(cursor.count);
        self.state = Exchange::Read { bytes: false };
        Ok(cursor.count)
    }

    /// Sends `packets` to the active lanes (lane order); returns how many.
    pub fn send(&mut self, packets: &[Packet]) -> Result<u32> {
        self.check_room(packets.len())?;
        self.check_step(false)?;
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
        self.moved.1 += 64 * u64::from(cursor.count);
        self.state = Exchange::Replied;
        Ok(cursor.count)
    }

    /// Receives a byte string from each lane (lane-indexed; inactive lanes give empty strings).
    pub fn recv_n(&mut self) -> Result<Vec<HostBytes>> {
        self.check_step(true)?;
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
        self.state = Exchange::Read { bytes: true };
        self.moved.0 += sizes
            .iter()
            .zip(&data)
            .filter(|(_, p)| !p.is_null())
            .map(|(n, _)| n)
            .sum::<u64>();
        Ok(data
            .into_iter()
            .zip(sizes)
            .map(|(ptr, len)| HostBytes {
                ptr: ptr.cast(),
                len: if ptr.is_null() { 0 } else { len as usize },
            })
            .collect())
    }

    /// Sends `data[lane]` to each lane; lanes beyond `data` get empty strings.
    pub fn send_n(&mut self, data: &[&[u8]]) -> Result<()> {
        self.check_step(false)?;
        let lanes = self.lanes() as usize;
        let mut ptrs: Vec<*const c_void> = vec![std::ptr::null(); lanes];
        let mut sizes = vec![0u64; lanes];
        for (lane, bytes) in data.iter().take(lanes).enumerate() {
            ptrs[lane] = bytes.as_ptr().cast();
            sizes[lane] = bytes.len() as u64;
        }
        // SAFETY: both arrays hold `lanes` entries; libc reads `sizes[lane]` bytes at `ptrs[lane]`,
        // which `data` keeps alive for the call.
        unsafe { ffi::rpc_send_n(self.raw, ptrs.as_ptr(), sizes.as_mut_ptr()) };
        self.moved.1 += sizes.iter().sum::<u64>();
        self.state = Exchange::Replied;
        Ok(())
    }
}
