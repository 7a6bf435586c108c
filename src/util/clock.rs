//! The one clock of host calls and the kernels around them: the statistics' latencies, the trace's
//! timestamps and the watchdog's durations are differences of its readings, so that they agree.

use std::sync::OnceLock;
use std::time::Instant;

/// Nanoseconds since the first time any code asked (a monotonic clock).
pub fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let elapsed = EPOCH.get_or_init(Instant::now).elapsed();
    u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
}
