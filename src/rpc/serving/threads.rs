//! The threads that serve every device with an RPC server. One of them, the *scanner*, looks at every
//! server while any kernel that may call the host is running. After a call it spins for `SPIN_FOR`
//! (a device that calls often is answered at once), then sleeps on the [`DOORBELL`]: device code that
//! can wake the host rings it after writing a request (the host device's threads, and AMD GPUs through
//! an HSA signal), so a kernel that computes without calling costs no CPU; for servers whose clients
//! cannot ring (NVIDIA GPUs, LLVM libc's own client) the sleeps are short and grow to the most
//! `OMPRPC_RPC_WAIT` allows, so a call after a lull waits at most that long
//! ([`crate::util::config::RpcWait`]; `spin` keeps the scanner on its core instead, yielding it between
//! looks). When no such kernel runs the scanner sleeps until one starts.
//!
//! A *stand-by* thread looks every millisecond ([`TAKEOVER_AFTER`]) at what the scanner serves; when
//! it sees one call at two looks in a row (a handler reading stdin, a write to a slow file system), the
//! stand-by becomes the scanner and starts a new stand-by, so that other ports and other devices are
//! not held up by one slow call. The thread that was held up stands by, or ends if another thread
//! stands by already. While the scanner sleeps the stand-by sleeps too, until the scanner serves
//! again. Calls of one user opcode still reach their handler one at a time (the handler's own lock).
//!
//! [`ServingThreads`] owns them: one per process, started in one place (`ServingThreads::start`,
//! when the first server is put in service, and tried again by a kernel that may call the host if
//! that failed), so a program that never uses host services never has them. They are detached, not
//! joined: they serve every device of every plugin of the process (the plugin stays loaded, linked
//! `-z nodelete`), a device's teardown needs only that none holds its server (they hold none while
//! they sleep, see [`crate::rpc::serving::registry::remove_server`]), and at exit a thread in a
//! handler that never returns would make a join wait for ever.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::rpc::calls::{self, CallSlot};
use crate::rpc::serving::registry;
use crate::rpc::serving::server::RpcServer;
use crate::util::config::RpcWait;
use crate::util::doorbell::Doorbell;
use crate::util::error::{Error, Result};
use crate::util::sync::{lock, PerProcess};
use crate::util::{fault, log};

/// The doorbell the serving threads sleep on: rung by device code that can wake the host (its
/// address is written into the images of the host device; AMD's signal handler rings it), and by
/// the plugin when a kernel that may call the host starts. A plain static, not per process: the
/// images of a forked child still hold its address.
pub static DOORBELL: Doorbell = Doorbell::new();

/// The serving threads of this process, and what they need to share.
pub struct ServingThreads {
    /// Kernels in flight on devices with a server.
    active: AtomicUsize,
    /// Whether the scanner has served nothing since it last slept: the stand-by then looks less often.
    scanner_idle: AtomicBool,
    /// Whether the serving thread runs; a failed start is tried again by the next kernel.
    running: AtomicBool,
    /// Held while starting the thread.
    starting: Mutex<()>,
    /// The call slot of the scanning thread (null before the first one runs).
    scanner: AtomicPtr<CallSlot>,
    /// Threads standing by.
    standing_by: AtomicUsize,
    /// Serving threads alive.
    threads: AtomicUsize,
}

impl ServingThreads {
    fn new() -> ServingThreads {
        ServingThreads {
            active: AtomicUsize::new(0),
            scanner_idle: AtomicBool::new(true),
            running: AtomicBool::new(false),
            starting: Mutex::new(()),
            scanner: AtomicPtr::new(std::ptr::null_mut()),
            standing_by: AtomicUsize::new(0),
            threads: AtomicUsize::new(0),
        }
    }
}

/// The serving threads of this process. A forked child, whose serving threads did not survive the
/// fork, gets new ones (the old owner, whose locks may have been held by threads that are gone, is
/// leaked).
fn service() -> &'static ServingThreads {
    static SERVICE: PerProcess<ServingThreads> = PerProcess::new();
    SERVICE.get_or_make(ServingThreads::new, |fresh| {
        // The servers were put in service before the fork; serve them in this process too. If the
        // threads cannot start now, the child's first kernel that may call the host tries again (and
        // fails its launch if they still cannot).
        if let Err(e) = fresh.start() {
            log::error(format_args!("in a forked child: {e}"));
        }
    })
}

/// Puts `server` in service: starts the serving threads unless they run (an error if they cannot:
/// without them the device's calls would wait for ever), arranges for the reports at exit, and adds
/// the server, with every registered handler, to the servers they serve.
pub fn put_in_service(server: std::sync::Arc<RpcServer>) -> Result<()> {
    service().start()?;
    crate::rpc::observing::report_at_exit_when_asked();
    registry::add_server(server)
}

/// How long the scanner looks again and again with nothing to serve before it sleeps (or, with
/// `OMPRPC_RPC_WAIT=spin`, only yields the processor between looks). A time, not a number of polls: a
/// poll of many ports takes longer than one of a few. Long enough that a device calling in a loop is
/// answered without a sleep between its calls, short enough to cost little after a kernel's last call
/// (`docs/measurements.md`, "Waiting for host calls").
const SPIN_FOR: Duration = Duration::from_micros(50);
/// After the first call it serves on waking, the scanner polls this long without yielding, then yields
/// the processor between polls for the rest of [`SPIN_FOR`], so that a host-device thread that shares
/// its core (the scheduler often wakes the scanner on the core of the thread that rang) gets to make
/// its next call without waiting for the spin to end. After other calls, calls made back to back, it
/// spins the whole time: yielding between them slowed them by a fifth (`docs/measurements.md`,
/// "Waiting for host calls").
const SPIN_WITHOUT_YIELDING_AFTER_WAKING: Duration = Duration::from_micros(5);
/// The first sleep of a lull on servers whose clients cannot ring; each next sleep doubles, up to the
/// most that `OMPRPC_RPC_WAIT` allows.
const FIRST_NAP: Duration = Duration::from_micros(8);
/// The longest nap of `OMPRPC_RPC_WAIT=adaptive` in a lull shorter than [`LONG_LULL`]: a call after
/// a pause of up to a few hundred milliseconds, on a device that cannot ring, is seen within this.
const LONGEST_NAP: Duration = Duration::from_micros(200);
/// A lull this long makes `adaptive` naps grow on, each at most a hundredth of the lull so far
/// ([`LULL_PER_NAP`]) and never more than [`LONGEST_NAP_IN_LONG_LULL`]: a kernel that has not called
/// for a quarter of a second is computing, a call after such a lull is slowed by at most 1% of it,
/// and each nap costs a wake-up (20-40 us of CPU on a virtual machine), so 5,000 naps a second would
/// cost a tenth of a core for as long as it computes (`docs/measurements.md`, "Waiting for host
/// calls").
const LONG_LULL: Duration = Duration::from_millis(250);
/// How many times longer than a nap a long lull has lasted, at least.
const LULL_PER_NAP: u32 = 100;
/// The longest `adaptive` nap, reached after a lull of a second: 100 wake-ups a second.
const LONGEST_NAP_IN_LONG_LULL: Duration = Duration::from_millis(10);
/// How long the scanner sleeps on servers whose clients all ring before it looks anyway: a safety net,
/// at a cost of 10 wake-ups a second, never the way calls are found.
const LOOK_ANYWAY_AFTER: Duration = Duration::from_millis(100);
/// Polls between two looks at the clock while spinning.
const POLLS_PER_LOOK: u32 = 32;
/// How often the stand-by thread looks at the scanner: a call seen at two looks in a row (so one that
/// has held the scanner for one to two of these) makes it take over the scan.
pub const TAKEOVER_AFTER: Duration = Duration::from_millis(1);
/// How often the stand-by looks at a scanner that was idle at its last look. A call that starts after a
/// lull and then holds the scanner up is taken over within this and [`TAKEOVER_AFTER`]; looking more
/// often would cost CPU in every quiet kernel, and waking the stand-by for each call after a lull
/// would add a wake-up to its latency (`docs/measurements.md`, "Waiting for host calls").
const IDLE_LOOK_EVERY: Duration = Duration::from_millis(10);
/// Most serving threads at once; with this many held up by slow calls, further calls wait.
const MAX_THREADS: usize = 16;

impl ServingThreads {
    /// Starts the scanner, a stand-by thread and the watchdog (when asked for), unless they run.
    /// Without a scanner a kernel that calls the host would wait for ever (on the host device the
    /// kernel runs on the thread that launched it), so a failure is an error for the caller, and
    /// the next call tries again.
    fn start(&'static self) -> Result<()> {
        if self.running.load(Ordering::Acquire) {
            return Ok(());
        }
        let _starting = lock(&self.starting);
        if self.running.load(Ordering::Acquire) {
            return Ok(());
        }
        spawn_serving_thread(self, Role::Scan)?;
        crate::rpc::observing::watchdog::start(&super::watched::SERVING);
        // Without a stand-by, calls still get served, only one at a time: not a reason to fail.
        if let Err(e) = spawn_serving_thread(self, Role::StandBy) {
            log::info(format_args!("{e}; host calls are served one at a time"));
        }
        self.running.store(true, Ordering::Release);
        Ok(())
    }
}

/// What a serving thread does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Polls every server.
    Scan,
    /// Takes over the scan when a call holds the scanner up.
    StandBy,
}

fn spawn_serving_thread(service: &'static ServingThreads, role: Role) -> Result<()> {
    let no_threads_left = Err(std::io::Error::from_raw_os_error(libc::EAGAIN));
    service.threads.fetch_add(1, Ordering::AcqRel);
    if role == Role::StandBy {
        service.standing_by.fetch_add(1, Ordering::AcqRel);
    }
    let spawned = fault::call_or("pthread_create", no_threads_left, || {
        std::thread::Builder::new()
            .name("omprpc-rpc".into())
            .spawn(move || serve_forever(service, role))
    });
    match spawned {
        Ok(_) => Ok(()),
        Err(e) => {
            service.threads.fetch_sub(1, Ordering::AcqRel);
            if role == Role::StandBy {
                service.standing_by.fetch_sub(1, Ordering::AcqRel);
            }
            Err(Error::Os {
                call: "pthread_create of the RPC serving thread",
                detail: e.to_string(),
            })
        }
    }
}

/// A kernel that may call the host is about to be launched: serve until [`kernels_finished`] says it
/// ended. Fails, counting nothing, when the serving thread cannot be started.
pub fn kernel_started() -> Result<()> {
    let service = service();
    service.start()?;
    if service.active.fetch_add(1, Ordering::SeqCst) == 0 {
        DOORBELL.ring();
    }
    Ok(())
}

/// How the serving threads stand, for the watchdog's explanation of a call nobody serves.
pub fn status() -> crate::rpc::observing::watchdog::ServingStatus {
    let service = service();
    crate::rpc::observing::watchdog::ServingStatus {
        threads: service.threads.load(Ordering::Acquire),
        kernels_in_flight: service.active.load(Ordering::SeqCst) > 0,
    }
}

/// `count` kernels counted by [`kernel_started`] have ended.
pub fn kernels_finished(count: usize) {
    if count > 0 {
        // Saturating: kernels counted before a fork belong to the parent's service.
        let _ = service()
            .active
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| Some(n.saturating_sub(count)));
    }
}

fn serve_forever(service: &'static ServingThreads, mut role: Role) {
    precise_sleeps();
    let me = calls::my_slot() as *const CallSlot as *mut CallSlot;
    if role == Role::Scan {
        service.scanner.store(me, Ordering::Release);
    }
    loop {
        // A panic here is a bug; the thread keeps its role rather than leave the devices unserved.
        let ran = std::panic::catch_unwind(|| match role {
            Role::Scan => scan(service, me),
            Role::StandBy => stand_by(service, me),
        });
        let next = ran.unwrap_or_else(|_| {
            log::error("the RPC serving thread recovered from an internal error");
            role
        });
        let demoted = role == Role::Scan && next == Role::StandBy;
        role = next;
        if demoted && service.standing_by.fetch_add(1, Ordering::AcqRel) > 0 {
            // Held up by a slow call, and another thread stands by already.
            service.standing_by.fetch_sub(1, Ordering::AcqRel);
            service.threads.fetch_sub(1, Ordering::AcqRel);
            return;
        }
    }
}

/// Asks the kernel to end this thread's timed sleeps when they are due, not up to 50 µs later (its
/// default slack): the backoff's short sleeps are the latency of a call after a lull.
fn precise_sleeps() {
    const SLACK_NS: libc::c_ulong = 1_000;
    // SAFETY: PR_SET_TIMERSLACK takes a number and touches no memory of ours.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, SLACK_NS, 0, 0, 0) };
}

/// Sleeps, holding no server, until a kernel that may call the host runs.
fn wait_for_kernels(service: &ServingThreads) {
    while service.active.load(Ordering::SeqCst) == 0 {
        DOORBELL.sleep_unless(None, || service.active.load(Ordering::SeqCst) != 0);
    }
}

/// Looks at every server while this thread is the scanner; returns when another thread took over.
fn scan(service: &'static ServingThreads, me: *mut CallSlot) -> Role {
    let wait = crate::util::config::host_services().rpc_wait;
    let mut quiet = Quiet::default();
    let mut seen = registry::generation();
    let mut servers = registry::servers();
    loop {
        if service.scanner.load(Ordering::Acquire) != me {
            return Role::StandBy;
        }
        if service.active.load(Ordering::SeqCst) == 0 {
            // Hold no server while asleep, so that a device's teardown need not wait for this thread.
            drop(servers);
            service.scanner_idle.store(true, Ordering::SeqCst);
            wait_for_kernels(service);
            seen = registry::generation();
            servers = registry::servers();
            quiet = Quiet::default();
        }
        let generation = registry::generation();
        if generation != seen {
            seen = generation;
            servers = registry::servers();
        }
        let mut served = false;
        for server in servers.iter() {
            served |= server.serve_once();
        }
        if served {
            quiet = Quiet::default();
            serving_again(service);
            continue;
        }
        match quiet.next(wait, || servers.iter().all(|server| server.rung())) {
            Pause::Spin => std::hint::spin_loop(),
            Pause::Yield => std::thread::yield_now(),
            Pause::Sleep(timeout) => {
                drop(servers);
                service.scanner_idle.store(true, Ordering::SeqCst);
                let found = DOORBELL.sleep_unless(timeout, || {
                    service.active.load(Ordering::SeqCst) == 0 || serve_every_port()
                });
                // Every port is looked at after a sleep, not one part of the scan: the call that woke
                // the thread may be on any of them.
                if found || serve_every_port() {
                    quiet = Quiet::after_waking();
                    serving_again(service);
                }
                seen = registry::generation();
                servers = registry::servers();
            }
        }
    }
}

/// Serves every port of every server once; whether any request was served here. A request another
/// thread is serving, or whose handler is busy, waits without keeping this thread awake.
fn serve_every_port() -> bool {
    let mut served = false;
    for server in registry::servers().iter() {
        served |= server.serve_all_ports();
    }
    served
}

/// The scanner served after it was idle: the stand-by goes back to looking every [`TAKEOVER_AFTER`].
fn serving_again(service: &ServingThreads) {
    if service.scanner_idle.load(Ordering::Relaxed) {
        service.scanner_idle.store(false, Ordering::Relaxed);
    }
}

/// What the scanner does when a look found nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pause {
    /// Looks again at once.
    Spin,
    /// Gives the processor away, then looks again (`OMPRPC_RPC_WAIT=spin`).
    Yield,
    /// Sleeps until the doorbell rings, at most this long (`None`: until it rings).
    Sleep(Option<Duration>),
}

/// How long the scanner has found nothing to serve.
#[derive(Default)]
struct Quiet {
    polls: u32,
    /// When the clock was first looked at in this lull.
    since: Option<Instant>,
    /// How long the lull had lasted at the last look at the clock.
    lasted: Duration,
    /// The last sleep on servers whose clients cannot ring.
    nap: Option<Duration>,
    /// How long to poll without yielding: [`SPIN_FOR`], or less after the first call served on waking.
    spin_without_yielding: Option<Duration>,
}

impl Quiet {
    /// The lull after the first call served on waking.
    fn after_waking() -> Quiet {
        Quiet {
            spin_without_yielding: Some(SPIN_WITHOUT_YIELDING_AFTER_WAKING),
            ..Quiet::default()
        }
    }

    /// One more look found nothing: what to do before the next, under `wait`. `all_rung` says whether
    /// every server's clients ring the doorbell (asked only once the spin is over).
    fn next(&mut self, wait: RpcWait, all_rung: impl FnOnce() -> bool) -> Pause {
        if self.lasted < SPIN_FOR {
            self.polls += 1;
            if self.polls.is_multiple_of(POLLS_PER_LOOK) {
                let now = Instant::now();
                self.lasted = now.duration_since(*self.since.get_or_insert(now));
            }
            if self.lasted < self.spin_without_yielding.unwrap_or(SPIN_FOR) {
                return Pause::Spin;
            }
            if self.lasted < SPIN_FOR {
                return Pause::Yield;
            }
        }
        let longest = match wait {
            RpcWait::Spin => return Pause::Yield,
            _ if all_rung() => return Pause::Sleep(Some(LOOK_ANYWAY_AFTER)),
            RpcWait::Sleep { longest } => longest,
            RpcWait::Adaptive => {
                let lull = self.since.get_or_insert_with(Instant::now).elapsed();
                if lull < LONG_LULL {
                    LONGEST_NAP
                } else {
                    (lull / LULL_PER_NAP).min(LONGEST_NAP_IN_LONG_LULL)
                }
            }
        };
        let nap = self.nap.map_or(FIRST_NAP, |last| last * 2).min(longest);
        self.nap = Some(nap);
        Pause::Sleep(Some(nap))
    }
}

/// Looks at the scanner while kernels run, every [`TAKEOVER_AFTER`] while it serves and every
/// [`IDLE_LOOK_EVERY`] while it is idle; takes over the scan when one call has held the scanner longer
/// than [`TAKEOVER_AFTER`], starting a new stand-by thread.
fn stand_by(service: &'static ServingThreads, me: *mut CallSlot) -> Role {
    // The scanner's call seen at the last look: the same call at two looks a tick apart has held the
    // scanner for at least a tick.
    let mut last_seen: Option<(*mut CallSlot, u64)> = None;
    loop {
        if service.active.load(Ordering::SeqCst) == 0 {
            wait_for_kernels(service);
            last_seen = None;
        }
        let idle = service.scanner_idle.load(Ordering::Relaxed) && last_seen.is_none();
        std::thread::sleep(if idle { IDLE_LOOK_EVERY } else { TAKEOVER_AFTER });
        let scanner = service.scanner.load(Ordering::Acquire);
        // SAFETY: slots are leaked, so the pointer (set from `my_slot` of a serving thread) is valid.
        let now_serving = unsafe { scanner.as_ref() }
            .and_then(CallSlot::current)
            .map(|call| (scanner, call.serial));
        let held_up = now_serving.is_some() && now_serving == last_seen;
        last_seen = now_serving;
        if !held_up
            || service
                .scanner
                .compare_exchange(scanner, me, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            continue;
        }
        service.standing_by.fetch_sub(1, Ordering::AcqRel);
        if service.threads.load(Ordering::Acquire) < MAX_THREADS {
            if let Err(e) = spawn_serving_thread(service, Role::StandBy) {
                log::info(format_args!("{e}; no thread stands by for another slow host call"));
            }
        }
        return Role::Scan;
    }
}

/// Serves every request that the servers of device `device` hold now, and waits, at most `limit`, for
/// those other threads are serving to be done: what kernels of that device that just ended left behind
/// (their one-way calls, which they did not wait for) is then served, its messages written and its
/// statistics counted. Only that device's servers, so that a slow call of another device does not
/// hold up this one's synchronisation (servers are told apart by device number: a process with two
/// GPU plugins may wait for the other plugin's device of the same number, at most `limit`).
/// Allocates nothing unless a request waits on another thread.
pub fn serve_what_is_waiting(device: usize, limit: Duration) {
    let all = registry::servers();
    let servers = || {
        all.iter()
            .filter(move |server| server.owner() == crate::rpc::protocol::Owner::Device(device))
    };
    let serve_all = || {
        let mut served = false;
        for server in servers() {
            served |= server.serve_all_ports();
        }
        served
    };
    while serve_all() {}
    if !servers().any(|server| server.has_waiting()) {
        return;
    }
    let waiting: Vec<_> = servers().map(|server| server.waiting_now()).collect();
    let started = Instant::now();
    let mut nap = Duration::from_micros(1);
    while !servers().zip(&waiting).all(|(server, ports)| server.served_all(ports)) {
        if started.elapsed() >= limit {
            return;
        }
        if serve_all() {
            nap = Duration::from_micros(1);
        } else {
            // Another thread is in the call: wait for it without taking a core.
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_micros(500));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pauses of a lull that has spun its [`SPIN_FOR`] and began `ago`, until one is `Yield` or
    /// the naps stop growing.
    fn naps_after(ago: Duration, wait: RpcWait, all_rung: bool) -> Vec<Pause> {
        let mut quiet = Quiet {
            since: Instant::now().checked_sub(ago),
            lasted: SPIN_FOR,
            ..Quiet::default()
        };
        let mut pauses: Vec<Pause> = Vec::new();
        loop {
            let pause = quiet.next(wait, || all_rung);
            if pauses.last() == Some(&pause) || pauses.len() > 20 {
                return pauses;
            }
            pauses.push(pause);
        }
    }

    #[test]
    fn naps_grow_with_the_lull_as_the_setting_allows() {
        let us = Duration::from_micros;
        let short: Vec<Pause> = [8, 16, 32, 64, 128, 200].map(|n| Pause::Sleep(Some(us(n)))).into();
        assert_eq!(naps_after(Duration::ZERO, RpcWait::Adaptive, false), short);
        // Past LONG_LULL the naps grow on, to a hundredth of the lull (3 ms after 300 ms, a little
        // more by the time it is reached), never beyond 10 ms.
        let mut long = short.clone();
        long.pop();
        long.extend([256, 512, 1024, 2048].map(|n| Pause::Sleep(Some(us(n)))));
        let after_300_ms = naps_after(Duration::from_millis(300), RpcWait::Adaptive, false);
        assert_eq!(after_300_ms[..long.len()], long[..]);
        let Some(Pause::Sleep(Some(last))) = after_300_ms.get(long.len()) else {
            panic!("{after_300_ms:?}")
        };
        assert!((us(3000)..us(3100)).contains(last), "{after_300_ms:?}");
        long.extend([4096, 8192, 10_000].map(|n| Pause::Sleep(Some(us(n)))));
        assert_eq!(naps_after(Duration::from_secs(5), RpcWait::Adaptive, false), long);
        // A number is the longest nap, however long the lull.
        let fixed = RpcWait::Sleep { longest: us(100) };
        let capped: Vec<Pause> = [8, 16, 32, 64, 100].map(|n| Pause::Sleep(Some(us(n)))).into();
        assert_eq!(naps_after(Duration::from_secs(5), fixed, false), capped);
        // Rung servers sleep until the bell, looking anyway now and then; `spin` never sleeps.
        let rung = vec![Pause::Sleep(Some(LOOK_ANYWAY_AFTER))];
        assert_eq!(naps_after(Duration::from_secs(5), RpcWait::Adaptive, true), rung);
        assert_eq!(naps_after(Duration::ZERO, RpcWait::Spin, false), vec![Pause::Yield]);
    }

    #[test]
    fn a_serving_thread_that_cannot_start_is_an_error_and_is_tried_again() {
        // A service of its own, so that the process's serving thread (which other tests start) does
        // not count; its thread sleeps until the test process ends.
        let service: &'static ServingThreads = Box::leak(Box::new(ServingThreads::new()));
        fault::arm("pthread_create");
        let err = service.start().unwrap_err().to_string();
        assert_eq!(
            err,
            "pthread_create of the RPC serving thread failed: Resource temporarily unavailable (os error 11)"
        );
        assert!(!service.running.load(Ordering::Acquire));
        service.start().unwrap();
        assert!(service.running.load(Ordering::Acquire));
        service.start().unwrap();
    }

    /// Holds every call until the test opens its gate, then echoes; counts the calls it finished.
    struct Gated {
        open: std::sync::Mutex<bool>,
        opened: std::sync::Condvar,
        finished: AtomicUsize,
    }

    impl Gated {
        fn new() -> std::sync::Arc<Self> {
            std::sync::Arc::new(Gated {
                open: std::sync::Mutex::new(false),
                opened: std::sync::Condvar::new(),
                finished: AtomicUsize::new(0),
            })
        }

        fn open(&self) {
            *self.open.lock().unwrap() = true;
            self.opened.notify_all();
        }
    }

    impl crate::rpc::serving::handlers::UserHandler for std::sync::Arc<Gated> {
        fn serve(&self, port: &mut crate::rpc::protocol::port::Port<'_>) {
            let mut packets = port.lane_packets();
            port.recv(&mut packets).unwrap();
            let guard = self.open.lock().unwrap();
            drop(self.opened.wait_while(guard, |open| !*open).unwrap());
            self.finished.fetch_add(1, Ordering::SeqCst);
            port.send(&packets).unwrap();
        }
    }

    /// Echoes every lane's packet, plus one.
    struct Echo;

    impl crate::rpc::serving::handlers::UserHandler for Echo {
        fn serve(&self, port: &mut crate::rpc::protocol::port::Port<'_>) {
            let mut packets = port.lane_packets();
            let lanes = port.recv(&mut packets).unwrap() as usize;
            for packet in packets.iter_mut().take(lanes) {
                packet.data[0] += 1;
            }
            port.send(&packets).unwrap();
        }
    }

    #[test]
    fn a_slow_handler_holds_up_no_other_port_or_device() {
        use crate::rpc::serving::server::tests::CountingMemory;
        use crate::rpc::serving::server::RpcServer;
        use crate::rpc::simulated::{SimulatedDevice, SimulatedWarp};
        use std::sync::Arc;
        const HELD: u16 = 0xA5A0;
        const ECHO: u16 = 0xA5A1;
        let held = Gated::new();
        registry::register_handler(HELD, Box::new(Arc::clone(&held))).unwrap();
        registry::register_handler(ECHO, Box::new(Echo)).unwrap();
        let servers: Vec<Arc<RpcServer>> = (70..72)
            .map(|device| RpcServer::new(device, 8, 1, Arc::new(CountingMemory::default())).unwrap())
            .collect();
        for server in &servers {
            put_in_service(Arc::clone(server)).unwrap();
        }
        kernel_started().unwrap();
        let devices: Vec<SimulatedDevice> = servers.iter().map(|s| SimulatedDevice::new(Arc::clone(s))).collect();
        std::thread::scope(|scope| {
            // A handler that does not return (it sleeps, reads stdin, waits on a lock) until
            // the other calls are done: they must not wait for it.
            let slow_call = scope.spawn(|| SimulatedWarp::new(&devices[0], 0).call(HELD, 1, &[[7; 8]]));
            // Let the slow call reach its handler first.
            std::thread::sleep(Duration::from_millis(50));
            let (done, finished) = std::sync::mpsc::channel();
            for (device, port) in [(0usize, 4usize), (1, 0), (1, 5)] {
                let devices = &devices;
                let done = done.clone();
                scope.spawn(move || {
                    let warp = SimulatedWarp::new(&devices[device], port);
                    for i in 0..3_400u64 {
                        assert_eq!(warp.call(ECHO, 1, &[[i; 8]])[0][0], i + 1);
                    }
                    done.send(()).unwrap();
                });
            }
            // A generous bound, so that a failing build ends instead of hanging; a passing one
            // finishes the 10,200 calls in well under a second.
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            let callers_done = (0..3)
                .take_while(|_| {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    finished.recv_timeout(left).is_ok()
                })
                .count();
            let slow_call_finished = held.finished.load(Ordering::SeqCst);
            held.open();
            assert_eq!(
                (callers_done, slow_call_finished),
                (3, 0),
                "10,200 calls on other ports and devices did not all finish while the slow call was held"
            );
            assert_eq!(slow_call.join().unwrap()[0][0], 7, "the slow call got its reply");
        });
        kernels_finished(1);
        drop(devices);
        for server in servers {
            registry::remove_server(&server).unwrap();
            server.shutdown().unwrap();
        }
    }

    #[test]
    fn many_calls_of_one_slow_opcode_tie_up_no_serving_threads() {
        use crate::rpc::serving::server::tests::CountingMemory;
        use crate::rpc::serving::server::RpcServer;
        use crate::rpc::simulated::{SimulatedDevice, SimulatedWarp};
        use std::sync::Arc;
        const GATED: u16 = 0xA5B0;
        const ECHO: u16 = 0xA5B1;
        let gated = Gated::new();
        registry::register_handler(GATED, Box::new(Arc::clone(&gated))).unwrap();
        registry::register_handler(ECHO, Box::new(Echo)).unwrap();
        let slow = RpcServer::new(72, 32, 1, Arc::new(CountingMemory::default())).unwrap();
        let quick = RpcServer::new(73, 4, 1, Arc::new(CountingMemory::default())).unwrap();
        for server in [&slow, &quick] {
            put_in_service(Arc::clone(server)).unwrap();
        }
        kernel_started().unwrap();
        let (slow_device, quick_device) = (
            SimulatedDevice::new(Arc::clone(&slow)),
            SimulatedDevice::new(Arc::clone(&quick)),
        );
        // 30 waiting host threads must not starve the serving threads of a 2-core machine.
        slow_device.nap_while_waiting();
        std::thread::scope(|scope| {
            // 30 warps call the held opcode at once: more calls than serving threads may exist.
            // Had each serving thread blocked on the handler's lock, all 16 would be held and
            // the other device's calls would wait for the gate.
            for port in 0..30 {
                let device = &slow_device;
                scope.spawn(move || SimulatedWarp::new(device, port).call(GATED, 1, &[[1; 8]]));
            }
            std::thread::sleep(Duration::from_millis(50));
            let (done, finished) = std::sync::mpsc::channel();
            let quick_device = &quick_device;
            scope.spawn(move || {
                let warp = SimulatedWarp::new(quick_device, 0);
                for i in 0..500u64 {
                    assert_eq!(warp.call(ECHO, 1, &[[i; 8]])[0][0], i + 1);
                }
                done.send(()).unwrap();
            });
            // A generous bound, so that a failing build ends instead of hanging; a passing one
            // finishes the 500 calls in milliseconds.
            let waited = finished.recv_timeout(Duration::from_secs(60));
            let finished_before_the_gate = gated.finished.load(Ordering::SeqCst);
            gated.open();
            assert!(
                waited.is_ok(),
                "another device's 500 calls did not finish while 30 calls of one opcode were held"
            );
            assert_eq!(finished_before_the_gate, 0);
        });
        assert_eq!(gated.finished.load(Ordering::SeqCst), 30);
        assert!(
            status().threads <= MAX_THREADS + 1,
            "{} serving threads",
            status().threads
        );
        kernels_finished(1);
        drop((slow_device, quick_device));
        for server in [slow, quick] {
            registry::remove_server(&server).unwrap();
            server.shutdown().unwrap();
        }
    }
}
