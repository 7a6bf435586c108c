//! The host's C streams as device code reaches them, checked whatever client sent the request.
//!
//! libc's server takes a stream as a raw `FILE *` from the device and hands it to the host's C library:
//! a device `fclose` twice, or a stream used after `fclose` or made up, frees or reads freed memory and
//! kills the host process. LLVM libc's own client sends `OPEN_FILE`, `CLOSE_FILE` and the stream
//! opcodes straight to that server, so the check cannot rely on the client asking first. Instead, the
//! plugin's link routes every stdio call of libc's server through this module (`--wrap` for each
//! function the server calls, see `build.rs`): `fopen` records the stream it hands to the device,
//! every other call goes through only for a stream the device has open (or the host's stdin, stdout,
//! stderr, or `NULL` where C allows it), and otherwise fails as C's function fails (`EOF`, 0, -1,
//! `NULL`) with one error line naming the device, the call and the stream.
//!
//! A stream the device closes is not freed: `freopen` turns it into a read-only `/dev/null` stream, a
//! *retired* stream, which the next `fopen` of any device reuses. Every `FILE *` a device ever got
//! therefore stays a live object for the rest of the process, and a call racing with an `fclose` of its
//! stream reaches a harmless stream instead of freed memory (or, as with a reused file descriptor, the
//! file opened after it). The number of `FILE` objects is the most files the devices ever had open at
//! once.

use std::ffi::{c_char, c_int, c_long, c_void, CStr};
use std::hash::BuildHasherDefault;
use std::sync::{LazyLock, Mutex};

use libc::FILE;

use crate::util::address_map::AddressSet;
use crate::util::log;
use crate::util::sync::lock;

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

/// The C library's own stdio functions, looked up in the process's global scope (the program and the
/// C library; the plugin is loaded with local scope, so its wrapped names are not there), for the
/// checks to call in a link where the names themselves lead back to the checks.
struct Stdio {
    fopen: unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE,
    fwrite: unsafe extern "C" fn(*const c_void, usize, usize, *mut FILE) -> usize,
    fwrite_unlocked: unsafe extern "C" fn(*const c_void, usize, usize, *mut FILE) -> usize,
    fread: unsafe extern "C" fn(*mut c_void, usize, usize, *mut FILE) -> usize,
    fgets: unsafe extern "C" fn(*mut c_char, c_int, *mut FILE) -> *mut c_char,
    fseek: unsafe extern "C" fn(*mut FILE, c_long, c_int) -> c_int,
    ftell: unsafe extern "C" fn(*mut FILE) -> c_long,
    fflush: unsafe extern "C" fn(*mut FILE) -> c_int,
    feof: unsafe extern "C" fn(*mut FILE) -> c_int,
    ferror: unsafe extern "C" fn(*mut FILE) -> c_int,
    clearerr: unsafe extern "C" fn(*mut FILE),
    ungetc: unsafe extern "C" fn(c_int, *mut FILE) -> c_int,
    flockfile: unsafe extern "C" fn(*mut FILE),
    funlockfile: unsafe extern "C" fn(*mut FILE),
}

static STDIO: LazyLock<Stdio> = LazyLock::new(|| {
    let global = libloading::os::unix::Library::this();
    macro_rules! real {
        ($name:ident) => {
            // SAFETY: the C library's function of that name, with the C type the field declares.
            *unsafe { global.get(concat!(stringify!($name), "\0").as_bytes()) }
                .unwrap_or_else(|e| panic!("the C library has no {}: {e}", stringify!($name)))
        };
    }
    Stdio {
        fopen: real!(fopen),
        fwrite: real!(fwrite),
        fwrite_unlocked: real!(fwrite_unlocked),
        fread: real!(fread),
        fgets: real!(fgets),
        fseek: real!(fseek),
        ftell: real!(ftell),
        fflush: real!(fflush),
        feof: real!(feof),
        ferror: real!(ferror),
        clearerr: real!(clearerr),
        ungetc: real!(ungetc),
        flockfile: real!(flockfile),
        funlockfile: real!(funlockfile),
    }
});

extern "C" {
    static stdin: *mut FILE;
    static stdout: *mut FILE;
    static stderr: *mut FILE;
}

/// The stream a device names with `word`, decoded as libc 19.1's GPU stdio encodes it (`to_stream`):
/// 1, 2 or 3 in the low bits for stdin, stdout or stderr, otherwise a host `FILE *`.
pub fn from_device_word(word: u64) -> *mut FILE {
    // SAFETY: reading the C library's standard stream pointers.
    unsafe {
        match word & 3 {
            1 => stdin,
            2 => stdout,
            3 => stderr,
            _ => word as usize as *mut FILE,
        }
    }
}

/// Whether `stream` is one the host's C library may be handed for the device: one of the device's
/// open files, or the host's standard streams.
fn usable(stream: *mut FILE) -> bool {
    // SAFETY: reading the C library's standard stream pointers.
    let standard = unsafe { [stdin, stdout, stderr] };
    standard.contains(&stream) || lock(&STREAMS).open.contains(&(stream as usize))
}

/// What a refused write was, as the device saw it: libc's server writes every stream output with
/// `fwrite`, and the plugin's printf (`rpc::printf`) names its refusals the same way.
pub(crate) const WRITE: &str = "fwrite, fputs or fprintf";

/// Says once per call that `call` was refused a stream the device does not have open.
fn refuse(call: &str, stream: *mut FILE) {
    let device = crate::rpc::calls::served_device_label();
    log::error(format_args!(
        "{device}: {call} on stream {:#x} that the device does not have open (closed already, or never \
         returned by fopen); the call failed",
        stream as usize
    ));
}

/// Runs `call`, the C library's function on `stream`, when a device may use `stream`; otherwise says
/// that `name` was refused and returns `failed`, as C's function fails.
fn pass_on<T>(name: &str, stream: *mut FILE, failed: T, call: impl FnOnce() -> T) -> T {
    if usable(stream) {
        call()
    } else {
        refuse(name, stream);
        failed
    }
}

/// Opens `path` with `mode` for a device, reusing a retired stream when there is one.
///
/// # Safety
/// `path` and `mode` are NUL-terminated strings.
unsafe fn open(path: *const c_char, mode: *const c_char) -> *mut FILE {
    let reusable = lock(&STREAMS).retired.pop();
    let stream = match reusable {
        Some(retired) => {
            // SAFETY: `retired` is a live FILE (streams are never freed); freopen closes what it has
            // open and opens `path` in the same object. Both strings are NUL-terminated (contract).
            let reopened = unsafe { libc::freopen(path, mode, retired as *mut FILE) };
            if reopened.is_null() {
                // glibc leaves the object closed but valid when freopen fails; make it a retired
                // stream again (a failure here leaves it closed, which is just as harmless).
                // SAFETY: as above.
                unsafe { libc::freopen(DEV_NULL.as_ptr(), READ.as_ptr(), retired as *mut FILE) };
                lock(&STREAMS).retired.push(retired);
                return std::ptr::null_mut();
            }
            retired as *mut FILE
        }
        // SAFETY: both strings are NUL-terminated (contract).
        None => unsafe { (STDIO.fopen)(path, mode) },
    };
    if !stream.is_null() {
        lock(&STREAMS).open.insert(stream as usize);
    }
    stream
}

/// Closes a device's stream: 0, or `EOF` when buffered data could not be written or the device did not
/// have it open.
fn close(stream: *mut FILE) -> c_int {
    if !lock(&STREAMS).open.remove(&(stream as usize)) {
        refuse("fclose", stream);
        return libc::EOF;
    }
    // SAFETY: `stream` was open, so it is a live FILE; only this call closes it (it left `open`).
    let flushed = unsafe { (STDIO.fflush)(stream) };
    // SAFETY: as above; freopen closes the file and keeps the object, now reading /dev/null.
    unsafe { libc::freopen(DEV_NULL.as_ptr(), READ.as_ptr(), stream) };
    lock(&STREAMS).retired.push(stream as usize);
    if flushed == 0 {
        0
    } else {
        libc::EOF
    }
}

/// The checked stdio functions, which the link puts in place of the C library's for libc's server.
/// Each has the C function's signature and contract; a stream the device does not have open is not
/// passed on. Those that take only a stream are safe to call with any pointer, since they pass on
/// only live streams (hence the lint's exception).
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub mod checked {
    use super::*;

    /// `fopen` for a device, as libc's server calls it for `OPEN_FILE`: with a path it received into
    /// memory from `new char[]` and never frees (libc 19.1 leaks it, 26 bytes for a short path), so
    /// this frees it once the file is open.
    ///
    /// # Safety
    /// As `fopen`, and `path` came from `new char[]` and is not used after the call (true of libc
    /// 19.1's `OPEN_FILE`, the only caller of `fopen` in the plugin).
    pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut FILE {
        extern "C" {
            /// C++'s `operator delete[](void *)`.
            #[link_name = "_ZdaPv"]
            fn operator_delete_array(block: *mut c_void);
        }
        // SAFETY: forwarded from the contract.
        let stream = unsafe { open(path, mode) };
        // SAFETY: per the contract, `path` came from `new char[]` and nothing uses it afterwards.
        unsafe { operator_delete_array(path.cast_mut().cast()) };
        stream
    }

    /// `fclose` of a device's stream.
    pub extern "C" fn fclose(stream: *mut FILE) -> c_int {
        close(stream)
    }

    /// `fwrite`.
    ///
    /// # Safety
    /// As `fwrite`, but for the stream, which is checked.
    pub unsafe extern "C" fn fwrite(data: *const c_void, size: usize, count: usize, stream: *mut FILE) -> usize {
        // SAFETY: a usable stream is live; the rest is the caller's contract.
        let written = pass_on(WRITE, stream, 0, || unsafe {
            (STDIO.fwrite)(data, size, count, stream)
        });
        crate::rpc::calls::moved_to_host(|| (written * size) as u64);
        written
    }

    /// `fwrite_unlocked`.
    ///
    /// # Safety
    /// As `fwrite_unlocked`, but for the stream, which is checked.
    pub unsafe extern "C" fn fwrite_unlocked(
        data: *const c_void,
        size: usize,
        count: usize,
        stream: *mut FILE,
    ) -> usize {
        // SAFETY: as in `fwrite`.
        let written = pass_on(WRITE, stream, 0, || unsafe {
            (STDIO.fwrite_unlocked)(data, size, count, stream)
        });
        crate::rpc::calls::moved_to_host(|| (written * size) as u64);
        written
    }

    /// `fread`.
    ///
    /// # Safety
    /// As `fread`, but for the stream, which is checked.
    pub unsafe extern "C" fn fread(data: *mut c_void, size: usize, count: usize, stream: *mut FILE) -> usize {
        // SAFETY: as in `fwrite`.
        let read = pass_on("fread", stream, 0, || unsafe {
            (STDIO.fread)(data, size, count, stream)
        });
        crate::rpc::calls::moved_to_device(|| (read * size) as u64);
        read
    }

    /// `fgets`.
    ///
    /// # Safety
    /// As `fgets`, but for the stream, which is checked.
    pub unsafe extern "C" fn fgets(buffer: *mut c_char, size: c_int, stream: *mut FILE) -> *mut c_char {
        // SAFETY: as in `fwrite`.
        let line = pass_on("fgets", stream, std::ptr::null_mut(), || unsafe {
            (STDIO.fgets)(buffer, size, stream)
        });
        if !line.is_null() {
            // SAFETY: fgets returned the buffer, which now holds a NUL-terminated line; the length is
            // taken (if at all) before this call returns.
            crate::rpc::calls::moved_to_device(|| unsafe { libc::strlen(line) } as u64);
        }
        line
    }

    /// `fseek`.
    pub extern "C" fn fseek(stream: *mut FILE, offset: c_long, whence: c_int) -> c_int {
        // SAFETY: a usable stream is live.
        pass_on("fseek", stream, -1, || unsafe { (STDIO.fseek)(stream, offset, whence) })
    }

    /// `ftell`.
    pub extern "C" fn ftell(stream: *mut FILE) -> c_long {
        // SAFETY: a usable stream is live.
        pass_on("ftell", stream, -1, || unsafe { (STDIO.ftell)(stream) })
    }

    /// Runs `call`, the plugin's own use of `stream` for a device (its printf, see `rpc::printf`), when
    /// the device may use `stream`; otherwise says that `name` was refused and returns `failed`.
    pub fn with_stream<T>(name: &str, stream: *mut FILE, failed: T, call: impl FnOnce() -> T) -> T {
        pass_on(name, stream, failed, call)
    }

    /// `fflush`; `NULL` flushes every stream, as in C.
    pub extern "C" fn fflush(stream: *mut FILE) -> c_int {
        if stream.is_null() {
            // SAFETY: fflush(NULL) flushes every stream.
            return unsafe { (STDIO.fflush)(stream) };
        }
        // SAFETY: a usable stream is live.
        pass_on("fflush", stream, libc::EOF, || unsafe { (STDIO.fflush)(stream) })
    }

    /// `feof`: 0 for a stream the device does not have open.
    pub extern "C" fn feof(stream: *mut FILE) -> c_int {
        // SAFETY: a usable stream is live.
        pass_on("feof", stream, 0, || unsafe { (STDIO.feof)(stream) })
    }

    /// `ferror`: 1 (an error) for a stream the device does not have open.
    pub extern "C" fn ferror(stream: *mut FILE) -> c_int {
        // SAFETY: a usable stream is live.
        pass_on("ferror", stream, 1, || unsafe { (STDIO.ferror)(stream) })
    }

    /// `clearerr`.
    pub extern "C" fn clearerr(stream: *mut FILE) {
        // SAFETY: a usable stream is live.
        pass_on("clearerr", stream, (), || unsafe { (STDIO.clearerr)(stream) })
    }

    /// `ungetc`.
    pub extern "C" fn ungetc(c: c_int, stream: *mut FILE) -> c_int {
        // SAFETY: a usable stream is live.
        pass_on("ungetc", stream, libc::EOF, || unsafe { (STDIO.ungetc)(c, stream) })
    }

    /// `flockfile`; a stream the device does not have open is left alone (the write under the lock
    /// that follows is refused and says so).
    pub extern "C" fn flockfile(stream: *mut FILE) {
        if usable(stream) {
            // SAFETY: a usable stream is live.
            unsafe { (STDIO.flockfile)(stream) }
        }
    }

    /// `funlockfile`, matching [`flockfile`].
    pub extern "C" fn funlockfile(stream: *mut FILE) {
        if usable(stream) {
            // SAFETY: a usable stream is live.
            unsafe { (STDIO.funlockfile)(stream) }
        }
    }
}

// The link of the shared object wraps each stdio function that libc's RPC server calls (see
// build.rs): its calls land on these hidden symbols, which jump to the checked versions. Hidden, so
// that they are not exported.
macro_rules! wrap {
    ($($name:ident),*) => {
        $(
            core::arch::global_asm!(
                concat!(".globl __wrap_", stringify!($name)),
                concat!(".hidden __wrap_", stringify!($name)),
                concat!(".type __wrap_", stringify!($name), ", @function"),
                concat!("__wrap_", stringify!($name), ":"),
                "jmp {target}",
                target = sym checked::$name,
            );
        )*
    };
}
wrap!(
    fopen,
    fclose,
    fwrite,
    fwrite_unlocked,
    fread,
    fgets,
    fseek,
    ftell,
    fflush,
    feof,
    ferror,
    clearerr,
    ungetc,
    flockfile,
    funlockfile
);

/// The functions the link wraps (the list build.rs reads).
pub const WRAPPED: [&str; 15] = include!("wrapped_stdio.in");

/// For tests of the plugin's own stream users: a stream counts as the device's while adopted.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// Makes `stream` one the device has open.
    pub fn adopt(stream: *mut FILE) {
        lock(&STREAMS).open.insert(stream as usize);
    }

    /// Undoes [`adopt`].
    pub fn forget(stream: *mut FILE) {
        lock(&STREAMS).open.remove(&(stream as usize));
    }
}

#[cfg(test)]
mod tests {
    use super::checked;
    use super::*;

    extern "C" {
        /// C++'s `operator new[](size_t)`, as libc's server allocates a received path.
        #[link_name = "_Znam"]
        fn operator_new_array(size: usize) -> *mut c_void;
    }

    /// `text` in memory from `new char[]`, as `checked::fopen` is handed its path.
    fn received(text: &CStr) -> *const c_char {
        let bytes = text.to_bytes_with_nul();
        // SAFETY: a fresh block of `bytes.len()` bytes, filled from `bytes`.
        unsafe {
            let block = operator_new_array(bytes.len()).cast::<u8>();
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), block, bytes.len());
            block.cast()
        }
    }

    #[test]
    fn streams_stay_alive_and_stale_or_made_up_ones_are_refused() {
        let dir = std::env::temp_dir().join(format!("omprpc-streams-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = std::ffi::CString::new(format!("{}/file", dir.display())).unwrap();
        // SAFETY: NUL-terminated strings.
        let stream = unsafe { checked::fopen(received(&path), c"w".as_ptr()) };
        assert!(!stream.is_null());
        let text = b"written by the device\n";
        // SAFETY: `text` is valid for its length.
        let written = unsafe { checked::fwrite(text.as_ptr().cast(), 1, text.len(), stream) };
        assert_eq!(written, text.len());
        assert_eq!(checked::ftell(stream), text.len() as c_long);
        assert_eq!(checked::fclose(stream), 0, "the first fclose");
        assert_eq!(std::fs::read(dir.join("file")).unwrap(), text, "flushed at fclose");
        assert_eq!(checked::fclose(stream), libc::EOF, "a second fclose is refused");
        assert_eq!(
            // SAFETY: as above.
            unsafe { checked::fwrite(text.as_ptr().cast(), 1, 4, stream) },
            0,
            "a write after fclose"
        );
        let made_up = 0x1234_5670 as *mut FILE;
        assert_eq!(checked::fseek(made_up, 0, 0), -1);
        assert_eq!(checked::ftell(made_up), -1);
        assert_eq!(checked::ferror(made_up), 1);
        assert_eq!(checked::feof(made_up), 0);
        assert_eq!(checked::ungetc(b'x' as c_int, made_up), libc::EOF);
        assert_eq!(checked::fflush(made_up), libc::EOF);
        checked::flockfile(made_up);
        checked::funlockfile(made_up);
        checked::clearerr(made_up);
        let mut buffer = [0u8; 8];
        // SAFETY: `buffer` is writable for its length.
        unsafe {
            assert_eq!(checked::fread(buffer.as_mut_ptr().cast(), 1, 8, made_up), 0);
            assert!(checked::fgets(buffer.as_mut_ptr().cast(), 8, made_up).is_null());
        }
        assert_eq!(
            checked::fflush(std::ptr::null_mut()),
            0,
            "fflush(NULL) flushes every stream"
        );
        // SAFETY: reading the C library's stdout pointer.
        assert_eq!(checked::fflush(unsafe { stdout }), 0, "the host's stdout is usable");
        // The closed stream is reused, not freed, by the next fopen, and reads what was written.
        // SAFETY: NUL-terminated strings.
        let again = unsafe { checked::fopen(received(&path), c"r".as_ptr()) };
        assert_eq!(again, stream, "a retired stream is reused");
        // SAFETY: `buffer` is writable for its length.
        let read = unsafe { checked::fread(buffer.as_mut_ptr().cast(), 1, 7, again) };
        assert_eq!(&buffer[..read], b"written");
        assert_eq!(checked::fclose(again), 0);
        // SAFETY: NUL-terminated strings.
        let missing = unsafe { checked::fopen(received(c"/nonexistent-dir/x"), c"r".as_ptr()) };
        assert!(missing.is_null(), "a failed fopen is NULL");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every stdio function of libc's server that takes a stream must be one the link wraps, or a
    /// stream from the device would reach the C library unchecked.
    #[test]
    fn every_stream_call_of_libcs_server_is_wrapped() {
        let library = ["/usr/lib/llvm-19/lib"]
            .iter()
            .map(|d| std::path::Path::new(d).join("libllvmlibc_rpc_server.a"))
            .find(|p| p.exists())
            .expect("libllvmlibc_rpc_server.a (package libllvmlibc-19-dev; sudo sh scripts/setup-debian.sh)");
        let out = std::process::Command::new("nm")
            .arg("-u")
            .arg(&library)
            .output()
            .expect("nm (package binutils)");
        let undefined = String::from_utf8_lossy(&out.stdout);
        let stdio: Vec<&str> = undefined
            .lines()
            .filter_map(|l| l.split_whitespace().last())
            .filter(|name| {
                name.starts_with('f') && !name.starts_with("free")
                    || ["clearerr", "ungetc", "flockfile", "funlockfile"].contains(name)
            })
            .collect();
        assert!(stdio.contains(&"fwrite"), "nm listed {undefined}");
        for name in stdio {
            assert!(
                WRAPPED.contains(&name),
                "libc's server calls {name}, which the link does not wrap"
            );
        }
        for name in WRAPPED {
            assert!(
                undefined.contains(name),
                "{name} is wrapped but libc's server does not call it"
            );
        }
    }
}
