//! The device library's own C code (`device/ctype.c`, `string.c`, `stdlib.c`: what a target region
//! runs on a GPU for these calls), built for the host by `build.rs` with every function named
//! `omprpc_libc_<name>`, against the host's glibc on the same input: integer conversions (value, end,
//! `errno`, every base, bad ones included), comparisons, searches, spans, tokenising, copies,
//! `memmove` between overlapping ranges, sorting (glibc's order of equal elements) and the ctype
//! functions. The input's first bytes pick the family and its numbers; the rest are the strings. Any
//! difference panics, naming the call and the input.
#![no_main]

mod leak_check;

#[global_allocator]
static ALLOCATOR: leak_check::Counting = leak_check::Counting;

use std::ffi::{c_char, c_int, c_long, c_longlong, c_ulong, c_ulonglong, c_void};

use libfuzzer_sys::fuzz_target;

type Compare = unsafe extern "C" fn(*const c_void, *const c_void) -> c_int;

/// Declares each function of both libraries (glibc's name / the device library's) and makes the two
/// tables the checks call through, so that every check runs the same code on both.
macro_rules! libraries {
    ($($field:ident / $ours:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        extern "C" {
            $(
                fn $field($(_: $arg),*) $(-> $ret)?;
                fn $ours($(_: $arg),*) $(-> $ret)?;
            )*
        }

        /// One C library's functions under test.
        struct Library {
            $($field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        /// The host's C library.
        const GLIBC: Library = Library { $($field,)* };
        /// The device library's code, built for the host.
        const OURS: Library = Library { $($field: $ours,)* };
    };
}

libraries! {
    __errno_location / omprpc_libc___errno_location: fn() -> *mut c_int;
    strtol / omprpc_libc_strtol: fn(*const c_char, *mut *mut c_char, c_int) -> c_long;
    strtoul / omprpc_libc_strtoul: fn(*const c_char, *mut *mut c_char, c_int) -> c_ulong;
    strtoll / omprpc_libc_strtoll: fn(*const c_char, *mut *mut c_char, c_int) -> c_longlong;
    strtoull / omprpc_libc_strtoull: fn(*const c_char, *mut *mut c_char, c_int) -> c_ulonglong;
    atoi / omprpc_libc_atoi: fn(*const c_char) -> c_int;
    atoll / omprpc_libc_atoll: fn(*const c_char) -> c_longlong;
    strcmp / omprpc_libc_strcmp: fn(*const c_char, *const c_char) -> c_int;
    strncmp / omprpc_libc_strncmp: fn(*const c_char, *const c_char, usize) -> c_int;
    strcasecmp / omprpc_libc_strcasecmp: fn(*const c_char, *const c_char) -> c_int;
    strncasecmp / omprpc_libc_strncasecmp: fn(*const c_char, *const c_char, usize) -> c_int;
    memcmp / omprpc_libc_memcmp: fn(*const c_void, *const c_void, usize) -> c_int;
    strstr / omprpc_libc_strstr: fn(*const c_char, *const c_char) -> *mut c_char;
    strcasestr / omprpc_libc_strcasestr: fn(*const c_char, *const c_char) -> *mut c_char;
    memmem / omprpc_libc_memmem: fn(*const c_void, usize, *const c_void, usize) -> *mut c_void;
    strpbrk / omprpc_libc_strpbrk: fn(*const c_char, *const c_char) -> *mut c_char;
    strspn / omprpc_libc_strspn: fn(*const c_char, *const c_char) -> usize;
    strcspn / omprpc_libc_strcspn: fn(*const c_char, *const c_char) -> usize;
    strchr / omprpc_libc_strchr: fn(*const c_char, c_int) -> *mut c_char;
    strrchr / omprpc_libc_strrchr: fn(*const c_char, c_int) -> *mut c_char;
    strchrnul / omprpc_libc_strchrnul: fn(*const c_char, c_int) -> *mut c_char;
    memchr / omprpc_libc_memchr: fn(*const c_void, c_int, usize) -> *mut c_void;
    memrchr / omprpc_libc_memrchr: fn(*const c_void, c_int, usize) -> *mut c_void;
    strtok_r / omprpc_libc_strtok_r: fn(*mut c_char, *const c_char, *mut *mut c_char) -> *mut c_char;
    strsep / omprpc_libc_strsep: fn(*mut *mut c_char, *const c_char) -> *mut c_char;
    strncpy / omprpc_libc_strncpy: fn(*mut c_char, *const c_char, usize) -> *mut c_char;
    stpncpy / omprpc_libc_stpncpy: fn(*mut c_char, *const c_char, usize) -> *mut c_char;
    strxfrm / omprpc_libc_strxfrm: fn(*mut c_char, *const c_char, usize) -> usize;
    memmove / omprpc_libc_memmove: fn(*mut c_void, *const c_void, usize) -> *mut c_void;
    qsort / omprpc_libc_qsort: fn(*mut c_void, usize, usize, Compare);
    isalnum / omprpc_libc_isalnum: fn(c_int) -> c_int;
    isalpha / omprpc_libc_isalpha: fn(c_int) -> c_int;
    isblank / omprpc_libc_isblank: fn(c_int) -> c_int;
    iscntrl / omprpc_libc_iscntrl: fn(c_int) -> c_int;
    isdigit / omprpc_libc_isdigit: fn(c_int) -> c_int;
    isgraph / omprpc_libc_isgraph: fn(c_int) -> c_int;
    islower / omprpc_libc_islower: fn(c_int) -> c_int;
    isprint / omprpc_libc_isprint: fn(c_int) -> c_int;
    ispunct / omprpc_libc_ispunct: fn(c_int) -> c_int;
    isspace / omprpc_libc_isspace: fn(c_int) -> c_int;
    isupper / omprpc_libc_isupper: fn(c_int) -> c_int;
    isxdigit / omprpc_libc_isxdigit: fn(c_int) -> c_int;
    tolower / omprpc_libc_tolower: fn(c_int) -> c_int;
    toupper / omprpc_libc_toupper: fn(c_int) -> c_int;
}

/// The device library's allocator, which its `qsort` takes a merge buffer from: the host's here.
#[no_mangle]
extern "C" fn omprpc_libc_malloc(size: usize) -> *mut c_void {
    // SAFETY: malloc has no precondition.
    unsafe { libc::malloc(size) }
}

/// Its `free`.
#[no_mangle]
extern "C" fn omprpc_libc_free(ptr: *mut c_void) {
    // SAFETY: `ptr` came from omprpc_libc_malloc (the host's malloc) or is NULL.
    unsafe { libc::free(ptr) }
}

/// A NUL-terminated copy of `bytes` up to their first NUL.
fn c_string(bytes: &[u8]) -> Vec<u8> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let mut s = bytes[..end].to_vec();
    s.push(0);
    s
}

/// A returned pointer as an offset into `base` (-1 for NULL), comparable between the libraries.
fn offset<T, U>(p: *const T, base: *const U) -> isize {
    if p.is_null() {
        -1
    } else {
        p as isize - base as isize
    }
}

/// What one library gives for one family of calls on one input: comparable values, in order.
fn outcome(lib: &Library, family: u8, n: usize, c: c_int, a: &[u8], b: &[u8], rest: &[u8]) -> Vec<i128> {
    let (pa, pb) = (a.as_ptr().cast::<c_char>(), b.as_ptr().cast::<c_char>());
    let (la, lb) = (a.len() - 1, b.len() - 1);
    let mut out = Vec::new();
    // SAFETY (every call below): `a` and `b` are NUL-terminated, lengths and offsets stay inside the
    // buffers they are given with, and the errno location is the library's own.
    unsafe {
        let errno = (lib.__errno_location)();
        match family {
            0 => {
                // Every base from -1 to 38: the valid ones and bad ones on both sides.
                let base = (n % 40) as c_int - 1;
                let mut end: *mut c_char = std::ptr::null_mut();
                for which in 0..4 {
                    *errno = 0;
                    let value: i128 = match which {
                        0 => (lib.strtol)(pa, &mut end, base).into(),
                        1 => (lib.strtoul)(pa, &mut end, base).into(),
                        2 => (lib.strtoll)(pa, &mut end, base).into(),
                        _ => (lib.strtoull)(pa, &mut end, base).into(),
                    };
                    out.extend([value, offset(end, pa) as i128, (*errno).into()]);
                }
                out.push((lib.atoi)(pa).into());
                out.push((lib.atoll)(pa).into());
            }
            1 => {
                out.push((lib.strcmp)(pa, pb).signum().into());
                out.push((lib.strncmp)(pa, pb, n).signum().into());
                out.push((lib.strcasecmp)(pa, pb).signum().into());
                out.push((lib.strncasecmp)(pa, pb, n).signum().into());
                out.push((lib.memcmp)(pa.cast(), pb.cast(), la.min(lb)).signum().into());
            }
            2 => {
                out.push(offset((lib.strstr)(pa, pb), pa) as i128);
                out.push(offset((lib.strcasestr)(pa, pb), pa) as i128);
                out.push(offset((lib.memmem)(pa.cast(), la, pb.cast(), lb), pa) as i128);
                out.push(offset((lib.strpbrk)(pa, pb), pa) as i128);
                out.push((lib.strspn)(pa, pb) as i128);
                out.push((lib.strcspn)(pa, pb) as i128);
            }
            3 => {
                out.push(offset((lib.strchr)(pa, c), pa) as i128);
                out.push(offset((lib.strrchr)(pa, c), pa) as i128);
                out.push(offset((lib.strchrnul)(pa, c), pa) as i128);
                out.push(offset((lib.memchr)(pa.cast(), c, la), pa) as i128);
                out.push(offset((lib.memrchr)(pa.cast(), c, la), pa) as i128);
            }
            4 => {
                // Tokens of `a` split at the bytes of `b`: each token's offset, then the bytes left.
                let mut copy = a.to_vec();
                let base = copy.as_mut_ptr().cast::<c_char>();
                let mut place: *mut c_char = std::ptr::null_mut();
                let mut token = (lib.strtok_r)(base, pb, &mut place);
                while !token.is_null() && out.len() < 4096 {
                    out.push(offset(token, base) as i128);
                    token = (lib.strtok_r)(std::ptr::null_mut(), pb, &mut place);
                }
                out.extend(copy.iter().map(|&byte| i128::from(byte)));
                let mut copy = a.to_vec();
                let base = copy.as_mut_ptr().cast::<c_char>();
                let mut place = base;
                while !place.is_null() && out.len() < 8192 {
                    out.push(offset((lib.strsep)(&mut place, pb), base) as i128);
                }
                out.extend(copy.iter().map(|&byte| i128::from(byte)));
            }
            5 => {
                // Copies into a buffer of `n` bytes (filled beforehand, so that what is left shows).
                let size = n % 64;
                for which in 0..3 {
                    let mut buffer = vec![0xa5u8; size + 1];
                    let dst = buffer.as_mut_ptr().cast::<c_char>();
                    let value = match which {
                        0 => offset((lib.strncpy)(dst, pa, size), dst) as i128,
                        1 => offset((lib.stpncpy)(dst, pa, size), dst) as i128,
                        _ => (lib.strxfrm)(dst, pa, size) as i128,
                    };
                    out.push(value);
                    out.extend(buffer.iter().map(|&byte| i128::from(byte)));
                }
            }
            6 => {
                // memmove within one buffer, the ranges overlapping either way.
                let mut buffer = rest.to_vec();
                let len = buffer.len();
                if len > 0 {
                    let (from, to) = (n % len, c as usize % len);
                    let count = len - from.max(to);
                    let base = buffer.as_mut_ptr();
                    let returned = (lib.memmove)(base.add(to).cast(), base.add(from).cast(), count);
                    out.push(offset(returned, base) as i128);
                }
                out.extend(buffer.iter().map(|&byte| i128::from(byte)));
            }
            7 => {
                // Elements of 1 to 12 bytes ordered by their first byte only, so that the order of
                // equal elements shows.
                let size = 1 + n % 12;
                let mut elements = rest[..rest.len() / size * size].to_vec();
                unsafe extern "C" fn by_first_byte(x: *const c_void, y: *const c_void) -> c_int {
                    // SAFETY: qsort passes pointers to elements of at least one byte.
                    unsafe { c_int::from(*x.cast::<u8>()) - c_int::from(*y.cast::<u8>()) }
                }
                (lib.qsort)(elements.as_mut_ptr().cast(), elements.len() / size, size, by_first_byte);
                out.extend(elements.iter().map(|&byte| i128::from(byte)));
            }
            _ => {
                // Every byte's class and case, EOF included.
                let class = [
                    lib.isalnum, lib.isalpha, lib.isblank, lib.iscntrl, lib.isdigit, lib.isgraph, lib.islower,
                    lib.isprint, lib.ispunct, lib.isspace, lib.isupper, lib.isxdigit,
                ];
                for ch in rest.iter().map(|&byte| c_int::from(byte)).chain([-1]) {
                    out.extend(class.iter().map(|f| i128::from(f(ch) != 0)));
                    out.push((lib.tolower)(ch).into());
                    out.push((lib.toupper)(ch).into());
                }
            }
        }
    }
    out
}

/// Runs one input through both libraries (see the header comment).
fn one_input(data: &[u8]) {
    if data.len() < 3 {
        return;
    }
    let (family, n, c) = (data[0] % 9, usize::from(data[1]), c_int::from(data[2] as i8));
    let rest = &data[3..];
    let a = c_string(rest);
    let b = c_string(rest.get(a.len()..).unwrap_or_default());
    let glibc = outcome(&GLIBC, family, n, c, &a, &b, rest);
    let ours = outcome(&OURS, family, n, c, &a, &b, rest);
    assert_eq!(
        ours,
        glibc,
        "family {family} (n {n}, c {c}) on {:?} and {:?}: the device library, then glibc",
        String::from_utf8_lossy(&a),
        String::from_utf8_lossy(&b)
    );
}

fuzz_target!(|data: &[u8]| leak_check::run(data, one_input));
