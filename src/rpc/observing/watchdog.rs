//! `OMPRPC_WATCHDOG_MS=N`: while the program runs, say which host call has been open longer than N ms
//! (device, port, opcode, how long, and for a user opcode which handler), once per call and again
//! when it finishes; and say when a device has called the host and no thread has picked the call up
//! for N ms (no serving thread alive, or every one held up), the hang upstream LLVM shipped twice.
//! This is the message a user needs when a kernel seems to hang in a host call.
//!
//! The watchdog looks every N/4 ms, and once more at exit ([`finish`]), so that a slow call that
//! ended just before the program did is still said. Durations are those the statistics count: from
//! when the call was seen to when its reply was written.
//!
//! It knows the serving side only through [`Watched`], which the serving threads implement and hand
//! over when they start it: observing sits below serving, and never reaches back into servers, call
//! slots or the registry of handlers.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use std::sync::Mutex;

use crate::rpc::protocol::ffi;
use crate::util::log;
use crate::util::sync::{fork_generation, lock, PerProcess};

/// The limit `OMPRPC_WATCHDOG_MS` sets, if any.
pub fn limit() -> Option<Duration> {
    crate::util::config::host_services().watchdog
}

/// How the serving threads stand: what the watchdog says when a call waits and nothing serves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServingStatus {
    /// Serving threads alive.
    pub threads: usize,
    /// Whether a kernel that may call the host is known to run (the threads serve only then).
    pub kernels_in_flight: bool,
}

/// A call being served, as the serving side shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenCall {
    /// Which serving thread's slot shows it (an address), with `serial`: the watchdog's name for it.
    pub slot: usize,
    /// Distinguishes it from the slot's other calls.
    pub serial: u64,
    /// The device that made it.
    pub device: usize,
    /// Its port.
    pub port: u32,
    /// Its opcode.
    pub opcode: u16,
    /// When it was seen, when the serving thread read the clock for it.
    pub began_ns: Option<u64>,
}

/// A call whose clock was read, ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndedCall {
    /// The call, as it was open.
    pub call: OpenCall,
    /// When its reply was written.
    pub ended_ns: u64,
}

/// A request a device wrote that no thread has picked up yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitingRequest {
    /// The device.
    pub device: usize,
    /// Its port.
    pub port: u32,
    /// Its opcode.
    pub opcode: u16,
    /// Which request of the port it is (a count that moves on with each one).
    pub which: u32,
}

/// What the watchdog asks of the serving side, which implements it: the narrow interface through
/// which observing learns about serving without depending on it.
pub trait Watched: Sync {
    /// The calls being served now.
    fn open_calls(&self) -> Vec<OpenCall>;
    /// The calls whose clock was read that ended since the last ask (asked after `open_calls`, so
    /// that a call ending in between is in one list or the other).
    fn ended_calls(&self) -> Vec<EndedCall>;
    /// The requests waiting in servers in service.
    fn waiting_requests(&self) -> Vec<WaitingRequest>;
    /// How the serving threads stand.
    fn status(&self) -> ServingStatus;
    /// The name of the handler registered for a user opcode, if any.
    fn handler_name(&self, opcode: u16) -> Option<String>;
}

/// Starts the watchdog thread when a limit is set, once per process (a forked child, which the
/// parent's thread did not survive into, gets its own), looking at `watched`.
pub fn start(watched: &'static dyn Watched) {
    static STARTED_IN: AtomicU64 = AtomicU64::new(u64::MAX);
    let Some(limit) = limit() else { return };
    let generation = fork_generation();
    let before = STARTED_IN.load(Ordering::Acquire);
    if before == generation
        || STARTED_IN
            .compare_exchange(before, generation, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
    {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("omprpc-watchdog".into())
        .spawn(move || {
            let tick = tick_of(limit);
            loop {
                std::thread::sleep(tick);
                look_and_say(limit, watched);
            }
        });
    if let Err(e) = spawned {
        log::error(format_args!(
            "OMPRPC_WATCHDOG_MS is set but its thread could not start: {e}"
        ));
    }
}

/// How long the watchdog of `limit` sleeps between looks: a quarter of the limit, at least 1 ms and
/// at most 1 s.
fn tick_of(limit: Duration) -> Duration {
    (limit / 4).clamp(Duration::from_millis(1), Duration::from_secs(1))
}

/// A started watchdog and what it watches.
type Started = (Watchdog, &'static dyn Watched);

/// What the watchdog of this process remembers (a forked child starts afresh).
fn state() -> &'static Mutex<Option<Started>> {
    static STATE: PerProcess<Mutex<Option<Started>>> = PerProcess::new();
    STATE.get_or_make(|| Mutex::new(None), |_| {})
}

/// Looks once and says what there is to say, under the watchdog's lock, so that lines come in order.
fn look_and_say(limit: Duration, watched: &'static dyn Watched) {
    let mut state = lock(state());
    let (watchdog, watched) = state.get_or_insert_with(|| (Watchdog::new(limit), watched));
    for line in watchdog.look(*watched) {
        log::watchdog(line);
    }
}

/// The program ends: one last look, so that a slow call that finished since the last one, or one
/// still open, is said. Called once, at exit, by [`super::report_at_exit`]; nothing when the
/// watchdog never started.
pub fn finish() {
    let started = lock(state())
        .as_ref()
        .map(|(watchdog, watched)| (watchdog.limit_ns, *watched));
    if let Some((limit_ns, watched)) = started {
        look_and_say(Duration::from_nanos(limit_ns), watched);
    }
}

/// How messages name an opcode: libc's by name, user opcodes with their handler.
fn describe_opcode(opcode: u16, watched: &dyn Watched) -> String {
    if opcode < ffi::opcode::FIRST_USER {
        return ffi::opcode::Label(opcode).to_string();
    }
    match watched.handler_name(opcode) {
        Some(name) => format!("user opcode {opcode:#06x} ({name})"),
        None => format!("user opcode {opcode:#06x} (no handler registered)"),
    }
}

/// A call being served, as the watchdog saw it.
struct Seen {
    device: usize,
    port: u32,
    opcode: u16,
    /// When it was seen: by the serving thread (exact), or, when that thread read no clock, by the
    /// watchdog's first look.
    began_ns: u64,
    /// Whether its end will be told by [`Watched::ended_calls`] (the serving thread read the clock),
    /// so that the watchdog waits for that instead of guessing.
    timed: bool,
    reported: bool,
}

/// What the watchdog remembers between looks.
pub struct Watchdog {
    limit_ns: u64,
    /// Calls being served, by slot and call serial.
    serving: HashMap<(usize, u64), Seen>,
    /// Requests nobody serves yet, by (device, port, which request: the port window's served count
    /// when serving port by port, else the client's word): when first seen, whether reported.
    waiting: HashMap<(usize, u32, u32), (u64, bool)>,
}

impl Watchdog {
    /// A watchdog for calls open longer than `limit`.
    pub fn new(limit: Duration) -> Watchdog {
        Watchdog {
            limit_ns: limit.as_nanos() as u64,
            serving: HashMap::new(),
            waiting: HashMap::new(),
        }
    }

    /// Looks at every call `watched` is serving and every request waiting in it; returns the lines
    /// to report.
    pub fn look(&mut self, watched: &dyn Watched) -> Vec<String> {
        let now = crate::util::clock::now_ns();
        let mut lines = Vec::new();
        let mut being_served = HashSet::new();
        let mut still_open = HashSet::new();
        for call in watched.open_calls() {
            being_served.insert((call.device, call.port));
            let key = (call.slot, call.serial);
            still_open.insert(key);
            let seen = self.serving.entry(key).or_insert(Seen {
                device: call.device,
                port: call.port,
                opcode: call.opcode,
                began_ns: call.began_ns.unwrap_or(now),
                timed: call.began_ns.is_some(),
                reported: false,
            });
            let open_ns = now.saturating_sub(seen.began_ns);
            if open_ns >= self.limit_ns && !seen.reported {
                seen.reported = true;
                lines.push(format!(
                    "device {} port {}: host call {} has been open for {} ms; the kernel waits for it",
                    call.device,
                    call.port,
                    describe_opcode(call.opcode, watched),
                    open_ns / 1_000_000
                ));
            }
        }
        // Asked after the open calls: a call that ended in between is in this list.
        for slow in watched.ended_calls() {
            let call = slow.call;
            let lasted_ms = slow.ended_ns.saturating_sub(call.began_ns.unwrap_or(slow.ended_ns)) / 1_000_000;
            let reported = self
                .serving
                .remove(&(call.slot, call.serial))
                .is_some_and(|seen| seen.reported);
            lines.push(if reported {
                format!(
                    "device {} port {}: host call {} finished after {lasted_ms} ms",
                    call.device,
                    call.port,
                    describe_opcode(call.opcode, watched)
                )
            } else {
                format!(
                    "device {} port {}: host call {} took {lasted_ms} ms (more than OMPRPC_WATCHDOG_MS={})",
                    call.device,
                    call.port,
                    describe_opcode(call.opcode, watched),
                    self.limit_ns / 1_000_000
                )
            });
        }
        self.serving.retain(|key, call| {
            if still_open.contains(key) {
                return true;
            }
            if call.timed && call.reported {
                // Its end is on its way from the serving thread; say it with its own duration.
                return true;
            }
            if call.reported {
                lines.push(format!(
                    "device {} port {}: host call {} finished after about {} ms",
                    call.device,
                    call.port,
                    describe_opcode(call.opcode, watched),
                    now.saturating_sub(call.began_ns) / 1_000_000
                ));
            }
            false
        });
        let mut seen = HashSet::new();
        let mut status = None;
        for request in watched.waiting_requests() {
            let WaitingRequest {
                device,
                port,
                opcode,
                which,
            } = request;
            if being_served.contains(&(device, port)) {
                continue;
            }
            let key = (device, port, which);
            seen.insert(key);
            let (since, reported) = self.waiting.entry(key).or_insert((now, false));
            if !*reported && now.saturating_sub(*since) >= self.limit_ns {
                *reported = true;
                let status = *status.get_or_insert_with(|| watched.status());
                let why = if status.threads == 0 {
                    "no thread is serving host calls (none is alive)".to_string()
                } else if !status.kernels_in_flight {
                    "host calls are served only while the plugin knows of a kernel that may call the host, and it knows of none".to_string()
                } else {
                    "every serving thread is held up".to_string()
                };
                lines.push(format!(
                    "device {device} port {port}: a kernel called the host ({}) {} ms ago and nothing serves it: {why}",
                    describe_opcode(opcode, watched),
                    now.saturating_sub(*since) / 1_000_000
                ));
            }
        }
        self.waiting.retain(|key, _| seen.contains(key));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::serving::server::tests::CountingMemory;
    use crate::rpc::serving::server::RpcServer;
    use crate::rpc::serving::watched::{waiting_in, SERVING};
    use crate::rpc::serving::{registry, threads};
    use crate::rpc::simulated::{SimulatedDevice, SimulatedWarp};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// The serving side, with the waiting requests of these servers only.
    struct Only<'a>(&'a [Arc<RpcServer>]);

    impl Watched for Only<'_> {
        fn open_calls(&self) -> Vec<OpenCall> {
            SERVING.open_calls()
        }

        fn ended_calls(&self) -> Vec<EndedCall> {
            SERVING.ended_calls()
        }

        fn waiting_requests(&self) -> Vec<WaitingRequest> {
            waiting_in(self.0)
        }

        fn status(&self) -> ServingStatus {
            SERVING.status()
        }

        fn handler_name(&self, opcode: u16) -> Option<String> {
            SERVING.handler_name(opcode)
        }
    }

    /// Sleeps 400 ms, then echoes.
    struct Slow;

    impl crate::rpc::serving::handlers::UserHandler for Slow {
        fn serve(&self, port: &mut crate::rpc::protocol::port::Port<'_>) {
            let mut packets = port.lane_packets();
            port.recv(&mut packets).unwrap();
            std::thread::sleep(Duration::from_millis(400));
            port.send(&packets).unwrap();
        }

        fn name(&self) -> String {
            "handler slow()".into()
        }
    }

    /// Echoes at once.
    struct Quick;

    impl crate::rpc::serving::handlers::UserHandler for Quick {
        fn serve(&self, port: &mut crate::rpc::protocol::port::Port<'_>) {
            let mut packets = port.lane_packets();
            port.recv(&mut packets).unwrap();
            port.send(&packets).unwrap();
        }
    }

    /// Looks every 10 ms while `work` runs on another thread, then once more; the lines about `device`.
    fn watch_while(
        watchdog: &mut Watchdog,
        device: usize,
        servers: &[Arc<RpcServer>],
        work: impl FnOnce() + Send,
    ) -> Vec<String> {
        let done = AtomicBool::new(false);
        let mut lines = Vec::new();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                work();
                done.store(true, Ordering::SeqCst);
            });
            while !done.load(Ordering::SeqCst) {
                lines.extend(watchdog.look(&Only(servers)));
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        lines.extend(watchdog.look(&Only(servers)));
        let mine = format!("device {device} ");
        lines.into_iter().filter(|l| l.starts_with(&mine)).collect()
    }

    #[test]
    fn reports_a_stuck_handler_once_and_when_it_finishes_and_is_quiet_otherwise() {
        const SLOW: u16 = 0xA6A0;
        const QUICK: u16 = 0xA6A1;
        registry::register_handler(SLOW, Box::new(Slow)).unwrap();
        registry::register_handler(QUICK, Box::new(Quick)).unwrap();
        let server = RpcServer::new(90, 4, 32, Arc::new(CountingMemory::default())).unwrap();
        threads::put_in_service(Arc::clone(&server)).unwrap();
        threads::kernel_started().unwrap();
        let device = SimulatedDevice::new(Arc::clone(&server));
        let mut watchdog = Watchdog::new(Duration::from_millis(100));
        let quiet = watch_while(&mut watchdog, 90, &[], || {
            let warp = SimulatedWarp::new(&device, 1);
            for i in 0..2_000u64 {
                assert_eq!(warp.call(QUICK, 0xF, &[[i; 8]; 32])[3][0], i);
            }
        });
        assert_eq!(quiet, Vec::<String>::new(), "quick calls are not reported");
        let lines = watch_while(&mut watchdog, 90, &[], || {
            SimulatedWarp::new(&device, 2).call(SLOW, 1, &[[1; 8]; 32]);
        });
        assert_eq!(lines.len(), 2, "{lines:#?}");
        assert!(
            lines[0].starts_with("device 90 port 2: host call user opcode 0xa6a0 (handler slow()) has been open for 1"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1]
                .starts_with("device 90 port 2: host call user opcode 0xa6a0 (handler slow()) finished after about"),
            "{}",
            lines[1]
        );
        threads::kernels_finished(1);
        drop(device);
        registry::remove_server(&server).unwrap();
        server.shutdown().unwrap();
    }

    #[test]
    fn reports_a_call_that_nothing_serves() {
        const LATE: u16 = 0xA6A2;
        registry::register_handler(LATE, Box::new(Quick)).unwrap();
        // A server out of service: nobody serves its calls.
        let server = RpcServer::new(91, 4, 1, Arc::new(CountingMemory::default())).unwrap();
        server.install_user_opcode(registry::registered(LATE).unwrap()).unwrap();
        let device = SimulatedDevice::new(Arc::clone(&server));
        let mut watchdog = Watchdog::new(Duration::from_millis(50));
        let servers = [Arc::clone(&server)];
        let lines = std::thread::scope(|scope| {
            let caller = scope.spawn(|| SimulatedWarp::new(&device, 3).call(LATE, 1, &[[5; 8]]));
            let mut lines = Vec::new();
            for _ in 0..30 {
                lines.extend(watchdog.look(&Only(&servers)));
                std::thread::sleep(Duration::from_millis(10));
            }
            // Serve it here, so that the caller ends.
            while !caller.is_finished() {
                server.serve_all_ports();
            }
            lines
        });
        let lines: Vec<String> = lines.into_iter().filter(|l| l.starts_with("device 91 ")).collect();
        assert_eq!(lines.len(), 1, "once per call: {lines:#?}");
        assert!(
            lines[0].starts_with(
                "device 91 port 3: a kernel called the host (user opcode 0xa6a2 (a handler registered from Rust))"
            ),
            "{}",
            lines[0]
        );
        assert!(lines[0].contains("and nothing serves it: "), "{}", lines[0]);
        drop((device, servers));
        server.shutdown().unwrap();
    }
}
