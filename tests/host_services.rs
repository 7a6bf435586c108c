//! Host services end to end on the host device: programs from `c_tests/` whose results cannot be a
//! fixed expected output (concurrent output, exit status, aborts, error exits), run through
//! libomptarget 16 with our plugin.

mod support;

use std::collections::BTreeSet;
use std::os::unix::process::ExitStatusExt;

use support::{build_program, check_ours_ran, run_text, Plugin};

#[test]
fn thousands_of_concurrent_calls_each_arrive_once() {
    // The default port count, and one port for every device thread to queue for.
    for ports in [None, Some("1")] {
        concurrent_calls_arrive_once(ports);
    }
}

fn concurrent_calls_arrive_once(ports: Option<&str>) {
    let exe = build_program("rpc_concurrent.c");
    let env: Vec<(&str, &str)> = ports.map(|p| ("OMPRPC_RPC_PORTS", p)).into_iter().collect();
    let out = run_text(&exe, &["4000"], Plugin::Ours, &env);
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    check_ours_ran(stderr).unwrap();
    assert!(!stderr.contains("omprpc error"), "{stderr}");
    let mut seen = BTreeSet::new();
    for line in stdout.lines().filter(|l| l.starts_with("call ")) {
        let n: u32 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(seen.insert(n), "line for call {n} arrived twice");
        assert!(
            line.contains(" from team ") && line.contains(" thread "),
            "garbled line: {line:?}"
        );
    }
    assert_eq!(
        seen.len(),
        4000,
        "every call must arrive exactly once (ports: {ports:?})"
    );
    assert_eq!(seen.iter().next_back(), Some(&3999));
    assert!(stdout.contains(&format!("checksum: {}\n", 3999 * 4000 / 2)), "{stdout}");
}

fn check_exit(mode: &str) {
    let exe = build_program("rpc_exit.c");
    let file = support::scratch().join(format!("rpc_exit_{mode}.txt"));
    let _ = std::fs::remove_file(&file);
    let out = run_text(&exe, &[file.to_str().unwrap(), mode], Plugin::Ours, &[]);
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{mode}: exit status; stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(
        stdout, "host: before the target region\ndevice: line 1\ndevice: line 2\n",
        "{mode}: output before exit, flushed, and nothing after"
    );
    let written = std::fs::read_to_string(&file).unwrap_or_default();
    assert_eq!(
        written, "written by the device before exit\n",
        "{mode}: the device's file was flushed"
    );
    assert!(!stderr.contains("omprpc error"), "{stderr}");
}

#[test]
fn device_exit_ends_the_process_with_its_status_and_flushed_output() {
    check_exit("sync");
}

#[test]
fn device_exit_from_a_nowait_region_does_not_hang_teardown() {
    check_exit("nowait");
}

#[test]
fn device_exit_while_other_host_threads_wait_on_nowait_regions() {
    check_exit("threads");
}

#[test]
fn an_unhandled_opcode_is_an_error_not_a_hang() {
    let exe = build_program("rpc_unknown_opcode.c");
    let out = run_text(&exe, &[], Plugin::Ours, &[]);
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert_eq!(out.status.code(), Some(1), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(stdout, "device: calling opcode 0x9abc\n");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("omprpc error: ")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("device 0 called host service opcode 0x9abc, which has no handler"),
        "{stderr}"
    );
    assert!(
        errors[0].contains("omprpc_register_handler"),
        "says what to do: {stderr}"
    );
}

#[test]
fn device_abort_aborts_with_a_message() {
    let exe = build_program("rpc_abort.c");
    let out = run_text(&exe, &[], Plugin::Ours, &[]);
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{}\n{stderr}", out.status);
    assert_eq!(stdout, "device: about to abort\n");
    assert!(stderr.contains("omprpc: abort() called on the device"), "{stderr}");
}

#[test]
fn info_reports_the_rpc_server() {
    let exe = build_program("rpc_services.c");
    let out = run_text(
        &exe,
        &[],
        Plugin::Ours,
        &[("LIBOMPTARGET_INFO", "16"), ("OMPRPC_RPC_PORTS", "4096")],
    );
    let stderr = &out.stderr;
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("omprpc device 0 info: host services ready for the image: 4096 RPC ports of 1 lane(s)"),
        "{stderr}"
    );
}

/// Two images on one device (the program's and a shared library's) calling the host at once: each has
/// a client object of its own, with its own port locks, so each must have ports of its own (a server
/// of its own), or calls would be lost or garbled.
#[test]
fn two_images_on_one_device_call_at_once_through_servers_of_their_own() {
    support::require_toolchain();
    let dir = support::scratch().join("two_images");
    std::fs::create_dir_all(&dir).unwrap();
    let src = support::root().join("c_tests/two_images");
    let include = support::root().join("include");
    let flags = [
        "-fopenmp",
        "-fopenmp-targets=x86_64-pc-linux-gnu",
        "-Wall",
        "-Werror",
        "-O1",
    ];
    let lib = dir.join("libtwo_images.so");
    let status = std::process::Command::new("clang-16")
        .args(flags)
        .args(["-shared", "-fPIC", "-I"])
        .arg(&include)
        .arg(src.join("library.c"))
        .arg("-o")
        .arg(&lib)
        .status()
        .unwrap();
    assert!(status.success());
    let exe = dir.join("two_images");
    let status = std::process::Command::new("clang-16")
        .args(flags)
        .arg("-I")
        .arg(&include)
        .arg(src.join("main.c"))
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(status.success());
    let out = run_text(&exe, &[], Plugin::Ours, &[("LIBOMPTARGET_INFO", "16")]);
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(out.status.success(), "{stderr}");
    check_ours_ran(stderr).unwrap();
    assert_eq!(
        stderr.matches("omprpc device 0 info: loaded an image").count(),
        2,
        "two images: {stderr}"
    );
    assert_eq!(
        stderr
            .matches("omprpc device 0 info: host services ready for the image")
            .count(),
        2,
        "a server for each image: {stderr}"
    );
    for who in ["library", "program"] {
        let mut seen = BTreeSet::new();
        for line in stdout.lines().filter_map(|l| l.strip_prefix(&format!("{who} call "))) {
            assert!(seen.insert(line.parse::<u32>().unwrap()), "{who} call {line} twice");
        }
        assert_eq!(seen.len(), 1000, "{who}: every call arrives once");
    }
    assert!(stdout.contains("program image served over RPC: 1\n"), "{stdout}");
    assert!(stdout.contains("library image served over RPC: 1\n"), "{stdout}");
    assert_eq!(stdout.lines().count(), 2002, "no garbled lines: {stdout}");
}

/// The device header's warp code (leader election, one packet per lane, byte strings and printf
/// strings of different lengths per lane) run on the host: the threads of a parallel region play the
/// 32 or 64 lanes of a warp. The image exports its lane count, and its server gets as many lanes,
/// whatever the host device's default (`OMPRPC_HOST_RPC_LANES`) is.
#[test]
fn a_simulated_warp_runs_the_gpu_client_code_through_the_plugin() {
    for (lanes, device_lanes) in [(32usize, None), (64, None), (32, Some("32")), (64, Some("1"))] {
        let define = format!("-DOMPRPC_SIMULATED_LANES={lanes}");
        let exe = support::build_program_with("rpc_simulated_warp.c", &[&define]);
        let env: Vec<(&str, &str)> = device_lanes.map(|l| ("OMPRPC_HOST_RPC_LANES", l)).into_iter().collect();
        let out = run_text(&exe, &[], Plugin::Ours, &env);
        assert!(out.status.success(), "{lanes} lanes: {}\n{}", out.status, out.stderr);
        check_ours_ran(&out.stderr).unwrap();
        let mut expected = String::new();
        let mut results = String::new();
        for lane in 0..lanes {
            let line = support::simulated_lane_line(lane);
            results.push_str(&format!(
                "lane {lane:2}: printed {}, scaled {}, reversed 1, malloc 1\n",
                line.len(),
                (lane + 1) * 3 + 1000 * lane
            ));
            expected.push_str(&line);
        }
        expected.push_str(&format!("lanes {lanes}, rpc 1\n"));
        expected.push_str(&results);
        assert_eq!(out.stdout, expected, "{lanes} lanes, device default {device_lanes:?}");
        assert!(!out.stderr.contains("omprpc error"), "{}", out.stderr);
    }
}

/// Lanes of one simulated warp making different calls at once, from all lanes and from subsets of
/// the warp (`c_tests/rpc_mixed_lanes.c`): one call site writing to stdout, stderr or a file by lane
/// (three opcodes), one call site calling two user opcodes, and two branches calling printf and user
/// opcodes side by side. Every line reaches its lane's stream once and in the lane's order, every
/// user call its own handler once and in order, and every lane gets its own answers (the program
/// counts wrong ones). Before lanes were grouped by opcode, the leader's opcode took the whole warp.
#[test]
fn lanes_of_one_warp_making_different_calls_each_reach_their_own_stream_and_handler() {
    for lanes in [32usize, 64] {
        let define = format!("-DOMPRPC_SIMULATED_LANES={lanes}");
        let exe = support::build_program_with("rpc_mixed_lanes.c", &[&define]);
        let file = support::scratch().join(format!("rpc_mixed_lanes-{lanes}.tmp"));
        let out = run_text(&exe, &[file.to_str().unwrap()], Plugin::Ours, &[]);
        assert!(out.status.success(), "{lanes} lanes: {}\n{}", out.status, out.stderr);
        check_ours_ran(&out.stderr).unwrap();
        assert!(
            out.stdout.contains("\nrpc 1, wrong answers 0\n"),
            "{lanes} lanes:\n{}",
            out.stdout
        );
        let written = std::fs::read_to_string(&file).unwrap();
        let in_round = |lane: usize, round: usize| round == 0 || lane % 5 != 2;
        let mut total_lines = 0;
        for lane in 0..lanes {
            let mut lines = Vec::new();
            let mut calls = Vec::new();
            for round in 0..2 {
                if !in_round(lane, round) {
                    continue;
                }
                lines.extend((0..4).map(|k| format!("lane {lane:02} {round}{k}")));
                calls.extend(0..4);
                if lane % 4 == 0 {
                    lines.extend((0..4).map(|k| format!("lane {lane:02} {round}{k} printf")));
                } else {
                    calls.extend(4..8);
                }
            }
            let stream = [&out.stdout, &out.stderr, &written][lane % 3];
            let prefix = format!("lane {lane:02} ");
            let got: Vec<&str> = stream.lines().filter(|l| l.starts_with(&prefix)).collect();
            assert_eq!(got, lines, "{lanes} lanes: lane {lane}'s lines on stream {}", lane % 3);
            total_lines += lines.len();
            // The lane's user calls, numbered in its order, all at the handler of its parity.
            let numbered: Vec<String> = (0..calls.len()).map(|i| i.to_string()).collect();
            let handler = if lane % 2 == 1 { "odd" } else { "even" };
            let line = format!("{handler} lane {lane:02}: {}", numbered.join(" "));
            assert!(
                out.stdout.contains(&format!("{line}\n")),
                "{lanes} lanes: no {line:?} in\n{}",
                out.stdout
            );
        }
        let handler_lines = out
            .stdout
            .lines()
            .filter(|l| l.starts_with("even ") || l.starts_with("odd "))
            .count();
        assert_eq!(
            handler_lines, lanes,
            "one handler line per lane, at one handler only:\n{}",
            out.stdout
        );
        let on_any_stream = [&out.stdout, &out.stderr, &written]
            .iter()
            .flat_map(|stream| stream.lines())
            .filter(|l| l.starts_with("lane "))
            .count();
        assert_eq!(
            on_any_stream, total_lines,
            "{lanes} lanes: no line on another lane's stream"
        );
        std::fs::remove_file(&file).unwrap();
    }
}

/// An image built with the default (1-lane) header on a host device whose default lane count is 32
/// (`OMPRPC_HOST_RPC_LANES=32`, which crashed the program when the server took the device's lanes):
/// the image's own lane count decides.
#[test]
fn an_image_is_served_with_the_lane_count_it_was_built_for() {
    let exe = build_program("rpc_services.c");
    let expected = std::fs::read_to_string(support::root().join("c_tests/rpc_services.expected")).unwrap();
    let out = run_text(
        &exe,
        &[],
        Plugin::Ours,
        &[("OMPRPC_HOST_RPC_LANES", "32"), ("LIBOMPTARGET_INFO", "16")],
    );
    assert!(out.status.success(), "{}\n{}", out.status, out.stderr);
    assert_eq!(out.stdout, expected);
    assert!(
        out.stderr
            .contains("host services ready for the image: 16 RPC ports of 1 lane(s)"),
        "{}",
        out.stderr
    );
}

/// A child forked after the parent offloaded with host services offloads too: its host calls are
/// served (the serving thread is started again in the child), where before the child hung.
#[test]
fn a_forked_child_is_served() {
    let exe = build_program("fork_child.c");
    let expected = "parent: a host call from the device\n\
                    parent: region gave 42, on device 1\n\
                    child: a host call from the device\n\
                    child: region gave 42, on device 1\n\
                    child exited with 0\n";
    let ours = run_text(&exe, &[], Plugin::Ours, &[]);
    assert!(
        ours.status.success(),
        "{}\n{}\n{}",
        ours.status,
        ours.stdout,
        ours.stderr
    );
    assert_eq!(ours.stdout, expected);
    check_ours_ran(&ours.stderr).unwrap();
    // The stock plugin has no host services (the header's host fallback prints): the same lines.
    let stock = run_text(&exe, &[], Plugin::Stock, &[]);
    assert_eq!(stock.stdout, expected, "under the stock plugin");
}

/// A child forked right after the parent's host call was served counts and traces only its own
/// calls, in state of its own: before, the child inherited the parent's statistics, and the claim of
/// the port's window that the parent's serving thread still held (it accounts a call after replying)
/// stayed held in the child, whose call on that port then waited for ever.
#[test]
fn a_forked_childs_statistics_and_trace_are_its_own() {
    let exe = build_program("fork_child.c");
    let path = support::fresh_scratch_file("fork-trace", "fork.json");
    for _ in 0..3 {
        let out = run_text(
            &exe,
            &["stats"],
            Plugin::Ours,
            &[("OMPRPC_STATS", "1"), ("OMPRPC_TRACE", path.to_str().unwrap())],
        );
        assert!(out.status.success(), "{}\n{}\n{}", out.status, out.stdout, out.stderr);
        assert!(
            out.stdout.contains("child: a host call from the device\n"),
            "{}",
            out.stdout
        );
        // Two reports (the child's on demand, the parent's at its exit), one call each.
        let calls: Vec<String> = support::stats_rows(&out.stderr)
            .into_iter()
            .map(|row| row[2].clone())
            .collect();
        assert_eq!(calls, ["1", "1"], "{}", out.stderr);
        let spans = support::trace_events(&support::read_trace(&path, &out.stderr), "host call").len();
        assert_eq!(spans, 1, "the parent's trace holds the parent's call");
    }
}

/// A child forked while a user handler runs on the parent's serving thread gets its own calls of that
/// opcode served: before, it inherited the handler's "running" mark and lock, whose thread did not
/// survive the fork, and waited for ever.
#[test]
fn a_child_forked_while_a_handler_runs_is_served() {
    let exe = build_program("fork_during_handler.c");
    let out = run_text(&exe, &[], Plugin::Ours, &[]);
    assert!(out.status.success(), "{}\n{}\n{}", out.status, out.stdout, out.stderr);
    assert_eq!(out.stdout, "child got 8\nparent got 42\nchild exited with 0\n");
}

/// Without a server (the stock plugin), `omprpc_printf` prints with the host's stdio; each call is one
/// locked write, so lines from 8 host threads at once stay whole.
#[test]
fn fallback_printf_lines_from_many_threads_stay_whole() {
    let exe = build_program("printf_fallback.c");
    let out = run_text(&exe, &["2000"], Plugin::Stock, &[]);
    assert!(out.status.success(), "{}\n{}", out.status, out.stderr);
    support::check_stock_ran(&out.stderr).unwrap();
    let mut seen = BTreeSet::new();
    for line in out.stdout.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        let parsed = match words[..] {
            ["thread", t, "call", i, "value", v, "text", "abcdefghijklmnop", "x", "end"] => t
                .parse::<u32>()
                .ok()
                .zip(i.parse::<u32>().ok())
                .filter(|&(_, i)| v == format!("{:.1}", f64::from(i) * 0.5)),
            _ => None,
        };
        let key = parsed.unwrap_or_else(|| panic!("a broken line: {line:?}"));
        assert!(seen.insert(key), "{line:?} twice");
    }
    assert_eq!(seen.len(), 8 * 2000, "every line, whole");
}

#[test]
fn a_kernel_that_computes_without_calling_costs_the_plugin_no_cpu_core() {
    // The serving threads sleep once a lull has lasted a while; the host device's code wakes them by
    // ringing the doorbell, and its second call, after a second of quiet, is served. Measured: about
    // 0.005 of a core (a whole core before the serving threads slept); a quarter cannot flake.
    let exe = build_program("bench_rpc.c");
    let out = run_text(&exe, &["quiet", "1"], Plugin::Ours, &[]);
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);
    check_ours_ran(&out.stderr).unwrap();
    let used: f64 = support::field(&out.stdout, "plugin threads' cpu per second of a quiet kernel:");
    assert!(
        used < 0.25,
        "the plugin's threads used {used:.3} of a core while the kernel called nothing"
    );
    // With OMPRPC_RPC_WAIT=spin they keep a core, as asked: the measurement can tell the two apart.
    let spinning = run_text(&exe, &["quiet", "1"], Plugin::Ours, &[("OMPRPC_RPC_WAIT", "spin")]);
    assert!(spinning.status.success(), "{}", spinning.stderr);
    let spun: f64 = support::field(&spinning.stdout, "plugin threads' cpu per second of a quiet kernel:");
    assert!(spun > 0.5, "OMPRPC_RPC_WAIT=spin used only {spun:.3} of a core");
}

#[test]
fn calls_racing_the_server_going_to_sleep_are_all_served_promptly() {
    // 3,000 calls, each after a pause around the serving threads' spin, so that many are written just
    // as the scanner goes to sleep. A lost wake-up would leave a call waiting for the scanner's
    // look-anyway timer (100 ms); a served one takes microseconds.
    let exe = build_program("bench_rpc.c");
    let out = run_text(&exe, &["lulls", "3000"], Plugin::Ours, &[]);
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);
    let slowest: f64 = support::field(out.stdout.split(", ").nth(1).unwrap_or(""), "slowest ns:");
    assert!(
        slowest < 90e6,
        "a call waited {:.1} ms: a request written as the server went to sleep was missed\n{}",
        slowest / 1e6,
        out.stdout
    );
}

#[test]
fn one_devices_slow_host_call_holds_up_no_other_devices_calls() {
    // Device 0's handler holds its call until device 1's ten regions of 1,000 calls are done. They
    // took 0.02 s; when each region's end waited for every device's calls, 10 s.
    let exe = build_program("rpc_slow_handler_other_device.c");
    let out = run_text(&exe, &[], Plugin::Ours, &[("OMPRPC_HOST_DEVICES", "2")]);
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);
    check_ours_ran(&out.stderr).unwrap();
    let line = out.stdout.lines().next().unwrap_or_default();
    let took: f64 = line
        .split_whitespace()
        .nth(5)
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no time in {line:?}"));
    assert!(line.ends_with("still held"), "{line}");
    assert!(took < 5.0, "device 1's calls waited for device 0's slow call: {line}");
}

/// LLVM libc's `rpc_host_call`, from the device library's own code, and `omprpc_host_call`: every
/// calling thread's host call runs on the host with a copy of its bytes (and the latter returns the
/// function's result); an address that is not
/// a host function's (a variable's, a made-up one) is refused with one line and returns 0, and the
/// program goes on.
#[test]
fn rpc_host_call_runs_host_functions_and_refuses_other_addresses() {
    let exe = build_program("rpc_host_call.c");
    let out = run_text(&exe, &[], Plugin::Ours, &[]);
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(
        out.status.success(),
        "{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    check_ours_ran(stderr).unwrap();
    let summary = stdout.lines().last().unwrap_or_default();
    let calls: usize = summary
        .strip_prefix("calls ")
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no summary in:\n{stdout}"));
    assert!(calls >= 2, "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("Thread: ")).count(),
        2 * calls,
        "two host calls (rpc_host_call, omprpc_host_call) per calling thread:\n{stdout}"
    );
    assert!(
        summary.ends_with("results as returned 1, device bytes untouched 1, refused calls give 1000"),
        "{summary}"
    );
    let refusals: Vec<&str> = stderr.lines().filter(|l| l.contains("rpc_host_call")).collect();
    assert_eq!(refusals.len(), 2, "{stderr}");
    assert!(refusals[1].contains("0x1234 is not in the code"), "{stderr}");
}
