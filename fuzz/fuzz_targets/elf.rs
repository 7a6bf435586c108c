//! `util::elf`: the header, the section table, symbols, symbol contents and notes of an untrusted
//! ELF file. Nothing may panic, and everything handed back must be a slice of the input.
#![no_main]

mod leak_check;

#[global_allocator]
static ALLOCATOR: leak_check::Counting = leak_check::Counting;

use libfuzzer_sys::fuzz_target;
use omprpc::util::elf;

/// Whether `part` lies inside `whole` (empty slices may point anywhere).
fn inside(whole: &[u8], part: &[u8]) -> bool {
    let w = whole.as_ptr_range();
    let p = part.as_ptr_range();
    part.is_empty() || (w.start <= p.start && p.end <= w.end)
}

fn u16_at(data: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([data[at], data[at + 1]])
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(data[at..at + 4].try_into().unwrap())
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(data[at..at + 8].try_into().unwrap())
}

fuzz_target!(|data: &[u8]| leak_check::run(data, one_input));

/// Checks one input (see the header comment).
fn one_input(data: &[u8]) {
    let header = elf::header(data);
    let is_elf64le = data.len() >= 64 && data[..4] == *b"\x7fELF" && data[4] == 2 && data[5] == 1;
    assert_eq!(
        header.is_some(),
        is_elf64le,
        "header() accepts exactly 64-bit LE ELF files"
    );
    if let Some(h) = header {
        assert_eq!(h.os_abi, data[7]);
        assert_eq!(h.abi_version, data[8]);
        assert_eq!(h.kind, u16_at(data, 16));
        assert_eq!(h.machine, u16_at(data, 18));
        assert_eq!(h.program_headers_offset, u64_at(data, 32));
        assert_eq!(h.flags, u32_at(data, 48));
        assert_eq!(h.program_header_size, u16_at(data, 54));
        assert_eq!(h.program_headers, u16_at(data, 56));
    }

    let Some(image) = elf::Image::parse(data) else {
        return;
    };
    assert!(header.is_some(), "an image parses only with a valid header");

    let symbols = image.symbols();
    for (i, (name, symbol)) in symbols.iter().enumerate() {
        assert!(inside(data, name), "symbol name outside the file");
        assert!(!name.contains(&0), "symbol names stop at their NUL");
        if let Some(bytes) = image.symbol_bytes(symbol) {
            assert!(inside(data, bytes), "symbol contents outside the file");
            assert_eq!(
                bytes.len() as u64,
                symbol.size,
                "symbol contents have the symbol's size"
            );
        }
        // `symbol` finds the first defined symbol of a name; quadratic, so only for the first few.
        if i < 16 {
            let first = symbols.iter().find(|(n, _)| n == name).map(|(_, s)| *s);
            assert_eq!(image.symbol(name), first);
        }
    }
    // A name that is not a whole symbol name matches nothing.
    if let Some((name, _)) = symbols.first() {
        let longer = [name, &b"\xff"[..]].concat();
        if !symbols.iter().any(|(n, _)| *n == longer.as_slice()) {
            assert_eq!(image.symbol(&longer), None);
        }
    }

    for (name, _kind, desc) in image.notes() {
        assert!(inside(data, name), "note name outside the file");
        assert!(inside(data, desc), "note descriptor outside the file");
    }

    // The symbol lookups libomptarget images need.
    for name in [&b"__omp_rtl_device_environment"[..], b"g", b""] {
        if let Some(symbol) = image.symbol(name) {
            if let Some(bytes) = image.symbol_bytes(&symbol) {
                assert!(inside(data, bytes));
            }
        }
    }
}
