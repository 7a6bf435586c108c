//! `snprintf` and `strtod` per call from device code on omprpc's host device
//! (`c_tests/bench_convert.c`): through the host, as the device library makes them on a GPU (the
//! plugin's FORMAT_TO_BUFFER and STRTOD: a request and a reply through the mailbox, glibc on the
//! host), against the same calls to glibc in place (in the target region itself: what a conversion done
//! on the device would cost on this processor, the stand-in for one). From one lane and from a
//! simulated warp of 32 lanes, in processes of their own, the two ways alternately; the ratio is the
//! median of the rounds' through/in-place times, and both ways print the same checksum.
//!
//! A simulated warp's lanes are host threads, and every operation among lanes is a barrier of all of
//! them: on a machine with fewer cores than lanes its figures measure those barriers more than the
//! exchange.
//!
//! Run with `cargo bench --bench convert`.

#[path = "../tests/support/mod.rs"]
mod support;

use support::{build_program_with, field, median, run_text, Plugin};

const ROUNDS: usize = 5;

/// Nanoseconds per call (all lanes' calls together) of `call` made `way` ("through" or "inplace"),
/// `calls` per lane on `lanes` lanes, and the run's checksum line.
fn ns_per_call(lanes: usize, call: &str, way: &str, calls: usize) -> (f64, String) {
    let define = format!("-DOMPRPC_SIMULATED_LANES={lanes}");
    let flags: &[&str] = if lanes == 1 { &["-O2"] } else { &["-O2", &define] };
    let exe = build_program_with("bench_convert.c", flags);
    let out = run_text(&exe, &[call, way, &calls.to_string()], Plugin::Ours, &[]);
    assert!(
        out.status.success(),
        "{call} {way} {lanes}: {}\n{}",
        out.status,
        out.stderr
    );
    let checksum = out
        .stdout
        .lines()
        .find(|l| l.starts_with("checksum:"))
        .unwrap_or_default();
    (
        1e9 / field::<f64>(&out.stderr, "calls per second:"),
        checksum.to_string(),
    )
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    println!("ns per call from device code on omprpc's host device: through the host beside glibc in place");
    println!(
        "{:>9} {:>6} {:>14} {:>14} {:>18}",
        "call", "lanes", "through (ns)", "in place (ns)", "through / in place"
    );
    for call in ["snprintf", "strtod"] {
        for (lanes, calls) in [(1usize, 50_000usize), (32, 300)] {
            let (mut through, mut inplace, mut ratios) = (vec![], vec![], vec![]);
            for _ in 0..ROUNDS {
                let (t, sum_through) = ns_per_call(lanes, call, "through", calls);
                let (i, sum_inplace) = ns_per_call(lanes, call, "inplace", calls);
                assert_eq!(sum_through, sum_inplace, "{call} {lanes}: both ways compute the same");
                through.push(t);
                inplace.push(i);
                ratios.push(t / i);
            }
            println!(
                "{call:>9} {lanes:>6} {:>14.0} {:>14.0} {:>18.1}",
                median(through),
                median(inplace),
                median(ratios)
            );
        }
    }
}
