//! Load through libomptarget 16, each run bounded by the usual hang limit and checking its own
//! results, with our plugin and, where the program does not use host services, the stock plugin in
//! the same test: many host threads with chains of `nowait` regions on every device, transfers from 0
//! bytes to 1 GiB, and a million allocations and frees (from the host, and device `malloc`/`free`
//! through host services) with flat RSS. Times are printed for comparison (run with `--nocapture`,
//! in release for figures), never asserted.

mod support;

use std::sync::Mutex;

use support::{build_program, check_ours_ran, check_stock_ran, field, run_text, Plugin};

/// One load at a time: each wants the machine to itself, for its time limit and its figures.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `file` with `args` through `plugin`; it must succeed, and the right plugin must have run.
fn run_checked(file: &str, args: &[&str], plugin: Plugin) -> (String, f64) {
    let exe = build_program(file);
    let start = std::time::Instant::now();
    let out = run_text(&exe, args, plugin, &[]);
    let seconds = start.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{file} {args:?} under {plugin:?}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        out.stdout,
        out.stderr
    );
    match plugin {
        Plugin::Ours => check_ours_ran(&out.stderr).unwrap(),
        Plugin::Stock => check_stock_ran(&out.stderr).unwrap(),
    }
    (out.stdout, seconds)
}

#[test]
fn eight_host_threads_chain_nowait_regions_on_every_device() {
    let _alone = alone();
    let steps = "400";
    let mut outputs = Vec::new();
    for plugin in [Plugin::Ours, Plugin::Stock] {
        let (stdout, seconds) = run_checked("nowait_threads.c", &[steps], plugin);
        let devices = field::<f64>(&stdout, "devices:");
        assert!(devices >= 1.0, "{stdout}");
        assert!(
            stdout.contains("chains in order: all\n") && stdout.contains("chains run on their device: all\n"),
            "{plugin:?}:\n{stdout}"
        );
        println!("{plugin:?}: 8 threads x {devices} devices x {steps} chained nowait regions in {seconds:.2} s");
        outputs.push(stdout);
    }
    assert_eq!(outputs[0], outputs[1], "same results with both plugins");
}

#[test]
fn transfers_from_zero_bytes_to_one_gibibyte() {
    let _alone = alone();
    let largest = (1u64 << 30).to_string();
    let mut outputs = Vec::new();
    for plugin in [Plugin::Ours, Plugin::Stock] {
        let (stdout, seconds) = run_checked("transfer_sizes.c", &[&largest], plugin);
        let sizes: Vec<&str> = stdout.lines().filter(|l| l.starts_with("size ")).collect();
        assert_eq!(sizes.len(), 19, "{plugin:?}:\n{stdout}");
        assert!(sizes.iter().all(|l| l.contains(": ok (")), "{plugin:?}:\n{stdout}");
        assert!(sizes[0].starts_with("size 0: ") && sizes[18].starts_with("size 1073741824: "));
        println!("{plugin:?}: all sizes in {seconds:.2} s\n{stdout}");
        // Without the times, for comparing the plugins.
        outputs.push(
            sizes
                .iter()
                .map(|l| l.split(" (").next().unwrap().to_string())
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(outputs[0], outputs[1]);
}

/// The RSS growth, in KiB, between the 10,000th allocation and the end of a run of `alloc_million.c`.
fn allocation_run(mode: &str, plugin: Plugin) -> (f64, f64) {
    let (stdout, _) = run_checked("alloc_million.c", &[mode, "1000000"], plugin);
    assert_eq!(field::<f64>(&stdout, "allocations:"), 1_000_000.0, "{stdout}");
    assert_eq!(field::<f64>(&stdout, "failures:"), 0.0, "{stdout}");
    let early = field::<f64>(&stdout, "rss after 10000:");
    let end = field::<f64>(&stdout, "rss at the end:");
    assert!(early > 0.0 && end > 0.0, "{stdout}");
    let seconds = field::<f64>(&stdout, "seconds:");
    println!(
        "{plugin:?}, {mode}: 1,000,000 allocations and frees in {seconds:.2} s; RSS {early} KiB after \
         10,000, {end} KiB at the end"
    );
    (end - early, seconds)
}

#[test]
fn a_million_allocations_and_frees_keep_rss_flat() {
    let _alone = alone();
    for (mode, plugins) in [
        ("target", &[Plugin::Ours, Plugin::Stock][..]),
        ("device", &[Plugin::Ours][..]),
    ] {
        for &plugin in plugins {
            let (growth, _) = allocation_run(mode, plugin);
            if plugin == Plugin::Ours {
                assert!(
                    growth <= 16.0 * 1024.0,
                    "{mode}: RSS grew by {growth} KiB over a million allocations"
                );
            }
        }
    }
}
