//! The one description of the shared mailbox of LLVM libc 19.1's RPC protocol, and the one way its
//! words and headers are reached ([`Mailbox`]): by the server (to find waiting requests, to answer
//! for a lost device), by the watchdog, by the client of the simulated warps. Checked
//! against the device header's constants and against the client object libc's server hands out.
//!
//! For N ports of L lanes, one block of host memory that the device also sees:
//!
//! ```text
//! [0, 4N)            one u32 per port, written only by the server
//! [4N, 8N)           one u32 per port, written only by the client
//! [8N, 24N)          one header per port: u64 mask of active lanes, u16 opcode, padding
//! [24N, 24N + 64·N·L) one 64-byte packet per lane per port, port-major
//! ```
//!
//! A port belongs to the client while its two words are equal and to the server while they differ.

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};

/// Bytes of one lane's packet.
pub const PACKET_BYTES: usize = 64;
/// Bytes of one port's header.
pub const HEADER_BYTES: usize = 16;
/// Offset of the opcode in a header.
pub const HEADER_OPCODE_OFFSET: usize = 8;
/// Largest port count the protocol allows.
pub const MAX_PORTS: usize = 4096;
/// Lane counts the server accepts.
pub const LANE_SIZES: [usize; 3] = [1, 32, 64];

/// Where everything is in the mailbox of `ports` ports with `lanes` lanes each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Number of ports.
    pub ports: usize,
    /// Lanes per port.
    pub lanes: usize,
}

impl Layout {
    /// The server's word of `port`.
    pub fn server_word(&self, port: usize) -> usize {
        4 * port
    }

    /// The client's word of `port`.
    pub fn client_word(&self, port: usize) -> usize {
        4 * self.ports + 4 * port
    }

    /// The header of `port`.
    pub fn header(&self, port: usize) -> usize {
        8 * self.ports + HEADER_BYTES * port
    }

    /// Start of the packets, right after the headers (libc aligns them to 8 bytes only).
    pub fn packets(&self) -> usize {
        24 * self.ports
    }

    /// The packet of `lane` on `port`.
    pub fn packet(&self, port: usize, lane: usize) -> usize {
        self.packets() + PACKET_BYTES * (port * self.lanes + lane)
    }

    /// The lane mask with every lane of a port active.
    pub fn every_lane(&self) -> u64 {
        if self.lanes >= 64 {
            u64::MAX
        } else {
            (1u64 << self.lanes) - 1
        }
    }

    /// Bytes of the whole mailbox.
    pub fn size(&self) -> usize {
        self.packets() + PACKET_BYTES * self.ports * self.lanes
    }
}

/// A mailbox in memory, as either side reaches it. Its words and headers are atomics here, so that
/// the host's threads (serving threads, the watchdog, a simulated device) never race in Rust's model
/// and a GPU's writes are seen; its packets are plain memory, which libc's server reads and writes
/// and which only the side that holds the port touches.
#[derive(Clone, Copy, Debug)]
pub struct Mailbox {
    base: *mut u8,
    layout: Layout,
}

// SAFETY: a view of memory that its owner keeps mapped while views are used (see `Mailbox::new`);
// what several threads reach through it (words, headers) is atomic.
unsafe impl Send for Mailbox {}
// SAFETY: as above.
unsafe impl Sync for Mailbox {}

impl Mailbox {
    /// A view of the mailbox at `base`, laid out as `layout`.
    ///
    /// # Safety
    /// `base` is 8-byte aligned and starts `layout.size()` bytes of memory that stay mapped while the
    /// view (or a copy) is used, and whose words and headers nobody on the host reaches but through a
    /// view.
    pub unsafe fn new(base: *mut u8, layout: Layout) -> Mailbox {
        Mailbox { base, layout }
    }

    /// Where everything is in it.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Its host address.
    pub fn address(&self) -> usize {
        self.base as usize
    }

    /// The atomic at byte `offset`, a place of the layout for a `T`.
    fn at<T>(&self, offset: usize) -> &T {
        debug_assert!(offset + std::mem::size_of::<T>() <= self.layout.size());
        // SAFETY: callers pass offsets of the layout for a `T` (checked against the port and lane
        // counts), inside the mailbox and aligned for `T` (the base is 8-byte aligned, words at 4,
        // headers at 16); the memory stays mapped while `self` is used (`new`).
        unsafe { &*self.base.add(offset).cast::<T>() }
    }

    /// The word of `port` that only the server writes: it flips it to hand the port back.
    pub fn server_word(&self, port: usize) -> &AtomicU32 {
        assert!(port < self.layout.ports, "port {port} of {}", self.layout.ports);
        self.at(self.layout.server_word(port))
    }

    /// The word of `port` that only the client writes: it flips it to hand the port to the server.
    pub fn client_word(&self, port: usize) -> &AtomicU32 {
        assert!(port < self.layout.ports, "port {port} of {}", self.layout.ports);
        self.at(self.layout.client_word(port))
    }

    /// The lanes active in `port`'s request (the header's first word).
    pub fn lane_mask(&self, port: usize) -> &AtomicU64 {
        assert!(port < self.layout.ports, "port {port} of {}", self.layout.ports);
        self.at(self.layout.header(port))
    }

    /// The opcode of `port`'s request.
    pub fn opcode(&self, port: usize) -> &AtomicU16 {
        assert!(port < self.layout.ports, "port {port} of {}", self.layout.ports);
        self.at(self.layout.header(port) + HEADER_OPCODE_OFFSET)
    }

    /// Whether `port` holds a request for the server (its two words differ); what the client wrote
    /// before handing it over is visible after this says yes.
    pub fn holds_request(&self, port: usize) -> bool {
        self.server_word(port).load(Ordering::Acquire) != self.client_word(port).load(Ordering::Acquire)
    }

    /// Where the packet of `lane` on `port` lies: only the side that holds the port reads or writes it.
    pub fn packet(&self, port: usize, lane: usize) -> *mut [u64; 8] {
        assert!(
            port < self.layout.ports && lane < self.layout.lanes,
            "lane {lane} of port {port}"
        );
        // SAFETY: inside the mailbox, per the checks above and `new`.
        unsafe { self.base.add(self.layout.packet(port, lane)).cast() }
    }
}

#[cfg(all(test, feature = "rpc"))]
mod tests {
    use super::*;
    use crate::rpc::serving::server::tests::CountingMemory;
    use crate::rpc::serving::server::RpcServer;
    use std::sync::Arc;

    /// Every field of every port written through the view and read back: none overlaps another or
    /// leaves the mailbox, and each is aligned for its atomic (under Miri, each access is checked).
    #[test]
    fn every_field_of_every_port_is_inside_the_mailbox_and_apart() {
        for (ports, lanes) in [(1, 1), (3, 32), (16, 64), (65, 1)] {
            let layout = Layout { ports, lanes };
            let mut memory = vec![0u64; layout.size().div_ceil(8)];
            // SAFETY: `memory` is 8-byte aligned, holds `layout.size()` bytes and outlives the view;
            // nothing else reaches it.
            let mailbox = unsafe { Mailbox::new(memory.as_mut_ptr().cast(), layout) };
            let tag = |port: usize, field: u64| (port as u64) << 8 | field;
            for port in 0..ports {
                mailbox.server_word(port).store(tag(port, 1) as u32, Ordering::Relaxed);
                mailbox.client_word(port).store(tag(port, 2) as u32, Ordering::Relaxed);
                mailbox.lane_mask(port).store(tag(port, 3), Ordering::Relaxed);
                mailbox.opcode(port).store(tag(port, 4) as u16, Ordering::Relaxed);
                for lane in 0..lanes {
                    let packet = [tag(port, 5) << 8 | lane as u64; 8];
                    // SAFETY: the packet lies inside the mailbox (`packet` checks the port and lane).
                    unsafe { mailbox.packet(port, lane).write(packet) };
                }
            }
            for port in 0..ports {
                assert_eq!(mailbox.server_word(port).load(Ordering::Relaxed), tag(port, 1) as u32);
                assert_eq!(mailbox.client_word(port).load(Ordering::Relaxed), tag(port, 2) as u32);
                assert_eq!(mailbox.lane_mask(port).load(Ordering::Relaxed), tag(port, 3));
                assert_eq!(mailbox.opcode(port).load(Ordering::Relaxed), tag(port, 4) as u16);
                for lane in 0..lanes {
                    // SAFETY: as above.
                    let packet = unsafe { mailbox.packet(port, lane).read() };
                    assert_eq!(packet, [tag(port, 5) << 8 | lane as u64; 8], "port {port} lane {lane}");
                }
            }
            assert!(mailbox.holds_request(0), "the two words differ");
        }
    }

    /// libc's client object points at the mailbox arrays; they must be where the layout says.
    #[test]
    fn matches_the_client_object_libc_hands_out() {
        for ports in [1usize, 7, 16, 100, 4096] {
            for lanes in LANE_SIZES {
                let memory = Arc::new(CountingMemory::default());
                let server = RpcServer::new(0, ports as u32, lanes as u32, memory.clone()).unwrap();
                let client = server.client_bytes();
                let word = |at: usize| u64::from_ne_bytes(client[at..at + 8].try_into().unwrap()) as usize;
                let base = server.mailbox_address();
                let layout = Layout { ports, lanes };
                assert_eq!(u32::from_ne_bytes(client[..4].try_into().unwrap()) as usize, ports);
                assert_eq!(word(8) - base, layout.server_word(0), "inbox ({ports} ports)");
                assert_eq!(word(16) - base, layout.client_word(0), "outbox ({ports} ports)");
                assert_eq!(word(24) - base, layout.header(0), "headers ({ports} ports)");
                assert_eq!(
                    word(32) - base,
                    layout.packet(0, 0),
                    "packets ({ports} ports, {lanes} lanes)"
                );
                assert_eq!(
                    memory.last_shared_size(),
                    layout.size(),
                    "allocation ({ports}, {lanes})"
                );
                server.shutdown().unwrap();
            }
        }
    }
}
