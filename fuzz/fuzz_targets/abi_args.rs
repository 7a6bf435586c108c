//! The ABI layer's decoding of what libomptarget points the plugin at: the `__tgt_device_image`
//! descriptor, its image range and header bytes, the entry table and its names, `__tgt_image_info`,
//! `__tgt_bin_desc`, and the `KernelArgsTy` / argument arrays of `__tgt_rtl_launch_kernel`.
//!
//! The input is copied to the end of a mapped arena that is followed by an inaccessible guard page, so
//! that a read past it is a fault the plugin must report as an error. The C structures are built from
//! the input itself: at fixed offsets it holds pointer codes (see [`reloc`]) that become addresses
//! into the input, the guard page, or never-mapped addresses.
//!
//! Input layout (little-endian u64s):
//! - `0..32`   `__tgt_device_image` {ImageStart, ImageEnd, EntriesBegin, EntriesEnd}, pointer codes;
//!             every whole `__tgt_offload_entry` of the table that lies in the input has its `name`
//!             (offset 8) relocated too.
//! - `32..40`  code of the `__tgt_image_info` passed to `is_valid_binary_info` (its `arch` relocated).
//! - `40..48`  code of a `__tgt_bin_desc` (its `DeviceImages`, offset 8, relocated).
//! - `48..56`  code of the `KernelArgsTy`; `56..64` of the argument array; `64..72` of the offsets.
//! - `72..80`  the kernel entry address, raw; byte `80`: the device id.
#![no_main]

mod leak_check;

#[global_allocator]
static ALLOCATOR: leak_check::Counting = leak_check::Counting;

use std::ffi::c_void;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use omprpc::abi::exports::{
    __tgt_rtl_init_device, __tgt_rtl_is_valid_binary, __tgt_rtl_is_valid_binary_info, __tgt_rtl_launch_kernel,
};
use omprpc::abi::image_descriptors::{image_range, library_image_ranges, read_entries, read_image_descriptor};
use omprpc::util::foreign_memory::{read_bytes, read_c_string};
use omprpc::abi::types::{BinDesc, DeviceImage, ImageInfo, KernelArgs, OffloadEntry, OFFLOAD_FAIL};
use omprpc::backend::host::elf_check::check_x86_64_shared_object;
use omprpc::backend::IMAGE_HEADER_BYTES;

const PAGE: usize = 4096;
/// Bytes of the input used (scripts/fuzz.sh passes `-max_len` equal to this).
const ARENA: usize = 4 * PAGE;
const MAX_NAME_BYTES: usize = 4096;
const MAX_ARCH_BYTES: usize = 256;
const MAX_ENTRIES: usize = 1 << 20;
const MAX_IMAGE_BYTES: usize = 1 << 32;
const MAX_IMAGES: usize = 1 << 12;
const MAX_ARGS_READ: usize = 1 << 16;

/// The arena: `ARENA` readable bytes, then one page that is not.
struct Arena {
    start: usize,
    /// Where the data sits in this run (8-aligned, up to 7 zero bytes before the guard page).
    base: usize,
}

impl Arena {
    fn guard(&self) -> usize {
        self.start + ARENA
    }

    /// Whether `[addr, addr + len)` is readable (the empty range always is, wherever it is).
    fn readable(&self, addr: usize, len: usize) -> bool {
        len == 0 || (addr >= self.start && addr.checked_add(len).is_some_and(|end| end <= self.guard()))
    }

    fn bytes(&self, addr: usize, len: usize) -> &[u8] {
        assert!(self.readable(addr, len));
        if len == 0 {
            return &[];
        }
        // SAFETY: checked to lie in the arena's readable part, which nothing writes during a run
        // once the input is placed.
        unsafe { std::slice::from_raw_parts(addr as *const u8, len) }
    }

    fn u64_at(&self, addr: usize) -> u64 {
        u64::from_le_bytes(self.bytes(addr, 8).try_into().unwrap())
    }

    /// Turns a pointer code into an address: 0 is NULL; `0xff..` a low address below any mapping;
    /// `0xfe..` one near the top of the address space; anything else an offset into the input or the
    /// guard page after it.
    fn reloc(&self, code: u64) -> usize {
        match code >> 56 {
            _ if code == 0 => 0,
            0xff => (code & 0xfff) as usize,
            0xfe => usize::MAX - (code & 0xffff) as usize,
            _ => self.base + ((code - 1) % (self.guard() + PAGE - self.base) as u64) as usize,
        }
    }

    /// Replaces the pointer code stored at `field` with its address, when the field is in the arena
    /// and was not patched before (`done`). Fields are 8-aligned, so two never overlap in part.
    fn patch(&self, field: usize, done: &mut [bool; ARENA / 8]) {
        debug_assert_eq!(field % 8, 0);
        if self.readable(field, 8) && !std::mem::replace(&mut done[(field - self.start) / 8], true) {
            let addr = self.reloc(self.u64_at(field));
            // SAFETY: the field lies in the arena's readable (and writable) part.
            unsafe { std::ptr::write_unaligned(field as *mut usize, addr) };
        }
    }

    /// The C string the plugin must read at `addr`: at most `max` bytes before its NUL, all readable.
    fn c_string(&self, addr: usize, max: usize) -> Option<Vec<u8>> {
        if addr == 0 {
            return None;
        }
        let mut text = Vec::new();
        for i in 0..=max {
            let at = addr.checked_add(i)?;
            if !self.readable(at, 1) {
                return None;
            }
            match self.bytes(at, 1)[0] {
                0 => return Some(text),
                b => text.push(b),
            }
        }
        None
    }
}

fn arena_start() -> usize {
    static START: OnceLock<usize> = OnceLock::new();
    *START.get_or_init(|| {
        // SAFETY: a fresh anonymous private mapping, never unmapped; the last page is made inaccessible.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                ARENA + PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            assert_eq!(
                libc::mprotect(p.cast::<u8>().add(ARENA).cast(), PAGE, libc::PROT_NONE),
                0
            );
            p as usize
        }
    })
}

/// The plugin, as libomptarget would have it: the host backend with its device 0 initialised.
fn init_plugin() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        std::env::set_var("OMPRPC_BACKEND", "host");
        std::env::remove_var("LIBOMPTARGET_INFO");
        assert!(omprpc::plugin().device_count() > 0, "the host backend has devices");
        assert_eq!(__tgt_rtl_init_device(0), 0);
        // Where process_vm_readv is forbidden (some seccomp profiles), util/foreign_memory.rs falls back to a
        // plain copy, which no longer survives bad pointers: this target cannot run there.
        let (mut dst, src) = (0u8, 1u8);
        let local = libc::iovec {
            iov_base: (&mut dst as *mut u8).cast(),
            iov_len: 1,
        };
        let remote = libc::iovec {
            iov_base: (&src as *const u8).cast_mut().cast(),
            iov_len: 1,
        };
        // SAFETY: both iovecs describe one valid byte of this process.
        let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        assert_eq!(
            n,
            1,
            "process_vm_readv is not permitted here ({})",
            std::io::Error::last_os_error()
        );
        assert!(read_bytes("the guard page", arena_start() + ARENA, 1).is_err());
    });
}

/// `__tgt_rtl_launch_kernel` reports every failure on stderr; keep 10 million of them out of the log.
/// A panic restores stderr first, so that its message is shown.
fn quietly<R>(f: impl FnOnce() -> R) -> R {
    static FDS: OnceLock<(i32, i32)> = OnceLock::new();
    let &(saved, null) = FDS.get_or_init(|| {
        // SAFETY: plain descriptor calls.
        let (saved, null) = unsafe { (libc::dup(2), libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY)) };
        assert!(saved >= 0 && null >= 0);
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // SAFETY: restores the saved stderr.
            unsafe { libc::dup2(saved, 2) };
            previous(info)
        }));
        (saved, null)
    });
    // SAFETY: swaps descriptor 2 between /dev/null and the saved stderr.
    unsafe { libc::dup2(null, 2) };
    let r = f();
    // SAFETY: as above.
    unsafe { libc::dup2(saved, 2) };
    r
}

/// Checks the image descriptor's decoding and `is_valid_binary(_info)`.
fn check_image(a: &Arena, info: usize) {
    let desc_ptr = a.base as *mut DeviceImage;
    let desc = read_image_descriptor(desc_ptr);
    assert_eq!(desc.is_ok(), a.readable(a.base, 32), "descriptor read");
    assert!(read_image_descriptor(std::ptr::null_mut()).is_err());
    let valid = desc.ok().and_then(|desc| {
        assert_eq!(desc.image_start as u64, a.u64_at(a.base));
        assert_eq!(desc.image_end as u64, a.u64_at(a.base + 8));
        let (start, end) = (desc.image_start as usize, desc.image_end as usize);
        let range = image_range(&desc);
        let plausible = start != 0 && end > start && end - start <= MAX_IMAGE_BYTES;
        assert_eq!(range.is_ok(), plausible, "image range [{start:#x}, {end:#x})");
        let (start, len) = range.ok()?;
        assert_eq!((start, len), (desc.image_start as usize, end - start));
        let n = len.min(IMAGE_HEADER_BYTES);
        let header = read_bytes("the image", start, n);
        assert_eq!(header.is_ok(), a.readable(start, n), "image header read at {start:#x}");
        let header = header.ok()?;
        assert_eq!(header, a.bytes(start, n));
        Some(check_x86_64_shared_object(&header, len).is_ok())
    });
    let valid = valid.unwrap_or(false);
    // SAFETY: the descriptor is in the arena; bad pointers inside it are what is being tested.
    assert_eq!(unsafe { __tgt_rtl_is_valid_binary(desc_ptr) }, i32::from(valid));

    // With image info: its `arch` string is read too, and a bad one makes the image invalid.
    let info_ok = info == 0
        || (a.readable(info, 8) && {
            let arch = a.u64_at(info) as usize;
            let got = read_c_string("arch", arch, MAX_ARCH_BYTES);
            let want = if arch == 0 {
                None
            } else {
                a.c_string(arch, MAX_ARCH_BYTES)
            };
            if arch != 0 {
                assert_eq!(
                    got.as_ref().ok().map(|s| s.as_bytes().to_vec()),
                    want,
                    "arch at {arch:#x}"
                );
            }
            arch == 0 || want.is_some()
        });
    // SAFETY: as above; `info` is NULL, in the arena, or a never-mapped address.
    let got = unsafe { __tgt_rtl_is_valid_binary_info(desc_ptr, info as *mut ImageInfo) };
    assert_eq!(got, i32::from(valid && info_ok), "is_valid_binary_info");
}

/// Checks the entry table's decoding against the rules of `read_entries`.
fn check_entries(a: &Arena) {
    if !a.readable(a.base, 32) {
        return;
    }
    let desc = read_image_descriptor(a.base as *mut DeviceImage).unwrap();
    let (begin, end) = (desc.entries_begin as usize, desc.entries_end as usize);
    let got = read_entries(&desc);
    if begin == 0 && end == 0 {
        assert!(got.is_ok_and(|(raw, host)| raw.is_empty() && host.is_empty()));
        return;
    }
    let size = std::mem::size_of::<OffloadEntry>();
    let shape_ok = begin != 0 && end >= begin && (end - begin) % size == 0 && (end - begin) / size <= MAX_ENTRIES;
    let want: Option<Vec<(Vec<u8>, usize, i32)>> = (shape_ok && a.readable(begin, end - begin))
        .then(|| {
            (begin..end)
                .step_by(size)
                .map(|at| {
                    let name = a.c_string(a.u64_at(at + 8) as usize, MAX_NAME_BYTES)?;
                    let flags = i32::from_le_bytes(a.bytes(at + 24, 4).try_into().unwrap());
                    Some((name, a.u64_at(at + 16) as usize, flags))
                })
                .collect()
        })
        .flatten();
    let got = got.ok().map(|(raw, host)| {
        assert_eq!(raw.len(), host.len());
        for (r, h) in raw.iter().zip(&host) {
            assert_eq!((r.size, r.flags), (h.size, h.flags));
        }
        host.into_iter()
            .map(|h| (h.name.into_bytes(), h.size, h.flags))
            .collect::<Vec<_>>()
    });
    assert_eq!(got, want, "entry table [{begin:#x}, {end:#x})");
}

/// Checks `library_image_ranges` (what `unregister_lib` decodes from a `__tgt_bin_desc`).
fn check_bin_desc(a: &Arena, bin: usize) {
    let got = library_image_ranges(bin as *mut BinDesc);
    let want = (bin != 0 && a.readable(bin, 32))
        .then(|| {
            let count = i32::from_le_bytes(a.bytes(bin, 4).try_into().unwrap());
            let count = usize::try_from(count).ok().filter(|&n| n <= MAX_IMAGES)?;
            let images = a.u64_at(bin + 8) as usize;
            if count == 0 {
                return Some(Vec::new());
            }
            let bytes = count * std::mem::size_of::<DeviceImage>();
            a.readable(images, bytes).then(|| {
                (0..count)
                    .map(|i| {
                        (
                            a.u64_at(images + 32 * i) as usize,
                            a.u64_at(images + 32 * i + 8) as usize,
                        )
                    })
                    .collect()
            })
        })
        .flatten();
    assert_eq!(got.ok(), want, "library descriptor at {bin:#x}");
}

/// Calls `__tgt_rtl_launch_kernel` with the arguments the input describes, within its contract: the
/// argument arrays are passed unreadable only where the call must refuse before reading them.
fn check_launch(a: &Arena, codes: &[u64; 3], entry: u64, id: i32) {
    let aligned = |code: u64| a.reloc(code) & !7;
    let kargs = aligned(codes[0]);
    let (args, offsets) = (aligned(codes[1]), aligned(codes[2]));
    let kargs = if kargs != 0 && a.readable(kargs, std::mem::size_of::<KernelArgs>()) {
        kargs
    } else {
        0
    };
    if kargs != 0 {
        let version = u32::from_le_bytes(a.bytes(kargs, 4).try_into().unwrap());
        let count = u32::from_le_bytes(a.bytes(kargs + 4, 4).try_into().unwrap()) as usize;
        let reads_arrays = (1..=2).contains(&version) && count <= MAX_ARGS_READ && !(count > 0 && args == 0);
        let arrays_ok = a.readable(args, count * 8) && (offsets == 0 || a.readable(offsets, count * 8));
        if reads_arrays && !arrays_ok {
            return;
        }
    }
    // SAFETY: per the checks above, the kernel arguments are NULL or readable, and the arrays hold
    // `NumArgs` elements wherever the call may read them.
    let rc = quietly(|| unsafe {
        __tgt_rtl_launch_kernel(
            id,
            entry as usize as *mut c_void,
            args as *mut *mut c_void,
            offsets as *mut isize,
            kargs as *const KernelArgs,
            std::ptr::null_mut(),
        )
    });
    // No image is ever loaded, so no entry is a kernel.
    assert_eq!(rc, OFFLOAD_FAIL);
}

fuzz_target!(|data: &[u8]| leak_check::run(data, one_input));

/// Checks one input (see the header comment).
fn one_input(data: &[u8]) {
    init_plugin();
    let start = arena_start();
    let data = &data[..data.len().min(ARENA)];
    let padded = (data.len() + 7) & !7;
    let a = Arena {
        start,
        base: start + ARENA - padded,
    };
    // SAFETY: the arena's readable part, written only here, before anything reads it in this run.
    unsafe {
        std::ptr::write_bytes(start as *mut u8, 0, ARENA);
        std::ptr::copy_nonoverlapping(data.as_ptr(), a.base as *mut u8, data.len());
    }
    let code = |at: usize| {
        data.get(at..at + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    let (info_code, bin_code) = (code(32), code(40));
    let launch_codes = [code(48), code(56), code(64)];
    let entry = code(72);
    let id = data.get(80).map_or(0, |&b| i32::from(b as i8) >> 5);

    // Build the structures: descriptor fields, then the entries' names, the info's arch and the
    // library descriptor's image array.
    // Structures are 8-aligned, as libomptarget's are; byte pointers (image start and end, names,
    // arch) need not be.
    let mut done = [false; ARENA / 8];
    for field in 0..4 {
        a.patch(a.base + 8 * field, &mut done);
    }
    let info = a.reloc(info_code) & !7;
    let bin = a.reloc(bin_code) & !7;
    if a.readable(a.base, 32) {
        for field in [a.base + 16, a.base + 24] {
            // SAFETY: a field of the descriptor, in the arena.
            unsafe { *(field as *mut usize) &= !7 };
        }
        let (begin, end) = (a.u64_at(a.base + 16) as usize, a.u64_at(a.base + 24) as usize);
        if begin >= a.base && end > begin {
            let mut at = begin;
            // Checked: the input may put `begin` and `end` near the top of the address space.
            while at.checked_add(32).is_some_and(|next| next <= end.min(a.guard())) {
                a.patch(at + 8, &mut done);
                at += 32;
            }
        }
    }
    // (`patch` leaves fields outside the arena alone: those addresses are never mapped.)
    a.patch(info, &mut done);
    a.patch(bin.wrapping_add(8), &mut done);

    check_image(&a, info);
    check_entries(&a);
    check_bin_desc(&a, bin);
    check_launch(&a, &launch_codes, entry, id);
}
