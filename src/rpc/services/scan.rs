//! The device's `sscanf`, `fscanf` and `scanf` ([`ffi::opcode::SCAN`]), parsed by the host's C library,
//! so that a target region gets glibc's results, which a scanner on the device would have to match in
//! every detail (number syntax, rounding of floats, scansets, what is stored on a failure).
//!
//! Each calling lane sends a packet (word 0: [`STRING`] for `sscanf`, [`STREAM`] for `fscanf`; word 1:
//! the stream word, as the other stdio calls name a stream; word 2: how many pointers follow the
//! format), then the format with its NUL (`send_n`), then the input string without its NUL (`send_n`;
//! empty for a stream). The device sends no types: the host reads the format ([`plan`]) for each
//! conversion's destination (an `int` for `%d`, a `float` for `%f`, x87's 10 bytes for `%Lf`, bytes for
//! `%c`, `%s` and `%[`), gives the C library host buffers for them, and calls C99's `vsscanf` or
//! `vfscanf` (`__isoc99_`, as a program built with a C99 or later standard calls them) with a
//! `va_list` laid out as printf's (`rpc::services::printf`).
//!
//! What glibc stored is known exactly, without a second parse: around each conversion the host puts
//! `%n` directives of its own (a `" %n"` before a conversion that skips white space itself, which
//! skips the same white space, and a `%n` before `%c`, `%[` and `%n`; a `%n` after each), which neither
//! read input nor count: a conversion stored its value when the `%n` after it was reached, and `%c`,
//! `%s` and `%[` stored as many bytes as the two counts differ (and a NUL, but for `%c`).
//!
//! The reply is a packet per calling lane with the C library's result in word 0 (-1, `EOF`, after an
//! error line when the call is refused), then a byte string per lane: for each stored conversion a
//! `u32` argument index, a `u32` byte count and the bytes, which the device copies through its pointer.
//!
//! Bounds: `sscanf`'s buffers are as long as its input, which bounds what any conversion stores. A
//! stream has no such bound: `fscanf` reads `%s` and `%[` without a width as if their width were
//! [`STREAM_WIDTH_LIMIT`] - 1 (a longer word is cut there, as with that width), and refuses a larger
//! width. Refused: positional arguments (`%1$d`), GNU's allocating `%ms` (the host's memory), wide
//! `%ls`, `%lc`, `%l[`, `%S`, `%C` (a device's `wchar_t` is not the host's business here), and more
//! conversions than pointers.

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use libc::FILE;

use crate::rpc::protocol::ffi;
use crate::rpc::protocol::port::Port;
use crate::rpc::services::printf::{PointerSlots, VaList};
use crate::util::log;

/// Word 0 of a request: `sscanf` of the string sent.
pub const STRING: u64 = 0;
/// Word 0 of a request: `fscanf` of the stream named in word 1.
pub const STREAM: u64 = 1;

/// The bound on what one `%s`, `%[` or `%c` of `fscanf` stores (64 KiB with the NUL): the host holds a
/// buffer of that size for each such conversion while it parses.
pub const STREAM_WIDTH_LIMIT: usize = 1 << 16;

extern "C" {
    // C99's scanf family (glibc's `sscanf` without the `__isoc99_` prefix reads `%a` as GNU's old
    // allocating modifier). `va_list` is an array type: as a parameter, a pointer to its element.
    fn __isoc99_vsscanf(input: *const c_char, format: *const c_char, ap: *mut VaList) -> c_int;
    fn __isoc99_vfscanf(stream: *mut FILE, format: *const c_char, ap: *mut VaList) -> c_int;
}

/// Where a conversion stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    /// A number (or `%p`, `%n`) of this many bytes (a `long double`: x87's 10, which glibc stores).
    Fixed(usize),
    /// `%c`: the bytes read, no NUL.
    Chars,
    /// `%s` and `%[`: the bytes read and a NUL.
    Text,
}

/// Why the host does not parse a format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// `%1$d`.
    Positional,
    /// `%ms`, `%m[`, `%mc`: glibc would allocate in host memory.
    Allocating,
    /// `%ls`, `%lc`, `%l[`, `%S`, `%C`.
    Wide,
    /// A width over [`STREAM_WIDTH_LIMIT`] - 1 for `fscanf`'s `%c`, `%s` or `%[`.
    WidthTooLarge,
    /// More conversions that store than pointers passed: (conversions, pointers).
    TooFewPointers(usize, u64),
}

impl Refused {
    fn reason(self) -> String {
        match self {
            Refused::Positional => "positional arguments (%1$d) are not available to device code".into(),
            Refused::Allocating => "the allocating modifier m (%ms) is not available to device code".into(),
            Refused::Wide => "wide conversions (%ls, %lc, %l[, %S, %C) are not available to device code".into(),
            Refused::WidthTooLarge => format!(
                "a width of {STREAM_WIDTH_LIMIT} or more for %c, %s or %[ is not available to a device's \
                 fscanf"
            ),
            Refused::TooFewPointers(conversions, pointers) => {
                format!("the format stores {conversions} conversions but {pointers} pointers were passed")
            }
        }
    }
}

/// The format as the host runs it (with its `%n` markers, NUL-terminated) and the destination of each
/// conversion that stores, in argument order. `bounded` (`fscanf`): `%s` and `%[` without a width get
/// [`STREAM_WIDTH_LIMIT`] - 1. The grammar is glibc's: flags `*`, `'` and `I`, a width, length modifiers
/// `hh h l ll q L j z Z t`, and a scanset's `]` right after `[` or `[^` belonging to the set; at a
/// conversion glibc does not know (or an unfinished one) glibc stops, so the rest is copied as it is.
pub fn plan(format: &[u8], bounded: bool) -> Result<(Vec<u8>, Vec<Dest>), Refused> {
    let format = format.split(|&b| b == 0).next().unwrap_or_default();
    let at = |i: usize| format.get(i).copied().unwrap_or(0);
    let after_digits = |mut i: usize| {
        while at(i).is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut out = Vec::with_capacity(format.len() + 16);
    let mut dests = Vec::new();
    let mut i = 0;
    while i < format.len() {
        if format[i] != b'%' {
            out.push(format[i]);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        if at(i) == b'%' {
            out.extend_from_slice(b"%%");
            i += 1;
            continue;
        }
        let digits = after_digits(i);
        if digits > i && at(digits) == b'$' {
            return Err(Refused::Positional);
        }
        let mut suppressed = false;
        loop {
            match at(i) {
                b'*' => suppressed = true,
                b'\'' | b'I' => {}
                _ => break,
            }
            i += 1;
        }
        let width_at = i;
        i = after_digits(i);
        // A width too long for a u64 is as good as infinite.
        let width = (i > width_at).then(|| {
            std::str::from_utf8(&format[width_at..i])
                .ok()
                .and_then(|w| w.parse::<u64>().ok())
                .unwrap_or(u64::MAX)
        });
        // Integer size, float size, wide.
        let (mut int_size, mut float_size, mut wide) = (4, 4, false);
        loop {
            match at(i) {
                b'h' if at(i + 1) == b'h' => {
                    int_size = 1;
                    i += 1;
                }
                b'h' => int_size = 2,
                b'l' if at(i + 1) == b'l' => {
                    (int_size, float_size) = (8, 10);
                    i += 1;
                }
                b'l' => (int_size, float_size, wide) = (8, 8, true),
                b'L' => (int_size, float_size) = (8, 10),
                b'q' => (int_size, float_size) = (8, 10),
                b'j' | b'z' | b'Z' | b't' => int_size = 8,
                b'm' => return Err(Refused::Allocating),
                _ => break,
            }
            i += 1;
        }
        let conversion = at(i);
        let mut end = i + 1;
        if conversion == b'[' {
            end = i + 1;
            if at(end) == b'^' {
                end += 1;
            }
            if at(end) == b']' {
                end += 1;
            }
            while end < format.len() && format[end] != b']' {
                end += 1;
            }
            end += 1;
        }
        let dest = match conversion {
            b'd' | b'i' | b'o' | b'u' | b'x' | b'X' | b'n' => Some(Dest::Fixed(int_size)),
            b'a' | b'A' | b'e' | b'E' | b'f' | b'F' | b'g' | b'G' => Some(Dest::Fixed(float_size)),
            b'p' => Some(Dest::Fixed(8)),
            b'c' | b's' | b'[' if wide => return Err(Refused::Wide),
            b'S' | b'C' => return Err(Refused::Wide),
            b'c' => Some(Dest::Chars),
            b's' | b'[' => Some(Dest::Text),
            _ => None,
        };
        let Some(dest) = dest.filter(|_| end <= format.len()) else {
            // glibc fails here (an unknown or unfinished conversion): nothing after it runs.
            out.extend_from_slice(&format[start..]);
            break;
        };
        if suppressed {
            out.extend_from_slice(&format[start..end]);
            i = end;
            continue;
        }
        let bytes = matches!(dest, Dest::Chars | Dest::Text);
        if bounded && bytes && width.is_some_and(|w| w >= STREAM_WIDTH_LIMIT as u64) {
            return Err(Refused::WidthTooLarge);
        }
        out.extend_from_slice(if matches!(conversion, b'c' | b'[' | b'n') {
            b"%n"
        } else {
            b" %n"
        });
        out.extend_from_slice(&format[start..width_at]);
        if bounded && width.is_none() && dest == Dest::Text {
            out.extend_from_slice((STREAM_WIDTH_LIMIT - 1).to_string().as_bytes());
        }
        out.extend_from_slice(&format[width_at..end]);
        out.extend_from_slice(b"%n");
        dests.push(dest);
        i = end;
    }
    out.push(0);
    Ok((out, dests))
}

/// What one lane's request gives: the C library's result (-1 after an error line when refused), and
/// the records of what it stored.
fn scan(kind: u64, stream: u64, pointers: u64, format: &[u8], input: &[u8]) -> (i64, Vec<u8>) {
    let name = if kind == STRING { "sscanf" } else { "fscanf" };
    let shown = String::from_utf8_lossy(format.split(|&b| b == 0).next().unwrap_or_default()).into_owned();
    let refuse = |why: String| {
        log::error(format_args!(
            "{}: {name}({shown:?}): {why}; nothing stored",
            crate::rpc::calls::served_device_label()
        ));
        (-1, Vec::new())
    };
    if format.last() != Some(&0) || kind > STREAM {
        return refuse("the request was malformed".into());
    }
    let (host_format, dests) = match plan(format, kind == STREAM) {
        Ok(plan) => plan,
        Err(why) => return refuse(why.reason()),
    };
    if dests.len() as u64 > pointers {
        return refuse(Refused::TooFewPointers(dests.len(), pointers).reason());
    }
    // The input as C text: up to its first NUL.
    let mut text: Vec<u8> = input.iter().copied().take_while(|&b| b != 0).collect();
    text.push(0);
    let room = |dest: &Dest| match dest {
        Dest::Fixed(_) => 16,
        _ if kind == STRING => text.len() + 1,
        _ => STREAM_WIDTH_LIMIT + 1,
    };
    let mut buffers: Vec<Vec<u8>> = dests.iter().map(|d| vec![0u8; room(d)]).collect();
    let mut markers: Vec<c_int> = vec![-1; 2 * dests.len()];
    let mut pointers = Vec::with_capacity(3 * dests.len());
    let marker_at = markers.as_mut_ptr();
    for (k, buffer) in buffers.iter_mut().enumerate() {
        // SAFETY: 2k and 2k + 1 are within `markers`, which outlives the call below.
        unsafe {
            pointers.push(marker_at.add(2 * k).cast::<c_void>());
            pointers.push(buffer.as_mut_ptr().cast());
            pointers.push(marker_at.add(2 * k + 1).cast());
        }
    }
    // glibc takes a conversion's pointer before it finds the conversion unfinished (`%[abc` with no
    // `]`), where `plan` copied the rest of the format as it is: spare pointers to a scratch buffer as
    // long as any conversion's, which glibc never writes then.
    let mut scratch = vec![0u8; room(&Dest::Text)];
    for _ in 0..4 {
        pointers.push(scratch.as_mut_ptr().cast());
    }
    let mut slots = PointerSlots::new(&pointers);
    let mut ap = slots.va_list();
    let host_format_at = host_format.as_ptr().cast::<c_char>();
    let result = if kind == STRING {
        // SAFETY: both texts are NUL-terminated; `ap` holds one pointer per `%` that stores in
        // `host_format` (`plan` follows glibc's grammar): an `int` for each marker, and for each
        // conversion a buffer of 16 bytes (a number) or longer than the input (bytes), which bounds
        // what a conversion stores; then the spare pointers.
        unsafe { __isoc99_vsscanf(text.as_ptr().cast(), host_format_at, &mut ap) }
    } else {
        let file = crate::rpc::services::streams::from_device_word(stream);
        crate::rpc::services::streams::checked::with_stream("fscanf", file, -1, || {
            // SAFETY: `file` is live (checked by `with_stream`); the pointers are as above, byte
            // buffers of STREAM_WIDTH_LIMIT + 1 bytes, more than any width `plan` lets through.
            unsafe { __isoc99_vfscanf(file, host_format_at, &mut ap) }
        })
    };
    let mut records = Vec::new();
    for (k, (dest, buffer)) in dests.iter().zip(&buffers).enumerate() {
        let (before, after) = (markers[2 * k], markers[2 * k + 1]);
        if after < 0 {
            continue;
        }
        let read = usize::try_from(after - before).unwrap_or(0);
        let stored = match dest {
            Dest::Fixed(size) => *size,
            Dest::Chars => read,
            Dest::Text => read + 1,
        }
        .min(buffer.len());
        records.extend_from_slice(&(k as u32).to_le_bytes());
        records.extend_from_slice(&(stored as u32).to_le_bytes());
        records.extend_from_slice(&buffer[..stored]);
    }
    (i64::from(result), records)
}

/// libc's callback for [`ffi::opcode::SCAN`]: a packet per calling lane with its result, then a byte
/// string per lane with what its conversions stored.
///
/// # Safety
/// Called by libc's server with the port it is serving.
pub unsafe extern "C" fn serve(raw: ffi::Port, _data: *mut c_void) {
    // SAFETY: the port of the running callback, used only within it.
    let mut port = unsafe { Port::from_raw(raw) };
    let mut requests = port.lane_packets();
    let received = port
        .recv(&mut requests)
        .and_then(|_| port.recv_n())
        .and_then(|formats| port.recv_n().map(|inputs| (formats, inputs)));
    let Ok((formats, inputs)) = received else {
        return;
    };
    let mut replies = port.lane_packets();
    let mut stored = vec![Vec::new(); port.lanes() as usize];
    // Packets come in the order of the calling lanes, which are those that sent a format (at least its
    // NUL); the byte strings are lane-indexed.
    let calling = formats.iter().enumerate().filter(|(_, f)| f.sent());
    for (((lane, format), request), reply) in calling.zip(&requests).zip(&mut replies) {
        let input = inputs.get(lane).map(|i| i.as_slice()).unwrap_or_default();
        let [kind, stream, pointers, ..] = request.data;
        let (result, bytes) = catch_unwind(AssertUnwindSafe(|| {
            scan(kind, stream, pointers, format.as_slice(), input)
        }))
        .unwrap_or((-1, Vec::new()));
        reply.data[0] = result as u64;
        stored[lane] = bytes;
    }
    let _ = port.send(&replies);
    let slices: Vec<&[u8]> = stored.iter().map(Vec::as_slice).collect();
    let _ = port.send_n(&slices);
    crate::rpc::calls::moved_through_port(port.moved());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(format: &str, bounded: bool) -> Result<(String, Vec<Dest>), Refused> {
        let mut bytes = format.as_bytes().to_vec();
        bytes.push(0);
        plan(&bytes, bounded).map(|(f, d)| (String::from_utf8(f[..f.len() - 1].to_vec()).unwrap(), d))
    }

    #[test]
    fn plans_follow_the_c_librarys_grammar() {
        use Dest::*;
        let (format, dests) = planned("%d%hhd %lf|%*s%5c%[]a]%Lg%%%zn", false).unwrap();
        assert_eq!(format, " %n%d%n %n%hhd%n  %n%lf%n|%*s%n%5c%n%n%[]a]%n %n%Lg%n%%%n%zn%n");
        assert_eq!(dests, [Fixed(4), Fixed(1), Fixed(8), Chars, Text, Fixed(10), Fixed(8)]);
        assert_eq!(planned("%s %[^]x]", true).unwrap().0, " %n%65535s%n %n%65535[^]x]%n");
        assert_eq!(planned("%7s", true).unwrap().0, " %n%7s%n");
        assert_eq!(
            planned("%d%y%d", false).unwrap(),
            (" %n%d%n%y%d".into(), vec![Fixed(4)])
        );
        assert_eq!(planned("%1$d", false), Err(Refused::Positional));
        assert_eq!(planned("%ms", false), Err(Refused::Allocating));
        assert_eq!(planned("%ls", false), Err(Refused::Wide));
        assert_eq!(planned("%70000c", true), Err(Refused::WidthTooLarge));
        assert!(planned("%70000c", false).is_ok(), "sscanf is bounded by its input");
    }

    /// Applies `scan`'s records to fresh destinations of 64 bytes filled with 0xAA.
    fn scanned(format: &str, input: &str, pointers: u64) -> (i64, Vec<Option<Vec<u8>>>) {
        let mut bytes = format.as_bytes().to_vec();
        bytes.push(0);
        let (result, records) = scan(STRING, 0, pointers, &bytes, input.as_bytes());
        let mut dests = vec![None; pointers as usize];
        let mut rest = records.as_slice();
        while !rest.is_empty() {
            let index = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
            let len = u32::from_le_bytes(rest[4..8].try_into().unwrap()) as usize;
            dests[index] = Some(rest[8..8 + len].to_vec());
            rest = &rest[8 + len..];
        }
        (result, dests)
    }

    #[test]
    fn stores_what_glibc_stores() {
        let (n, d) = scanned("%d %5s%c%n", "  -42 hello world", 4);
        assert_eq!(n, 3);
        assert_eq!(d[0].as_deref(), Some(&(-42i32).to_ne_bytes()[..]));
        assert_eq!(d[1].as_deref(), Some(&b"hello\0"[..]));
        assert_eq!(d[2].as_deref(), Some(&b" "[..]));
        assert_eq!(d[3].as_deref(), Some(&12i32.to_ne_bytes()[..]));
        // A matching failure stores nothing after it; an input failure first gives EOF.
        let (n, d) = scanned("%d%d", "7 x", 2);
        assert_eq!((n, d[1].is_none()), (1, true));
        assert_eq!(scanned("%d", "   ", 1).0, -1);
        // %5c with 3 bytes left: glibc stores the 3 and counts the conversion.
        let (n, d) = scanned("%5c", "abc", 1);
        assert_eq!((n, d[0].as_deref()), (1, Some(&b"abc"[..])));
        assert_eq!(
            scanned("%lf", "0x1p-2", 1).1[0].as_deref(),
            Some(&0.25f64.to_ne_bytes()[..])
        );
    }

    #[test]
    fn an_unfinished_scanset_fails_as_glibcs() {
        assert_eq!(
            scanned("%[abc", "", 1),
            (0, vec![None]),
            "glibc fails at the conversion"
        );
        assert_eq!(scanned("%d%[abc", "5abc", 2).0, 1);
    }

    #[test]
    fn refusals_store_nothing() {
        assert_eq!(scanned("%d %d", "1 2", 1), (-1, vec![None]));
        assert_eq!(scanned("%1$d", "1", 1), (-1, vec![None]));
        assert_eq!(scan(STRING, 0, 0, b"no nul", b""), (-1, Vec::new()));
        assert_eq!(scan(7, 0, 0, b"\0", b""), (-1, Vec::new()));
    }
}
