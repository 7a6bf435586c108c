//! Files that device code opens, closes and names, served by the plugin instead of libc's server.
//!
//! libc's server takes a stream as a raw `FILE *` from the device and hands it to the host's C library:
//! a device `fclose` twice, or a stream used after `fclose` or made up, frees or reads freed memory and
//! kills the host process. So the device header opens and closes files through the plugin's own opcodes
//! and asks before each call on a file stream whether the host has it open ([`OPCODE_CHECK`]); only
//! then does libc's server see the pointer. A stream the device closes is not freed: `freopen` turns it
//! into a read-only `/dev/null` stream, a *retired* stream, which the next `fopen` of any device reuses.
//! Every `FILE *` a device ever got therefore stays a live object for the rest of the process, and a
//! call racing with an `fclose` of its stream reaches a harmless stream instead of freed memory (or, as
//! with a reused file descriptor, the file opened after it). The number of `FILE` objects is the most
//! files the devices ever had open at once.

use std::ffi::{c_void, CStr};
use std::hash::BuildHasherDefault;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use super::port::{Packet, Port};
use super::{ffi, ffi::opcode};
use crate::util::address_map::AddressSet;
use crate::util::log;
use crate::util::sync::lock;

/// `fopen`: the device sends the path as a byte string and the mode in a packet, and receives the
/// stream (0 on failure), as with libc's own `OPEN_FILE`.
pub const OPCODE_OPEN: u16 = 0x7f00;
/// `fclose`: the device sends the stream and receives 0, or `EOF` for a stream that is not open or
/// whose buffered data could not be written.
pub const OPCODE_CLOSE: u16 = 0x7f01;
/// Before a call on a file stream: the device sends the stream and the opcode of the call it is about
/// to make, and receives 1 if the host has that stream open, 0 (and an error message) if not.
pub const OPCODE_CHECK: u16 = 0x7f02;

/// Every stream handed to a device, by address.
struct Streams {
    /// Open for the device.
    open: AddressSet,
    /// Closed by the device; live read-only `/dev/null` streams, kept for reuse.
    retired: Vec<usize>,
}

static STREAMS: Mutex<Streams> = Mutex::new(Streams {
    open: AddressSet::with_hasher(BuildHasherDefault::new()),
    retired: Vec::new(),
});

const DEV_NULL: &CStr = c"/dev/null";
const READ: &CStr = c"r";

/// Opens `path` with `mode` for a device, reusing a retired stream when there is one.
fn open(path: &CStr, mode: &CStr) -> usize {
    let reusable = lock(&STREAMS).retired.pop();
    let stream = match reusable {
        Some(retired) => {
            // SAFETY: `retired` is a live FILE (streams are never freed); freopen closes what it has
            // open and opens `path` in the same object. Both strings are NUL-terminated.
            let reopened = unsafe { libc::freopen(path.as_ptr(), mode.as_ptr(), retired as *mut libc::FILE) };
            if reopened.is_null() {
                // glibc leaves the object closed but valid when freopen fails; make it a retired
                // stream again (a failure here leaves it closed, which is just as harmless).
                // SAFETY: as above.
                unsafe { libc::freopen(DEV_NULL.as_ptr(), READ.as_ptr(), retired as *mut libc::FILE) };
                lock(&STREAMS).retired.push(retired);
                return 0;
            }
            retired
        }
        // SAFETY: both strings are NUL-terminated.
        None => unsafe { libc::fopen(path.as_ptr(), mode.as_ptr()) as usize },
    };
    if stream != 0 {
        lock(&STREAMS).open.insert(stream);
    }
    stream
}

/// What became of a device's `fclose`.
#[derive(Debug, PartialEq, Eq)]
enum Closed {
    /// Closed, with everything written.
    Done,
    /// Closed, but buffered data could not be written.
    Unflushed,
    /// The device did not have it open.
    NotOpen,
}

/// Closes a device's stream.
fn close(stream: usize) -> Closed {
    if !lock(&STREAMS).open.remove(&stream) {
        return Closed::NotOpen;
    }
    let file = stream as *mut libc::FILE;
    // SAFETY: `stream` was open, so it is a live FILE; only this call closes it (it left `open` above).
    let flushed = unsafe { libc::fflush(file) };
    // SAFETY: as above; freopen closes the file and keeps the object, now reading /dev/null.
    unsafe { libc::freopen(DEV_NULL.as_ptr(), READ.as_ptr(), file) };
    lock(&STREAMS).retired.push(stream);
    if flushed == 0 {
        Closed::Done
    } else {
        Closed::Unflushed
    }
}

/// Whether a device may use `stream`: one of its open files.
fn is_open(stream: usize) -> bool {
    lock(&STREAMS).open.contains(&stream)
}

/// The C function a device called with the stream it named, for messages.
fn call_name(op: u64) -> &'static str {
    match u16::try_from(op).unwrap_or(u16::MAX) {
        opcode::WRITE_TO_STREAM => "fwrite or fputs",
        opcode::READ_FROM_STREAM => "fread",
        opcode::READ_FGETS => "fgets",
        opcode::FEOF => "feof",
        opcode::FERROR => "ferror",
        opcode::FSEEK => "fseek",
        opcode::FTELL => "ftell",
        opcode::FFLUSH => "fflush",
        opcode::PRINTF_TO_STREAM => "fprintf",
        _ => "a stream call",
    }
}

/// The lane's bytes as a C string, if they hold a NUL.
fn c_str(bytes: &[u8]) -> Option<&CStr> {
    CStr::from_bytes_until_nul(bytes).ok()
}

/// "stream 0x…" or "streams 0x…, 0x…", for messages.
fn describe(streams: &[usize]) -> String {
    let list: Vec<String> = streams.iter().map(|s| format!("{s:#x}")).collect();
    let noun = if streams.len() == 1 { "stream" } else { "streams" };
    format!("{noun} {}", list.join(", "))
}

fn serve_open(port: &mut Port) {
    let Ok(paths) = port.recv_n() else { return };
    let mut packets = port.lane_packets();
    let Ok(count) = port.recv(&mut packets) else { return };
    // Active lanes sent a path of at least its NUL; `recv` lists their packets in lane order.
    let active = paths.iter().filter(|p| !p.as_slice().is_empty());
    for (packet, path) in packets.iter_mut().take(count as usize).zip(active) {
        let mode_bytes: Vec<u8> = packet.data.iter().flat_map(|word| word.to_ne_bytes()).collect();
        let stream = match (c_str(path.as_slice()), c_str(&mode_bytes)) {
            (Some(path), Some(mode)) => open(path, mode),
            _ => 0,
        };
        packet.data[0] = stream as u64;
    }
    let _ = port.send(&packets);
}

/// Serves a request of one packet per lane, answered in place by `answer`, which returns the stream
/// and the C call when the lane named a stream the device does not have open; such streams are
/// reported once, in one line that `report` words from their list and the call.
fn serve_per_lane(
    port: &mut Port,
    mut answer: impl FnMut(&mut Packet) -> Option<(usize, &'static str)>,
    report: impl FnOnce(&str, &str) -> String,
) {
    let mut packets = port.lane_packets();
    let Ok(count) = port.recv(&mut packets) else { return };
    let mut refused = Vec::new();
    let mut call = "";
    for packet in packets.iter_mut().take(count as usize) {
        if let Some((stream, named)) = answer(packet) {
            if !refused.contains(&stream) {
                refused.push(stream);
                call = named;
            }
        }
    }
    if !refused.is_empty() {
        log::error(report(&describe(&refused), call));
    }
    let _ = port.send(&packets);
}

fn serve_close(port: &mut Port, device: usize) {
    let answer = |packet: &mut Packet| {
        let stream = packet.data[0] as usize;
        let closed = close(stream);
        let result = if closed == Closed::Done { 0 } else { libc::EOF };
        packet.data[0] = i64::from(result) as u64;
        (closed == Closed::NotOpen).then_some((stream, "fclose"))
    };
    serve_per_lane(port, answer, |streams, call| {
        format!(
            "device {device}: {call} of {streams} that the device does not have open (closed already, \
             or never returned by fopen); it returned EOF"
        )
    });
}

fn serve_check(port: &mut Port, device: usize) {
    let answer = |packet: &mut Packet| {
        let stream = packet.data[0] as usize;
        let open = is_open(stream);
        packet.data[0] = u64::from(open);
        (!open).then(|| (stream, call_name(packet.data[1])))
    };
    serve_per_lane(port, answer, |streams, call| {
        format!(
            "device {device}: {call} on {streams} that the device does not have open (closed, or never \
             returned by fopen); the call failed"
        )
    });
}

/// Runs `serve` on the port libc's server passed to one of this module's callbacks, with the device
/// number registered as the callback's data; a panic is contained (the callback returns to C).
///
/// # Safety
/// `raw` is the port of a callback that is running.
unsafe fn with_port(raw: ffi::Port, data: *mut c_void, serve: fn(&mut Port, usize)) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the port is the one libc is serving for this call (contract); it does not outlive it.
        serve(&mut unsafe { Port::from_raw(raw) }, data as usize);
    }));
}

/// libc's callback for [`OPCODE_OPEN`].
///
/// # Safety
/// Called by libc's server with the port it is serving.
pub unsafe extern "C" fn serve_open_callback(raw: ffi::Port, data: *mut c_void) {
    // SAFETY: forwarded from this function's contract.
    unsafe { with_port(raw, data, |port, _| serve_open(port)) }
}

/// libc's callback for [`OPCODE_CLOSE`]; `data` is the device number, for messages.
///
/// # Safety
/// Called by libc's server with the port it is serving.
pub unsafe extern "C" fn serve_close_callback(raw: ffi::Port, data: *mut c_void) {
    // SAFETY: forwarded from this function's contract.
    unsafe { with_port(raw, data, serve_close) }
}

/// libc's callback for [`OPCODE_CHECK`]; `data` is the device number, for messages.
///
/// # Safety
/// Called by libc's server with the port it is serving.
pub unsafe extern "C" fn serve_check_callback(raw: ffi::Port, data: *mut c_void) {
    // SAFETY: forwarded from this function's contract.
    unsafe { with_port(raw, data, serve_check) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::server::tests::CountingMemory;
    use crate::rpc::server::RpcServer;
    use crate::rpc::simulated::{SimulatedDevice, SimulatedWarp};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// fopen(paths[lane], mode) from the lanes of `mask`, as the device header sends it.
    fn fopen(device: &SimulatedDevice, mask: u64, paths: &[Vec<u8>], mode: &[u8]) -> Vec<u64> {
        let mut port = device.open(OPCODE_OPEN, mask, 0);
        let slices: Vec<&[u8]> = paths.iter().map(Vec::as_slice).collect();
        port.send_n(&slices);
        port.send(|_, packet| {
            let mut bytes = [0u8; 64];
            bytes[..mode.len()].copy_from_slice(mode);
            for (word, chunk) in packet.iter_mut().zip(bytes.chunks(8)) {
                *word = u64::from_ne_bytes(chunk.try_into().unwrap());
            }
        });
        let mut streams = vec![0u64; device.lanes()];
        port.recv(|lane, packet| streams[lane] = packet[0]);
        port.close();
        streams
    }

    #[test]
    fn streams_stay_alive_and_stale_ones_are_refused_per_lane() {
        let dir = std::env::temp_dir().join(format!("omprpc-streams-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let server = RpcServer::new(5, 4, 32, Arc::new(CountingMemory::default())).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let serving = {
            let (server, done) = (Arc::clone(&server), Arc::clone(&done));
            std::thread::spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    if !server.serve_once() {
                        std::thread::yield_now();
                    }
                }
            })
        };
        {
            let device = SimulatedDevice::new(Arc::clone(&server));
            let warp = SimulatedWarp::new(&device, 0);
            let mask = 0x5555_5555u64; // every other lane
            let mut paths: Vec<Vec<u8>> = (0..32)
                .map(|lane| format!("{}/lane-{lane}\0", dir.display()).into_bytes())
                .collect();
            paths[2] = b"/nonexistent-dir/x\0".to_vec(); // lane 2 fails
            let streams = fopen(&device, mask, &paths, b"w");
            for (lane, stream) in streams.iter().enumerate() {
                let expect_open = mask & (1 << lane) != 0 && lane != 2;
                assert_eq!(*stream != 0, expect_open, "lane {lane}");
            }
            let opened: Vec<u64> = streams.iter().copied().filter(|&s| s != 0).collect();
            assert_eq!(opened.len(), 15);
            let check = |streams: &[u64]| -> Vec<u64> {
                let packets: Vec<[u64; 8]> = streams
                    .iter()
                    .map(|&s| [s, u64::from(opcode::FTELL), 0, 0, 0, 0, 0, 0])
                    .collect();
                warp.call(OPCODE_CHECK, mask, &packets).iter().map(|p| p[0]).collect()
            };
            let close = |streams: &[u64]| -> Vec<u64> {
                let packets: Vec<[u64; 8]> = streams.iter().map(|&s| [s, 0, 0, 0, 0, 0, 0, 0]).collect();
                warp.call(OPCODE_CLOSE, mask, &packets).iter().map(|p| p[0]).collect()
            };
            let eof = libc::EOF as i64 as u64;
            let open = check(&streams);
            let first = close(&streams);
            let again = close(&streams);
            let after = check(&streams);
            for lane in (0..32).filter(|l| mask & (1 << l) != 0) {
                assert_eq!(open[lane], u64::from(lane != 2), "lane {lane} open");
                assert_eq!(first[lane], if lane == 2 { eof } else { 0 }, "lane {lane} closes");
                assert_eq!(again[lane], eof, "lane {lane} closes twice");
                assert_eq!(after[lane], 0, "lane {lane} after fclose");
            }
            assert_eq!(check(&[0x1234_5670; 32])[0], 0, "a made-up stream");
            // The closed streams are reused, not freed, and reading what was written works.
            let reopened = fopen(&device, mask, &paths, b"r");
            let reused = reopened.iter().filter(|s| opened.contains(s)).count();
            assert_eq!(reused, 15, "every retired stream is reused: {reopened:x?} {opened:x?}");
            assert!(close(&reopened).iter().all(|&r| r == 0 || r == eof));
        }
        done.store(true, Ordering::SeqCst);
        serving.join().unwrap();
        server.shutdown().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
