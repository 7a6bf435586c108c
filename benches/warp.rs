//! Host calls from a simulated warp (`omprpc::rpc::simulated`): one host thread plays 1, 32 or 64 lanes
//! of LLVM libc 19.1's protocol against omprpc's RPC server and serving thread, for 16, 256, 1,024 and
//! 4,096 ports. Prints a table of the round trip of one call (one packet per lane each way, every lane
//! active) and the lanes served per second; then what each other loaded image costs a call, as every
//! image has a server of its own (idle servers of the same size in service beside the busy one). The
//! median of several rounds is reported. The port table measures each point in a process of its own,
//! serving port by port (the plugin's way) and with libc's scan of every port (`OMPRPC_RPC_SERVE=scan`,
//! the way before) one after the other, round by round. It also prints one warp's call at 4,096 ports
//! over the same at 16, measured alternately, and the protocol's own floor.
//!
//! Run with `cargo bench --bench warp`.

use std::sync::Arc;
use std::time::Instant;

use omprpc::rpc::protocol::port::{Packet, Port};
use omprpc::rpc::serving::server::RpcServer;
use omprpc::rpc::serving::threads;
use omprpc::rpc::serving::{handlers::UserHandler, registry};
use omprpc::rpc::simulated::{SimulatedDevice, SimulatedWarp};
use omprpc::rpc::HostMemory;

const OP_ECHO: u16 = 0x8501;
const ROUNDS: usize = 7;

/// Sends every lane's packet back.
struct Echo;

impl UserHandler for Echo {
    fn serve(&self, port: &mut Port<'_>) {
        let mut packets = [Packet::default(); 64];
        port.recv(&mut packets).expect("64 packets of room");
        port.send(&packets).expect("64 packets of room");
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Nanoseconds per call of `warps` warps of `lanes` lanes (host threads, each starting from a port of
/// its own, calling at once) on a server of `ports` ports, with `idle` more servers of that size in
/// service (other images' servers, whose code makes no calls): wall time over all calls made.
fn round_trip(ports: u32, lanes: usize, calls: usize, idle: usize, warps: usize) -> f64 {
    let others: Vec<Arc<RpcServer>> = (0..idle)
        .map(|_| {
            let other = RpcServer::new(0, ports, lanes as u32, Arc::new(HostMemory)).unwrap();
            threads::put_in_service(Arc::clone(&other)).unwrap();
            other
        })
        .collect();
    let server = RpcServer::new(0, ports, lanes as u32, Arc::new(HostMemory)).unwrap();
    let device = SimulatedDevice::new(Arc::clone(&server));
    threads::put_in_service(Arc::clone(&server)).unwrap();
    threads::kernel_started().unwrap();
    let per_warp = calls / warps;
    // Every warp makes `each` calls, all at once.
    let run_warps = |each: usize| {
        std::thread::scope(|scope| {
            for w in 0..warps {
                let device = &device;
                scope.spawn(move || {
                    let warp = SimulatedWarp::new(device, w * ports as usize / warps);
                    let mask = warp.full_mask();
                    let packets = vec![[1u64; 8]; lanes];
                    for _ in 0..each {
                        let reply = warp.call(OP_ECHO, mask, &packets);
                        assert_eq!(reply[lanes - 1][0], 1);
                    }
                });
            }
        })
    };
    // Warm up on this server: each warp's first calls open its port's window.
    run_warps(per_warp / 10);
    let start = Instant::now();
    run_warps(per_warp);
    let ns = start.elapsed().as_nanos() as f64 / (per_warp * warps) as f64;
    threads::kernels_finished(1);
    drop(device);
    registry::remove_server(&server).unwrap();
    server.shutdown().unwrap();
    for other in others {
        registry::remove_server(&other).unwrap();
        other.shutdown().unwrap();
    }
    ns
}

/// Nanoseconds per call of one warp of `lanes` lanes against a bare server of `ports` ports: a thread
/// that answers port 0 of the mailbox directly (waits for the request, copies every lane's packet back, flips its
/// word), with neither libc's server nor the plugin. What any server costs with this mailbox protocol
/// on this machine: the floor under the plugin's figure.
fn protocol_floor(ports: u32, lanes: usize, calls: usize) -> f64 {
    use std::sync::atomic::{AtomicBool, Ordering};
    let server = RpcServer::new(0, ports, lanes as u32, Arc::new(HostMemory)).unwrap();
    let device = SimulatedDevice::new(Arc::clone(&server));
    let mailbox = server.mailbox();
    let done = AtomicBool::new(false);
    let ns = std::thread::scope(|scope| {
        scope.spawn(|| {
            let (mine, theirs) = (mailbox.server_word(0), mailbox.client_word(0));
            let mut out = mine.load(Ordering::Relaxed);
            while !done.load(Ordering::Relaxed) {
                if theirs.load(Ordering::Acquire) == out {
                    std::hint::spin_loop();
                    continue;
                }
                for lane in 0..lanes {
                    let packet = mailbox.packet(0, lane);
                    // SAFETY: the port belongs to the server until it flips its word; the packet
                    // lies inside the mailbox, which `server` keeps alive.
                    unsafe { packet.write_volatile(packet.read_volatile()) };
                }
                out ^= 1;
                mine.store(out, Ordering::Release);
            }
        });
        let warp = SimulatedWarp::new(&device, 0);
        let mask = warp.full_mask();
        let packets = vec![[1u64; 8]; lanes];
        let start = Instant::now();
        for _ in 0..calls {
            let reply = warp.call(OP_ECHO, mask, &packets);
            assert_eq!(reply[lanes - 1][0], 1);
        }
        let ns = start.elapsed().as_nanos() as f64 / calls as f64;
        done.store(true, Ordering::Relaxed);
        ns
    });
    drop(device);
    server.shutdown().unwrap();
    ns
}

/// Measures `a` and `b` one after the other, `a` first in even rounds and `b` first in odd ones, so
/// that the machine's drift falls on both; returns (a, b).
fn in_turn(round: usize, a: impl FnOnce() -> f64, b: impl FnOnce() -> f64) -> (f64, f64) {
    if round.is_multiple_of(2) {
        let first = a();
        (first, b())
    } else {
        let first = b();
        (a(), first)
    }
}

/// Pairs measured for [`port_count_ratio`].
const PAIRS: usize = 21;

/// One warp's ns per call at 4,096 ports over the same at 16 ports, pair by pair ([`in_turn`]):
/// median, first and third quartile of the ratios; `call` measures one point (ports, lanes).
fn port_count_ratio(lanes: usize, call: impl Fn(u32, usize) -> f64) -> (f64, f64, f64) {
    let mut ratios: Vec<f64> = (0..PAIRS)
        .map(|pair| {
            let (few, many) = in_turn(pair, || call(16, lanes), || call(4096, lanes));
            many / few
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    (ratios[PAIRS / 2], ratios[PAIRS / 4], ratios[3 * PAIRS / 4])
}

/// Warps calling at once in the throughput columns.
const WARPS: usize = 4;

/// Ns per call of `warps` warps of `lanes` lanes at `ports` ports, measured in a child process
/// serving the way `serve` names (`port`: the plugin's; `scan`: libc's scan of every port).
fn in_child(ports: u32, lanes: usize, warps: usize, serve: &str) -> f64 {
    // Tens of milliseconds of calls, so that a process's start (threads, the ports' windows) and the
    // 2-core machine's scheduling weigh little.
    let calls = match lanes {
        1 => 100_000,
        32 => 40_000,
        _ => 25_000,
    };
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--point",
            &ports.to_string(),
            &lanes.to_string(),
            &warps.to_string(),
            &calls.to_string(),
        ])
        .env("OMPRPC_RPC_SERVE", serve)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().parse().unwrap()
}

/// One row of the port table: the median ns per call of one warp and of [`WARPS`] warps, serving
/// port by port and with libc's scan, and the median of the rounds' ratios of lanes per second
/// (port by port over scan, [`WARPS`] warps). Each round measures both ways [`in_turn`].
fn port_table_row(ports: u32, lanes: usize) -> [f64; 5] {
    let mut columns: [Vec<f64>; 5] = Default::default();
    for round in 0..ROUNDS {
        let both = |warps: usize| {
            in_turn(
                round,
                || in_child(ports, lanes, warps, "port"),
                || in_child(ports, lanes, warps, "scan"),
            )
        };
        let (one, one_scan) = both(1);
        let (many, many_scan) = both(WARPS);
        for (column, value) in columns
            .iter_mut()
            .zip([one, one_scan, many, many_scan, many_scan / many])
        {
            column.push(value);
        }
    }
    columns.map(median)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    registry::register_handler(OP_ECHO, Box::new(Echo)).unwrap();
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--point") {
        let value = |i: usize| args[at + i].parse::<usize>().unwrap();
        let ns = round_trip(value(1) as u32, value(2), value(4), 0, value(3));
        println!("{ns}");
        return;
    }
    println!("simulated warp: one user call (one packet per lane each way), median of {ROUNDS} rounds;");
    println!("port by port (the plugin's way) beside libc's scan of every port (OMPRPC_RPC_SERVE=scan),");
    println!("each point in a process of its own, the two ways alternating; lanes/s: {WARPS} warps calling at");
    println!("once from ports of their own; ratio: the median of each round's lanes/s, port by port over scan");
    println!(
        "{:>6} {:>6} {:>12} {:>12} {:>14} {:>14} {:>7}",
        "ports", "lanes", "ns/call", "scan ns/call", "lanes/s", "scan lanes/s", "ratio"
    );
    for ports in [16u32, 256, 1024, 4096] {
        for lanes in [1usize, 32, 64] {
            let [one, one_scan, many, many_scan, ratio] = port_table_row(ports, lanes);
            println!(
                "{ports:>6} {lanes:>6} {one:>12.0} {one_scan:>12.0} {:>14.0} {:>14.0} {ratio:>7.2}",
                lanes as f64 * 1e9 / many,
                lanes as f64 * 1e9 / many_scan
            );
        }
    }
    println!("one warp's call at 4,096 ports over the same at 16 ports, measured alternately: median ratio");
    println!("(quartiles) of {PAIRS} pairs, through the plugin and through the bare server below (the mailbox's");
    println!("own cost of more ports: its words, headers and packets lie farther apart)");
    println!("{:>6} {:>24} {:>24}", "lanes", "plugin", "bare server");
    for lanes in [1usize, 32, 64] {
        let plugin = port_count_ratio(lanes, |ports, lanes| round_trip(ports, lanes, 20_000, 0, 1));
        let bare = port_count_ratio(lanes, |ports, lanes| protocol_floor(ports, lanes, 20_000));
        let show = |(median, low, high): (f64, f64, f64)| format!("{median:.3} ({low:.3}-{high:.3})");
        println!("{lanes:>6} {:>24} {:>24}", show(plugin), show(bare));
    }
    println!("the protocol's floor: a bare server thread answering the mailbox (no libc, no plugin), beside");
    println!("the plugin at 16 ports, measured round by round; ns per call, median of {ROUNDS} rounds");
    println!("{:>6} {:>10} {:>10} {:>8}", "lanes", "floor", "plugin", "ratio");
    for lanes in [1usize, 32, 64] {
        let (mut floors, mut plugins, mut ratios) = (vec![], vec![], vec![]);
        for _ in 0..ROUNDS {
            let floor = protocol_floor(16, lanes, 20_000);
            let plugin = round_trip(16, lanes, 20_000, 0, 1);
            floors.push(floor);
            plugins.push(plugin);
            ratios.push(plugin / floor);
        }
        println!(
            "{lanes:>6} {:>10.0} {:>10.0} {:>8.2}",
            median(floors),
            median(plugins),
            median(ratios)
        );
    }
    println!("other loaded images (idle servers beside the busy one): ns per call of one lane");
    println!("{:>6} {:>10} {:>10} {:>10}", "ports", "alone", "+1 image", "+3 images");
    for ports in [16u32, 64, 256] {
        let ns: Vec<f64> = [0, 1, 3]
            .iter()
            .map(|&idle| median((0..ROUNDS).map(|_| round_trip(ports, 1, 20_000, idle, 1)).collect()))
            .collect();
        println!("{ports:>6} {:>10.0} {:>10.0} {:>10.0}", ns[0], ns[1], ns[2]);
    }
}
