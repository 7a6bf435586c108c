//! A simulated warp calling the host through omprpc's RPC server and serving thread, as a GPU warp
//! does: one host thread plays 1, 32 or 64 lanes of LLVM libc 19.1's protocol in the real mailbox
//! layout (see `omprpc::rpc::simulated`). Used by `tests/simulated_warp.rs`, which runs each scenario in
//! a process of its own (one of them ends the process from a device `exit`):
//!
//! ```text
//! simulated_warp SCENARIO LANES [PORTS]
//!   printf   every lane prints its own line, with strings of different lengths
//!   bytes    every lane sends and gets back a byte string of its own length
//!   malloc   every lane allocates, writes and frees a block of its own size
//!   user     a user opcode with one packet per lane
//!   mask     the same calls from a partial lane mask (every third lane)
//!   exit     lane 5 prints, then calls exit(7)
//! ```

use std::ffi::CStr;
use std::sync::Arc;

use omprpc::rpc::protocol::port::{Packet, Port};
use omprpc::rpc::serving::server::RpcServer;
use omprpc::rpc::serving::threads;
use omprpc::rpc::serving::{handlers::UserHandler, registry};
use omprpc::rpc::simulated::{LanePrintf, SimulatedDevice, SimulatedWarp};
use omprpc::rpc::HostMemory;

const OP_SCALE: u16 = 0x8401;
const OP_REVERSE: u16 = 0x8402;

/// Replies data[0] * data[1] + 1000 * (the lane's position among the active lanes).
struct Scale;

impl UserHandler for Scale {
    fn serve(&self, port: &mut Port<'_>) {
        let mut packets = vec![Packet::default(); port.lanes() as usize];
        let n = port.recv(&mut packets).expect("room for every lane");
        for (i, p) in packets.iter_mut().take(n as usize).enumerate() {
            p.data[0] = p.data[0] * p.data[1] + 1000 * i as u64;
        }
        port.send(&packets).expect("room for every lane");
    }
}

/// Replies each lane's byte string reversed.
struct Reverse;

impl UserHandler for Reverse {
    fn serve(&self, port: &mut Port<'_>) {
        let received = port.recv_n().expect("the first receive of a call");
        let reversed: Vec<Vec<u8>> = received
            .iter()
            .map(|b| b.as_slice().iter().rev().copied().collect())
            .collect();
        let slices: Vec<&[u8]> = reversed.iter().map(Vec::as_slice).collect();
        port.send_n(&slices).expect("the reply after the receive");
    }
}

static WORDS: [&CStr; 5] = [
    c"",
    c"a",
    c"word",
    c"a string of more than fifty-six bytes, which needs a second packet to travel",
    c"a string of more than one hundred and twenty bytes, which needs three packets to travel from the \
device to the host, and then some more",
];

fn lane_mask(warp: &SimulatedWarp<'_>, scenario: &str) -> u64 {
    let all = warp.full_mask();
    if scenario == "mask" {
        all & (0..64).step_by(3).map(|l| 1u64 << l).sum::<u64>()
    } else {
        all
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scenario = args.get(1).map(String::as_str).unwrap_or("printf");
    let lanes: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(32);
    let ports: u32 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(16);

    registry::register_handler(OP_SCALE, Box::new(Scale)).unwrap();
    registry::register_handler(OP_REVERSE, Box::new(Reverse)).unwrap();
    let server = RpcServer::new(0, ports, lanes as u32, Arc::new(HostMemory)).unwrap();
    let device = SimulatedDevice::new(Arc::clone(&server));
    threads::put_in_service(Arc::clone(&server)).unwrap();
    // The "kernel" is running: the serving thread polls until it ends.
    threads::kernel_started().unwrap();
    let warp = SimulatedWarp::new(&device, 3);
    let mask = lane_mask(&warp, scenario);
    let active = |lane: usize| mask & (1 << lane) != 0;

    match scenario {
        "printf" | "mask" => {
            let calls: Vec<LanePrintf> = (0..lanes)
                .map(|lane| {
                    LanePrintf::new("lane %2d: %s|%ld|%.3f|%c\n")
                        .int(lane as i32)
                        .string(WORDS[lane % 5])
                        .long((lane * lane) as i64)
                        .double(lane as f64 / 8.0)
                        .int(i32::from(b'A') + (lane % 26) as i32)
                })
                .collect();
            let results = warp.printf(mask, &calls);
            // The lines went through the C library's stdout; flush them before Rust's.
            // SAFETY: fflush(NULL) flushes every C stream.
            unsafe { libc::fflush(std::ptr::null_mut()) };
            let packets: Vec<[u64; 8]> = (0..lanes).map(|l| [l as u64 + 1, 3, 0, 0, 0, 0, 0, 0]).collect();
            let replies = warp.call(OP_SCALE, mask, &packets);
            let summary: Vec<String> = (0..lanes)
                .map(|lane| format!("{}/{}", results[lane], replies[lane][0]))
                .collect();
            println!("results {}", summary.join(" "));
        }
        "bytes" => {
            let data: Vec<Vec<u8>> = (0..lanes)
                .map(|lane| (0..(lane * 37) % 300).map(|i| b'a' + ((lane + i) % 26) as u8).collect())
                .collect();
            let slices: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
            let replies = warp.call_bytes(OP_REVERSE, mask, &slices);
            let good = (0..lanes).all(|lane| {
                let expected: Vec<u8> = data[lane].iter().rev().copied().collect();
                replies[lane] == expected
            });
            let longest = data.iter().map(Vec::len).max().unwrap_or(0);
            println!(
                "bytes {} lanes, longest {longest}: {}",
                lanes,
                if good { "all reversed" } else { "WRONG" }
            );
        }
        "malloc" => {
            let sizes: Vec<u64> = (0..lanes as u64).map(|lane| 8 * (lane + 1)).collect();
            let ptrs = warp.malloc(mask, &sizes);
            let mut distinct = std::collections::BTreeSet::new();
            for (lane, &ptr) in ptrs.iter().enumerate().filter(|&(lane, _)| active(lane)) {
                assert_ne!(ptr, 0, "lane {lane} got NULL");
                // SAFETY: the server's MALLOC returned `sizes[lane]` bytes of host memory (the simulated
                // device's memory is this process's).
                unsafe { std::ptr::write_bytes(ptr as *mut u8, lane as u8, sizes[lane] as usize) };
                distinct.insert(ptr);
            }
            warp.free(mask, &ptrs);
            println!("malloc {} blocks, {} distinct", mask.count_ones(), distinct.len());
        }
        "user" => {
            let packets: Vec<[u64; 8]> = (0..lanes).map(|l| [l as u64 + 1, 3, 0, 0, 0, 0, 0, 0]).collect();
            let replies = warp.call(OP_SCALE, mask, &packets);
            let values: Vec<String> = replies.iter().map(|r| r[0].to_string()).collect();
            println!("user {}", values.join(" "));
        }
        "exit" => {
            let calls: Vec<LanePrintf> = (0..lanes)
                .map(|lane| LanePrintf::new("before exit: lane %d\n").int(lane as i32))
                .collect();
            warp.printf(1 << 5, &calls);
            warp.exit(1 << 5, 7);
        }
        other => {
            eprintln!("unknown scenario {other}");
            std::process::exit(2);
        }
    }
    threads::kernels_finished(1);
    drop(device);
    registry::remove_server(&server).unwrap();
    server.shutdown().unwrap();
}
