//! Throughput of small `target nowait` regions, each depending on the one before it on its host thread
//! (c_tests/bench_nowait.c), through our plugin and through the stock plugin, alternating runs in one
//! invocation: medians of each, and the median over rounds of the ratio ours/stock (below 1.0 means we
//! are faster). With several host threads both plugins vary a lot on a small machine (libomp's hidden
//! helper threads outnumber its cores), hence many rounds.
//!
//! Run with `cargo bench --bench nowait`.

#[path = "../tests/support/mod.rs"]
mod support;

use support::{build_program, check_ours_ran, check_stock_ran, median, run_text, Plugin};

const ROUNDS: usize = 9;

/// (host threads, regions per thread): one chain of 3,000, and eight chains of 250.
const SHAPES: [(&str, &str); 2] = [("1", "3000"), ("8", "250")];

fn ns_per_region(threads: &str, regions: &str, plugin: Plugin) -> f64 {
    let exe = build_program("bench_nowait.c");
    let out = run_text(&exe, &[threads, regions], plugin, &[]);
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(
        out.status.success(),
        "{threads} threads with {plugin:?} failed: {stdout}{stderr}"
    );
    match plugin {
        Plugin::Ours => check_ours_ran(stderr).unwrap(),
        Plugin::Stock => check_stock_ran(stderr).unwrap(),
    }
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("ns per region: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no timing in {stdout}"))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    println!("nowait regions in depend chains, {ROUNDS} alternating rounds, median ns per region");
    println!(
        "{:<10} {:>8} {:>10} {:>10} {:>12}",
        "threads", "regions", "ours", "stock", "ours/stock"
    );
    for (threads, regions) in SHAPES {
        let (mut ours, mut stock, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            // Alternate which plugin goes first, so neither always runs on a warmer machine.
            let (o, s) = if round % 2 == 0 {
                let o = ns_per_region(threads, regions, Plugin::Ours);
                (o, ns_per_region(threads, regions, Plugin::Stock))
            } else {
                let s = ns_per_region(threads, regions, Plugin::Stock);
                (ns_per_region(threads, regions, Plugin::Ours), s)
            };
            ours.push(o);
            stock.push(s);
            ratios.push(o / s);
        }
        println!(
            "{threads:<10} {regions:>8} {:>10.0} {:>10.0} {:>12.3}",
            median(ours),
            median(stock),
            median(ratios)
        );
    }
}
