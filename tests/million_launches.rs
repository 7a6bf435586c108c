//! Ten million target launches in one process through our plugin (under a minute): no crash (the stock
//! 16.0.6 plugin dies after about 70,000), every launch counted, and no per-launch growth of memory.

mod support;

use support::{build_program, check_ours_ran, field};

#[test]
fn ten_million_launches_run_without_crash_or_growth() {
    let exe = build_program("launch_million.c");
    // Under a minute on a 2-core machine; the usual limit per run is too tight for a slow one.
    let mut cmd = std::process::Command::new(&exe);
    cmd.arg("10000000").env("LD_LIBRARY_PATH", support::host_plugin_dir());
    let out = support::run_with_limit(cmd, std::time::Duration::from_secs(600));
    let (stdout, stderr) = (
        &String::from_utf8_lossy(&out.stdout).into_owned(),
        &String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "exited with {}:\n{stdout}\n{stderr}", out.status);
    check_ours_ran(stderr).unwrap();
    assert_eq!(field::<i64>(stdout, "launches:"), 10_000_000);
    assert_eq!(field::<i64>(stdout, "ran on device:"), 1);
    let early: i64 = field(stdout, "rss after 1000 launches:");
    let end: i64 = field(stdout, "rss at the end:");
    println!(
        "RSS after 1,000 launches: {early} KiB; after 10,000,000: {end} KiB; growth {} KiB",
        end - early
    );
    assert!(early > 0 && end > 0);
    assert!(
        end - early <= 10 * 1024,
        "RSS grew by {} KiB over ten million launches",
        end - early
    );
}
