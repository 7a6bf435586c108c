//! The device library's `strtod`, `strtof` and `strtold` (`device/strtod.c`): the host's C library
//! converts the number's text, so that a target region gets glibc's correctly rounded value, end and
//! `errno`, which a conversion on the device would have to do with arithmetic as long as the text.
//!
//! Each calling lane sends a packet (word 0: 0 `strtof`, 1 `strtod`, 2 `strtold`; word 1: the length
//! of a suffix of at most 40 bytes, in words 2 on) and then the number's text (`send_n`): the device
//! has found where glibc stops reading and skipped the white space before, and it has cut a
//! mantissa longer than glibc could need, putting the suffix (a digit standing for the rest, and the
//! exponent) in place of what it left out (see `device/strtod.c`). The host converts text and
//! suffix, and answers each lane with the value's bytes in words 0 and 1 (a `float`'s 4, a
//! `double`'s 8, a `long double`'s 10), the number of characters read in word 2 and `errno` in word
//! 3 (0 when the conversion left it alone).

use std::ffi::{c_char, c_void};

use crate::rpc::protocol::ffi;
use crate::rpc::protocol::port::{Packet, Port};

/// The longest suffix a request may carry (words 2 to 6 of its packet).
const SUFFIX_MAX: usize = 40;

// x86-64 returns a `long double` in the x87 register st(0), which Rust cannot name: this stub calls
// the C library's `strtold(text, end)` and stores the 80-bit value to `out` (its third argument).
#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".globl omprpc_strtold_into",
    ".hidden omprpc_strtold_into",
    ".type omprpc_strtold_into, @function",
    "omprpc_strtold_into:",
    "push rbx",
    "mov rbx, rdx",
    "call strtold@PLT",
    "fstp tbyte ptr [rbx]",
    "pop rbx",
    "ret",
);

#[cfg(target_arch = "x86_64")]
extern "C" {
    /// `*out = strtold(text, end)`, the 10 bytes of the x87 value (see the stub above).
    fn omprpc_strtold_into(text: *const c_char, end: *mut *mut c_char, out: *mut [u8; 16]);
}

/// What one conversion answers: the value's bytes, the characters read and `errno`.
fn convert(kind: u64, text: &[u8]) -> Packet {
    // The text as C text: up to its first NUL, as the C library would read it.
    let mut owned: Vec<u8> = text.iter().copied().take_while(|&b| b != 0).collect();
    owned.push(0);
    let start = owned.as_ptr().cast::<c_char>();
    let mut end = start.cast_mut();
    let mut reply = Packet::default();
    let mut bytes = [0u8; 16];
    // SAFETY: `start` is NUL-terminated and lives during the call; `end` is where the C library
    // writes its end pointer; errno is this thread's, set to 0 first so that what the conversion
    // leaves there is its own.
    let errno = unsafe {
        *libc::__errno_location() = 0;
        match kind {
            0 => bytes[..4].copy_from_slice(&libc::strtof(start, &mut end).to_ne_bytes()),
            #[cfg(target_arch = "x86_64")]
            2 => omprpc_strtold_into(start, &mut end, &mut bytes),
            _ => bytes[..8].copy_from_slice(&libc::strtod(start, &mut end).to_ne_bytes()),
        }
        *libc::__errno_location()
    };
    reply.data[0] = u64::from_ne_bytes(bytes[..8].try_into().expect("8 bytes"));
    reply.data[1] = u64::from_ne_bytes(bytes[8..].try_into().expect("8 bytes"));
    reply.data[2] = (end as usize - start as usize) as u64;
    reply.data[3] = errno as u32 as u64;
    reply
}

/// The text a lane asked to convert: its bytes, then the suffix its packet carries.
fn request_text(request: &Packet, bytes: &[u8]) -> Vec<u8> {
    let suffix_length = (request.data[1] as usize).min(SUFFIX_MAX);
    let words: Vec<u8> = request.data[2..].iter().flat_map(|w| w.to_ne_bytes()).collect();
    let mut text = bytes.to_vec();
    text.extend_from_slice(&words[..suffix_length]);
    text
}

/// libc's callback for [`ffi::opcode::STRTOD`].
///
/// # Safety
/// Called by libc's server with the port it is serving.
pub unsafe extern "C" fn serve(raw: ffi::Port, _data: *mut c_void) {
    // SAFETY: the port of the running callback, used only within it.
    let mut port = unsafe { Port::from_raw(raw) };
    let mut requests = port.lane_packets();
    let received = port.recv(&mut requests).and_then(|_| port.recv_n());
    let Ok(texts) = received else {
        return;
    };
    let mut replies = port.lane_packets();
    // The packets come in the order of the lanes that called, which are the lanes that sent text.
    let calling = texts.iter().filter(|bytes| bytes.sent());
    for ((text, request), reply) in calling.zip(&requests).zip(&mut replies) {
        *reply = convert(request.data[0], &request_text(request, text.as_slice()));
    }
    let _ = port.send(&replies);
    crate::rpc::calls::moved_through_port(port.moved());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn double(text: &str) -> (f64, u64, u64) {
        let reply = convert(1, text.as_bytes());
        (f64::from_bits(reply.data[0]), reply.data[2], reply.data[3])
    }

    #[test]
    fn conversions_are_the_c_librarys() {
        assert_eq!(double("1.5x"), (1.5, 3, 0));
        assert_eq!(double("0x1p-2"), (0.25, 6, 0));
        assert_eq!(double("1e400"), (f64::INFINITY, 5, libc::ERANGE as u64));
        assert_eq!(double("1e-400"), (0.0, 6, libc::ERANGE as u64));
        assert_eq!(double("x"), (0.0, 0, 0));
        let float = convert(0, b"0.1");
        assert_eq!(f32::from_bits(float.data[0] as u32), 0.1f32);
        assert_eq!(float.data[0] >> 32, 0, "only a float's bytes");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn long_doubles_come_back_as_the_x87_bytes() {
        let reply = convert(2, b"-2.5");
        // -2.5 in the x87 format: sign and exponent 0xC000, mantissa 0xA000000000000000.
        assert_eq!(reply.data[0], 0xA000_0000_0000_0000);
        assert_eq!(reply.data[1], 0xC000);
        assert_eq!(reply.data[2], 4);
        let third = convert(2, b"0.1");
        assert_eq!(
            third.data[0], 0xCCCC_CCCC_CCCC_CCCD,
            "0.1 rounded to 64 bits of mantissa"
        );
        assert_eq!(third.data[1], 0x3FFB);
    }

    #[test]
    fn a_suffix_follows_the_text_and_a_nul_ends_it() {
        let mut request = Packet::default();
        request.data[1] = 3;
        request.data[2] = u64::from_ne_bytes(*b"1e-2\0\0\0\0");
        assert_eq!(request_text(&request, b"12"), b"121e-".to_vec());
        assert_eq!(double("12\u{0}5"), (12.0, 2, 0));
        request.data[1] = 1000;
        assert_eq!(
            request_text(&request, b"").len(),
            SUFFIX_MAX,
            "a suffix is at most 40 bytes"
        );
    }
}
