//! `OMPRPC_TRACE=file.json`: a timeline of kernels that may call the host and of the host calls they
//! made, written at exit as a Chrome trace-event file (JSON object format), which Perfetto and
//! `chrome://tracing` open, so that a user sees where device time went to the host.
//!
//! Each device is a process of the trace; its kernels are one thread (`kernels`, sorted first) and the
//! host calls of each RPC port another (`port N`). Events are kept in a ring of a fixed number of
//! events (`OMPRPC_TRACE_EVENTS`, by default a million, 32 bytes each): when it is full the oldest are
//! overwritten, and the file says how many were dropped. Recording takes one lock and copies a few
//! numbers; kernel names are stored once each, and nothing is formatted until the file is written.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::util::log;
use crate::util::sync::{fork_generation, lock, PerProcess};

/// The setting that names the trace file.
const SETTING: &str = "OMPRPC_TRACE";

/// The file that `OMPRPC_TRACE` names; `None` when unset or empty (no tracing).
pub fn path() -> Option<&'static Path> {
    crate::util::config::host_services().trace.as_deref()
}

/// Whether host calls are traced; cheap enough to ask on every host call.
pub fn enabled() -> bool {
    path().is_some()
}

/// What a recorded span was.
#[derive(Clone, Copy, Debug)]
enum Span {
    /// A kernel, with the index of its name in [`Ring::names`].
    Kernel { name: u32 },
    /// A host call served on `port`.
    HostCall { port: u32, opcode: u16 },
}

impl Span {
    /// The thread of its device's process that the span belongs to.
    fn thread(self) -> u64 {
        match self {
            Span::Kernel { .. } => 0,
            Span::HostCall { port, .. } => 1 + u64::from(port),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Event {
    device: usize,
    begin_ns: u64,
    end_ns: u64,
    span: Span,
}

struct Ring {
    events: VecDeque<Event>,
    dropped: u64,
    /// Kernel names, each stored once, in the order first seen.
    names: Vec<Arc<str>>,
    name_indices: HashMap<Arc<str>, u32>,
}

/// What a snapshot of the trace held when it was written.
struct Written {
    events: usize,
    dropped: u64,
}

/// A bounded record of kernels and host calls, written as a Chrome trace.
pub struct Trace {
    capacity: usize,
    ring: Mutex<Ring>,
}

impl Trace {
    /// A trace that keeps the latest `events` events. Their memory is reserved at once and used as
    /// events come, so that recording never moves the ring.
    pub fn with_capacity(events: usize) -> Trace {
        Trace {
            capacity: events,
            ring: Mutex::new(Ring {
                events: VecDeque::with_capacity(events),
                dropped: 0,
                names: Vec::new(),
                name_indices: HashMap::new(),
            }),
        }
    }

    /// Records a kernel that may call the host on `device`, from its launch to its completion.
    pub fn kernel(&self, device: usize, name: &str, begin_ns: u64, end_ns: u64) {
        let mut ring = lock(&self.ring);
        let name = match ring.name_indices.get(name) {
            Some(&index) => index,
            None => {
                let index = u32::try_from(ring.names.len()).expect("fewer than 4 billion kernel names");
                let name: Arc<str> = Arc::from(name);
                ring.names.push(name.clone());
                ring.name_indices.insert(name, index);
                index
            }
        };
        self.push(
            &mut ring,
            Event {
                device,
                begin_ns,
                end_ns,
                span: Span::Kernel { name },
            },
        );
    }

    /// Records a host call that `device` made on `port`, from the request being seen to the reply
    /// being written.
    pub fn host_call(&self, device: usize, port: u32, opcode: u16, begin_ns: u64, end_ns: u64) {
        let mut ring = lock(&self.ring);
        self.push(
            &mut ring,
            Event {
                device,
                begin_ns,
                end_ns,
                span: Span::HostCall { port, opcode },
            },
        );
    }

    fn push(&self, ring: &mut Ring, event: Event) {
        if ring.events.len() >= self.capacity {
            ring.dropped += 1;
            if ring.events.pop_front().is_none() {
                return;
            }
        }
        ring.events.push_back(event);
    }

    /// Events overwritten because the ring was full.
    #[cfg(test)]
    pub fn dropped(&self) -> u64 {
        lock(&self.ring).dropped
    }

    /// Writes the events kept as a Chrome trace-event JSON object.
    #[cfg(test)]
    pub fn write_json(&self, out: &mut impl Write) -> io::Result<()> {
        self.write_snapshot(out).map(|_| ())
    }

    /// Writes the events kept, copied first so that recording threads wait only for the copy.
    fn write_snapshot(&self, out: &mut impl Write) -> io::Result<Written> {
        let (events, names, dropped) = {
            let ring = lock(&self.ring);
            (
                Vec::from_iter(ring.events.iter().copied()),
                ring.names.clone(),
                ring.dropped,
            )
        };
        out.write_all(b"{\"traceEvents\":[")?;
        let mut first = true;
        let mut separate = |out: &mut dyn Write| -> io::Result<()> {
            out.write_all(if first { b"\n" } else { b",\n" })?;
            first = false;
            Ok(())
        };
        let devices: BTreeSet<usize> = events.iter().map(|event| event.device).collect();
        for device in &devices {
            separate(out)?;
            write!(
                out,
                r#"{{"ph":"M","name":"process_name","pid":{device},"args":{{"name":"device {device}"}}}}"#
            )?;
            separate(out)?;
            write!(
                out,
                r#"{{"ph":"M","name":"process_sort_index","pid":{device},"args":{{"sort_index":{device}}}}}"#
            )?;
        }
        let threads: BTreeSet<(usize, u64)> = events.iter().map(|event| (event.device, event.span.thread())).collect();
        for (device, thread) in threads {
            separate(out)?;
            write!(
                out,
                r#"{{"ph":"M","name":"thread_name","pid":{device},"tid":{thread},"args":{{"name":""#
            )?;
            match thread {
                0 => write!(out, "kernels")?,
                _ => write!(out, "port {}", thread - 1)?,
            }
            write!(out, r#""}}}}"#)?;
            separate(out)?;
            write!(
                out,
                r#"{{"ph":"M","name":"thread_sort_index","pid":{device},"tid":{thread},"args":{{"sort_index":{thread}}}}}"#
            )?;
        }
        for event in &events {
            separate(out)?;
            let (device, thread) = (event.device, event.span.thread());
            let begin = Micros(event.begin_ns);
            let duration = Micros(event.end_ns.saturating_sub(event.begin_ns));
            match event.span {
                Span::Kernel { name } => {
                    out.write_all(br#"{"ph":"X","name":"#)?;
                    write_json_string(out, &names[name as usize])?;
                    write!(
                        out,
                        r#","cat":"kernel","pid":{device},"tid":{thread},"ts":{begin},"dur":{duration}}}"#
                    )?;
                }
                Span::HostCall { port, opcode } => write!(
                    out,
                    r#"{{"ph":"X","name":"{}","cat":"host call","pid":{device},"tid":{thread},"ts":{begin},"dur":{duration},"args":{{"port":{port},"opcode":"{opcode:#06x}"}}}}"#,
                    crate::rpc::protocol::ffi::opcode::Label(opcode)
                )?,
            }
        }
        write!(
            out,
            "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{{\"producer\":\"omprpc\",\"dropped_events\":{dropped}}}}}\n"
        )?;
        Ok(Written {
            events: events.len(),
            dropped,
        })
    }
}

/// Nanoseconds shown as microseconds with three decimals, as trace events count time.
struct Micros(u64);

impl fmt::Display for Micros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1_000, self.0 % 1_000)
    }
}

/// Writes `text` as a JSON string, quotes included.
fn write_json_string(out: &mut impl Write, text: &str) -> io::Result<()> {
    let bytes = text.as_bytes();
    out.write_all(b"\"")?;
    let mut unwritten = 0;
    // Every byte that needs escaping is ASCII, so it never lies inside a multi-byte character.
    for (index, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => br#"\""#,
            b'\\' => br"\\",
            b'\n' => br"\n",
            b'\r' => br"\r",
            b'\t' => br"\t",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.write_all(&bytes[unwritten..index])?;
        if escape.is_empty() {
            write!(out, "\\u{byte:04x}")?;
        } else {
            out.write_all(escape)?;
        }
        unwritten = index + 1;
    }
    out.write_all(&bytes[unwritten..])?;
    out.write_all(b"\"")
}

/// The trace of this process, when `OMPRPC_TRACE` asks for one. A forked child traces its own calls
/// (the parent's events, and any lock a parent's thread held at the fork, stay with the parent).
pub fn global() -> Option<&'static Trace> {
    static GLOBAL: PerProcess<Option<Trace>> = PerProcess::new();
    GLOBAL
        .get_or_make(
            || enabled().then(|| Trace::with_capacity(crate::util::config::host_services().trace_events)),
            |_| {},
        )
        .as_ref()
}

/// Writes the trace of this process to its file (a forked child's name carries its pid); called
/// once, at exit, by [`crate::rpc::observing::report_at_exit`]. A failure is reported, never raised.
pub fn finish() {
    if let (Some(trace), Some(path)) = (global(), path()) {
        finish_at(trace, &file_of_process(path, fork_generation(), std::process::id()));
    }
}

/// Where a process writes its trace: the file `OMPRPC_TRACE` names (`path`), or, in a forked child
/// (`forks` > 0), that name with `.<pid>` before its extension, so that parent and child do not write
/// over each other's.
fn file_of_process(path: &Path, forks: u64, pid: u32) -> PathBuf {
    if forks == 0 {
        return path.to_path_buf();
    }
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(extension) => format!("{stem}.{pid}.{}", extension.to_string_lossy()),
        None => format!("{stem}.{pid}"),
    };
    path.with_file_name(name)
}

/// Writes `trace` to `path`, reporting the outcome; whether the file was written.
fn finish_at(trace: &Trace, path: &Path) -> bool {
    match write_file(trace, path) {
        Ok(written) => {
            log::info(format_args!(
                "wrote the trace of host calls to {} ({} events, {} dropped)",
                path.display(),
                written.events,
                written.dropped
            ));
            true
        }
        Err(error) => {
            log::error(format_args!(
                "{SETTING}: cannot write the trace to {}: {error}",
                path.display()
            ));
            false
        }
    }
}

fn write_file(trace: &Trace, path: &Path) -> io::Result<Written> {
    let mut out = io::BufWriter::new(std::fs::File::create(path)?);
    let written = trace.write_snapshot(&mut out)?;
    out.flush()?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forked_child_writes_a_file_of_its_own() {
        let path = Path::new("/tmp/run/calls.json");
        assert_eq!(file_of_process(path, 0, 77), path);
        assert_eq!(file_of_process(path, 1, 77), Path::new("/tmp/run/calls.77.json"));
        assert_eq!(file_of_process(Path::new("trace"), 2, 9), Path::new("trace.9"));
    }
    use crate::rpc::protocol::ffi::opcode;
    use serde_json::Value;

    fn parse(trace: &Trace) -> Value {
        let mut json = Vec::new();
        trace.write_json(&mut json).unwrap();
        serde_json::from_slice(&json).unwrap_or_else(|error| panic!("{error}:\n{}", String::from_utf8_lossy(&json)))
    }

    fn events(json: &Value) -> &Vec<Value> {
        json["traceEvents"].as_array().unwrap()
    }

    /// The complete events (spans) of a trace.
    fn spans(json: &Value) -> Vec<&Value> {
        events(json).iter().filter(|event| event["ph"] == "X").collect()
    }

    /// The metadata events called `name`, as (pid, tid, args).
    fn metadata<'a>(json: &'a Value, name: &str) -> Vec<(u64, Option<u64>, &'a Value)> {
        events(json)
            .iter()
            .filter(|event| event["ph"] == "M" && event["name"] == name)
            .map(|event| (event["pid"].as_u64().unwrap(), event["tid"].as_u64(), &event["args"]))
            .collect()
    }

    #[test]
    fn spans_match_the_calls_made() {
        let trace = Trace::with_capacity(100);
        trace.kernel(0, "main", 1_000, 10_000);
        trace.host_call(0, 0, opcode::PRINTF_TO_STDOUT, 2_000, 4_500);
        trace.host_call(0, 0, opcode::PRINTF_TO_STDOUT, 5_000, 5_500);
        trace.host_call(0, 3, opcode::MALLOC, 6_000, 6_001);
        trace.kernel(1, "main", 0, 2_000_000);
        trace.host_call(1, 2, 0x8001, 7_000, 9_000);
        trace.host_call(1, 2, 0x63, 9_000, 9_000);
        let json = parse(&trace);
        assert_eq!(json["displayTimeUnit"], "ns");
        assert_eq!(json["otherData"]["producer"], "omprpc");
        assert_eq!(json["otherData"]["dropped_events"], 0);

        let spans = spans(&json);
        let summary: Vec<(&str, &str, u64, u64, f64, f64)> = spans
            .iter()
            .map(|span| {
                (
                    span["name"].as_str().unwrap(),
                    span["cat"].as_str().unwrap(),
                    span["pid"].as_u64().unwrap(),
                    span["tid"].as_u64().unwrap(),
                    span["ts"].as_f64().unwrap(),
                    span["dur"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("main", "kernel", 0, 0, 1.0, 9.0),
                ("PRINTF_TO_STDOUT", "host call", 0, 1, 2.0, 2.5),
                ("PRINTF_TO_STDOUT", "host call", 0, 1, 5.0, 0.5),
                ("MALLOC", "host call", 0, 4, 6.0, 0.001),
                ("main", "kernel", 1, 0, 0.0, 2000.0),
                ("user 0x8001", "host call", 1, 3, 7.0, 2.0),
                ("opcode 0x0063", "host call", 1, 3, 9.0, 0.0),
            ]
        );
        assert_eq!(spans[3]["args"]["port"], 3);
        assert_eq!(spans[3]["args"]["opcode"], "0x000a");
        assert_eq!(spans[5]["args"]["opcode"], "0x8001");
        assert!(spans[0]["args"].is_null(), "kernels carry no arguments");

        let processes: Vec<(u64, &Value)> = metadata(&json, "process_name")
            .into_iter()
            .map(|(pid, _, args)| (pid, &args["name"]))
            .collect();
        assert_eq!(
            processes,
            [(0, &Value::from("device 0")), (1, &Value::from("device 1"))]
        );
        let threads: Vec<(u64, u64, &str)> = metadata(&json, "thread_name")
            .into_iter()
            .map(|(pid, tid, args)| (pid, tid.unwrap(), args["name"].as_str().unwrap()))
            .collect();
        assert_eq!(
            threads,
            [
                (0, 0, "kernels"),
                (0, 1, "port 0"),
                (0, 4, "port 3"),
                (1, 0, "kernels"),
                (1, 3, "port 2")
            ]
        );
        let sorting: Vec<(u64, u64, u64)> = metadata(&json, "thread_sort_index")
            .into_iter()
            .map(|(pid, tid, args)| (pid, tid.unwrap(), args["sort_index"].as_u64().unwrap()))
            .collect();
        assert_eq!(sorting, [(0, 0, 0), (0, 1, 1), (0, 4, 4), (1, 0, 0), (1, 3, 3)]);
    }

    #[test]
    fn host_call_lies_inside_its_kernel() {
        let trace = Trace::with_capacity(10);
        let launch = crate::util::clock::now_ns();
        let request = crate::util::clock::now_ns();
        std::thread::sleep(std::time::Duration::from_micros(50));
        let reply = crate::util::clock::now_ns();
        let completion = crate::util::clock::now_ns();
        assert!(launch <= request && request < reply && reply <= completion);
        trace.host_call(2, 0, opcode::FREE, request, reply);
        trace.kernel(2, "worker", launch, completion);
        let json = parse(&trace);
        let spans = spans(&json);
        let (call, kernel) = (spans[0], spans[1]);
        assert_eq!(
            (call["name"].as_str(), kernel["name"].as_str()),
            (Some("FREE"), Some("worker"))
        );
        let interval = |span: &Value| {
            let begin = span["ts"].as_f64().unwrap();
            (begin, begin + span["dur"].as_f64().unwrap())
        };
        let (call_begin, call_end) = interval(call);
        let (kernel_begin, kernel_end) = interval(kernel);
        let rounding = 1e-6;
        assert!(kernel_begin <= call_begin, "{kernel_begin} > {call_begin}");
        assert!(call_end <= kernel_end + rounding, "{call_end} > {kernel_end}");
        assert!(call_end - call_begin >= 50.0, "the call took at least the 50 µs slept");
    }

    #[test]
    fn full_ring_drops_the_oldest() {
        let trace = Trace::with_capacity(3);
        for call in 0..5 {
            trace.host_call(0, 0, opcode::MALLOC, call * 1_000, call * 1_000 + 10);
        }
        assert_eq!(trace.dropped(), 2);
        let json = parse(&trace);
        assert_eq!(json["otherData"]["dropped_events"], 2);
        let kept: Vec<f64> = spans(&json).iter().map(|span| span["ts"].as_f64().unwrap()).collect();
        assert_eq!(kept, [2.0, 3.0, 4.0]);

        let nothing_kept = Trace::with_capacity(0);
        nothing_kept.kernel(0, "main", 0, 1);
        assert_eq!(nothing_kept.dropped(), 1);
        assert!(spans(&parse(&nothing_kept)).is_empty());
    }

    #[test]
    fn kernel_names_are_escaped() {
        let name = "say \"hi\" \\ to\nthe\tend\u{1}\u{1f} of é and 漢";
        let trace = Trace::with_capacity(4);
        trace.kernel(0, name, 0, 1);
        trace.kernel(0, "plain", 1, 2);
        trace.kernel(0, name, 2, 3);
        let json = parse(&trace);
        let names: Vec<&str> = spans(&json).iter().map(|span| span["name"].as_str().unwrap()).collect();
        assert_eq!(names, [name, "plain", name]);
        let mut escaped = Vec::new();
        write_json_string(&mut escaped, "a\"\\\n\u{1}").unwrap();
        assert_eq!(escaped, br#""a\"\\\n\u0001""#);
    }

    #[test]
    fn timestamps_are_exact_microseconds() {
        assert_eq!(Micros(0).to_string(), "0.000");
        assert_eq!(Micros(1).to_string(), "0.001");
        assert_eq!(Micros(1_234_567).to_string(), "1234.567");
        assert_eq!(Micros(u64::MAX).to_string(), "18446744073709551.615");
    }

    #[test]
    fn finish_writes_the_file_or_reports_why_not() {
        let trace = Trace::with_capacity(10);
        trace.host_call(0, 1, opcode::EXIT, 0, 1_000);
        let directory = std::env::temp_dir();
        let missing = directory
            .join(format!("omprpc-missing-{}", std::process::id()))
            .join("trace.json");
        assert!(!finish_at(&trace, &missing));
        assert_eq!(
            write_file(&trace, &missing).err().map(|error| error.kind()),
            Some(io::ErrorKind::NotFound)
        );

        let file = directory.join(format!("omprpc-trace-test-{}.json", std::process::id()));
        assert!(finish_at(&trace, &file));
        let json: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let _ = std::fs::remove_file(&file);
        assert_eq!(spans(&json).len(), 1);
        assert_eq!(spans(&json)[0]["name"], "EXIT");
    }
}
