//! `OMPRPC_STATS=1`: per device and opcode, how many host calls device code made, how many lanes took
//! part, the bytes that went each way, and the latency from the request being seen to the reply being
//! written (50th and 99th percentile and maximum), printed as a table on stderr.
//!
//! Recording is meant to stay on in real runs, so it costs one uncontended lock, one hash lookup and a
//! histogram increment: each thread records into one of 16 shards (threads are dealt shards in
//! turn), and the shards are merged only when a report is made. Nothing is allocated after the first
//! call of a (device, opcode) pair in a shard (`docs/measurements.md`, "Statistics", says how much).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use hdrhistogram::Histogram;

use crate::rpc::protocol::ffi::opcode;
use crate::util::sync::{lock, PerProcess};

/// Shards that recording threads are dealt; more threads than this share them.
const SHARDS: usize = 16;

/// Latencies above this (one hour) are counted as this, so that no call goes unrecorded.
const MAX_TRACKED_LATENCY_NS: u64 = 3_600 * 1_000_000_000;

/// Significant decimal digits the latency histograms keep.
const LATENCY_DIGITS: u8 = 3;

/// Whether `OMPRPC_STATS` asks for statistics; cheap enough to ask on every host call.
pub fn enabled() -> bool {
    crate::util::config::host_services().stats
}

/// One host call served, as the serving code measured it.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    /// The device whose code made the call.
    pub device: usize,
    /// The opcode the device asked for.
    pub opcode: u16,
    /// Lanes of the device that took part (1 for a single thread, up to a warp or wavefront).
    pub lanes: u32,
    /// From the request being seen to the reply being written, in nanoseconds.
    pub latency_ns: u64,
    /// Bytes the device sent to the host.
    pub bytes_to_host: u64,
    /// Bytes the host sent back to the device.
    pub bytes_to_device: u64,
}

/// What the calls of one (device, opcode) pair add up to.
struct Totals {
    calls: u64,
    lanes: u64,
    bytes_to_host: u64,
    bytes_to_device: u64,
    /// Exact, unlike the histogram's values.
    max_latency_ns: u64,
    latency_ns: Histogram<u64>,
}

impl Totals {
    fn new() -> Totals {
        Totals {
            calls: 0,
            lanes: 0,
            bytes_to_host: 0,
            bytes_to_device: 0,
            max_latency_ns: 0,
            latency_ns: Histogram::new_with_bounds(1, MAX_TRACKED_LATENCY_NS, LATENCY_DIGITS)
                .expect("1 ns to 1 hour at 3 digits is a valid histogram"),
        }
    }

    fn add(&mut self, call: &Call) {
        self.calls += 1;
        self.lanes = self.lanes.saturating_add(u64::from(call.lanes));
        self.bytes_to_host = self.bytes_to_host.saturating_add(call.bytes_to_host);
        self.bytes_to_device = self.bytes_to_device.saturating_add(call.bytes_to_device);
        self.max_latency_ns = self.max_latency_ns.max(call.latency_ns);
        self.latency_ns.saturating_record(call.latency_ns);
    }

    fn merge(&mut self, other: &Totals) {
        self.calls += other.calls;
        self.lanes = self.lanes.saturating_add(other.lanes);
        self.bytes_to_host = self.bytes_to_host.saturating_add(other.bytes_to_host);
        self.bytes_to_device = self.bytes_to_device.saturating_add(other.bytes_to_device);
        self.max_latency_ns = self.max_latency_ns.max(other.max_latency_ns);
        self.latency_ns
            .add(&other.latency_ns)
            .expect("histograms of the same bounds always add");
    }

    /// The latency below which `quantile` of the calls fall, never above the exact maximum.
    fn latency_at(&self, quantile: f64) -> u64 {
        self.latency_ns.value_at_quantile(quantile).min(self.max_latency_ns)
    }
}

type Shard = HashMap<(usize, u16), Totals>;

/// One line of a report, before formatting.
#[derive(Debug, PartialEq, Eq)]
struct Row {
    device: usize,
    opcode: u16,
    calls: u64,
    lanes: u64,
    bytes_to_host: u64,
    bytes_to_device: u64,
    p50_ns: u64,
    p99_ns: u64,
    max_ns: u64,
}

/// Host calls served, per device and opcode.
pub struct Stats {
    shards: [Mutex<Shard>; SHARDS],
}

impl Default for Stats {
    fn default() -> Stats {
        Stats::new()
    }
}

impl Stats {
    /// Statistics of no calls yet.
    pub fn new() -> Stats {
        Stats {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
        }
    }

    /// Counts one served call; safe to call from several serving threads at once.
    pub fn record(&self, call: &Call) {
        let mut shard = lock(&self.shards[shard_of_this_thread()]);
        shard
            .entry((call.device, call.opcode))
            .or_insert_with(Totals::new)
            .add(call);
    }

    /// Whether no call has been recorded.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.shards.iter().all(|shard| lock(shard).is_empty())
    }

    /// The shards merged, by device and then opcode.
    fn rows(&self) -> Vec<Row> {
        let mut merged: BTreeMap<(usize, u16), Totals> = BTreeMap::new();
        for shard in &self.shards {
            for (key, totals) in lock(shard).iter() {
                merged.entry(*key).or_insert_with(Totals::new).merge(totals);
            }
        }
        merged
            .into_iter()
            .map(|((device, opcode), totals)| Row {
                device,
                opcode,
                calls: totals.calls,
                lanes: totals.lanes,
                bytes_to_host: totals.bytes_to_host,
                bytes_to_device: totals.bytes_to_device,
                p50_ns: totals.latency_at(0.50),
                p99_ns: totals.latency_at(0.99),
                max_ns: totals.max_latency_ns,
            })
            .collect()
    }

    /// The statistics as an aligned table, every line starting with `omprpc stats:` and ending with a
    /// newline.
    pub fn report(&self) -> String {
        let rows = self.rows();
        if rows.is_empty() {
            return "omprpc stats: no host calls were served\n".to_string();
        }
        const HEADER: [&str; 9] = [
            "device",
            "opcode",
            "calls",
            "lanes",
            "to host",
            "to device",
            "p50 latency",
            "p99 latency",
            "max latency",
        ];
        /// The column of opcode names, aligned left; the numbers are aligned right.
        const NAME_COLUMN: usize = 1;
        let mut table = vec![HEADER.map(str::to_string)];
        table.extend(rows.iter().map(|row| {
            [
                row.device.to_string(),
                opcode::Label(row.opcode).to_string(),
                row.calls.to_string(),
                row.lanes.to_string(),
                human_bytes(row.bytes_to_host),
                human_bytes(row.bytes_to_device),
                human_duration(row.p50_ns),
                human_duration(row.p99_ns),
                human_duration(row.max_ns),
            ]
        }));
        let mut widths = [0; HEADER.len()];
        for line in &table {
            for (width, cell) in widths.iter_mut().zip(line) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut report = String::new();
        for line in &table {
            report.push_str("omprpc stats:");
            for (column, (cell, width)) in line.iter().zip(widths).enumerate() {
                let padding = " ".repeat(width - cell.chars().count());
                report.push_str("  ");
                if column == NAME_COLUMN {
                    report.push_str(cell);
                    report.push_str(&padding);
                } else {
                    report.push_str(&padding);
                    report.push_str(cell);
                }
            }
            report.push('\n');
        }
        report
    }
}

/// The shard this thread records into.
fn shard_of_this_thread() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    // A thread that records while its thread-locals are being torn down uses the first shard.
    SHARD.try_with(|shard| *shard).unwrap_or(0)
}

/// `value` with three significant digits or more (1.50, 12.5, 640).
fn three_digits(value: f64) -> String {
    if value < 10.0 {
        format!("{value:.2}")
    } else if value < 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}

/// `bytes` in B, KiB, MiB or GiB.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{} {}", three_digits(value), UNITS[unit])
}

/// `ns` in ns, µs, ms or s.
fn human_duration(ns: u64) -> String {
    let (divisor, unit) = match ns {
        0..1_000 => return format!("{ns} ns"),
        1_000..1_000_000 => (1e3, "µs"),
        1_000_000..1_000_000_000 => (1e6, "ms"),
        _ => (1e9, "s"),
    };
    format!("{} {unit}", three_digits(ns as f64 / divisor))
}

/// The statistics of this process, which the serving code records into. A forked child counts its
/// own calls (the parent's, and any lock a parent's thread held at the fork, stay with the parent).
pub fn global() -> &'static Stats {
    static GLOBAL: PerProcess<Stats> = PerProcess::new();
    GLOBAL.get_or_make(Stats::new, |_| {})
}

/// Writes the report of [`global`] to stderr in one write, so that it is not interleaved with other
/// output: at exit, and whenever a program asks.
pub fn print() {
    let report = global().report();
    let _ = std::io::stderr().lock().write_all(report.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    const MICROSECOND: u64 = 1_000;
    const MILLISECOND: u64 = 1_000_000;

    fn call(device: usize, opcode: u16, latency_ns: u64) -> Call {
        Call {
            device,
            opcode,
            lanes: 32,
            latency_ns,
            bytes_to_host: 100,
            bytes_to_device: 8,
        }
    }

    /// Whether `value` is within the histogram's relative precision (3 digits) of `want`.
    fn close(value: u64, want: u64) -> bool {
        value.abs_diff(want) as f64 <= want as f64 * 1e-3
    }

    #[test]
    fn percentiles_and_sums_of_a_known_mix() {
        let stats = Stats::new();
        assert!(stats.is_empty());
        for _ in 0..1_000 {
            stats.record(&call(0, opcode::PRINTF_TO_STDOUT, MICROSECOND));
        }
        for _ in 0..10 {
            stats.record(&call(0, opcode::PRINTF_TO_STDOUT, MILLISECOND));
        }
        assert!(!stats.is_empty());
        let rows = stats.rows();
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!((row.device, row.opcode), (0, opcode::PRINTF_TO_STDOUT));
        assert_eq!(row.calls, 1_010);
        assert_eq!(row.lanes, 1_010 * 32);
        assert_eq!(row.bytes_to_host, 1_010 * 100);
        assert_eq!(row.bytes_to_device, 1_010 * 8);
        assert!(close(row.p50_ns, MICROSECOND), "p50 {}", row.p50_ns);
        assert!(close(row.p99_ns, MICROSECOND), "p99 {}", row.p99_ns);
        assert_eq!(row.max_ns, MILLISECOND);
    }

    #[test]
    fn long_and_zero_latencies_are_recorded() {
        let stats = Stats::new();
        stats.record(&call(0, opcode::MALLOC, 2_000 * MILLISECOND));
        stats.record(&call(0, opcode::MALLOC, 0));
        stats.record(&call(0, opcode::FREE, u64::MAX));
        let rows = stats.rows();
        assert_eq!(rows[0].calls, 2);
        assert_eq!(rows[0].max_ns, 2_000 * MILLISECOND);
        assert!(close(rows[0].p99_ns, 2_000 * MILLISECOND), "p99 {}", rows[0].p99_ns);
        assert_eq!(rows[1].calls, 1);
        assert_eq!(rows[1].max_ns, u64::MAX);
        assert!(close(rows[1].p50_ns, MAX_TRACKED_LATENCY_NS), "p50 {}", rows[1].p50_ns);
    }

    #[test]
    fn rows_run_by_device_then_opcode() {
        let stats = Stats::new();
        stats.record(&call(1, opcode::MALLOC, MICROSECOND));
        stats.record(&call(0, 0x8001, MICROSECOND));
        stats.record(&call(1, opcode::EXIT, MICROSECOND));
        stats.record(&call(0, opcode::FREE, MICROSECOND));
        let order: Vec<(usize, u16)> = stats.rows().iter().map(|row| (row.device, row.opcode)).collect();
        assert_eq!(
            order,
            [(0, opcode::FREE), (0, 0x8001), (1, opcode::EXIT), (1, opcode::MALLOC)]
        );
    }

    #[test]
    fn opcodes_are_named() {
        assert_eq!(opcode::Label(opcode::PRINTF_TO_STREAM).to_string(), "PRINTF_TO_STREAM");
        assert_eq!(opcode::Label(0x8001).to_string(), "user 0x8001");
        assert_eq!(opcode::Label(0xFFFF).to_string(), "user 0xffff");
        assert_eq!(opcode::Label(0x63).to_string(), "opcode 0x0063");
    }

    /// The cells of a report line (cells hold single spaces at most; columns are two or more apart).
    fn cells(line: &str) -> Vec<&str> {
        line.split("  ")
            .map(str::trim)
            .filter(|cell| !cell.is_empty())
            .collect()
    }

    #[test]
    fn report_is_an_aligned_table() {
        let stats = Stats::new();
        for _ in 0..3 {
            stats.record(&Call {
                device: 0,
                opcode: opcode::WRITE_TO_STREAM,
                lanes: 1,
                latency_ns: 1_500,
                bytes_to_host: 3 << 20,
                bytes_to_device: 512,
            });
        }
        stats.record(&call(1, 0x8001, 2_000 * MILLISECOND));
        stats.record(&call(1, 0x63, 250));
        let report = stats.report();
        let lines: Vec<&str> = report.lines().collect();
        assert_eq!(lines.len(), 4, "{report}");
        assert!(report.ends_with('\n'));
        assert!(lines.iter().all(|line| line.starts_with("omprpc stats:")), "{report}");
        assert_eq!(
            cells(lines[0])[1..],
            [
                "device",
                "opcode",
                "calls",
                "lanes",
                "to host",
                "to device",
                "p50 latency",
                "p99 latency",
                "max latency"
            ]
        );
        assert_eq!(
            cells(lines[1])[1..],
            [
                "0",
                "WRITE_TO_STREAM",
                "3",
                "3",
                "9.00 MiB",
                "1.50 KiB",
                "1.50 µs",
                "1.50 µs",
                "1.50 µs"
            ]
        );
        assert_eq!(
            cells(lines[2])[1..],
            [
                "1",
                "opcode 0x0063",
                "1",
                "32",
                "100 B",
                "8 B",
                "250 ns",
                "250 ns",
                "250 ns"
            ]
        );
        assert_eq!(cells(lines[3])[1..4], ["1", "user 0x8001", "1"]);
        assert_eq!(cells(lines[3])[9], "2.00 s");
        // Every column ends (numbers) or starts (names) at the same place on every line.
        let width = lines[0].chars().count();
        assert!(lines.iter().all(|line| line.chars().count() == width), "{report}");
        let name_start = lines[0].find("opcode").unwrap();
        assert!(
            lines[1..].iter().all(|line| !line[name_start..].starts_with(' ')),
            "{report}"
        );
        assert!(
            lines[1..].iter().all(|line| line[..name_start].ends_with("  ")),
            "{report}"
        );
    }

    #[test]
    fn empty_report_says_so() {
        assert_eq!(Stats::new().report(), "omprpc stats: no host calls were served\n");
    }

    #[test]
    fn units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.00 KiB");
        assert_eq!(human_bytes(150 << 10), "150 KiB");
        assert_eq!(human_bytes(5 << 30), "5.00 GiB");
        assert_eq!(human_duration(999), "999 ns");
        assert_eq!(human_duration(12_345), "12.3 µs");
        assert_eq!(human_duration(250 * MILLISECOND), "250 ms");
        assert_eq!(human_duration(61_000 * MILLISECOND), "61.0 s");
    }

    #[test]
    fn concurrent_recording_sums_exactly() {
        const THREADS: usize = 4;
        const CALLS: u64 = 10_000;
        let stats = Stats::new();
        std::thread::scope(|scope| {
            for thread in 0..THREADS {
                let stats = &stats;
                scope.spawn(move || {
                    for i in 0..CALLS {
                        stats.record(&call(0, opcode::MALLOC, MICROSECOND + i));
                        stats.record(&call(thread % 2, opcode::FREE, MICROSECOND));
                    }
                });
            }
        });
        let rows = stats.rows();
        let calls: Vec<(usize, u16, u64)> = rows.iter().map(|row| (row.device, row.opcode, row.calls)).collect();
        let total = THREADS as u64 * CALLS;
        assert_eq!(
            calls,
            [
                (0, opcode::MALLOC, total),
                (0, opcode::FREE, total / 2),
                (1, opcode::FREE, total / 2)
            ]
        );
        assert_eq!(rows[0].lanes, total * 32);
        assert_eq!(rows[0].bytes_to_host, total * 100);
        assert_eq!(rows[0].max_ns, MICROSECOND + CALLS - 1);
    }
}
