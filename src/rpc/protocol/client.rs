//! The client side of the protocol, played from a host thread as a warp's leader lane plays it on a
//! GPU: open a port for the active lanes, write a packet per lane, hand the port to the server, wait
//! for its turn to come back, read, close. The tests' simulated warps (`rpc::simulated`) play devices
//! with it.

use std::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};

use super::mailbox::{Layout, Mailbox};

/// The client side of one mailbox: the lock bits that the device's warps share.
pub struct Client {
    mailbox: Mailbox,
    /// One bit per port: which ports a warp has open.
    locks: Box<[AtomicU32]>,
    /// Whether long waits sleep (see [`Client::nap_while_waiting`]).
    napping: AtomicBool,
    /// Runs each wait for the host (the tests' simulated device closes device memory meanwhile).
    around_wait: fn(&mut dyn FnMut()),
    /// What the device's code rings after handing a port to the host, as `omprpc_device.h` does
    /// (nothing by default, as LLVM libc's client).
    ring: Option<Box<dyn Fn() + Send + Sync>>,
}

/// One port a client has open.
pub struct ClientPort<'a> {
    client: &'a Client,
    index: usize,
    mask: u64,
    /// The client's word as this side last wrote it.
    out: u32,
    /// Whether the last exchange was a receive (the next one flips the port first).
    receive: bool,
    /// Whether this side holds the port's packets now.
    owns_buffer: bool,
}

impl Client {
    /// The client side of `mailbox`.
    pub fn new(mailbox: Mailbox) -> Client {
        Client {
            mailbox,
            locks: (0..mailbox.layout().ports.div_ceil(32))
                .map(|_| AtomicU32::new(0))
                .collect(),
            napping: AtomicBool::new(false),
            around_wait: |wait| wait(),
            ring: None,
        }
    }

    /// Rings `ring` after every hand-over of a port to the host, as device code that can wake the
    /// host rings its doorbell.
    pub fn with_doorbell(mut self, ring: impl Fn() + Send + Sync + 'static) -> Client {
        self.ring = Some(Box::new(ring));
        self
    }

    /// Runs every wait for the host inside `around_wait`.
    pub fn with_waits(mut self, around_wait: fn(&mut dyn FnMut())) -> Client {
        self.around_wait = around_wait;
        self
    }

    /// Makes long waits sleep 1 ms between looks instead of yielding the processor over and over: a
    /// GPU's warps use none of the host's processors while they wait, and many simulated warps that
    /// yield in a loop would starve the serving threads of a small machine.
    pub fn nap_while_waiting(&self) {
        self.napping.store(true, Ordering::Relaxed);
    }

    /// Where everything is in the mailbox.
    pub fn layout(&self) -> Layout {
        self.mailbox.layout()
    }

    /// Opens a port for `opcode` with the active lanes `mask`, trying ports from `start` on until one
    /// is free, as the leader lane of a warp does.
    pub fn open(&self, opcode: u16, mask: u64, start: usize) -> ClientPort<'_> {
        let ports = self.layout().ports;
        let mut index = start % ports;
        if let Some(port) = self.try_open(opcode, mask, index) {
            return port;
        }
        let mut opened = None;
        (self.around_wait)(&mut || {
            let mut spins = 0u32;
            while opened.is_none() {
                index = (index + 1) % ports;
                self.back_off(&mut spins);
                opened = self.try_open(opcode, mask, index);
            }
        });
        opened.expect("the wait ends with a port open")
    }

    /// Opens `port` for `opcode` with the active lanes `mask` when it is free (no warp has it open,
    /// and it is the client's turn).
    pub fn try_open(&self, opcode: u16, mask: u64, port: usize) -> Option<ClientPort<'_>> {
        assert!(mask != 0, "a warp opens a port with at least one active lane");
        let bit = 1u32 << (port % 32);
        if self.locks[port / 32].fetch_or(bit, Ordering::Acquire) & bit != 0 {
            return None;
        }
        let out = self.mailbox.client_word(port).load(Ordering::Relaxed);
        if self.mailbox.server_word(port).load(Ordering::Acquire) != out {
            self.locks[port / 32].fetch_and(!bit, Ordering::Release);
            return None;
        }
        self.mailbox.lane_mask(port).store(mask, Ordering::Relaxed);
        self.mailbox.opcode(port).store(opcode, Ordering::Relaxed);
        Some(ClientPort {
            client: self,
            index: port,
            mask,
            out,
            receive: false,
            owns_buffer: true,
        })
    }

    fn back_off(&self, spins: &mut u32) {
        *spins += 1;
        if *spins < 256 {
            std::hint::spin_loop();
        } else if *spins < 512 || !self.napping.load(Ordering::Relaxed) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

impl ClientPort<'_> {
    /// The port's number.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Lanes of a warp of the port's device.
    pub fn lanes(&self) -> usize {
        self.client.layout().lanes
    }

    /// The active lanes, in lane order.
    pub fn active_lanes(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.client.layout().lanes).filter(|&lane| self.mask & (1 << lane) != 0)
    }

    /// The server's word as it is now.
    fn inbox(&self) -> u32 {
        self.client.mailbox.server_word(self.index).load(Ordering::Acquire)
    }

    fn wait_for_ownership(&self, inbox: u32) {
        if inbox != self.out {
            (self.client.around_wait)(&mut || {
                let mut spins = 0u32;
                while self.inbox() != self.out {
                    self.client.back_off(&mut spins);
                }
            });
        }
        fence(Ordering::Acquire);
    }

    fn flip(&mut self) {
        self.out ^= 1;
        self.client
            .mailbox
            .client_word(self.index)
            .store(self.out, Ordering::Release);
        if let Some(ring) = &self.client.ring {
            ring();
        }
    }

    /// Sends one packet per active lane, filled by `fill(lane, packet)`.
    pub fn send(&mut self, mut fill: impl FnMut(usize, &mut [u64; 8])) {
        let inbox = if self.owns_buffer { self.out } else { self.inbox() };
        self.wait_for_ownership(inbox);
        for lane in self.active_lanes() {
            let mut data = [0u64; 8];
            fill(lane, &mut data);
            // SAFETY: the port is ours until the flip below; the packet lies inside the mailbox.
            unsafe { self.client.mailbox.packet(self.index, lane).write_volatile(data) };
        }
        self.flip();
        self.owns_buffer = false;
        self.receive = false;
    }

    /// Waits until the server has taken what was sent and waits for this side again, without sending
    /// (a device that stops in the middle of a call does this much).
    pub fn wait_for_turn(&self) {
        self.wait_for_ownership(self.inbox());
    }

    /// Whether the server has handed the port back since the last send, without waiting.
    pub fn has_reply(&self) -> bool {
        self.inbox() == self.out
    }

    /// Receives one packet per active lane, handed to `take(lane, packet)`.
    pub fn recv(&mut self, mut take: impl FnMut(usize, &[u64; 8])) {
        if self.receive {
            self.flip();
            self.owns_buffer = false;
        }
        let inbox = if self.owns_buffer { self.out } else { self.inbox() };
        self.wait_for_ownership(inbox);
        for lane in self.active_lanes() {
            // SAFETY: the port is ours again; the packet lies inside the mailbox.
            let data = unsafe { self.client.mailbox.packet(self.index, lane).read_volatile() };
            take(lane, &data);
        }
        self.receive = true;
        self.owns_buffer = true;
    }

    /// Closes the port, as the leader lane does.
    pub fn close(self) {
        let bit = 1u32 << (self.index % 32);
        self.client.locks[self.index / 32].fetch_and(!bit, Ordering::Release);
    }
}
