//! Writes the fuzz seed corpus (`fuzz/seeds/<target>/`) from real device images; std only, built and
//! run by `sh scripts/fuzz.sh seeds`, which makes the images with clang-16 first.
//!
//! Usage: make_seeds <dir with host.so, gfx90a.hsaco, sm_80.ptx, sm_70/80/90.cubin> <seeds dir>
//!
//! Besides the real images it writes compacted cubins (the code dropped, header, symbol table and
//! data kept, so that they are small), broken variants (truncated, zeroed header, wrong class or
//! machine, huge offsets and counts, bad notes, bad exec-mode bytes), and the structured inputs of
//! the `abi_args` target (see fuzz/fuzz_targets/abi_args.rs for their layout).

use std::fs;
use std::path::{Path, PathBuf};

const EM_X86_64: u16 = 62;
const EM_CUDA: u16 = 190;
const EM_AMDGPU: u16 = 224;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn put(b: &mut [u8], at: usize, bytes: &[u8]) {
    b[at..at + bytes.len()].copy_from_slice(bytes);
}
fn with(b: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut v = b.to_vec();
    put(&mut v, at, bytes);
    v
}

/// One section header: (offset of the header in the file, type, offset, size, link).
struct Shdr {
    at: usize,
    kind: u32,
    offset: u64,
    size: u64,
    link: u32,
}

fn sections(b: &[u8]) -> Vec<Shdr> {
    let (shoff, shentsize, shnum) = (u64_at(b, 40) as usize, u16_at(b, 58) as usize, u16_at(b, 60) as usize);
    if shentsize < 64 || shoff + shentsize * shnum > b.len() {
        return Vec::new();
    }
    (0..shnum)
        .map(|i| {
            let at = shoff + i * shentsize;
            Shdr {
                at,
                kind: u32_at(b, at + 4),
                offset: u64_at(b, at + 24),
                size: u64_at(b, at + 32),
                link: u32_at(b, at + 40),
            }
        })
        .collect()
}

/// The ELF file with no program headers and every section's bytes dropped (size 0) but those of the
/// symbol table, string tables, notes, and sections of at most `limit` bytes, which stay at new offsets.
fn compact(b: &[u8], limit: u64) -> Vec<u8> {
    let shdrs = sections(b);
    let mut out = b[..64].to_vec();
    put(&mut out, 32, &0u64.to_le_bytes()); // e_phoff
    put(&mut out, 56, &0u16.to_le_bytes()); // e_phnum
    let mut table = Vec::new();
    for s in &shdrs {
        let mut h = b[s.at..s.at + 64].to_vec();
        if s.kind != 8 && s.kind != 0 {
            if matches!(s.kind, 2 | 3 | 7) || s.size <= limit {
                while out.len() % 8 != 0 {
                    out.push(0);
                }
                let offset = out.len() as u64;
                out.extend_from_slice(&b[s.offset as usize..(s.offset + s.size) as usize]);
                put(&mut h, 24, &offset.to_le_bytes());
            } else {
                put(&mut h, 24, &0u64.to_le_bytes());
                put(&mut h, 32, &0u64.to_le_bytes());
            }
        }
        table.extend_from_slice(&h);
    }
    while out.len() % 8 != 0 {
        out.push(0);
    }
    let shoff = out.len() as u64;
    out.extend_from_slice(&table);
    put(&mut out, 40, &shoff.to_le_bytes());
    out
}

/// Broken variants of an ELF image that every ELF-reading target gets.
fn broken(name: &str, b: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    let mut add = |what: &str, bytes: Vec<u8>| v.push((format!("{name}-{what}"), bytes));
    add("trunc63", b[..63].to_vec());
    add("trunc64", b[..64].to_vec());
    add("trunc-half", b[..b.len() / 2].to_vec());
    add("trunc-1", b[..b.len() - 1].to_vec());
    let mut zeroed = b.to_vec();
    zeroed[..64].fill(0);
    add("zeroed-header", zeroed);
    add("class32", with(b, 4, &[1]));
    add("big-endian", with(b, 5, &[2]));
    add("machine-i386", with(b, 18, &3u16.to_le_bytes()));
    add("shoff-huge", with(b, 40, &0xffff_ffff_ffff_ff00u64.to_le_bytes()));
    add("shnum-max", with(b, 60, &0xffffu16.to_le_bytes()));
    add("shentsize-small", with(b, 58, &32u16.to_le_bytes()));
    add("shentsize-max", with(b, 58, &0xffffu16.to_le_bytes()));
    add("phoff-huge", with(b, 32, &u64::MAX.to_le_bytes()));
    let shdrs = sections(b);
    if let Some(sym) = shdrs.iter().find(|s| s.kind == 2) {
        add(
            "symtab-offset-huge",
            with(b, sym.at + 24, &0x7fff_ffff_ffff_fff0u64.to_le_bytes()),
        );
        add("symtab-size-huge", with(b, sym.at + 32, &u64::MAX.to_le_bytes()));
        add("symtab-link-bad", with(b, sym.at + 40, &0xffffu32.to_le_bytes()));
        if let Some(strtab) = shdrs.get(sym.link as usize) {
            add("strtab-cut", with(b, strtab.at + 32, &(strtab.size / 2).to_le_bytes()));
        }
        // Every symbol's value and size at the extremes.
        let mut wild = b.to_vec();
        for i in 1..(sym.size as usize / 24).min(64) {
            let at = sym.offset as usize + 24 * i;
            put(&mut wild, at + 8, &(u64::MAX - i as u64).to_le_bytes());
            put(&mut wild, at + 16, &(u64::MAX / 2).to_le_bytes());
        }
        add("symbols-wild", wild);
    }
    if let Some(note) = shdrs.iter().find(|s| s.kind == 7 && s.size >= 12) {
        add(
            "note-namesz-max",
            with(b, note.offset as usize, &u32::MAX.to_le_bytes()),
        );
        add(
            "note-descsz-max",
            with(b, note.offset as usize + 4, &u32::MAX.to_le_bytes()),
        );
    }
    v
}

/// The image with the first byte of every `*_exec_mode` symbol set to `byte`.
fn exec_mode_bytes(b: &[u8], byte: u8) -> Option<Vec<u8>> {
    let shdrs = sections(b);
    let sym = shdrs.iter().find(|s| s.kind == 2)?;
    let strtab = shdrs.get(sym.link as usize)?;
    let mut out = b.to_vec();
    let mut any = false;
    for i in 0..sym.size as usize / 24 {
        let at = sym.offset as usize + 24 * i;
        let name_at = strtab.offset as usize + u32_at(b, at) as usize;
        let end = b[name_at..].iter().position(|&c| c == 0)? + name_at;
        let section = u16_at(b, at + 6) as usize;
        if !b[name_at..end].ends_with(b"_exec_mode") || section == 0 || section >= shdrs.len() {
            continue;
        }
        let s = &shdrs[section];
        let addr = u64_at(b, s.at + 16);
        let value = u64_at(b, at + 8);
        let offset = s.offset + value.checked_sub(addr).unwrap_or(value);
        if s.kind != 8 && (offset as usize) < out.len() {
            out[offset as usize] = byte;
            any = true;
        }
    }
    any.then_some(out)
}

/// A minimal x86-64 shared-object header with one program header (as the host backend's tests).
fn minimal_so() -> Vec<u8> {
    let mut b = vec![0u8; 64 + 56];
    put(&mut b, 0, b"\x7fELF\x02\x01\x01");
    put(&mut b, 16, &3u16.to_le_bytes());
    put(&mut b, 18, &EM_X86_64.to_le_bytes());
    put(&mut b, 32, &64u64.to_le_bytes());
    put(&mut b, 52, &64u16.to_le_bytes());
    put(&mut b, 54, &56u16.to_le_bytes());
    put(&mut b, 56, &1u16.to_le_bytes());
    b
}

/// A bare cubin header: ABI version and flags as ptxas 11/12 (ABI 7) and 13 (ABI 8) write them.
fn cubin_header(abi: u8, flags: u32) -> Vec<u8> {
    let mut b = vec![0u8; 64];
    put(&mut b, 0, b"\x7fELF\x02\x01\x01\x33");
    b[8] = abi;
    put(&mut b, 16, &2u16.to_le_bytes());
    put(&mut b, 18, &EM_CUDA.to_le_bytes());
    put(&mut b, 48, &flags.to_le_bytes());
    b
}

/// Inputs of the `abi_args` target: a header of pointer codes, then the structures they point at.
struct AbiSeed {
    data: Vec<u8>,
}

/// Code for "offset `o` of the input".
fn at(o: usize) -> u64 {
    o as u64 + 1
}
/// A code for a never-mapped low address, and one near the top of the address space.
const LOW: u64 = 0xff00_0000_0000_0010;
const TOP: u64 = 0xfe00_0000_0000_0008;

impl AbiSeed {
    fn new() -> AbiSeed {
        AbiSeed { data: vec![0; 88] }
    }
    fn set(&mut self, at: usize, code: u64) -> &mut Self {
        put(&mut self.data, at, &code.to_le_bytes());
        self
    }
    /// Appends `bytes` 8-aligned and returns their offset.
    fn push(&mut self, bytes: &[u8]) -> usize {
        while self.data.len() % 8 != 0 {
            self.data.push(0);
        }
        let o = self.data.len();
        self.data.extend_from_slice(bytes);
        o
    }
    /// Appends `bytes` at an offset of `skew` past 8-alignment.
    fn push_skewed(&mut self, bytes: &[u8], skew: usize) -> usize {
        self.push(&vec![0xaa; skew]);
        let o = self.data.len();
        self.data.extend_from_slice(bytes);
        o
    }
}

/// The full seed: image and entries (kernel, global, kernel), info with `arch`, a library descriptor
/// of two images, and a launch of three arguments.
fn abi_seed(image: &[u8], arch: &[u8], arch_skew: usize, name_len: usize) -> AbiSeed {
    let mut s = AbiSeed::new();
    let img = s.push(image);
    let long_name = vec![b'k'; name_len];
    let names: Vec<usize> = [&b"__omp_offloading_fe00_1_main_l5"[..], b"g", &long_name]
        .iter()
        .map(|n| s.push(&[*n, &b"\0"[..]].concat()))
        .collect();
    let mut entries = Vec::new();
    for (i, &n) in names.iter().enumerate() {
        entries.extend_from_slice(&(0x1000 * (i as u64 + 1)).to_le_bytes());
        entries.extend_from_slice(&at(n).to_le_bytes());
        entries.extend_from_slice(&(if i == 1 { 4u64 } else { 0 }).to_le_bytes());
        entries.extend_from_slice(&(i as i32).to_le_bytes());
        entries.extend_from_slice(&0i32.to_le_bytes());
    }
    let table = s.push(&entries);
    let arch_at = s.push_skewed(&[arch, &b"\0"[..]].concat(), arch_skew);
    let info = s.push(&at(arch_at).to_le_bytes());
    let mut images = Vec::new();
    for (start, end) in [(img, img + image.len()), (0x10, 0x20)] {
        images.extend_from_slice(&(start as u64).to_le_bytes());
        images.extend_from_slice(&(end as u64).to_le_bytes());
        images.extend_from_slice(&[0; 16]);
    }
    let images_at = s.push(&images);
    let mut bin = Vec::new();
    bin.extend_from_slice(&2i32.to_le_bytes());
    bin.extend_from_slice(&0i32.to_le_bytes());
    bin.extend_from_slice(&at(images_at).to_le_bytes());
    bin.extend_from_slice(&[0; 16]);
    let bin_at = s.push(&bin);
    let mut kargs = vec![0u8; 104];
    put(&mut kargs, 0, &2u32.to_le_bytes());
    put(&mut kargs, 4, &3u32.to_le_bytes());
    put(&mut kargs, 72, &[1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
    let kargs_at = s.push(&kargs);
    let args_at = s.push(&[0x11u8; 24]);
    let offsets_at = s.push(&[0u8; 24]);
    s.set(0, at(img))
        .set(8, at(img + image.len()))
        .set(16, at(table))
        .set(24, at(table + entries.len()))
        .set(32, at(info))
        .set(40, at(bin_at))
        .set(48, at(kargs_at))
        .set(56, at(args_at))
        .set(64, at(offsets_at))
        .set(72, 0x1000);
    s
}

fn abi_seeds(host_so: &[u8]) -> Vec<(String, Vec<u8>)> {
    let header = &host_so[..512];
    let mut v: Vec<(String, Vec<u8>)> = Vec::new();
    let mut add = |name: &str, s: &AbiSeed| v.push((name.to_string(), s.data.clone()));
    let base = abi_seed(header, b"x86_64", 0, 8);
    add("valid-host-image", &base);
    add("minimal-so", &abi_seed(&minimal_so(), b"sm_90", 0, 8));
    add(
        "cubin-header",
        &abi_seed(&cubin_header(7, 0x005a_055a), b"sm_90a", 1, 8),
    );
    // Strings of exactly the longest accepted length, at aligned and skewed addresses.
    for skew in [0, 1, 3, 7] {
        add(
            &format!("arch-256-skew{skew}"),
            &abi_seed(header, &[b'a'; 256], skew, 8),
        );
        add(
            &format!("arch-257-skew{skew}"),
            &abi_seed(header, &[b'a'; 257], skew, 8),
        );
    }
    add("name-4096", &abi_seed(header, b"sm_80", 0, 4096));
    add("name-4097", &abi_seed(header, b"sm_80", 0, 4097));
    let mut s = abi_seed(header, b"gfx90a", 0, 8);
    s.set(16, 0).set(24, 0);
    add("no-entries", &s);
    let mut s = abi_seed(header, b"gfx90a", 0, 8);
    s.set(32, 0).set(40, 0).set(48, 0);
    add("no-info-no-args", &s);
    let mut s = abi_seed(header, b"gfx90a", 0, 8);
    let end = u64_at(&s.data, 24);
    s.set(24, end - 8);
    add("entries-not-whole", &s);
    let mut s = abi_seed(header, b"gfx90a", 0, 8);
    s.set(24, TOP);
    add("entries-end-top", &s);
    let mut s = abi_seed(header, b"gfx90a", 0, 8);
    let (a, b) = (u64_at(&s.data, 0), u64_at(&s.data, 8));
    s.set(0, b).set(8, a);
    add("image-end-before-start", &s);
    let mut s = abi_seed(header, b"gfx90a", 0, 8);
    s.set(0, LOW).set(32, LOW).set(40, LOW).set(48, LOW);
    add("unmapped-pointers", &s);
    let mut s = abi_seed(header, b"gfx90a", 0, 8);
    s.set(8, TOP);
    add("image-end-top", &s);
    // Pointers into the guard page after the input.
    let mut s = abi_seed(header, b"gfx90a", 0, 8);
    let len = s.data.len() as u64;
    s.set(0, len + 1).set(8, len + 200).set(32, len + 9);
    add("guard-page", &s);
    // Launches: bad version, too many arguments, NULL arrays.
    for (name, version, count, args_null) in [
        ("launch-version3", 3u32, 3u32, false),
        ("launch-many-args", 2, 70_000, false),
        ("launch-args-null", 2, 3, true),
        ("launch-v1-no-args", 1, 0, true),
    ] {
        let mut s = abi_seed(header, b"sm_70", 0, 8);
        let k = u64_at(&s.data, 48) as usize - 1;
        put(&mut s.data, k, &version.to_le_bytes());
        put(&mut s.data, k + 4, &count.to_le_bytes());
        if args_null {
            s.set(56, 0);
        }
        add(name, &s);
    }
    // Library descriptors: negative and implausible image counts.
    for (name, count) in [
        ("bin-count-negative", -1i32),
        ("bin-count-4097", 4097),
        ("bin-count-0", 0),
    ] {
        let mut s = abi_seed(header, b"sm_70", 0, 8);
        let b = u64_at(&s.data, 40) as usize - 1;
        put(&mut s.data, b, &count.to_le_bytes());
        add(name, &s);
    }
    add("empty", &AbiSeed { data: Vec::new() });
    add("short-descriptor", &AbiSeed { data: vec![1; 20] });
    v
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    fs::write(dir.join(name), bytes).unwrap_or_else(|e| panic!("{}: {e}", dir.join(name).display()));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (images, seeds) = (PathBuf::from(&args[1]), PathBuf::from(&args[2]));
    let read = |name: &str| fs::read(images.join(name)).ok();
    let host = read("host.so").expect("host.so");
    let amd = read("gfx90a.hsaco");
    let ptx = read("sm_80.ptx").expect("sm_80.ptx");
    let cubins: Vec<(String, Vec<u8>)> = ["sm_70", "sm_80", "sm_90"]
        .iter()
        .filter_map(|a| read(&format!("{a}.cubin")).map(|b| (a.to_string(), b)))
        .collect();
    for t in [
        "elf",
        "host_image",
        "nvidia_image",
        "amdgpu_code_object",
        "exec_mode",
        "abi_args",
    ] {
        let _ = fs::remove_dir_all(seeds.join(t));
        fs::create_dir_all(seeds.join(t)).unwrap();
    }
    let dir = |t: &str| seeds.join(t);

    // Real and compacted images.
    let mut elves: Vec<(String, Vec<u8>)> = vec![("host.so".into(), host.clone())];
    if let Some(amd) = &amd {
        assert_eq!(u16_at(amd, 18), EM_AMDGPU);
        elves.push(("gfx90a.hsaco".into(), amd.clone()));
    }
    for (arch, cubin) in &cubins {
        elves.push((format!("{arch}-compact.cubin"), compact(cubin, 128)));
    }
    for (name, bytes) in &elves {
        write(&dir("elf"), name, bytes);
        write(&dir("exec_mode"), name, bytes);
        // Broken variants of the small images only (the host image compacted as the cubins are).
        let small = if name == "host.so" {
            compact(bytes, 128)
        } else {
            bytes.clone()
        };
        let small_name = if name == "host.so" {
            "host-compact.so"
        } else {
            name.as_str()
        };
        if name == "host.so" || name == "gfx90a.hsaco" || name.starts_with("sm_80") {
            for (bname, b) in broken(small_name, &small) {
                write(&dir("elf"), &bname, &b);
            }
        }
        for (what, byte) in [("mode0", 0u8), ("mode9", 9), ("mode3", 3)] {
            if let Some(b) = exec_mode_bytes(bytes, byte) {
                write(&dir("exec_mode"), &format!("{name}-{what}"), &b);
            }
        }
    }
    // One whole cubin, as ptxas wrote it.
    if let Some((arch, cubin)) = cubins.iter().find(|(a, _)| a == "sm_90") {
        write(&dir("elf"), &format!("{arch}.cubin"), cubin);
    }
    write(&dir("elf"), "sm_80.ptx", &ptx);

    // Host images: the header and the image's length are what counts.
    write(&dir("host_image"), "host.so", &host);
    write(&dir("host_image"), "minimal.so", &minimal_so());
    let head = &host[..4096];
    for (bname, b) in broken("host.so-head", head)
        .into_iter()
        .filter(|(n, _)| !n.contains("sym") && !n.contains("note"))
    {
        write(&dir("host_image"), &bname, &b);
    }
    write(
        &dir("host_image"),
        "host.so-head-exec",
        &with(head, 16, &2u16.to_le_bytes()),
    );
    write(
        &dir("host_image"),
        "host.so-head-phnum0",
        &with(head, 56, &0u16.to_le_bytes()),
    );
    write(
        &dir("host_image"),
        "host.so-head-phentsize-max",
        &with(head, 54, &0xffffu16.to_le_bytes()),
    );
    if let Some(amd) = &amd {
        write(&dir("host_image"), "gfx90a.hsaco", amd);
    }
    if let Some((_, c)) = cubins.first() {
        write(&dir("host_image"), "cubin-header", &c[..64]);
    }

    // NVIDIA: headers of cubins (only the first 4 KiB are read), PTX, and PTX-like text.
    for (arch, cubin) in &cubins {
        write(
            &dir("nvidia_image"),
            &format!("{arch}.cubin-head"),
            &cubin[..4096.min(cubin.len())],
        );
    }
    write(&dir("nvidia_image"), "abi8-sm_90", &cubin_header(8, 0x0600_5a04));
    write(&dir("nvidia_image"), "abi7-sm_100", &cubin_header(7, 0x0064_0564));
    write(&dir("nvidia_image"), "sm_80.ptx", &ptx);
    write(&dir("nvidia_image"), "sm_80.ptx-head", &ptx[..200.min(ptx.len())]);
    let text = String::from_utf8_lossy(&ptx);
    for (name, target) in [
        ("sm_90a", "sm_90a"),
        ("sm_100", "sm_100"),
        ("sm_5", "sm_5"),
        ("gfx90a", "gfx90a"),
    ] {
        write(
            &dir("nvidia_image"),
            &format!("ptx-{name}"),
            text.replacen(".target sm_80", &format!(".target {target}"), 1)
                .as_bytes(),
        );
    }
    write(&dir("nvidia_image"), "ptx-nul", b".version 7.8\n\0.target sm_80\n");
    write(
        &dir("nvidia_image"),
        "arch-words",
        b"sm_90 sm_90a sm_100 sm_4294967295 sm_99999999999 gfx90a sm_",
    );
    if let Some(amd) = &amd {
        write(&dir("nvidia_image"), "gfx90a.hsaco-head", &amd[..4096.min(amd.len())]);
    }
    write(&dir("nvidia_image"), "host.so-head", &host[..4096]);

    // AMDGPU code objects: the image, its metadata note alone, broken variants, and target ids.
    if let Some(amd) = &amd {
        write(&dir("amdgpu_code_object"), "gfx90a.hsaco", amd);
        for (bname, b) in broken("gfx90a.hsaco", amd) {
            write(&dir("amdgpu_code_object"), &bname, &b);
        }
        // The msgpack map starts at its first key; the note's descriptor runs to the next section.
        if let Some(at) = amd.windows(14).position(|w| w == b"amdhsa.kernels") {
            let start = at.saturating_sub(2);
            write(
                &dir("amdgpu_code_object"),
                "metadata.msgpack",
                &amd[start..(start + 2048).min(amd.len())],
            );
        }
        write(
            &dir("amdgpu_code_object"),
            "gfx90a-xnack-on",
            &with(amd, 48, &(0x03fu32 | 0x300).to_le_bytes()),
        );
        write(
            &dir("amdgpu_code_object"),
            "v3-gfx906-xnack",
            &with(&with(amd, 48, &(0x02fu32 | 0x100).to_le_bytes()), 8, &[1]),
        );
        write(
            &dir("amdgpu_code_object"),
            "mach-unknown",
            &with(amd, 48, &0xffu32.to_le_bytes()),
        );
    }
    write(
        &dir("amdgpu_code_object"),
        "target-ids",
        b"gfx90a:sramecc+:xnack- amdgcn-amd-amdhsa--gfx1030 gfx90a:xnack+ :xnack- gfx940:sramecc-",
    );

    for (name, bytes) in abi_seeds(&host) {
        write(&dir("abi_args"), &name, &bytes);
    }
}
