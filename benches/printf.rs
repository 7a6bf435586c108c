//! printf throughput from device code through omprpc on the host device: lines per second from one
//! lane and from simulated warps of 32 and 64 lanes (`c_tests/bench_printf.c`), through the device
//! library's printf (`__llvm_omp_vprintf` with clang's argument struct) beside `omprpc_printf` of the
//! header, in the same run, alternately, in processes of their own; the ratio is the median of the
//! rounds' library-over-header ratios. Then the device's own part of a call alone (reading the format
//! for its strings and laying out the request in packets) on one thread, as lines per second and as a
//! share of a one-lane call.
//!
//! A simulated warp's lanes are host threads, and every operation among lanes is a barrier of all of
//! them: on a machine with fewer cores than lanes its figures measure those barriers more than the
//! exchange, and only the ratio carries over to a GPU.
//!
//! Run with `cargo bench --bench printf`.

#[path = "../tests/support/mod.rs"]
mod support;

use support::{build_program_with, field, median, run_text, Plugin};

const ROUNDS: usize = 5;

/// Lines per second of `mode` ("library", "header" or "scan") printing `lines` lines per lane on a
/// device of `lanes` lanes.
fn lines_per_second(lanes: usize, mode: &str, lines: usize) -> f64 {
    let define = format!("-DOMPRPC_SIMULATED_LANES={lanes}");
    let flags: &[&str] = if lanes == 1 { &["-O2"] } else { &["-O2", &define] };
    let exe = build_program_with("bench_printf.c", flags);
    let out = run_text(&exe, &[mode, &lines.to_string()], Plugin::Ours, &[]);
    assert!(out.status.success(), "{mode} {lanes}: {}\n{}", out.status, out.stderr);
    field(&out.stderr, "lines per second:")
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    println!("printf lines per second through omprpc's host device, library (__llvm_omp_vprintf) beside header (omprpc_printf)");
    println!(
        "{:>6} {:>16} {:>16} {:>18}",
        "lanes", "library lines/s", "header lines/s", "library / header"
    );
    let mut one_lane = 0.0;
    for (lanes, lines) in [(1usize, 20_000usize), (32, 60), (64, 40)] {
        let (mut library, mut header, mut ratios) = (vec![], vec![], vec![]);
        for _ in 0..ROUNDS {
            let ours = lines_per_second(lanes, "library", lines);
            let theirs = lines_per_second(lanes, "header", lines);
            library.push(ours);
            header.push(theirs);
            ratios.push(ours / theirs);
        }
        let library = median(library);
        if lanes == 1 {
            one_lane = library;
        }
        println!(
            "{lanes:>6} {library:>16.0} {:>16.0} {:>18.2}",
            median(header),
            median(ratios)
        );
    }
    let scan = median((0..ROUNDS).map(|_| lines_per_second(1, "scan", 1_000_000)).collect());
    println!(
        "the device's own part of a call alone (format read, request laid out in packets): {scan:.0} lines/s, \
         {:.1}% of a one-lane library call",
        100.0 * one_lane / scan
    );
}
