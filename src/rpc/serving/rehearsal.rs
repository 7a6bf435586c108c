//! Rehearsed calls: keeping the serving path warm while a kernel that may call the host runs but
//! calls nothing.
//!
//! Serving a call runs the plugin's and libc's code (the window, `rpc_handle_server`, the callback,
//! the packet copies) and touches their data. Left unused for a while, they leave the caches and
//! translation buffers of the serving thread's core, and the first call after a lull waits for them
//! several times as long as a warm one, while calls on another port keep it warm
//! (`docs/measurements.md`, "Rehearsals").
//!
//! So while kernels run and nothing comes, the scanner rehearses a call every [`REHEARSE_EVERY`]:
//! playing the device, it puts a request into a private one-port mailbox of the lane size of each
//! server in service and serves it through the same path as a device's request for a user opcode
//! (`serve_once`, the port's window, libc's `rpc_handle_server`, the plugin's dispatch and a handler
//! that receives every lane's packet and sends it back through [`Port`]). Rehearsals reach no
//! statistics, trace or watchdog, run only on the thread that scans (never while a slow call holds
//! it), and stop when no kernel that may call the host runs, so a program without such kernels never
//! rehearses. A device request that arrives during
//! one waits for it to end (well under a microsecond when warm).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::rpc::protocol::client::Client;
use crate::rpc::protocol::mailbox::LANE_SIZES;
use crate::rpc::protocol::port::{Packet, Port};
use crate::rpc::serving::handlers::{Registered, UserHandler};
use crate::rpc::serving::server::RpcServer;

use crate::util::log;
use crate::util::sync::PerProcess;

/// How often the scanner rehearses while no call comes (after it stopped spinning): often enough to
/// keep the first call after a lull warm, at a small share of the scanner's core, which is busy
/// looking for requests anyway (`docs/measurements.md`, "Rehearsals").
pub const REHEARSE_EVERY: Duration = Duration::from_micros(250);

/// The plugin's own opcode for rehearsals: neither libc's (below 28) nor a user's (from 0x8000).
const OPCODE: u16 = 0x7ffe;

/// One private mailbox of one lane size, its client, and who is rehearsing on it.
struct Stage {
    server: Arc<RpcServer>,
    /// The device's side of `server`'s mailbox, which `server` keeps alive.
    client: Client,
    /// Held by the thread rehearsing here (normally only the scanner; a thread that lost the scan
    /// mid-rehearsal and the new scanner never both use it).
    busy: AtomicBool,
    /// Tells one rehearsal's packets from the last one's.
    round: AtomicU64,
}

/// Stages by lane size (the index in [`LANE_SIZES`]), made on first use in each process (a forked
/// child must not find a stage that a parent's thread was using at the fork); `None` where one could
/// not be made (said once per process).
static STAGES: [PerProcess<Option<Stage>>; LANE_SIZES.len()] = [const { PerProcess::new() }; LANE_SIZES.len()];
/// Set when a rehearsal went wrong: rehearsals stop (said once) rather than risk the serving thread.
static STOPPED: AtomicBool = AtomicBool::new(false);
/// Rehearsals done, for tests.
static DONE: AtomicU64 = AtomicU64::new(0);

/// How many rehearsals this process did.
pub fn rehearsals() -> u64 {
    DONE.load(Ordering::Relaxed)
}

/// The rehearsals' handler: receives every lane's packet and sends it back with its first word plus
/// one, through the path a user handler's call takes (libc's callback, the plugin's dispatch, the
/// handler's lock, [`Port`]).
struct Answer;

impl UserHandler for Answer {
    fn serve(&self, port: &mut Port<'_>) {
        let mut packets = [Packet::default(); LANE_SIZES[LANE_SIZES.len() - 1]];
        // Errors cannot happen (room for every lane, receive then send); a missing reply is caught by
        // the check in `Stage::play`.
        if let Ok(count) = port.recv(&mut packets) {
            for packet in &mut packets[..count as usize] {
                packet.data[0] = packet.data[0].wrapping_add(1);
            }
            let _ = port.send(&packets);
        }
    }

    fn name(&self) -> String {
        "the plugin's rehearsal".into()
    }
}

/// A stage's server, answering [`OPCODE`].
fn stage_server(lanes: u32) -> crate::util::error::Result<Arc<RpcServer>> {
    let answer: &'static Registered = Box::leak(Box::new(Registered::new(OPCODE, Box::new(Answer))));
    let server = RpcServer::for_rehearsals(1, lanes, Arc::new(crate::rpc::HostMemory))?;
    if let Err(e) = server.install_user_opcode(answer) {
        let _ = server.shutdown();
        return Err(e);
    }
    Ok(server)
}

/// Where `lanes` is in [`LANE_SIZES`] (none for a lane count no server has).
fn lane_index(lanes: u32) -> Option<usize> {
    LANE_SIZES.iter().position(|&l| l == lanes as usize)
}

fn stage(lanes: u32) -> Option<&'static Stage> {
    let index = lane_index(lanes)?;
    let made = || match stage_server(lanes) {
        Ok(server) => Some(Stage::on(server)),
        Err(e) => {
            log::info(format_args!(
                "no rehearsals of {lanes}-lane host calls ({e}); a first call after a lull may wait for cold caches"
            ));
            None
        }
    };
    STAGES[index].get_or_make(made, |_| {}).as_ref()
}

/// Rehearses one call of `lanes` lanes (1, 32 or 64); whether it ran (not when another thread is
/// rehearsing that lane size, or rehearsals stopped).
pub fn rehearse(lanes: u32) -> bool {
    if STOPPED.load(Ordering::Relaxed) {
        return false;
    }
    let Some(stage) = stage(lanes) else { return false };
    if stage.busy.swap(true, Ordering::Acquire) {
        return false;
    }
    let result = stage.play();
    stage.busy.store(false, Ordering::Release);
    match result {
        Ok(()) => {
            DONE.fetch_add(1, Ordering::Relaxed);
            true
        }
        Err(what) => {
            if !STOPPED.swap(true, Ordering::Relaxed) {
                log::error(format_args!(
                    "a rehearsed {lanes}-lane host call went wrong ({what}); no more rehearsals"
                ));
            }
            false
        }
    }
}

impl Stage {
    /// A stage on `server`, a rehearsals' server of one port.
    fn on(server: Arc<RpcServer>) -> Stage {
        Stage {
            client: Client::new(server.mailbox()),
            server,
            busy: AtomicBool::new(false),
            round: AtomicU64::new(0),
        }
    }

    /// Plays the device's side of one call on port 0 and has the server serve it. A stage that
    /// failed is not played again (rehearsals stop), so what a failure leaves in the port stays.
    fn play(&self) -> Result<(), &'static str> {
        let every_lane = self.client.layout().every_lane();
        let Some(mut port) = self.client.try_open(OPCODE, every_lane, 0) else {
            return Err("the port was not the client's");
        };
        let round = self.round.fetch_add(1, Ordering::Relaxed);
        port.send(|lane, packet| *packet = [round, lane as u64, 0, 0, 0, 0, 0, 0]);
        if !self.server.serve_once() {
            return Err("the server did not serve it");
        }
        if !port.has_reply() {
            return Err("no reply");
        }
        let mut wrong = false;
        port.recv(|lane, reply| wrong |= reply[0] != round.wrapping_add(1) || reply[1] != lane as u64);
        port.close();
        if wrong {
            return Err("a wrong reply");
        }
        Ok(())
    }
}

/// The scanner's schedule of rehearsals: while it finds no request, one call of each lane size in
/// service every [`REHEARSE_EVERY`]. (It needs no word of served calls: the scanner only asks after
/// spinning for longer than that without any.)
pub struct Schedule {
    last: Instant,
}

impl Default for Schedule {
    fn default() -> Schedule {
        Schedule { last: Instant::now() }
    }
}

impl Schedule {
    /// Nothing to serve this round: rehearses for `servers` when it is time.
    pub fn quiet(&mut self, servers: &[Arc<RpcServer>]) {
        let now = Instant::now();
        if now.duration_since(self.last) < REHEARSE_EVERY {
            return;
        }
        self.last = now;
        let mut in_service = [false; LANE_SIZES.len()];
        for server in servers {
            if let Some(i) = lane_index(server.lane_size()) {
                in_service[i] = true;
            }
        }
        for (i, &lanes) in LANE_SIZES.iter().enumerate() {
            if in_service[i] {
                rehearse(lanes as u32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rehearsal_of_every_lane_size_is_served_and_answered() {
        for lanes in LANE_SIZES {
            let before = rehearsals();
            // The stage may be busy in another test's serving thread for a moment.
            let ran = (0..1000).any(|_| {
                rehearse(lanes as u32) || {
                    std::thread::yield_now();
                    false
                }
            });
            assert!(ran, "{lanes} lanes: no rehearsal ran");
            assert!(rehearsals() > before);
            assert!(!STOPPED.load(Ordering::Relaxed), "{lanes} lanes: rehearsals stopped");
            // Twice in a row: the port is the client's again after each.
            assert!(
                (0..1000).any(|_| rehearse(lanes as u32)),
                "{lanes} lanes: no second rehearsal"
            );
        }
    }

    #[test]
    fn a_port_not_in_the_clients_hands_is_refused_and_left_alone() {
        let stage = Stage::on(stage_server(1).unwrap());
        let mailbox = stage.server.mailbox();
        mailbox.client_word(0).store(1, Ordering::Release);
        assert_eq!(stage.play(), Err("the port was not the client's"));
        assert_eq!(mailbox.client_word(0).load(Ordering::Acquire), 1);
        assert_eq!(stage.round.load(Ordering::Relaxed), 0, "nothing was written");
        mailbox.client_word(0).store(0, Ordering::Release);
        assert_eq!(stage.play(), Ok(()));
        assert_eq!(stage.play(), Ok(()), "the port is the client's again after a call");
        stage.server.shutdown().unwrap();
    }
}
