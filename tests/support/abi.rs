//! Calling the plugin's exported entry points directly, as libomptarget does: the C structures they
//! take, the loaded plugin's functions, and stderr captured around a call.

use std::ffi::{c_char, c_void, CStr};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::ptr::null_mut;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Entry {
    pub addr: *mut c_void,
    pub name: *const c_char,
    pub size: usize,
    pub flags: i32,
    pub reserved: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Image {
    pub start: *const u8,
    pub end: *const u8,
    pub entries_begin: *const Entry,
    pub entries_end: *const Entry,
}

#[repr(C)]
pub struct Table {
    pub begin: *mut Entry,
    pub end: *mut Entry,
}

#[repr(C)]
pub struct AsyncInfo {
    pub queue: *mut c_void,
}

#[repr(C)]
#[derive(Default)]
pub struct KernelArgs {
    pub version: u32,
    pub num_args: u32,
    pub arg_base_ptrs: usize,
    pub arg_ptrs: usize,
    pub arg_sizes: usize,
    pub arg_types: usize,
    pub arg_names: usize,
    pub arg_mappers: usize,
    pub tripcount: u64,
    pub flags: u64,
    pub num_teams: [u32; 3],
    pub thread_limit: [u32; 3],
    pub dyn_cgroup_mem: u32,
}

/// Runs `f` with this process's stderr captured, and returns what it wrote there.
pub fn capture_stderr<T>(f: impl FnOnce() -> T) -> (T, String) {
    let mut file = tempfile();
    // SAFETY: plain descriptor juggling on fds this function owns; fd 2 is restored before returning.
    let saved = unsafe { libc::dup(2) };
    // SAFETY: as above.
    unsafe { libc::dup2(file.as_raw_fd(), 2) };
    let value = f();
    // SAFETY: as above.
    unsafe {
        libc::dup2(saved, 2);
        libc::close(saved);
    }
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(0)).unwrap();
    let mut text = String::new();
    file.read_to_string(&mut text).unwrap();
    (value, text)
}

pub fn tempfile() -> std::fs::File {
    let path = super::scratch().join(format!("stderr-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    file
}

/// Asserts that `f` wrote exactly one `omprpc error:` line to stderr, containing `needle`.
pub fn expect_error<T>(needle: &str, f: impl FnOnce() -> T) -> T {
    let (value, text) = capture_stderr(f);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "expected one error line containing {needle:?}, got {text:?}"
    );
    assert!(lines[0].starts_with("omprpc error: "), "{text:?}");
    assert!(lines[0].contains(needle), "expected {needle:?} in {text:?}");
    value
}

/// Asserts that `f` printed nothing.
pub fn expect_silence<T>(f: impl FnOnce() -> T) -> T {
    let (value, text) = capture_stderr(f);
    assert!(text.is_empty(), "expected no output, got {text:?}");
    value
}

pub type Fn0 = unsafe extern "C" fn() -> i32;

pub struct Api {
    _lib: libloading::Library,
    pub init_plugin: Fn0,
    pub number_of_devices: Fn0,
    pub is_valid_binary: unsafe extern "C" fn(*const Image) -> i32,
    pub init_device: unsafe extern "C" fn(i32) -> i32,
    pub load_binary: unsafe extern "C" fn(i32, *const Image) -> *mut Table,
    pub data_alloc: unsafe extern "C" fn(i32, i64, *mut c_void, i32) -> *mut c_void,
    pub data_delete: unsafe extern "C" fn(i32, *mut c_void, i32) -> i32,
    pub data_submit: unsafe extern "C" fn(i32, *mut c_void, *const c_void, i64) -> i32,
    pub data_retrieve: unsafe extern "C" fn(i32, *mut c_void, *const c_void, i64) -> i32,
    pub launch_kernel:
        unsafe extern "C" fn(i32, *mut c_void, *mut *mut c_void, *mut isize, *const KernelArgs, *mut AsyncInfo) -> i32,
    pub synchronize: unsafe extern "C" fn(i32, *mut AsyncInfo) -> i32,
    pub query_async: unsafe extern "C" fn(i32, *mut AsyncInfo) -> i32,
    pub create_event: unsafe extern "C" fn(i32, *mut *mut c_void) -> i32,
    pub record_event: unsafe extern "C" fn(i32, *mut c_void, *mut AsyncInfo) -> i32,
    pub sync_event: unsafe extern "C" fn(i32, *mut c_void) -> i32,
    pub destroy_event: unsafe extern "C" fn(i32, *mut c_void) -> i32,
    pub data_lock: unsafe extern "C" fn(i32, *mut c_void, i64, *mut *mut c_void) -> i32,
    pub data_unlock: unsafe extern "C" fn(i32, *mut c_void) -> i32,
    pub version: unsafe extern "C" fn() -> *const c_char,
}

pub fn open(path: &Path) -> Api {
    // SAFETY: loading our own plugin, whose initialisers only set up Rust statics.
    let lib = unsafe { libloading::Library::new(path) }.unwrap();
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol is one of ours, with the signature of the field it initialises.
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }.unwrap()
        };
    }
    Api {
        init_plugin: sym!("__tgt_rtl_init_plugin"),
        number_of_devices: sym!("__tgt_rtl_number_of_devices"),
        is_valid_binary: sym!("__tgt_rtl_is_valid_binary"),
        init_device: sym!("__tgt_rtl_init_device"),
        load_binary: sym!("__tgt_rtl_load_binary"),
        data_alloc: sym!("__tgt_rtl_data_alloc"),
        data_delete: sym!("__tgt_rtl_data_delete"),
        data_submit: sym!("__tgt_rtl_data_submit"),
        data_retrieve: sym!("__tgt_rtl_data_retrieve"),
        launch_kernel: sym!("__tgt_rtl_launch_kernel"),
        synchronize: sym!("__tgt_rtl_synchronize"),
        query_async: sym!("__tgt_rtl_query_async"),
        create_event: sym!("__tgt_rtl_create_event"),
        record_event: sym!("__tgt_rtl_record_event"),
        sync_event: sym!("__tgt_rtl_sync_event"),
        destroy_event: sym!("__tgt_rtl_destroy_event"),
        data_lock: sym!("__tgt_rtl_data_lock"),
        data_unlock: sym!("__tgt_rtl_data_unlock"),
        version: sym!("omprpc_version"),
        _lib: lib,
    }
}

pub fn image_of(bytes: &[u8], entries: &[Entry]) -> Image {
    Image {
        start: bytes.as_ptr(),
        // SAFETY: one past the end of `bytes`.
        end: unsafe { bytes.as_ptr().add(bytes.len()) },
        entries_begin: entries.as_ptr(),
        // SAFETY: one past the end of `entries`.
        entries_end: unsafe { entries.as_ptr().add(entries.len()) },
    }
}

pub fn entry(name: &CStr, size: usize) -> Entry {
    Entry {
        addr: null_mut(),
        name: name.as_ptr(),
        size,
        flags: 0,
        reserved: 0,
    }
}

pub fn args_for(n: u32, nowait: bool) -> KernelArgs {
    KernelArgs {
        version: 2,
        num_args: n,
        flags: u64::from(nowait),
        num_teams: [1, 0, 0],
        thread_limit: [1, 0, 0],
        ..Default::default()
    }
}

/// Checks that a plugin with no devices refuses every device call with one error line saying which
/// backend has none (`backend`: "CUDA", "AMDGPU"), and still answers its version.
///
/// # Safety
/// `api` is an opened plugin whose `init_plugin` was called.
pub unsafe fn expect_device_calls_refused(api: &Api, backend: &str) {
    let none = format!("the {backend} backend has no devices");
    // SAFETY (whole function): every call passes arguments of the documented C types.
    unsafe {
        assert!(expect_error(&none, || (api.data_alloc)(0, 64, null_mut(), 0)).is_null());
        let mut x = 0u64;
        let p = (&mut x as *mut u64).cast::<c_void>();
        assert_eq!(expect_error(&none, || (api.data_submit)(0, p, p, 8)), -1);
        assert_eq!(expect_error(&none, || (api.data_retrieve)(0, p, p, 8)), -1);
        assert_eq!(expect_error(&none, || (api.data_delete)(0, p, 0)), -1);
        let mut info = AsyncInfo { queue: null_mut() };
        assert_eq!(expect_error(&none, || (api.synchronize)(0, &mut info)), -1);
        let mut event = null_mut();
        assert_eq!(expect_error(&none, || (api.create_event)(0, &mut event)), -1);
        let mut locked = null_mut();
        assert_eq!(expect_error(&none, || (api.data_lock)(0, p, 8, &mut locked)), -1);
        assert!(!CStr::from_ptr((api.version)()).to_bytes().is_empty());
    }
}
