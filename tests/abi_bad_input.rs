//! Calls the exported entry points directly, as libomptarget would, with good and bad input: null,
//! truncated, garbage and foreign images; device ids -1 and N; sizes 0, negative and huge; unknown
//! handles and double frees. Every bad call must fail cleanly with a one-line message on stderr.
//!
//! Everything runs in one test so that redirecting this process's stderr disturbs nothing else.

mod support;

use support::abi::*;

use std::ffi::{c_char, c_void, CStr, CString};
use std::process::Command;
use std::ptr::{null, null_mut};

fn build_image(variant: &str) -> Vec<u8> {
    support::require_toolchain();
    let out = support::scratch().join(format!("abi_image{variant}.so"));
    let status = Command::new("clang-16")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", variant])
        .arg(support::root().join("c_tests/abi_image.c"))
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read(out).unwrap()
}

#[test]
fn entry_points_fail_cleanly_on_bad_input() {
    let dir = support::host_plugin_dir();
    let api = open(&dir.join("libomptarget.rtl.x86_64.nextgen.so"));
    let image_bytes = build_image("-DFIRST");
    let second_bytes = build_image("-DSECOND");
    // SAFETY (whole test): every call passes arguments of the documented C types; the bad ones are
    // exactly what the plugin must survive.
    unsafe {
        assert_eq!(
            CStr::from_ptr((api.version)()).to_str().unwrap(),
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(expect_silence(|| (api.init_plugin)()), 0);
        assert_eq!((api.number_of_devices)(), 4);

        // Images: only a real x86-64 shared object is accepted, quietly.
        let kernels = [
            entry(c"add_one", 0),
            entry(c"image_counter", 8),
            entry(c"sum20", 0),
            entry(c"do_nothing", 0),
        ];
        let good = image_of(&image_bytes, &kernels);
        assert_eq!(expect_silence(|| (api.is_valid_binary)(&good)), 1);
        assert_eq!(expect_silence(|| (api.is_valid_binary)(null())), 0);
        let truncated = image_of(&image_bytes[..40], &kernels);
        assert_eq!(expect_silence(|| (api.is_valid_binary)(&truncated)), 0);
        let garbage: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert_eq!(
            expect_silence(|| (api.is_valid_binary)(&image_of(&garbage, &kernels))),
            0
        );
        let mut cuda = image_bytes.clone();
        cuda[18..20].copy_from_slice(&190u16.to_le_bytes());
        assert_eq!(expect_silence(|| (api.is_valid_binary)(&image_of(&cuda, &kernels))), 0);
        let dangling = Image {
            start: 0x1000 as *const u8,
            end: 0x9000 as *const u8,
            entries_begin: null(),
            entries_end: null(),
        };
        assert_eq!(expect_silence(|| (api.is_valid_binary)(&dangling)), 0);
        assert_eq!(expect_silence(|| (api.is_valid_binary)(0x10 as *const Image)), 0);

        // Devices: -1 and N are out of range; use before init is refused.
        expect_error("device id -1 is out of range", || assert_eq!((api.init_device)(-1), -1));
        expect_error("device id 4 is out of range: this plugin has 4 device(s)", || {
            assert_eq!((api.init_device)(4), -1)
        });
        expect_error("used before it was initialised", || {
            assert!((api.load_binary)(1, &good).is_null())
        });
        assert_eq!(expect_silence(|| (api.init_device)(0)), 0);
        assert_eq!((api.init_device)(0), 0, "init is idempotent");

        // Loading: null, garbage, dangling, and a table naming a symbol the image lacks.
        expect_error("the device image is NULL", || {
            assert!((api.load_binary)(0, null()).is_null())
        });
        expect_error("not an ELF file", || {
            assert!((api.load_binary)(0, &image_of(&garbage, &kernels)).is_null())
        });
        expect_error("not readable memory", || {
            assert!((api.load_binary)(0, &dangling).is_null())
        });
        let missing = [entry(c"add_one", 0), entry(c"no_such_kernel", 0)];
        // A load that fails after the image was opened must leave nothing behind: the next image (a
        // different one) gets the same descriptor number, and must not be handed the failed one.
        expect_error("no symbol 'no_such_kernel'", || {
            assert!((api.load_binary)(0, &image_of(&image_bytes, &missing)).is_null())
        });
        let second = [entry(c"second_kernel", 0)];
        let second_table = expect_silence(|| (api.load_binary)(0, &image_of(&second_bytes, &second)));
        assert!(!second_table.is_null(), "the second image loads after the failed one");
        let mut two = 0i64;
        let mut two_arg: *mut c_void = (&mut two as *mut i64).cast();
        let mut zero_offset = 0isize;
        let second_kernel = (*(*second_table).begin).addr;
        assert_eq!(
            (api.launch_kernel)(
                0,
                second_kernel,
                &mut two_arg,
                &mut zero_offset,
                &args_for(1, false),
                null_mut()
            ),
            0
        );
        assert_eq!(two, 2, "the second image's own code ran");
        let bad_name = [Entry {
            name: 0x10 as *const c_char,
            ..entry(c"x", 0)
        }];
        expect_error("the name of entry 0", || {
            assert!((api.load_binary)(0, &image_of(&image_bytes, &bad_name)).is_null())
        });

        let table = expect_silence(|| (api.load_binary)(0, &good));
        assert!(!table.is_null());
        let table = &*table;
        assert_eq!(
            table.end.offset_from(table.begin),
            4,
            "same count as the image's entries"
        );
        let loaded = std::slice::from_raw_parts(table.begin, 4);
        for (got, want) in loaded.iter().zip(&kernels) {
            assert_eq!(CStr::from_ptr(got.name), CStr::from_ptr(want.name), "same order");
        }
        assert_eq!(
            *(loaded[1].addr as *const i64),
            5,
            "the global's device address holds its value"
        );
        assert_eq!(
            (api.load_binary)(0, &good) as *const Table,
            table as *const Table,
            "a second load returns the same table"
        );

        // Memory: sizes 0, negative and huge, unknown kinds, double and foreign frees.
        expect_error("cannot allocate 0 bytes", || {
            assert!((api.data_alloc)(0, 0, null_mut(), 0).is_null())
        });
        expect_error("size -8 is negative", || {
            assert!((api.data_alloc)(0, -8, null_mut(), 0).is_null())
        });
        expect_error("out of memory", || {
            assert!((api.data_alloc)(0, 1 << 62, null_mut(), 0).is_null())
        });
        expect_error("allocation kind 9", || {
            assert!((api.data_alloc)(0, 8, null_mut(), 9).is_null())
        });
        expect_error("device id 7 is out of range", || {
            assert!((api.data_alloc)(7, 8, null_mut(), 0).is_null())
        });
        let buffer = expect_silence(|| (api.data_alloc)(0, 8, null_mut(), 3));
        assert!(!buffer.is_null());
        let value: i64 = 41;
        assert_eq!((api.data_submit)(0, buffer, (&value as *const i64).cast(), 8), 0);
        expect_error("the source is NULL", || {
            assert_eq!((api.data_submit)(0, buffer, null(), 8), -1)
        });
        expect_error("size -1 is negative", || {
            assert_eq!((api.data_submit)(0, buffer, (&value as *const i64).cast(), -1), -1)
        });
        assert_eq!((api.data_submit)(0, buffer, null(), 0), 0, "an empty copy is a no-op");

        // Kernels: a real one with one argument, one with twenty, and bad handles.
        let mut arg0 = buffer;
        let mut offset0 = 0isize;
        let kernel = loaded[0].addr;
        assert_eq!(
            expect_silence(|| (api.launch_kernel)(0, kernel, &mut arg0, &mut offset0, &args_for(1, false), null_mut())),
            0
        );
        let mut back = 0i64;
        assert_eq!((api.data_retrieve)(0, (&mut back as *mut i64).cast(), buffer, 8), 0);
        assert_eq!(back, 42, "add_one ran on the device copy");

        let mut out = 0i64;
        let mut args20: Vec<*mut c_void> = vec![(&mut out as *mut i64).cast()];
        args20.extend((1..=19).map(|i| i as *mut c_void));
        let mut offsets20 = vec![0isize; 20];
        assert_eq!(
            (api.launch_kernel)(
                0,
                loaded[2].addr,
                args20.as_mut_ptr(),
                offsets20.as_mut_ptr(),
                &args_for(20, false),
                null_mut()
            ),
            0
        );
        assert_eq!(
            out,
            (1..=19).map(|i| i * i).sum::<i64>(),
            "stack arguments arrive in order"
        );

        expect_error("kernel entry 0x1234 was not created by this device", || {
            assert_eq!(
                (api.launch_kernel)(
                    0,
                    0x1234 as *mut c_void,
                    &mut arg0,
                    &mut offset0,
                    &args_for(1, false),
                    null_mut()
                ),
                -1
            )
        });
        expect_error("the kernel arguments is NULL", || {
            assert_eq!(
                (api.launch_kernel)(0, kernel, &mut arg0, &mut offset0, null(), null_mut()),
                -1
            )
        });
        let mut v9 = args_for(1, false);
        v9.version = 9;
        expect_error("version 9", || {
            assert_eq!(
                (api.launch_kernel)(0, kernel, &mut arg0, &mut offset0, &v9, null_mut()),
                -1
            )
        });
        expect_error("the kernel argument array is NULL", || {
            assert_eq!(
                (api.launch_kernel)(0, kernel, null_mut(), null_mut(), &args_for(1, false), null_mut()),
                -1
            )
        });

        // nowait: the launch leaves a queue behind; synchronize resets it to NULL.
        let mut info = AsyncInfo { queue: null_mut() };
        assert_eq!(
            (api.launch_kernel)(0, kernel, &mut arg0, &mut offset0, &args_for(1, true), &mut info),
            0
        );
        assert!(!info.queue.is_null(), "a nowait launch is queued");
        assert_eq!((api.data_retrieve)(0, (&mut back as *mut i64).cast(), buffer, 8), 0);
        assert_eq!((api.synchronize)(0, &mut info), 0);
        assert!(info.queue.is_null(), "synchronize resets the queue");
        assert_eq!((api.data_retrieve)(0, (&mut back as *mut i64).cast(), buffer, 8), 0);
        assert_eq!(back, 43);
        assert_eq!(
            (api.launch_kernel)(0, kernel, &mut arg0, &mut offset0, &args_for(1, true), &mut info),
            0
        );
        while !info.queue.is_null() {
            assert_eq!((api.query_async)(0, &mut info), 0);
        }
        let mut stale = AsyncInfo {
            queue: 0x5000 as *mut c_void,
        };
        expect_error("queue 0x5000 was not created", || {
            assert_eq!((api.synchronize)(0, &mut stale), -1)
        });

        // Events.
        let mut event = null_mut();
        assert_eq!((api.create_event)(0, &mut event), 0);
        let mut idle = AsyncInfo { queue: null_mut() };
        assert_eq!((api.record_event)(0, event, &mut idle), 0);
        assert_eq!((api.sync_event)(0, event), 0);
        assert_eq!((api.destroy_event)(0, event), 0);
        expect_error("already released", || assert_eq!((api.destroy_event)(0, event), -1));
        expect_error("already released", || assert_eq!((api.sync_event)(0, event), -1));
        expect_error("the event out-pointer is NULL", || {
            assert_eq!((api.create_event)(0, null_mut()), -1)
        });

        // Frees: the allocation once, then never again; foreign pointers are refused.
        assert_eq!(expect_silence(|| (api.data_delete)(0, buffer, 3)), 0);
        expect_error("allocation", || assert_eq!((api.data_delete)(0, buffer, 3), -1));
        let mut on_stack = 0u8;
        expect_error("was not created by this device", || {
            assert_eq!((api.data_delete)(0, (&mut on_stack as *mut u8).cast(), 0), -1)
        });
        expect_error("the pointer to free is NULL", || {
            assert_eq!((api.data_delete)(0, null_mut(), 0), -1)
        });

        // Lock uses the global device number (without libomptarget in the process, the local one) and
        // hands back the same address on the host; the range counts its users.
        let mut locked = null_mut();
        let host: *mut c_void = (&mut on_stack as *mut u8).cast();
        expect_error("device 3 is used before it was initialised", || {
            assert_eq!((api.data_lock)(3, host, 1, &mut locked), -1)
        });
        assert_eq!((api.init_device)(3), 0);
        assert_eq!((api.data_lock)(3, host, 1, &mut locked), 0);
        assert_eq!(locked, host);
        assert_eq!((api.data_lock)(3, host, 1, &mut locked), 0);
        assert_eq!((api.data_unlock)(3, host), 0);
        assert_eq!((api.data_unlock)(3, host), 0);
        expect_error("is not locked", || assert_eq!((api.data_unlock)(3, host), -1));
        expect_error("device number -2 is negative", || {
            assert_eq!((api.data_lock)(-2, host, 1, &mut locked), -1)
        });

        // A kernel with no arguments and a plain name check at the end.
        let name = CString::new("do_nothing").unwrap();
        assert_eq!(CStr::from_ptr(loaded[3].name), name.as_c_str());
        assert_eq!(
            (api.launch_kernel)(
                0,
                loaded[3].addr,
                null_mut(),
                null_mut(),
                &args_for(0, false),
                null_mut()
            ),
            0
        );
    }
}
