//! What a user sees of host calls: `OMPRPC_STATS` (counts, bytes and latencies per device and
//! opcode), `OMPRPC_TRACE` (a Chrome trace-event file whose spans match the calls made, nested in their
//! kernel's span) and `omprpc_stats_print()`, on real OpenMP programs through libomptarget.
#![cfg(feature = "rpc")]

mod support;

use support::{
    build_program, build_program_with, fresh_scratch_file, read_trace, run_text, stats_rows, trace_events, Plugin,
};

/// The `omprpc stats:` line of `opcode` on `device`, split into its columns.
fn stats_row(stderr: &str, device: &str, opcode: &str) -> Vec<String> {
    let opcode = opcode.replace(' ', "_");
    stats_rows(stderr)
        .into_iter()
        .find(|cols| cols.first().map(String::as_str) == Some(device) && cols.get(1) == Some(&opcode))
        .unwrap_or_else(|| panic!("no stats row of device {device} opcode {opcode} in:\n{stderr}"))
}

#[test]
fn stats_count_every_call_with_its_bytes_at_exit() {
    let exe = build_program("bench_rpc.c");
    let out = run_text(
        &exe,
        &["throughput", "4", "2048"],
        Plugin::Ours,
        &[("OMPRPC_STATS", "1")],
    );
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);
    // 4 threads × 512 echo calls of one lane: one packet (64 bytes) each way per call.
    let row = stats_row(&out.stderr, "0", "user 0x8100");
    assert_eq!(&row[2..4], ["2048", "2048"], "calls and lanes: {row:?}");
    assert_eq!(&row[4..8], ["128", "KiB", "128", "KiB"], "bytes each way: {row:?}");
    let header = out.stderr.lines().find(|l| l.starts_with("omprpc stats:")).unwrap();
    for column in ["calls", "lanes", "p50", "p99", "max"] {
        assert!(header.contains(column), "{header}");
    }
    let without = run_text(&exe, &["throughput", "1", "100"], Plugin::Ours, &[]);
    assert!(
        !without.stderr.contains("omprpc stats:"),
        "statistics only when asked for: {}",
        without.stderr
    );
}

#[test]
fn the_trace_holds_one_span_per_call_inside_its_kernel() {
    let exe = build_program("bench_rpc.c");
    let path = fresh_scratch_file("trace", "calls.json");
    let out = run_text(
        &exe,
        &["throughput", "2", "1000"],
        Plugin::Ours,
        &[("OMPRPC_TRACE", path.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);
    let json = read_trace(&path, &out.stderr);
    assert_eq!(json["otherData"]["dropped_events"], 0);
    let kernels = trace_events(&json, "kernel");
    let calls = trace_events(&json, "host call");
    assert_eq!(kernels.len(), 1, "one kernel: {kernels:?}");
    assert_eq!(calls.len(), 1000, "one span per call");
    let kernel = kernels[0];
    assert!(
        kernel["name"].as_str().unwrap().starts_with("__omp_offloading_"),
        "{kernel}"
    );
    let (begin, end) = (
        kernel["ts"].as_f64().unwrap(),
        kernel["ts"].as_f64().unwrap() + kernel["dur"].as_f64().unwrap(),
    );
    for call in &calls {
        assert_eq!(call["name"], "user 0x8100");
        assert_eq!(call["pid"], kernel["pid"]);
        assert_eq!(call["ph"], "X");
        let (ts, dur) = (call["ts"].as_f64().unwrap(), call["dur"].as_f64().unwrap());
        assert!(
            begin <= ts && ts + dur <= end,
            "call {call} outside its kernel {kernel}"
        );
        assert_eq!(
            call["tid"].as_u64().unwrap(),
            1 + call["args"]["port"].as_u64().unwrap()
        );
    }
    // `omprpc trace` draws it (the README's picture), and says what is wrong with a file that is not
    // a trace, in one line.
    let picture = fresh_scratch_file("trace", "calls.svg");
    let omprpc = || std::process::Command::new(env!("CARGO_BIN_EXE_omprpc"));
    let drawn = omprpc().arg("trace").arg(&path).arg(&picture).output().unwrap();
    assert!(drawn.status.success(), "{}", String::from_utf8_lossy(&drawn.stderr));
    let svg = std::fs::read_to_string(&picture).unwrap();
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"), "{svg}");
    assert_eq!(
        svg.matches("<rect x=").count() - 1,
        calls.len() + 1,
        "a box per call and the kernel's, and one legend swatch: {svg}"
    );
    assert!(
        svg.contains(">user 0x8100</text>"),
        "the legend names the opcode: {svg}"
    );
    let not_a_trace = omprpc().arg("trace").arg(&exe).arg(&picture).output().unwrap();
    let said = String::from_utf8_lossy(&not_a_trace.stderr);
    assert_eq!(not_a_trace.status.code(), Some(1), "{said}");
    assert!(
        said.starts_with("omprpc: ")
            && said.contains("is not a trace written with OMPRPC_TRACE")
            && said.lines().count() == 1,
        "{said}"
    );
}

#[test]
fn calls_after_lulls_are_counted_and_traced_alone() {
    // 20 calls, each after 10 ms in which the serving thread rehearses calls of its own to keep warm;
    // only the program's 21 calls may show.
    let exe = build_program("bench_rpc.c");
    let path = fresh_scratch_file("trace", "lulls.json");
    let out = run_text(
        &exe,
        &["wake", "10", "20"],
        Plugin::Ours,
        &[("OMPRPC_STATS", "1"), ("OMPRPC_TRACE", path.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        stats_rows(&out.stderr).len(),
        1,
        "one device, one opcode: {}",
        out.stderr
    );
    let row = stats_row(&out.stderr, "0", "user 0x8100");
    assert_eq!(&row[2..4], ["21", "21"], "calls and lanes: {row:?}");
    let trace = read_trace(&path, &out.stderr);
    let calls = trace_events(&trace, "host call");
    assert_eq!(calls.len(), 21, "one span per call of the program");
    assert!(calls.iter().all(|c| c["name"] == "user 0x8100"), "{calls:?}");
}

#[test]
fn a_program_prints_the_stats_when_it_asks() {
    let exe = build_program("rpc_stats_print.c");
    let out = run_text(&exe, &[], Plugin::Ours, &[("OMPRPC_STATS", "1")]);
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);
    // Printed twice: on demand after the first kernel (5 calls), and at exit (12).
    let rows: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("omprpc stats:") && l.contains("user 0x8123"))
        .collect();
    assert_eq!(rows.len(), 2, "{}", out.stderr);
    let calls = |row: &str| row.split_whitespace().nth(5).unwrap().to_string();
    assert_eq!((calls(rows[0]), calls(rows[1])), ("5".into(), "12".into()), "{rows:?}");
    let off = run_text(&exe, &[], Plugin::Ours, &[]);
    assert!(off.status.success(), "{}", off.stderr);
    assert!(
        off.stderr
            .contains("no host-call statistics: set OMPRPC_STATS=1 to gather them"),
        "{}",
        off.stderr
    );
}

#[test]
fn the_watchdog_names_a_stuck_handler_once_and_when_it_finishes() {
    let exe = build_program_with("rpc_watchdog.c", &["-rdynamic"]);
    // The slow call is the program's last: its end is said at exit, every time, with the duration
    // the statistics count.
    for run in 0..5 {
        let out = run_text(
            &exe,
            &[],
            Plugin::Ours,
            &[("OMPRPC_WATCHDOG_MS", "100"), ("OMPRPC_STATS", "1")],
        );
        assert!(out.status.success(), "run {run}: {}\n{}", out.stdout, out.stderr);
        let lines: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| l.starts_with("omprpc watchdog:"))
            .collect();
        assert_eq!(lines.len(), 2, "run {run}: {}", out.stderr);
        assert!(
            lines[0].contains("host call user opcode 0x8124 (handler slow_handler()) has been open for"),
            "{}",
            lines[0]
        );
        assert!(lines[0].starts_with("omprpc watchdog: device 0 port "), "{}", lines[0]);
        let finished = lines[1]
            .split_once("host call user opcode 0x8124 (handler slow_handler()) finished after ")
            .and_then(|(_, rest)| rest.strip_suffix(" ms"))
            .and_then(|ms| ms.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("run {run}: {}", lines[1]));
        let row = out
            .stderr
            .lines()
            .find(|l| l.starts_with("omprpc stats:") && l.contains("user 0x8124"))
            .unwrap_or_else(|| panic!("run {run}: no statistics row: {}", out.stderr));
        let max_ms: f64 = row
            .split_whitespace()
            .collect::<Vec<_>>()
            .windows(2)
            .rev()
            .find(|pair| pair[1] == "ms")
            .and_then(|pair| pair[0].parse().ok())
            .unwrap_or_else(|| panic!("run {run}: no maximum in {row}"));
        assert!(
            (400.0..1000.0).contains(&finished) && (finished - max_ms).abs() <= 1.0,
            "run {run}: the watchdog's {finished} ms and the statistics' maximum {max_ms} ms: {row}"
        );
    }
    let quiet = run_text(&exe, &[], Plugin::Ours, &[]);
    assert!(quiet.status.success(), "{}", quiet.stderr);
    assert!(!quiet.stderr.contains("omprpc watchdog:"), "{}", quiet.stderr);
}
