//! Host-service round trips through omprpc's RPC server on the host device, beside the floor a
//! CPU client can reach: a core-to-core cache-line round trip measured in the same run.
//!
//! Prints one device thread's round trip (ns) and calls per second for several device threads, at
//! the default port count and at 4096 ports, and the CPU the plugin uses per second while the device
//! idles. Run with `cargo bench --bench rpc`.

#[path = "../tests/support/mod.rs"]
mod support;

use support::{build_program, median, run_text, Plugin};

fn measure(args: &[&str], ports: Option<&str>, prefix: &str) -> f64 {
    let exe = build_program("bench_rpc.c");
    let env: Vec<(&str, &str)> = ports.map(|p| ("OMPRPC_RPC_PORTS", p)).into_iter().collect();
    let out = run_text(&exe, args, Plugin::Ours, &env);
    let stdout = &out.stdout;
    assert!(
        out.status.success(),
        "{args:?}: {}\n{stdout}\n{}",
        out.status,
        out.stderr
    );
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no '{prefix}' in {stdout}"))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rounds = 5;
    let cacheline = median(
        (0..rounds)
            .map(|_| measure(&["cacheline", "2000000"], None, "ns per round trip:"))
            .collect(),
    );
    println!("core-to-core cache-line round trip: {cacheline:.1} ns");
    for (label, ports) in [("default ports", None), ("4096 ports", Some("4096"))] {
        let latency = median(
            (0..rounds)
                .map(|_| measure(&["latency", "200000"], ports, "ns per round trip:"))
                .collect(),
        );
        println!(
            "{label:<14} one device thread: {latency:>8.1} ns per round trip ({:.2}x the cache-line round trip)",
            latency / cacheline
        );
        for threads in ["1", "2", "4", "16"] {
            let rate = median(
                (0..3)
                    .map(|_| measure(&["throughput", threads, "200000"], ports, "calls per second:"))
                    .collect(),
            );
            println!("{label:<14} {threads:>2} device threads: {rate:>12.0} calls/s");
        }
    }
    let idle = measure(&["idle", "2"], None, "cpu per second while idle:");
    println!("CPU used while the device idles: {:.2}% of one core", idle * 100.0);
}
