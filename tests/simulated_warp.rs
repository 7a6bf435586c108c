//! Host services for GPU-shaped clients without a GPU: a simulated warp of 1, 32 or 64 lanes
//! (`omprpc::rpc::simulated`, driven by `examples/simulated_warp.rs`) calls the real LLVM libc 19
//! server in the real mailbox layout, served by omprpc's server and serving thread: printf from every
//! lane with different arguments and strings, byte strings of different lengths per lane, malloc/free
//! per lane, user opcodes with per-lane packets, a partial lane mask, and exit from one lane. Each
//! scenario runs in a process of its own.

mod support;

use std::process::Command;

fn run(scenario: &str, lanes: usize) -> support::Ran {
    let exe = support::built_example("simulated_warp");
    let mut cmd = Command::new(exe);
    cmd.args([scenario, &lanes.to_string()]);
    let out = support::run_with_limit(cmd, std::time::Duration::from_secs(60));
    support::Ran {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// What lane `lane` prints, and the printf result / scaled packet summary when `position` is the
/// lane's place among the active lanes.
fn expected(lanes: usize, active: impl Fn(usize) -> bool) -> String {
    let mut lines = String::new();
    let mut summary = Vec::new();
    let mut position = 0u64;
    for lane in 0..lanes {
        if !active(lane) {
            summary.push("0/0".to_string());
            continue;
        }
        let line = support::simulated_lane_line(lane);
        summary.push(format!("{}/{}", line.len(), (lane as u64 + 1) * 3 + 1000 * position));
        position += 1;
        lines.push_str(&line);
    }
    format!("{lines}results {}\n", summary.join(" "))
}

#[test]
fn every_lane_prints_its_own_line_with_its_own_arguments() {
    for lanes in [1, 32, 64] {
        let out = run("printf", lanes);
        assert!(out.status.success(), "{lanes}: {}\n{}", out.status, out.stderr);
        assert_eq!(out.stdout, expected(lanes, |_| true), "{lanes} lanes");
        assert_eq!(out.stderr, "", "{lanes} lanes");
    }
}

#[test]
fn a_partial_lane_mask_serves_only_the_active_lanes() {
    for lanes in [32, 64] {
        let out = run("mask", lanes);
        assert!(out.status.success(), "{lanes}: {}\n{}", out.status, out.stderr);
        assert_eq!(out.stdout, expected(lanes, |lane| lane % 3 == 0), "{lanes} lanes");
    }
}

#[test]
fn byte_strings_of_different_lengths_per_lane_arrive_whole() {
    for lanes in [1usize, 32, 64] {
        let out = run("bytes", lanes);
        assert!(out.status.success(), "{lanes}: {}\n{}", out.status, out.stderr);
        let longest = (0..lanes).map(|lane| (lane * 37) % 300).max().unwrap();
        assert_eq!(
            out.stdout,
            format!("bytes {lanes} lanes, longest {longest}: all reversed\n")
        );
    }
}

#[test]
fn every_lane_gets_its_own_device_memory() {
    for lanes in [1, 32, 64] {
        let out = run("malloc", lanes);
        assert!(out.status.success(), "{lanes}: {}\n{}", out.status, out.stderr);
        assert_eq!(out.stdout, format!("malloc {lanes} blocks, {lanes} distinct\n"));
        assert!(
            !out.stderr.contains("did not return"),
            "every free was of a block malloc returned"
        );
    }
}

#[test]
fn user_opcodes_get_one_packet_per_lane() {
    for lanes in [1u64, 32, 64] {
        let out = run("user", lanes as usize);
        assert!(out.status.success(), "{lanes}: {}\n{}", out.status, out.stderr);
        let values: Vec<String> = (0..lanes)
            .map(|lane| ((lane + 1) * 3 + 1000 * lane).to_string())
            .collect();
        assert_eq!(out.stdout, format!("user {}\n", values.join(" ")));
    }
}

#[test]
fn exit_from_one_lane_ends_the_process_with_its_status_after_its_output() {
    for lanes in [32, 64] {
        let out = run("exit", lanes);
        assert_eq!(out.status.code(), Some(7), "{lanes}: {}\n{}", out.status, out.stderr);
        assert_eq!(out.stdout, "before exit: lane 5\n", "{lanes} lanes");
    }
}
