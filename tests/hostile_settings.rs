//! Bad values in every setting omprpc reads (empty, negative, huge, non-numeric, out of range): the
//! program still runs, prints what it prints without the setting, and omprpc says exactly once which
//! setting it ignored and what it uses instead.
//!
//! `LIBOMPTARGET_INFO` is left out: libomptarget 16 parses it first, with `std::stoi`, and aborts the
//! program on a non-number whichever plugin is loaded.

mod support;

use support::{build_program, check_ours_ran, run_text, Plugin};

/// Every numeric setting omprpc reads (`OMPRPC_RPC_WAIT` takes a number too).
const NUMERIC: [&str; 14] = [
    "OMPRPC_HOST_DEVICES",
    "OMPRPC_RPC_PORTS",
    "OMPRPC_HOST_RPC_LANES",
    "LIBOMPTARGET_NUM_INITIAL_STREAMS",
    "LIBOMPTARGET_NUM_INITIAL_EVENTS",
    "LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD",
    "LIBOMPTARGET_SHARED_MEMORY_SIZE",
    "LIBOMPTARGET_DEVICE_RTL_DEBUG",
    "LIBOMPTARGET_STACK_SIZE",
    "LIBOMPTARGET_HEAP_SIZE",
    "OMP_NUM_TEAMS",
    "OMP_TEAMS_THREAD_LIMIT",
    "OMPRPC_BACKEND",
    "OMPRPC_RPC_WAIT",
];

const BAD: [&str; 7] = ["", "-5", "99999999999999999999999", "lots", "1e3", "0x10", "12abc"];

/// The lines omprpc itself printed (not the test programs' own `omprpc-test:` lines).
fn omprpc_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("omprpc") && !l.starts_with("omprpc-test: "))
        .collect()
}

#[test]
fn bad_values_get_one_message_and_the_default() {
    // A program with host services, so that the RPC settings are used.
    let exe = build_program("rpc_services.c");
    let baseline = run_text(&exe, &[], Plugin::Ours, &[]);
    assert!(baseline.status.success(), "{}", baseline.stderr);
    check_ours_ran(&baseline.stderr).unwrap();
    assert!(omprpc_lines(&baseline.stderr).is_empty(), "{}", baseline.stderr);
    let mut failures = Vec::new();
    for name in NUMERIC {
        for value in BAD {
            // OMPRPC_BACKEND accepts no number, so "-5" and "0x10" are as bad as "lots" there.
            let out = run_text(&exe, &[], Plugin::Ours, &[(name, value)]);
            let lines = omprpc_lines(&out.stderr);
            let said_once = lines.len() == 1
                && lines[0].contains(&format!("{name}='{value}'"))
                && (lines[0].contains("; using ") || lines[0].contains("; ignoring"));
            if !out.status.success() || out.stdout != baseline.stdout || !said_once {
                let changed: Vec<(&str, &str)> = out
                    .stdout
                    .lines()
                    .zip(baseline.stdout.lines())
                    .filter(|(now, before)| now != before)
                    .collect();
                failures.push(format!(
                    "{name}='{value}': exit {:?}, messages {lines:?}, output {}",
                    out.status.code(),
                    if out.stdout == baseline.stdout {
                        "as without it".to_string()
                    } else {
                        format!("changed (lines now, and without it: {changed:?})")
                    }
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
