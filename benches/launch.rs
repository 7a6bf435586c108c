//! Per-launch cost of an empty target region and of a region with one scalar mapped tofrom, through
//! our plugin and through the stock plugin, with the same binary, alternating runs in one invocation.
//! Prints the median of each and the median over rounds of the ratio ours/stock (below 1.0 means we
//! are faster); pairing runs round by round cancels most of the noise a shared machine adds.
//!
//! Run with `cargo bench --bench launch`. Each run stays under 60,000 launches, because programs that
//! launch in a loop inside one function overflow the stack with clang-16 (see c_tests/launch_million.c).

#[path = "../tests/support/mod.rs"]
mod support;

use support::{build_program, check_ours_ran, check_stock_ran, median, run_text, Plugin};

const ROUNDS: usize = 11;
const LAUNCHES: &str = "100000";

fn ns_per_launch(mode: &str, plugin: Plugin) -> f64 {
    let exe = build_program("bench_launch.c");
    let out = run_text(&exe, &[mode, LAUNCHES], plugin, &[]);
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(out.status.success(), "{mode} with {plugin:?} failed: {stdout}{stderr}");
    match plugin {
        Plugin::Ours => check_ours_ran(stderr).unwrap(),
        Plugin::Stock => check_stock_ran(stderr).unwrap(),
    }
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("ns per launch: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no timing in {stdout}"))
}

/// Instructions a whole run executes, counted by callgrind: unlike time, the same from run to run, so it
/// shows small differences that timing noise on a shared machine hides.
fn instructions(mode: &str, plugin: Plugin, launches: &str) -> Option<u64> {
    let exe = build_program("bench_launch.c");
    let mut cmd = std::process::Command::new("valgrind");
    cmd.args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(&exe)
        .args([mode, launches]);
    match plugin {
        Plugin::Ours => cmd.env("LD_LIBRARY_PATH", support::host_plugin_dir()),
        Plugin::Stock => cmd.env_remove("LD_LIBRARY_PATH"),
    };
    let out = cmd.output().ok()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    stderr
        .lines()
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|v| v.trim().parse().ok())
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    println!("launch cost, {ROUNDS} alternating rounds of {LAUNCHES} launches, median ns per launch");
    println!("{:<8} {:>10} {:>10} {:>12}", "region", "ours", "stock", "ours/stock");
    for mode in ["empty", "scalar"] {
        let (mut ours, mut stock, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            // Alternate which plugin goes first, so neither always runs on a warmer machine.
            let (o, s) = if round % 2 == 0 {
                let o = ns_per_launch(mode, Plugin::Ours);
                (o, ns_per_launch(mode, Plugin::Stock))
            } else {
                let s = ns_per_launch(mode, Plugin::Stock);
                (ns_per_launch(mode, Plugin::Ours), s)
            };
            ours.push(o);
            stock.push(s);
            ratios.push(o / s);
        }
        println!(
            "{mode:<8} {:>10.1} {:>10.1} {:>12.3}",
            median(ours),
            median(stock),
            median(ratios)
        );
    }
    println!("instructions per launch (callgrind; the difference between 10000 and 5000 launches, so that");
    println!("start-up does not count)");
    println!("{:<8} {:>10} {:>10} {:>12}", "region", "ours", "stock", "ours/stock");
    for mode in ["empty", "scalar"] {
        let per_launch = |plugin| -> Option<f64> {
            let short = instructions(mode, plugin, "5000")?;
            let long = instructions(mode, plugin, "10000")?;
            Some((long as f64 - short as f64) / 5000.0)
        };
        match (per_launch(Plugin::Ours), per_launch(Plugin::Stock)) {
            (Some(o), Some(s)) => println!("{mode:<8} {o:>10.0} {s:>10.0} {:>12.3}", o / s),
            _ => println!("{mode:<8} valgrind is not installed (apt-get install valgrind); no instruction counts"),
        }
    }
}
