//! `printf` from device code, formatted by the host's own C library.
//!
//! libc 19.1's PRINTF opcodes are not used for this: their server formats with LLVM libc's printf
//! core, whose output differs from the host's C library (`%p` of NULL prints `(nullptr)`, glibc
//! `(nil)`; the `'` flag is printed as text), and which pairs the strings of `%s` conversions with the
//! wrong conversions when one of them is NULL (`"%s %s"` of NULL and `"x"` prints `x (null)`). It also
//! fetches every string in a round trip of its own.
//!
//! [`ffi::opcode::PRINTF`] instead takes one byte string per lane (see [`Request`]): the stream, the
//! format, the argument struct exactly as clang lays it out for `__llvm_omp_vprintf` (each argument
//! after C's default promotions, at its natural alignment), and the bytes of each `%s` string, which
//! the device found by reading the format. The host reads the same format ([`arguments`]), puts each
//! argument where the x86-64 ABI's `va_list` looks for it, swaps device string pointers for host
//! copies, and calls the C library's `vfprintf`: the output and the returned count are the host's
//! printf's. Formats that would make the host write through a device pointer (`%n`) or that name
//! arguments by position (`%1$d`, which the device cannot lay out) are refused with an error line and
//! -1. The reply is each lane's result in `data[0]`.

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use libc::FILE;

use crate::rpc::protocol::ffi;
use crate::rpc::protocol::port::{Packet, Port};
use crate::util::log;

/// What one conversion reads from the argument struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// `int` (and everything promoted to it, `wint_t` included); also a `*` width or precision.
    Int,
    /// `long`, `long long`, `intmax_t`, `size_t`, `ptrdiff_t`.
    Long,
    /// `double` (and `float`, promoted).
    Double,
    /// `long double`: x87's 80 bits in 16 bytes, as clang lays out the host's type in device code.
    LongDouble,
    /// `%p`: printed as a number, never followed.
    Pointer,
    /// `%s`: a device pointer whose bytes travel with the request.
    String,
    /// `%ls`: a device pointer to 4-byte `wchar_t`s, whose units travel with the request.
    WideString,
}

impl Arg {
    /// Size and alignment in the argument struct.
    pub fn size(self) -> usize {
        match self {
            Arg::Int => 4,
            Arg::Long | Arg::Double | Arg::Pointer | Arg::String | Arg::WideString => 8,
            Arg::LongDouble => 16,
        }
    }
}

/// Why the host does not print a format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// `%n` would write through a device pointer in host memory.
    WritesThroughPointer,
    /// `%1$d`: the device lays arguments out in call order, which positions may contradict.
    Positional,
}

/// The arguments that `format` reads, in order, as the C library reads them: flags `-+ #0'I`, a
/// width and precision (`*` reads an `int`), length modifiers `hh h l ll q L j z Z t`, and C99's
/// conversions with glibc's additions (`%b`, `%m`, `%C`, `%S`). A conversion it does not know reads
/// nothing, as glibc prints it as text. The device's reader in `omprpc_device.h` keeps the same rules.
pub fn arguments(format: &[u8]) -> Result<Vec<Arg>, Refused> {
    let at = |i: usize| format.get(i).copied().unwrap_or(0);
    let after_digits = |mut i: usize| {
        while at(i).is_ascii_digit() {
            i += 1;
        }
        i
    };
    // A width or a precision at `i`: `*` reads an `int` (unless positional, `*2$`), digits read
    // nothing. Returns where it ends.
    let width = |i: usize, args: &mut Vec<Arg>| -> Result<usize, Refused> {
        if at(i) != b'*' {
            return Ok(after_digits(i));
        }
        args.push(Arg::Int);
        let end = after_digits(i + 1);
        if end > i + 1 && at(end) == b'$' {
            return Err(Refused::Positional);
        }
        Ok(end)
    };
    let mut args = Vec::new();
    let mut i = 0;
    while i < format.len() && format[i] != 0 {
        if format[i] != b'%' {
            i += 1;
            continue;
        }
        i += 1;
        if at(i) == b'%' {
            i += 1;
            continue;
        }
        let digits = after_digits(i);
        if digits > i && at(digits) == b'$' {
            return Err(Refused::Positional);
        }
        while b"-+ #0'I".contains(&at(i)) && at(i) != 0 {
            i += 1;
        }
        i = width(i, &mut args)?;
        if at(i) == b'.' {
            i = width(i + 1, &mut args)?;
        }
        let (mut longs, mut big) = (0, false);
        loop {
            match at(i) {
                b'h' => {}
                b'l' => longs += 1,
                b'q' | b'j' | b'z' | b'Z' | b't' => longs = 2,
                b'L' => {
                    big = true;
                    longs = 2;
                }
                _ => break,
            }
            i += 1;
        }
        let conversion = at(i);
        if conversion == 0 {
            break;
        }
        i += 1;
        let arg = match conversion {
            b'd' | b'i' | b'o' | b'u' | b'x' | b'X' | b'b' | b'B' if longs > 0 => Arg::Long,
            b'd' | b'i' | b'o' | b'u' | b'x' | b'X' | b'b' | b'B' | b'c' | b'C' => Arg::Int,
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' if big => Arg::LongDouble,
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => Arg::Double,
            b's' if longs > 0 => Arg::WideString,
            b'S' => Arg::WideString,
            b's' => Arg::String,
            b'p' => Arg::Pointer,
            b'n' => return Err(Refused::WritesThroughPointer),
            _ => continue,
        };
        args.push(arg);
    }
    Ok(args)
}

/// Offsets of `args` in the argument struct (natural alignment from offset 0), and its size.
pub fn layout(args: &[Arg]) -> (Vec<usize>, usize) {
    let mut at = 0usize;
    let offsets = args
        .iter()
        .map(|arg| {
            let size = arg.size();
            at = at.div_ceil(size) * size;
            let here = at;
            at += size;
            here
        })
        .collect();
    (offsets, at)
}

/// One lane's request, as the device lays it out: a 16-byte head (the stream as libc encodes it, the
/// format's length with its NUL, the argument struct's length), the format, the struct, then for each
/// `%s` or `%ls` conversion in order a `u64` byte count (`u64::MAX` for a NULL pointer) and the bytes.
pub struct Request<'a> {
    /// The stream word: 1, 2 or 3 in its low bits for stdin, stdout, stderr, else a host `FILE *`.
    pub stream: u64,
    /// The format, NUL included.
    pub format: &'a [u8],
    /// The argument struct.
    pub args: &'a [u8],
    /// The strings' part.
    pub strings: &'a [u8],
}

/// The little-endian number of `n` (at most 8) bytes at `at` in `bytes`; `None` past their end.
fn le_number(bytes: &[u8], at: usize, n: usize) -> Option<u64> {
    let mut buf = [0u8; 8];
    buf[..n].copy_from_slice(bytes.get(at..at.checked_add(n)?)?);
    Some(u64::from_le_bytes(buf))
}

impl<'a> Request<'a> {
    /// Splits `bytes`; `None` when they are not a request (too short, or no NUL ending the format).
    pub fn parse(bytes: &'a [u8]) -> Option<Request<'a>> {
        let stream = le_number(bytes, 0, 8)?;
        let format_len = le_number(bytes, 8, 4)? as usize;
        let args_len = le_number(bytes, 12, 4)? as usize;
        let format = bytes.get(16..16usize.checked_add(format_len)?)?;
        if format.last() != Some(&0) {
            return None;
        }
        let args_end = (16 + format_len).checked_add(args_len)?;
        let args = bytes.get(16 + format_len..args_end)?;
        Some(Request {
            stream,
            format,
            args,
            strings: &bytes[args_end..],
        })
    }
}

/// The x86-64 ABI's `va_list` element, with every register argument used up so that the C library
/// reads each argument from `overflow_arg_area`: 8-byte slots, `long double` in 16-byte aligned pairs.
#[repr(C)]
struct VaList {
    gp_offset: u32,
    fp_offset: u32,
    overflow_arg_area: *mut c_void,
    reg_save_area: *mut c_void,
}

/// Past the six general registers' 48 bytes and the eight vector registers' 128.
const GP_REGISTERS_USED: u32 = 48;
const FP_REGISTERS_USED: u32 = 48 + 128;

extern "C" {
    // `va_list` is an array type: as a parameter it is a pointer to its first element.
    fn vfprintf(stream: *mut FILE, format: *const c_char, ap: *mut VaList) -> c_int;
}

/// Why a request was not printed.
#[derive(Debug)]
enum NotPrinted {
    Malformed,
    Refused(Refused),
}

/// Arguments in `va_list` slots, with the host copies that string slots point to.
struct Slots {
    /// 16-byte aligned storage, viewed as 8-byte slots.
    words: Vec<u128>,
    len: usize,
    /// Host copies of `%s` strings (NUL-terminated) and `%ls` strings (0-terminated units).
    _strings: Vec<Vec<u8>>,
    _wide: Vec<Vec<u32>>,
}

impl Slots {
    fn push(&mut self, word: u64) {
        if self.len.is_multiple_of(2) {
            self.words.push(0);
        }
        let pair = self.words.last_mut().expect("pushed above");
        *pair |= u128::from(word) << (64 * (self.len % 2));
        self.len += 1;
    }
}

/// Reads the request's arguments into slots.
fn slots(request: &Request, args: &[Arg]) -> Result<Slots, NotPrinted> {
    let (offsets, _) = layout(args);
    // An argument the struct is too short for reads as 0.
    let read = |at: usize, n: usize| le_number(request.args, at, n).unwrap_or(0);
    let mut strings_left = request.strings;
    let mut next_string = || -> Result<Option<&[u8]>, NotPrinted> {
        let (count, rest) = strings_left.split_first_chunk::<8>().ok_or(NotPrinted::Malformed)?;
        let count = u64::from_le_bytes(*count);
        if count == u64::MAX {
            strings_left = rest;
            return Ok(None);
        }
        let count = usize::try_from(count).map_err(|_| NotPrinted::Malformed)?;
        let bytes = rest.get(..count).ok_or(NotPrinted::Malformed)?;
        strings_left = &rest[count..];
        Ok(Some(bytes))
    };
    let mut slots = Slots {
        words: Vec::with_capacity(args.len()),
        len: 0,
        _strings: Vec::new(),
        _wide: Vec::new(),
    };
    for (&arg, &at) in args.iter().zip(&offsets) {
        match arg {
            Arg::Int => slots.push(read(at, 4) as u32 as i32 as i64 as u64),
            Arg::Long | Arg::Double | Arg::Pointer => slots.push(read(at, 8)),
            Arg::LongDouble => {
                if !slots.len.is_multiple_of(2) {
                    slots.push(0);
                }
                slots.push(read(at, 8));
                slots.push(read(at + 8, 8));
            }
            Arg::String => match next_string()? {
                None => slots.push(0),
                Some(bytes) => {
                    let mut copy = Vec::with_capacity(bytes.len() + 1);
                    copy.extend_from_slice(bytes);
                    copy.push(0);
                    slots.push(copy.as_ptr() as u64);
                    slots._strings.push(copy);
                }
            },
            Arg::WideString => match next_string()? {
                None => slots.push(0),
                Some(bytes) => {
                    let mut units: Vec<u32> = bytes
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes(c.try_into().expect("chunks of 4")))
                        .collect();
                    units.push(0);
                    slots.push(units.as_ptr() as u64);
                    slots._wide.push(units);
                }
            },
        }
    }
    Ok(slots)
}

/// Prints one lane's request; the C library's count, or -1 after an error line.
fn print(bytes: &[u8]) -> i64 {
    let Some(request) = Request::parse(bytes) else {
        log::error(format_args!(
            "{}: printf: the request was malformed; nothing printed",
            crate::rpc::calls::served_device_label()
        ));
        return -1;
    };
    match print_request(&request) {
        Ok(count) => i64::from(count),
        Err(why) => {
            let reason = match why {
                NotPrinted::Malformed => "the request was malformed",
                NotPrinted::Refused(Refused::WritesThroughPointer) => {
                    "%n is not available to device code (it would write through a device pointer)"
                }
                NotPrinted::Refused(Refused::Positional) => {
                    "positional arguments (%1$d) are not available to device code"
                }
            };
            let format = String::from_utf8_lossy(&request.format[..request.format.len() - 1]);
            log::error(format_args!(
                "{}: printf({format:?}): {reason}; nothing printed",
                crate::rpc::calls::served_device_label()
            ));
            -1
        }
    }
}

/// Prints a well-formed request with the C library's `vfprintf`; its count.
fn print_request(request: &Request) -> Result<c_int, NotPrinted> {
    let args = arguments(request.format).map_err(NotPrinted::Refused)?;
    let mut slots = slots(request, &args)?;
    let stream = crate::rpc::services::streams::from_device_word(request.stream);
    let mut ap = VaList {
        gp_offset: GP_REGISTERS_USED,
        fp_offset: FP_REGISTERS_USED,
        overflow_arg_area: slots.words.as_mut_ptr().cast(),
        reg_save_area: std::ptr::null_mut(),
    };
    let format = request.format.as_ptr().cast::<c_char>();
    Ok(crate::rpc::services::streams::checked::with_stream(
        crate::rpc::services::streams::WRITE,
        stream,
        -1,
        || {
            // SAFETY: `format` is NUL-terminated (checked by `parse`); `ap` hands the C library one slot
            // per argument that `format` reads, of the type it reads (`arguments` follows its grammar),
            // string slots pointing at NUL-terminated host copies that `slots` keeps alive, and no
            // argument is written through (`%n` is refused); `stream` is live (checked by `with_stream`).
            unsafe { vfprintf(stream, format, &mut ap) }
        },
    ))
}

/// libc's callback for [`ffi::opcode::PRINTF`].
///
/// # Safety
/// Called by libc's server with the port it is serving.
pub unsafe extern "C" fn serve(raw: ffi::Port, _data: *mut c_void) {
    // SAFETY: the port of the running callback, used only within it.
    let mut port = unsafe { Port::from_raw(raw) };
    let mut replies = port.lane_packets();
    if let Ok(requests) = port.recv_n() {
        // Requests are lane-indexed (an inactive lane's is empty; an active lane's has at least its
        // head), while replies go to the active lanes in order: with a partial mask, lane 4's reply
        // may be the second.
        let active = requests.iter().map(|r| r.as_slice()).filter(|b| !b.is_empty());
        for (reply, bytes) in replies.iter_mut().zip(active) {
            let result = catch_unwind(AssertUnwindSafe(|| print(bytes))).unwrap_or(-1);
            *reply = Packet {
                data: [result as u64, 0, 0, 0, 0, 0, 0, 0],
            };
        }
    }
    let _ = port.send(&replies);
    crate::rpc::calls::moved_through_port(port.moved());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_follow_the_c_librarys_grammar() {
        use Arg::*;
        let cases: [(&str, Vec<Arg>); 12] = [
            ("plain %% text", vec![]),
            ("%d %i %u %x %X %o %c %hhd %hd %b", vec![Int; 10]),
            ("%ld %lld %zu %jd %td %qd %Lx %Zu", vec![Long; 8]),
            ("%f %e %g %a %F %E %G %A", vec![Double; 8]),
            ("%Lf %Le", vec![LongDouble; 2]),
            (
                "%s %p %ls %S %lc %C",
                vec![String, Pointer, WideString, WideString, Int, Int],
            ),
            ("%*d %.*f %*.*s", vec![Int, Int, Int, Double, Int, Int, String]),
            ("%-+ #0'8.3f", vec![Double]),
            ("%m %y", vec![]),
            ("%'d|%Id", vec![Int, Int]),
            ("trailing %", vec![]),
            ("trailing %l", vec![]),
        ];
        for (format, expected) in cases {
            let mut bytes = format.as_bytes().to_vec();
            bytes.push(0);
            assert_eq!(arguments(&bytes), Ok(expected), "{format}");
        }
        assert_eq!(arguments(b"%d%n\0"), Err(Refused::WritesThroughPointer));
        assert_eq!(arguments(b"%1$d\0"), Err(Refused::Positional));
        assert_eq!(arguments(b"%*2$d\0"), Err(Refused::Positional));
    }

    #[test]
    fn layout_is_natural_alignment_from_zero() {
        use Arg::*;
        let (offsets, size) = layout(&[Int, String, Double, Int, Long, Int, Pointer, LongDouble]);
        assert_eq!(offsets, [0, 8, 16, 24, 32, 40, 48, 64]);
        assert_eq!(size, 80);
    }

    fn request(stream: u64, format: &str, args: &[u8], strings: &[u8]) -> Vec<u8> {
        let mut bytes = stream.to_le_bytes().to_vec();
        bytes.extend_from_slice(&(format.len() as u32 + 1).to_le_bytes());
        bytes.extend_from_slice(&(args.len() as u32).to_le_bytes());
        bytes.extend_from_slice(format.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(args);
        bytes.extend_from_slice(strings);
        bytes
    }

    /// Prints through `print` into a temporary file and returns what it wrote and the count.
    fn printed(format: &str, args: &[u8], strings: &[u8]) -> (std::string::String, i64) {
        // SAFETY: tmpfile has no preconditions; the stream is closed below.
        let file = unsafe { libc::tmpfile() };
        assert!(!file.is_null());
        crate::rpc::services::streams::tests_support::adopt(file);
        let count = print(&request(file as u64, format, args, strings));
        let mut out = vec![0u8; 4096];
        // SAFETY: `file` is a live stream; `out` has room for what is read.
        let n = unsafe {
            libc::fflush(file);
            libc::rewind(file);
            libc::fread(out.as_mut_ptr().cast(), 1, out.len(), file)
        };
        crate::rpc::services::streams::tests_support::forget(file);
        // SAFETY: closing the stream opened above.
        unsafe { libc::fclose(file) };
        out.truncate(n);
        (std::string::String::from_utf8(out).unwrap(), count)
    }

    fn string(bytes: &[u8]) -> Vec<u8> {
        let mut v = (bytes.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(bytes);
        v
    }

    #[test]
    fn prints_what_the_c_library_prints() {
        let mut args = Vec::new();
        args.extend_from_slice(&42i32.to_le_bytes());
        args.extend_from_slice(&[0; 4]);
        args.extend_from_slice(&0x1000u64.to_le_bytes()); // the device's pointer to "two"
        args.extend_from_slice(&2.5f64.to_le_bytes());
        args.extend_from_slice(&0u64.to_le_bytes()); // %p of NULL
        args.extend_from_slice(&0u64.to_le_bytes()); // %s of NULL
        let mut strings = string(b"two");
        strings.extend_from_slice(&u64::MAX.to_le_bytes());
        let (text, count) = printed("%d|%s|%.1f|%p|%s|%'d", &args, &strings);
        assert_eq!(text, "42|two|2.5|(nil)|(null)|0");
        assert_eq!(count, text.len() as i64);
    }

    #[test]
    fn long_double_comes_in_x87_bytes() {
        // 2.5 as x87 extended: mantissa 0xA000000000000000, exponent 0x4000.
        let mut args = 1i32.to_le_bytes().to_vec();
        args.extend_from_slice(&[0; 12]);
        args.extend_from_slice(&0xA000_0000_0000_0000u64.to_le_bytes());
        args.extend_from_slice(&0x4000u64.to_le_bytes());
        let (text, _) = printed("%d %Lf", &args, &[]);
        assert_eq!(text, "1 2.500000");
    }

    #[test]
    fn refused_and_malformed_requests_print_nothing() {
        assert_eq!(printed("%d%n", &[0; 16], &[]), (std::string::String::new(), -1));
        assert_eq!(printed("%2$d", &[0; 16], &[]), (std::string::String::new(), -1));
        assert_eq!(printed("%s", &[0; 8], &[1, 2]), (std::string::String::new(), -1));
        assert_eq!(print(&[1, 2, 3]), -1);
        let mut no_nul = request(2, "x", &[], &[]);
        no_nul[17] = b'y'; // the NUL ending the format
        assert_eq!(print(&no_nul), -1);
    }

    #[test]
    fn missing_arguments_read_as_zero() {
        let (text, count) = printed("%d %d", &7i32.to_le_bytes(), &[]);
        assert_eq!((text.as_str(), count), ("7 0", 3));
    }
}
