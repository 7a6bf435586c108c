//! libomptarget 16 numbers devices globally (the OpenMP device number) and passes plugin-local numbers
//! to every entry point but four: `data_lock`, `data_unlock`, `init_device_info` and
//! `init_async_info` get the global number. This maps a global number to the plugin's own by asking
//! libomptarget itself: its exported `__tgt_print_device_info(global)` calls the owning plugin's
//! `print_device_info` with the local number, which, while a probe is under way on this thread,
//! records the number instead of printing. Answers are cached. Where libomptarget is not loaded (a
//! program that calls the plugin directly), a number below the device count is taken as local.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{LazyLock, Mutex, OnceLock};

use crate::util::error::{Error, Result};
use crate::util::log;
use crate::util::sync::lock;

/// A probe is under way on this thread when set to `Some(-1)`; the plugin's answer replaces it.
const PROBING: i32 = -1;

thread_local! {
    static PROBE: Cell<Option<i32>> = const { Cell::new(None) };
}

/// Called by `__tgt_rtl_print_device_info`: when this thread is probing, records `local` and returns
/// `true` (the call must then print nothing).
pub fn answer_probe(local: i32) -> bool {
    PROBE.with(|probe| {
        if probe.get() == Some(PROBING) {
            probe.set(Some(local));
            true
        } else {
            false
        }
    })
}

struct Libomptarget {
    print_device_info: unsafe extern "C" fn(i64) -> c_int,
    num_devices: unsafe extern "C" fn() -> c_int,
}

fn libomptarget() -> Option<&'static Libomptarget> {
    static FOUND: OnceLock<Option<Libomptarget>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let names: [&CStr; 2] = [c"libomptarget.so.16", c"libomptarget.so"];
            let handle = names.iter().find_map(|name| {
                // SAFETY: RTLD_NOLOAD only looks up an already loaded object; nothing is loaded or run.
                let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
                (!handle.is_null()).then_some(handle)
            })?;
            let symbol = |name: &CStr| -> Option<*mut c_void> {
                // SAFETY: `handle` is a live handle and `name` a valid C string.
                let ptr = unsafe { libc::dlsym(handle, name.as_ptr().cast::<c_char>()) };
                (!ptr.is_null()).then_some(ptr)
            };
            let print = symbol(c"__tgt_print_device_info")?;
            let count = symbol(c"omp_get_num_devices")?;
            // SAFETY: libomptarget 16 defines these with exactly these signatures
            // (`int __tgt_print_device_info(int64_t)`, `int omp_get_num_devices(void)`).
            Some(unsafe {
                Libomptarget {
                    print_device_info: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(i64) -> c_int>(print),
                    num_devices: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> c_int>(count),
                }
            })
        })
        .as_ref()
}

static CACHE: LazyLock<Mutex<HashMap<i32, i32>>> = LazyLock::new(Default::default);

/// The plugin-local number of OpenMP device `global`; this plugin has `count` devices.
pub fn local_device(global: i32, count: usize) -> Result<i32> {
    if global < 0 {
        return Err(Error::InvalidArg(format!("device number {global} is negative")));
    }
    if let Some(&local) = lock(&CACHE).get(&global) {
        return Ok(local);
    }
    let Some(lib) = libomptarget() else {
        return if (global as usize) < count {
            Ok(global)
        } else {
            Err(Error::InvalidDevice { id: global, count })
        };
    };
    // SAFETY: `omp_get_num_devices` takes libomptarget's device lock briefly; none of the four entry
    // points that get global numbers is called with that lock held.
    let total = unsafe { (lib.num_devices)() };
    if global >= total {
        return Err(Error::InvalidArg(format!(
            "OpenMP device {global} does not exist (libomptarget has {total})"
        )));
    }
    PROBE.with(|p| p.set(Some(PROBING)));
    // SAFETY: `global` is below libomptarget's device count, so it indexes its device table; the call
    // reaches the owning plugin's `print_device_info`, which records the local number for this probe.
    unsafe { (lib.print_device_info)(i64::from(global)) };
    let answer = PROBE.with(|p| p.take());
    match answer {
        Some(local) if local >= 0 && (local as usize) < count => {
            lock(&CACHE).insert(global, local);
            log::info(format_args!("OpenMP device {global} is this plugin's device {local}"));
            Ok(local)
        }
        _ => Err(Error::InvalidArg(format!(
            "OpenMP device {global} belongs to another plugin"
        ))),
    }
}
