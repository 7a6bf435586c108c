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
//!
//! [`ffi::opcode::FORMAT_TO_BUFFER`] (device `snprintf`, `sprintf`, `asprintf`) takes the same request,
//! with the size of the device's buffer in place of the stream (`u64::MAX` for `sprintf`, which has
//! none), and formats it with the C library's `vsnprintf` into a host buffer of that size: the reply
//! is a packet per lane with `vsnprintf`'s result in `data[0]` (the full length, or -1), then a byte
//! string per lane with exactly the bytes glibc's `snprintf` writes (the output cut to `size - 1`
//! bytes and its NUL; nothing for a size of 0; for -1, what glibc formatted before the error and its
//! NUL), which the device copies into its buffer. At most
//! [`FORMAT_TO_BUFFER_LIMIT`] bytes go back: a call that would write more, and a refused or malformed
//! request, gets -1, an error line, and no bytes (the device's buffer is left as it was).

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
pub(crate) struct VaList {
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
    fn vsnprintf(buffer: *mut c_char, size: usize, format: *const c_char, ap: *mut VaList) -> c_int;
}

/// The most bytes, the NUL included, that [`ffi::opcode::FORMAT_TO_BUFFER`] sends back to a device's
/// buffer (1 MiB): the bytes travel 64 to a packet through the mailbox, and the host holds them while it
/// sends, so a device `snprintf` whose output (as cut to its size) is longer is refused with -1.
pub const FORMAT_TO_BUFFER_LIMIT: usize = 1 << 20;

/// Why a request was not printed (or formatted).
#[derive(Debug)]
enum NotPrinted {
    Malformed,
    Refused(Refused),
    /// [`ffi::opcode::FORMAT_TO_BUFFER`]'s output, cut to the device's size, is at least this many
    /// bytes with its NUL: more than [`FORMAT_TO_BUFFER_LIMIT`].
    TooLong(u64),
}

impl NotPrinted {
    fn reason(&self) -> String {
        match self {
            NotPrinted::Malformed => "the request was malformed".into(),
            NotPrinted::Refused(Refused::WritesThroughPointer) => {
                "%n is not available to device code (it would write through a device pointer)".into()
            }
            NotPrinted::Refused(Refused::Positional) => {
                "positional arguments (%1$d) are not available to device code".into()
            }
            NotPrinted::TooLong(bytes) => format!(
                "the output would write at least {bytes} bytes to the device's buffer, more than the \
                 {FORMAT_TO_BUFFER_LIMIT} a device's snprintf, sprintf or asprintf receives"
            ),
        }
    }
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
    /// A `va_list` that reads the slots from the first (each C library call consumes its own).
    fn va_list(&mut self) -> VaList {
        VaList {
            gp_offset: GP_REGISTERS_USED,
            fp_offset: FP_REGISTERS_USED,
            overflow_arg_area: self.words.as_mut_ptr().cast(),
            reg_save_area: std::ptr::null_mut(),
        }
    }

    fn push(&mut self, word: u64) {
        if self.len.is_multiple_of(2) {
            self.words.push(0);
        }
        let pair = self.words.last_mut().expect("pushed above");
        *pair |= u128::from(word) << (64 * (self.len % 2));
        self.len += 1;
    }
}

/// Pointers in `va_list` slots, laid out as printf's arguments: for the host's `vsscanf` and
/// `vfscanf` (`rpc::services::scan`), whose arguments are all pointers.
pub(crate) struct PointerSlots(Slots);

impl PointerSlots {
    /// Slots holding `pointers` in order.
    pub(crate) fn new(pointers: &[*mut c_void]) -> PointerSlots {
        let mut slots = Slots {
            words: Vec::with_capacity(pointers.len().div_ceil(2)),
            len: 0,
            _strings: Vec::new(),
            _wide: Vec::new(),
        };
        for &pointer in pointers {
            slots.push(pointer as u64);
        }
        PointerSlots(slots)
    }

    /// A `va_list` that reads the pointers from the first.
    pub(crate) fn va_list(&mut self) -> VaList {
        self.0.va_list()
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
            let reason = why.reason();
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
    let mut ap = slots.va_list();
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

/// What one lane's [`ffi::opcode::FORMAT_TO_BUFFER`] request gives: the C library's `vsnprintf`
/// result (-1 after an error line when refused), and the bytes for the device's buffer.
fn format_to_buffer(bytes: &[u8]) -> (i64, Vec<u8>) {
    let Some(request) = Request::parse(bytes) else {
        log::error(format_args!(
            "{}: snprintf: the request was malformed; nothing written",
            crate::rpc::calls::served_device_label()
        ));
        return (-1, Vec::new());
    };
    format_request(&request).unwrap_or_else(|why| {
        let format = String::from_utf8_lossy(&request.format[..request.format.len() - 1]);
        log::error(format_args!(
            "{}: snprintf({format:?}): {}; nothing written",
            crate::rpc::calls::served_device_label(),
            why.reason()
        ));
        (-1, Vec::new())
    })
}

/// Formats a well-formed request with the C library's `vsnprintf` for a buffer of `request.stream`
/// bytes: its result, and the bytes `snprintf` writes to such a buffer.
fn format_request(request: &Request) -> Result<(i64, Vec<u8>), NotPrinted> {
    let args = arguments(request.format).map_err(NotPrinted::Refused)?;
    let mut slots = slots(request, &args)?;
    let size = request.stream;
    let format = request.format.as_ptr().cast::<c_char>();
    let mut format_into = |buffer: &mut Vec<u8>| {
        let mut ap = slots.va_list();
        let at = if buffer.is_empty() {
            std::ptr::null_mut()
        } else {
            buffer.as_mut_ptr().cast()
        };
        // SAFETY: `at` is NULL with a size of 0 or points at `buffer.len()` writable bytes; `format`
        // and `ap` are as in `print_request` (each call reads the slots through its own `va_list`).
        unsafe { vsnprintf(at, buffer.len(), format, &mut ap) }
    };
    // Most outputs are short: one call into a small buffer, a second into one of the exact size.
    let mut buffer = vec![0u8; size.min(256) as usize];
    let length = format_into(&mut buffer);
    if length < 0 {
        // glibc still writes what it formatted before the error (a wide character it cannot convert,
        // say) and a NUL: formatted into two buffers filled differently, the bytes written are those
        // that agree.
        let room = size.min(FORMAT_TO_BUFFER_LIMIT as u64) as usize;
        let (mut zeros, mut ones) = (vec![0u8; room], vec![0xffu8; room]);
        format_into(&mut zeros);
        format_into(&mut ones);
        let written = zeros.iter().zip(&ones).take_while(|(a, b)| a == b).count();
        if written == room && size > room as u64 {
            return Err(NotPrinted::TooLong(room as u64 + 1));
        }
        zeros.truncate(written);
        return Ok((i64::from(length), zeros));
    }
    let written = size.min(length as u64 + 1);
    if written > FORMAT_TO_BUFFER_LIMIT as u64 {
        return Err(NotPrinted::TooLong(written));
    }
    if written as usize > buffer.len() {
        buffer = vec![0u8; written as usize];
        let again = format_into(&mut buffer);
        if again != length {
            // The same arguments format alike, but for %m, which reads the host's errno.
            let kept = usize::try_from(again).map_or(0, |n| buffer.len().min(n + 1));
            buffer.truncate(kept);
            return Ok((i64::from(again), buffer));
        }
    }
    buffer.truncate(written as usize);
    Ok((i64::from(length), buffer))
}

/// libc's callback for [`ffi::opcode::FORMAT_TO_BUFFER`]: a packet per active lane with its result,
/// then a byte string per lane with the bytes for its buffer.
///
/// # Safety
/// Called by libc's server with the port it is serving.
pub unsafe extern "C" fn serve_format_to_buffer(raw: ffi::Port, _data: *mut c_void) {
    // SAFETY: the port of the running callback, used only within it.
    let mut port = unsafe { Port::from_raw(raw) };
    let mut replies = port.lane_packets();
    let mut written = vec![Vec::new(); port.lanes() as usize];
    if let Ok(requests) = port.recv_n() {
        // Requests and the written bytes are lane-indexed; result packets go to the active lanes in
        // order (see `serve`).
        let active = requests.iter().enumerate().filter(|(_, r)| !r.as_slice().is_empty());
        for (reply, (lane, bytes)) in replies.iter_mut().zip(active) {
            let (result, bytes) =
                catch_unwind(AssertUnwindSafe(|| format_to_buffer(bytes.as_slice()))).unwrap_or((-1, Vec::new()));
            reply.data[0] = result as u64;
            written[lane] = bytes;
        }
    }
    let _ = port.send(&replies);
    let slices: Vec<&[u8]> = written.iter().map(Vec::as_slice).collect();
    let _ = port.send_n(&slices);
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

    /// What FORMAT_TO_BUFFER gives for `format` with `args` and a device buffer of `size` bytes.
    fn formatted(size: u64, format: &str, args: &[u8], strings: &[u8]) -> (i64, Vec<u8>) {
        format_to_buffer(&request(size, format, args, strings))
    }

    /// The host's own snprintf of `format` with one `int` and one string, for a buffer of `size`.
    fn snprintf_of(size: usize, format: &str, value: i32, text: &str) -> (i64, Vec<u8>) {
        let format = std::ffi::CString::new(format).unwrap();
        let text = std::ffi::CString::new(text).unwrap();
        let mut buffer = vec![0xaau8; size];
        let at = if size == 0 {
            std::ptr::null_mut()
        } else {
            buffer.as_mut_ptr().cast()
        };
        // SAFETY: `at` has room for `size` bytes (or is NULL with 0); the format reads an int and a
        // string, which are passed.
        let n = unsafe { libc::snprintf(at, size, format.as_ptr(), value, text.as_ptr()) };
        // After an error, what glibc wrote ends at the first NUL (the tests' texts have none before).
        let kept = match usize::try_from(n) {
            _ if size == 0 => 0,
            Ok(n) => size.min(n + 1),
            Err(_) => buffer.iter().position(|&b| b == 0).map_or(0, |at| at + 1),
        };
        buffer.truncate(kept);
        (i64::from(n), buffer)
    }

    #[test]
    fn format_to_buffer_writes_what_snprintf_writes() {
        let mut args = (-1234i32).to_le_bytes().to_vec();
        args.extend_from_slice(&[0; 4]);
        args.extend_from_slice(&0x1000u64.to_le_bytes());
        let strings = string(b"glibc");
        for format in ["%d|%s", "%+08d [%-9s]", "%x%.2s"] {
            let full = snprintf_of(4096, format, -1234, "glibc").0 as u64;
            for size in [0, 1, 2, 5, full, full + 1, full + 2, 300, 100_000] {
                let ours = formatted(size, format, &args, &strings);
                let theirs = snprintf_of(size as usize, format, -1234, "glibc");
                assert_eq!(ours, theirs, "{format:?} into {size} bytes");
            }
            // sprintf: no size, the whole output and its NUL.
            let (n, bytes) = formatted(u64::MAX, format, &args, &strings);
            assert_eq!(
                (n as u64, bytes.len() as u64),
                (full, full + 1),
                "{format:?} with no size"
            );
        }
        // -1 (-1234 is no wide character): glibc writes what came before, and a NUL.
        for size in [0, 1, 2, 3, 4, 100] {
            let ours = formatted(size, "ab%lc%s", &args, &strings);
            let theirs = snprintf_of(size as usize, "ab%lc%s", -1234, "glibc");
            assert_eq!(ours, theirs, "an error, into {size} bytes");
            assert_eq!(ours.0, -1);
        }
    }

    #[test]
    fn format_to_buffer_refuses_what_printf_refuses_and_long_outputs() {
        assert_eq!(formatted(64, "%d%n", &[0; 16], &[]), (-1, Vec::new()));
        assert_eq!(formatted(64, "%1$d", &[0; 16], &[]), (-1, Vec::new()));
        assert_eq!(formatted(64, "%s", &[0; 8], &[1, 2]), (-1, Vec::new()));
        assert_eq!(format_to_buffer(&[1, 2, 3]), (-1, Vec::new()));
        // Two million spaces: refused without a bound, cut like snprintf's with a small one.
        let width = 2_000_000i32.to_le_bytes();
        let mut args = width.to_vec();
        args.extend_from_slice(&7i32.to_le_bytes());
        assert_eq!(formatted(u64::MAX, "%*d", &args, &[]), (-1, Vec::new()));
        let (n, bytes) = formatted(10, "%*d", &args, &[]);
        assert_eq!((n, bytes.as_slice()), (2_000_000, &b"         \0"[..]));
        let limit = FORMAT_TO_BUFFER_LIMIT as u64;
        let (n, bytes) = formatted(limit, "%*d", &args, &[]);
        assert_eq!((n, bytes.len() as u64), (2_000_000, limit), "exactly the limit");
        assert_eq!(formatted(limit + 1, "%*d", &args, &[]), (-1, Vec::new()));
    }

    #[test]
    fn missing_arguments_read_as_zero() {
        let (text, count) = printed("%d %d", &7i32.to_le_bytes(), &[]);
        assert_eq!((text.as_str(), count), ("7 0", 3));
    }
}
