//! Host-service round trips through omprpc's RPC server on the host device, beside the floor a
//! CPU client can reach: a core-to-core cache-line round trip measured in the same run.
//!
//! Prints, for 16 to 4,096 ports, one device thread's round trip (ns, and as a multiple of the floor)
//! and calls per second for several device threads, serving port by port beside libc's scan of every
//! port; the round trip of a first call after the device idled 1 ms, 100 ms and 1 s inside a running
//! kernel (p50/p99); and the CPU the plugin uses while no kernel that may call the host runs. Run with
//! `cargo bench --bench rpc`.

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
    println!("first call after the device idled inside a running kernel (default ports):");
    for (idle_ms, reps) in [("1", "200"), ("100", "20"), ("1000", "4")] {
        let out = run_bench(&["wake", idle_ms, reps], &[]);
        let p50 = field::<f64>(&out, "first call after idling p50 ns:");
        let p99 = field::<f64>(&out, "first call after idling p99 ns:");
        println!("  after {idle_ms:>4} ms idle: p50 {p50:>8.0} ns, p99 {p99:>8.0} ns ({reps} calls)");
    }
    let cpu = measure(&["idle", "2"], &[], "cpu per second while idle:");
    println!(
        "CPU used while no kernel that may call the host runs: {:.2}% of one core",
        cpu * 100.0
    );
}
