//! A simulated warp: a client of LLVM libc 19.1's RPC protocol that plays 1, 32 or 64 lanes from one
//! host thread, in the real mailbox layout, against a real server. It does what the device header does
//! on a GPU — one leader opens the port for the active lanes and flips it, each lane reads and writes
//! its own packet (`port × lanes + lane`), byte strings go as many packets as the longest lane needs —
//! so that the server side of GPU host services (per-lane printf, byte strings, malloc/free, user
//! opcodes, partial lane masks, exit) runs in tests and benchmarks on a machine without a GPU.

use std::ffi::CStr;
use std::sync::Arc;

use super::protocol::client::{Client, ClientPort};
use super::protocol::mailbox::PACKET_BYTES;
use super::serving::server::RpcServer;
use crate::backend::gpu::sim_memory;

/// Bytes of payload in the first packet of a byte string (the rest of it holds the size).
const FIRST_CHUNK: usize = PACKET_BYTES - 8;

/// A simulated device: the client side of one server's mailbox, whose waits for the host close
/// device memory to the waiting thread (see `gpu::sim_memory`), as a GPU's memory is not the host's.
pub struct SimulatedDevice {
    /// Keeps the mailbox that `client` plays alive.
    server: Arc<RpcServer>,
    client: Client,
}

impl SimulatedDevice {
    /// The client side of `server`'s mailbox; holding the server keeps the mailbox alive.
    pub fn new(server: Arc<RpcServer>) -> SimulatedDevice {
        SimulatedDevice {
            client: Client::new(server.mailbox()).with_waits(|wait| sim_memory::host_side(wait)),
            server,
        }
    }

    /// The client side of `server`'s mailbox, whose code rings the doorbell with `ring` after each
    /// request, as `omprpc_device.h` does where the device can wake the host.
    pub fn ringing(server: Arc<RpcServer>, ring: impl Fn() + Send + Sync + 'static) -> SimulatedDevice {
        SimulatedDevice {
            client: Client::new(server.mailbox())
                .with_waits(|wait| sim_memory::host_side(wait))
                .with_doorbell(ring),
            server,
        }
    }

    /// Makes this device's warps sleep 1 ms between looks once a wait grows long (see
    /// [`Client::nap_while_waiting`]).
    pub fn nap_while_waiting(&self) {
        self.client.nap_while_waiting();
    }

    /// The server this device talks to.
    pub fn server(&self) -> &Arc<RpcServer> {
        &self.server
    }

    /// Lanes of a warp of this device.
    pub fn lanes(&self) -> usize {
        self.client.layout().lanes
    }

    /// Opens a port for opcode `opcode` with the active lanes `mask`, trying ports from `start` on, as
    /// the leader lane of a warp does.
    pub fn open(&self, opcode: u16, mask: u64, start: usize) -> ClientPort<'_> {
        self.client.open(opcode, mask, start)
    }
}

/// Byte strings, as libc's client sends and receives them (tests only: the plugin's own client sends
/// packets).
impl ClientPort<'_> {
    /// Sends `data[lane]` from each active lane: as many packets as the longest string needs, as a
    /// GPU client does (each lane stops copying when its own string ends).
    pub fn send_n(&mut self, data: &[&[u8]]) {
        let len = |lane: usize| data.get(lane).map_or(0, |d| d.len());
        self.send(|lane, packet| {
            packet[0] = len(lane) as u64;
            let bytes = data.get(lane).copied().unwrap_or(&[]);
            let n = bytes.len().min(FIRST_CHUNK);
            copy_into(&mut packet[1..], &bytes[..n]);
        });
        let longest = self.active_lanes().map(len).max().unwrap_or(0);
        let mut at = FIRST_CHUNK;
        while at < longest {
            self.send(|lane, packet| {
                let bytes = data.get(lane).copied().unwrap_or(&[]);
                if at < bytes.len() {
                    let end = bytes.len().min(at + PACKET_BYTES);
                    copy_into(packet, &bytes[at..end]);
                }
            });
            at += PACKET_BYTES;
        }
    }

    /// Receives a byte string per active lane (lane-indexed; inactive lanes get empty strings).
    pub fn recv_n(&mut self) -> Vec<Vec<u8>> {
        let mut out = vec![Vec::new(); self.lanes()];
        let mut sizes = vec![0usize; self.lanes()];
        self.recv(|lane, packet| {
            sizes[lane] = packet[0] as usize;
            let n = sizes[lane].min(FIRST_CHUNK);
            out[lane].extend_from_slice(&bytes_of(&packet[1..])[..n]);
        });
        let longest = sizes.iter().copied().max().unwrap_or(0);
        let mut at = FIRST_CHUNK;
        while at < longest {
            self.recv(|lane, packet| {
                if at < sizes[lane] {
                    let n = (sizes[lane] - at).min(PACKET_BYTES);
                    out[lane].extend_from_slice(&bytes_of(packet)[..n]);
                }
            });
            at += PACKET_BYTES;
        }
        out
    }
}

fn copy_into(words: &mut [u64], bytes: &[u8]) {
    for (i, chunk) in bytes.chunks(8).enumerate() {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        words[i] = u64::from_ne_bytes(word);
    }
}

fn bytes_of(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_ne_bytes()).collect()
}

/// One lane's printf: a format and its arguments packed as libc's server reads them (each at its
/// natural alignment: `int` 4 bytes, `long`, `double` and pointers 8).
#[derive(Clone, Debug, Default)]
pub struct LanePrintf {
    /// The format, NUL-terminated.
    pub format: Vec<u8>,
    /// The packed arguments.
    pub args: Vec<u8>,
    /// The strings whose addresses `args` holds, for the server's requests of their bytes.
    pub strings: Vec<&'static CStr>,
}

impl LanePrintf {
    /// A printf of `format` with no arguments yet.
    pub fn new(format: &str) -> LanePrintf {
        let mut bytes = format.as_bytes().to_vec();
        bytes.push(0);
        LanePrintf {
            format: bytes,
            args: Vec::new(),
            strings: Vec::new(),
        }
    }

    fn push(mut self, bytes: &[u8]) -> LanePrintf {
        while !self.args.len().is_multiple_of(bytes.len()) {
            self.args.push(0);
        }
        self.args.extend_from_slice(bytes);
        self
    }

    /// Adds an `int` argument (`%d`, `%c`, `%x`).
    pub fn int(self, value: i32) -> LanePrintf {
        self.push(&value.to_ne_bytes())
    }

    /// Adds a `long` argument (`%ld`).
    pub fn long(self, value: i64) -> LanePrintf {
        self.push(&value.to_ne_bytes())
    }

    /// Adds a `double` argument (`%f`, `%g`).
    pub fn double(self, value: f64) -> LanePrintf {
        self.push(&value.to_ne_bytes())
    }

    /// Adds a string argument (`%s`): its address, whose bytes the server asks the lane for.
    pub fn string(mut self, value: &'static CStr) -> LanePrintf {
        self.strings.push(value);
        self.push(&(value.as_ptr() as usize).to_ne_bytes())
    }

    /// The bytes (NUL included) of the string this lane packed at `address`, as a lane would read
    /// them from its own memory; the server asks by address.
    fn string_at(&self, address: u64) -> Option<&'static [u8]> {
        self.strings
            .iter()
            .find(|s| s.as_ptr() as u64 == address)
            .map(|s| s.to_bytes_with_nul())
    }
}

/// A warp of a simulated device, with the calls a device program makes.
pub struct SimulatedWarp<'a> {
    device: &'a SimulatedDevice,
    /// First port this warp tries.
    pub start_port: usize,
}

impl<'a> SimulatedWarp<'a> {
    /// A warp of `device` that starts looking for ports at `start_port`.
    pub fn new(device: &'a SimulatedDevice, start_port: usize) -> SimulatedWarp<'a> {
        SimulatedWarp { device, start_port }
    }

    /// The mask of every lane.
    pub fn full_mask(&self) -> u64 {
        self.device.client.layout().every_lane()
    }

    /// `printf` from the lanes of `mask`, lane `i` with `calls[i]`; returns each lane's result.
    pub fn printf(&self, mask: u64, calls: &[LanePrintf]) -> Vec<i32> {
        let mut port = self
            .device
            .open(super::protocol::ffi::opcode::PRINTF_TO_STDOUT, mask, self.start_port);
        let formats: Vec<&[u8]> = calls.iter().map(|c| c.format.as_slice()).collect();
        port.send_n(&formats);
        let mut sizes = vec![0usize; self.device.lanes()];
        port.recv(|lane, packet| sizes[lane] = packet[0] as usize);
        let args: Vec<&[u8]> = calls
            .iter()
            .zip(&sizes)
            .map(|(c, &size)| &c.args[..size.min(c.args.len())])
            .collect();
        port.send_n(&args);
        let mut results = vec![0i32; self.device.lanes()];
        loop {
            let mut strings: Vec<Option<&'static [u8]>> = vec![None; self.device.lanes()];
            port.recv(|lane, packet| {
                results[lane] = packet[0] as u32 as i32;
                if packet[1] != 0 {
                    let string = calls.get(lane).and_then(|c| c.string_at(packet[1]));
                    let string = string.unwrap_or_else(|| {
                        panic!(
                            "lane {lane}: the server asked for a string at {:#x} that it was not given",
                            packet[1]
                        )
                    });
                    strings[lane] = Some(string);
                }
            });
            if strings.iter().all(Option::is_none) {
                break;
            }
            let data: Vec<&[u8]> = strings.iter().map(|s| s.unwrap_or(&[])).collect();
            port.send_n(&data);
        }
        port.close();
        results
    }

    /// `malloc(sizes[lane])` from the lanes of `mask`; returns each lane's pointer.
    pub fn malloc(&self, mask: u64, sizes: &[u64]) -> Vec<u64> {
        let mut port = self
            .device
            .open(super::protocol::ffi::opcode::MALLOC, mask, self.start_port);
        port.send(|lane, packet| packet[0] = sizes.get(lane).copied().unwrap_or(0));
        let mut ptrs = vec![0u64; self.device.lanes()];
        port.recv(|lane, packet| ptrs[lane] = packet[0]);
        port.close();
        ptrs
    }

    /// `free(ptrs[lane])` from the lanes of `mask`.
    pub fn free(&self, mask: u64, ptrs: &[u64]) {
        let mut port = self
            .device
            .open(super::protocol::ffi::opcode::FREE, mask, self.start_port);
        port.send(|lane, packet| packet[0] = ptrs.get(lane).copied().unwrap_or(0));
        port.close();
    }

    /// A user opcode with one packet each way per lane: sends `packets[lane]`, returns the replies.
    pub fn call(&self, opcode: u16, mask: u64, packets: &[[u64; 8]]) -> Vec<[u64; 8]> {
        let mut port = self.device.open(opcode, mask, self.start_port);
        port.send(|lane, packet| *packet = packets.get(lane).copied().unwrap_or_default());
        let mut replies = vec![[0u64; 8]; self.device.lanes()];
        port.recv(|lane, packet| replies[lane] = *packet);
        port.close();
        replies
    }

    /// A user opcode with a byte string each way per lane.
    pub fn call_bytes(&self, opcode: u16, mask: u64, data: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut port = self.device.open(opcode, mask, self.start_port);
        port.send_n(data);
        let replies = port.recv_n();
        port.close();
        replies
    }

    /// `exit(status)` from the lanes of `mask`: the host ends the process; this never returns.
    pub fn exit(&self, mask: u64, status: i32) -> ! {
        let mut port = self
            .device
            .open(super::protocol::ffi::opcode::EXIT, mask, self.start_port);
        port.send(|_, _| {});
        port.recv(|_, _| {});
        port.send(|_, packet| packet[0] = status as u32 as u64);
        port.close();
        loop {
            std::thread::park();
        }
    }
}
