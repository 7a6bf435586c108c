//! Host-service round trips through omprpc's RPC server on the host device, beside the floor a
//! CPU client can reach: a core-to-core cache-line round trip measured in the same run.
//!
//! Prints, for 16 to 4,096 ports, one device thread's round trip (ns, and as a multiple of the floor)
//! and calls per second for several device threads, serving port by port beside libc's scan of every
//! port; what waiting for host calls costs: the CPU of the plugin's threads during a quiet host-calling
//! kernel and the round trip of a first call after a lull of 0.1 to 100 ms (device code that rings the
//! doorbell, and the backoff for code that cannot), a compute region against the stock plugin, and one
//! device's calls while another's handler is slow; and the CPU the plugin uses while no kernel that may
//! call the host runs. Run with `cargo bench --bench rpc`.

#[path = "../tests/support/mod.rs"]
mod support;

use support::{build_program, field, median, run_text, Plugin};

/// Runs bench_rpc with `args` through our plugin and returns what it printed.
fn run_bench(args: &[&str], env: &[(&str, &str)]) -> String {
    let exe = build_program("bench_rpc.c");
    let out = run_text(&exe, args, Plugin::Ours, env);
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}\n{}",
        out.status,
        out.stdout,
        out.stderr
    );
    out.stdout
}

fn measure(args: &[&str], env: &[(&str, &str)], prefix: &str) -> f64 {
    field(&run_bench(args, env), prefix)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rounds = 5;
    // `cargo bench --bench rpc -- waiting`: only what waiting for host calls costs.
    if std::env::args().any(|a| a == "waiting") {
        waiting(rounds);
        return;
    }
    let cacheline = median(
        (0..rounds)
            .map(|_| measure(&["cacheline", "2000000"], &[], "ns per round trip:"))
            .collect(),
    );
    println!("core-to-core cache-line round trip: {cacheline:.1} ns");
    println!("(x floor: each round's round trip over a cache-line round trip measured just before it)");
    println!("one device thread's round trip, and calls per second of T device threads; port by port (the plugin's way) beside libc's scan of every port (OMPRPC_RPC_SERVE=scan)");
    println!(
        "{:>6} {:>22} {:>22} {:>14} {:>14} {:>14} {:>14}",
        "ports",
        "round trip ns (x floor)",
        "scan: ns (x floor)",
        "T=1 calls/s",
        "T=4 calls/s",
        "T=16 calls/s",
        "scan: T=16"
    );
    for ports in ["16", "256", "1024", "4096"] {
        // The machine's speed drifts (a shared host): each round measures the floor, then both ways,
        // and the ratios are taken round by round.
        let (mut new_ns, mut old_ns, mut new_x, mut old_x) = (vec![], vec![], vec![], vec![]);
        for _ in 0..rounds {
            let floor = measure(&["cacheline", "500000"], &[], "ns per round trip:");
            let trip = |serve: &str| {
                let env = [("OMPRPC_RPC_PORTS", ports), ("OMPRPC_RPC_SERVE", serve)];
                measure(&["latency", "100000"], &env, "ns per round trip:")
            };
            let (new, old) = (trip("port"), trip("scan"));
            new_ns.push(new);
            old_ns.push(old);
            new_x.push(new / floor);
            old_x.push(old / floor);
        }
        let (new, old) = (median(new_ns), median(old_ns));
        let (new_ratio, old_ratio) = (median(new_x), median(old_x));
        let rate = |serve: &str, threads: &str| {
            let env = [("OMPRPC_RPC_PORTS", ports), ("OMPRPC_RPC_SERVE", serve)];
            median(
                (0..3)
                    .map(|_| measure(&["throughput", threads, "200000"], &env, "calls per second:"))
                    .collect(),
            )
        };
        println!(
            "{ports:>6} {:>14.1} ({:>4.2}x) {:>14.1} ({:>4.2}x) {:>14.0} {:>14.0} {:>14.0} {:>14.0}",
            new,
            new_ratio,
            old,
            old_ratio,
            rate("port", "1"),
            rate("port", "4"),
            rate("port", "16"),
            rate("scan", "16")
        );
    }
    let with = |extra: (&str, &str)| {
        let env = [("OMPRPC_RPC_PORTS", "16"), extra];
        median(
            (0..rounds)
                .map(|_| measure(&["latency", "200000"], &env, "ns per round trip:"))
                .collect(),
        )
    };
    let (plain, stats, trace) = (
        with(("OMPRPC_STATS", "0")),
        with(("OMPRPC_STATS", "1")),
        with(("OMPRPC_TRACE", "/dev/null")),
    );
    println!(
        "16 ports, one device thread: {plain:.1} ns; with OMPRPC_STATS=1 {stats:.1} ns ({:+.1}%); with OMPRPC_TRACE {trace:.1} ns ({:+.1}%)",
        (stats / plain - 1.0) * 100.0,
        (trace / plain - 1.0) * 100.0
    );
    waiting(rounds);
    let cpu = measure(&["idle", "2"], &[], "cpu per second while idle:");
    println!(
        "CPU used while no kernel that may call the host runs: {:.2}% of one core",
        cpu * 100.0
    );
}

/// `bench_rpc` built so that its device code cannot ring the doorbell (the symbol the plugin writes
/// the doorbell to is renamed), as LLVM libc's own client and NVIDIA GPUs: its calls are found by the
/// serving threads' backoff.
const UNRUNG: &[&str] = &["-D__omprpc_rpc_doorbell=bench_unrung_doorbell"];

/// What waiting for host calls costs and how fast it answers: the CPU of the plugin's threads while a
/// host-calling kernel is quiet, the round trip of a call after a lull, a compute region against the
/// stock plugin, and one device's calls while another device's handler is slow.
fn waiting(rounds: usize) {
    let quiet = |seconds: &str, flags: &[&str], env: &[(&str, &str)]| {
        let exe = support::build_program_with("bench_rpc.c", flags);
        let out = run_text(&exe, &["quiet", seconds], Plugin::Ours, env);
        assert!(out.status.success(), "{}", out.stderr);
        field::<f64>(&out.stdout, "plugin threads' cpu per second of a quiet kernel:")
    };
    println!("CPU of the plugin's threads per second of a host-calling kernel that calls nothing (median of 3):");
    for (what, seconds, flags, env) in [
        ("device code rings (host device), 1 s", "1", &[][..], &[][..]),
        ("backoff (device cannot ring), 1 s", "1", UNRUNG, &[][..]),
        ("backoff, 4 s", "4", UNRUNG, &[][..]),
        (
            "backoff, 4 s, OMPRPC_RPC_WAIT=200",
            "4",
            UNRUNG,
            &[("OMPRPC_RPC_WAIT", "200")][..],
        ),
        (
            "OMPRPC_RPC_WAIT=spin, 1 s",
            "1",
            &[][..],
            &[("OMPRPC_RPC_WAIT", "spin")][..],
        ),
    ] {
        let cpu = median((0..3).map(|_| quiet(seconds, flags, env)).collect());
        println!("  {what:<40} {cpu:.4} of a core");
    }
    println!("first call after the device computed without calling inside a running kernel (default ports):");
    let floor = support::build_program("bench_rpc.c");
    for (lull_ms, reps) in [("0.1", "400"), ("1", "200"), ("10", "100"), ("100", "20")] {
        let out = run_text(&floor, &["wakefloor", lull_ms, reps], Plugin::Ours, &[]);
        assert!(out.status.success(), "{}", out.stderr);
        println!(
            "  {:<8} after {lull_ms:>4} ms: p50 {:>7.1} us, p99 {:>7.1} us (a bare futex wake, no plugin)",
            "floor",
            field::<f64>(&out.stdout, "bare wake p50 ns:") / 1e3,
            field::<f64>(&out.stdout, "bare wake p99 ns:") / 1e3
        );
    }
    for (what, flags) in [("rung", &[][..]), ("backoff", UNRUNG)] {
        let exe = support::build_program_with("bench_rpc.c", flags);
        for (lull_ms, reps) in [("0.1", "400"), ("1", "200"), ("10", "100"), ("100", "20")] {
            let out = run_text(&exe, &["wake", lull_ms, reps], Plugin::Ours, &[]);
            assert!(out.status.success(), "{}", out.stderr);
            let p50 = field::<f64>(&out.stdout, "first call after idling p50 ns:");
            let p99 = field::<f64>(&out.stdout, "first call after idling p99 ns:");
            println!(
                "  {what:<8} after {lull_ms:>4} ms: p50 {:>7.1} us, p99 {:>7.1} us ({reps} calls)",
                p50 / 1e3,
                p99 / 1e3
            );
        }
    }
    let compute = support::build_program("bench_rpc.c");
    let (mut ours, mut stock) = (vec![], vec![]);
    for _ in 0..rounds {
        for (plugin, into) in [(Plugin::Ours, &mut ours), (Plugin::Stock, &mut stock)] {
            let out = run_text(&compute, &["compute", "300000000"], plugin, &[]);
            assert!(out.status.success(), "{}", out.stderr);
            into.push(field::<f64>(
                &out.stdout.replace(" (", "\n("),
                "seconds of a two-team compute region:",
            ));
        }
    }
    let ratios: Vec<f64> = ours.iter().zip(&stock).map(|(o, s)| o / s).collect();
    println!(
        "two teams computing on the host device, ours over stock, alternating: median {:.3} ({rounds} pairs: {:.2?} s against {:.2?} s)",
        median(ratios),
        ours,
        stock
    );
    let slow = support::build_program("rpc_slow_handler_other_device.c");
    let took: Vec<f64> = (0..3)
        .map(|_| {
            let out = run_text(&slow, &[], Plugin::Ours, &[("OMPRPC_HOST_DEVICES", "2")]);
            assert!(out.status.success(), "{}", out.stderr);
            out.stdout
                .split_whitespace()
                .nth(5)
                .and_then(|t| t.parse().ok())
                .expect("the time device 1's calls took")
        })
        .collect();
    println!("10,000 calls on device 1 while device 0's handler holds a call: {took:.3?} s");
}
