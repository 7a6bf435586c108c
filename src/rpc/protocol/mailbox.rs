//! The one description of the shared mailbox of LLVM libc 19.1's RPC protocol, used by the server
//! (to find waiting requests), by the simulated-warp client, and checked against the device header's
//! constants and against the client object libc's server hands out.
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

#[cfg(all(test, feature = "rpc"))]
mod tests {
    use super::*;
    use crate::rpc::serving::server::tests::CountingMemory;
    use crate::rpc::serving::server::RpcServer;
    use std::sync::Arc;

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
