//! A bounds-checked reader for the 64-bit little-endian ELF files that device images are: the header,
//! the section table, the symbol table and notes. Every offset comes from untrusted bytes, so every
//! read is checked and a malformed file yields `None`, never a panic.

/// `e_machine` of x86-64 images.
pub const EM_X86_64: u16 = 62;
/// `e_machine` of NVIDIA cubins.
pub const EM_CUDA: u16 = 190;
/// `e_machine` of AMDGPU code objects.
pub const EM_AMDGPU: u16 = 224;

const EHDR_SIZE: usize = 64;
const SHDR_SIZE: usize = 64;
const SYM_SIZE: usize = 24;
const SHT_SYMTAB: u32 = 2;
const SHT_RELA: u32 = 4;
const RELA_SIZE: usize = 24;
const SHT_REL: u32 = 9;
const REL_SIZE: usize = 16;
const SHF_WRITE: u64 = 1;
const SHF_ALLOC: u64 = 2;
const STT_OBJECT: u8 = 1;
const STB_LOCAL: u8 = 0;
const SHT_NOTE: u32 = 7;
const SHT_NOBITS: u32 = 8;
const SHN_UNDEF: u16 = 0;
const SHN_LORESERVE: u16 = 0xff00;

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at.checked_add(2)?)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// The name of the symbol table entry `sym`, from the string table `strings`.
fn symbol_name<'a>(sym: &[u8], strings: &'a [u8]) -> Option<&'a [u8]> {
    let rest = strings.get(usize::try_from(u32_at(sym, 0)?).ok()?..)?;
    Some(&rest[..rest.iter().position(|&b| b == 0)?])
}

/// The symbol table entry `sym` with its name, when it is defined in a section of the image.
fn symbol_entry<'a>(sym: &[u8], strings: &'a [u8]) -> Option<(&'a [u8], Symbol)> {
    let section = u16_at(sym, 6)?;
    if section == SHN_UNDEF || section >= SHN_LORESERVE {
        return None;
    }
    Some((
        symbol_name(sym, strings)?,
        Symbol {
            value: u64_at(sym, 8)?,
            size: u64_at(sym, 16)?,
            kind: sym[4] & 0xf,
            binding: sym[4] >> 4,
            section,
        },
    ))
}

/// The fields of an ELF header that image checks look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// `e_ident[EI_OSABI]`.
    pub os_abi: u8,
    /// `e_ident[EI_ABIVERSION]`.
    pub abi_version: u8,
    /// `e_type` (2 executable, 3 shared object).
    pub kind: u16,
    /// `e_machine`.
    pub machine: u16,
    /// `e_flags`, whose meaning depends on the machine.
    pub flags: u32,
    /// `e_phoff`: where the program headers start.
    pub program_headers_offset: u64,
    /// `e_phentsize`: bytes per program header.
    pub program_header_size: u16,
    /// `e_phnum`: number of program headers.
    pub program_headers: u16,
}

/// Reads the header of a 64-bit little-endian ELF file from its first bytes; `None` for anything else.
pub fn header(bytes: &[u8]) -> Option<Header> {
    if bytes.len() < EHDR_SIZE || bytes[..4] != *b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
        return None;
    }
    Some(Header {
        os_abi: bytes[7],
        abi_version: bytes[8],
        kind: u16_at(bytes, 16)?,
        machine: u16_at(bytes, 18)?,
        flags: u32_at(bytes, 48)?,
        program_headers_offset: u64_at(bytes, 32)?,
        program_header_size: u16_at(bytes, 54)?,
        program_headers: u16_at(bytes, 56)?,
    })
}

/// One section header.
#[derive(Clone, Copy, Debug)]
struct Section {
    kind: u32,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
    /// For a relocation section, the section it patches.
    info: u32,
}

/// A symbol of the image's symbol table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// `st_value`: the symbol's address.
    pub value: u64,
    /// `st_size`: its size in bytes.
    pub size: u64,
    /// `st_info & 0xf`: 1 object, 2 function.
    pub kind: u8,
    /// `st_info >> 4`: 0 local, 1 global, 2 weak.
    pub binding: u8,
    /// Index of the section it is defined in.
    section: u16,
}

impl Symbol {
    /// Whether its binding is local: drivers do not find such symbols by name (ROCr registers none
    /// that is not a kernel; the CUDA driver's `cuModuleGetGlobal` skips them), though they are the
    /// image's memory all the same.
    pub fn is_local(&self) -> bool {
        self.binding == STB_LOCAL
    }

    /// Index of the section it is defined in.
    pub fn section(&self) -> u16 {
        self.section
    }
}

/// One entry of a relocation section (`SHT_RELA`, or `SHT_REL` as some ptxas versions write): the word
/// at `offset` of section `section` becomes the address of `symbol` plus `addend`, in a way `kind`
/// (machine-specific) says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relocation<'a> {
    /// Index of the section the relocation patches.
    pub section: u16,
    /// Offset of the patched word in that section.
    pub offset: u64,
    /// `ELF64_R_TYPE`.
    pub kind: u32,
    /// Name of the symbol whose address is used (empty for a section's own symbol).
    pub symbol: &'a [u8],
    /// That symbol, when the image defines it (section symbols included).
    pub target: Option<Symbol>,
    /// The addend. An `SHT_REL` entry keeps it in the patched word; it is read as the 64-bit word
    /// there, which is right for the 64-bit address relocations that are all this reader's callers
    /// apply (0 when the word lies outside the file, as in a `NOBITS` section).
    pub addend: i64,
}

/// A whole ELF image, parsed lazily: sections and symbols are read on demand, straight from the bytes.
pub struct Image<'a> {
    bytes: &'a [u8],
    sections: Vec<Section>,
}

impl<'a> Image<'a> {
    /// Parses the section table of `bytes`; `None` when it is not a well-formed 64-bit LE ELF file.
    pub fn parse(bytes: &'a [u8]) -> Option<Image<'a>> {
        header(bytes)?;
        let shoff = usize::try_from(u64_at(bytes, 40)?).ok()?;
        let shentsize = usize::from(u16_at(bytes, 58)?);
        let shnum = usize::from(u16_at(bytes, 60)?);
        if shnum == 0 {
            return Some(Image {
                bytes,
                sections: Vec::new(),
            });
        }
        if shentsize < SHDR_SIZE {
            return None;
        }
        let end = shentsize.checked_mul(shnum)?.checked_add(shoff)?;
        if end > bytes.len() {
            return None;
        }
        let sections = (0..shnum)
            .map(|i| {
                let at = shoff + i * shentsize;
                Some(Section {
                    kind: u32_at(bytes, at + 4)?,
                    flags: u64_at(bytes, at + 8)?,
                    addr: u64_at(bytes, at + 16)?,
                    offset: u64_at(bytes, at + 24)?,
                    size: u64_at(bytes, at + 32)?,
                    link: u32_at(bytes, at + 40)?,
                    info: u32_at(bytes, at + 44)?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Image { bytes, sections })
    }

    /// The bytes of a section, if they lie inside the file.
    fn section_bytes(&self, section: &Section) -> Option<&'a [u8]> {
        if section.kind == SHT_NOBITS {
            return None;
        }
        let start = usize::try_from(section.offset).ok()?;
        let len = usize::try_from(section.size).ok()?;
        self.bytes.get(start..start.checked_add(len)?)
    }

    /// Every defined symbol of the symbol table (`.symtab`) with its name; empty when there is none.
    pub fn symbols(&self) -> Vec<(&'a [u8], Symbol)> {
        let Some(symtab) = self.sections.iter().find(|s| s.kind == SHT_SYMTAB) else {
            return Vec::new();
        };
        let Some(strtab) = usize::try_from(symtab.link).ok().and_then(|i| self.sections.get(i)) else {
            return Vec::new();
        };
        let (Some(symbols), Some(strings)) = (self.section_bytes(symtab), self.section_bytes(strtab)) else {
            return Vec::new();
        };
        symbols
            .chunks_exact(SYM_SIZE)
            .filter_map(|sym| symbol_entry(sym, strings))
            .collect()
    }

    /// The name of symbol `index` of symbol table `symtab` (a section index), and the symbol when it is
    /// defined.
    fn symbol_at(&self, symtab: usize, index: usize) -> Option<(&'a [u8], Option<Symbol>)> {
        let table = self.sections.get(symtab)?;
        let strings = self.section_bytes(self.sections.get(usize::try_from(table.link).ok()?)?)?;
        let entry = self
            .section_bytes(table)?
            .get(index.checked_mul(SYM_SIZE)?..)?
            .get(..SYM_SIZE)?;
        let name = symbol_name(entry, strings)?;
        Some((name, symbol_entry(entry, strings).map(|(_, symbol)| symbol)))
    }

    /// Every relocation that names a symbol, across the image's `SHT_RELA` and `SHT_REL` sections.
    pub fn relocations(&self) -> Vec<Relocation<'a>> {
        let mut relocations = Vec::new();
        for section in self.sections.iter() {
            let entry_size = match section.kind {
                SHT_RELA => RELA_SIZE,
                SHT_REL => REL_SIZE,
                _ => continue,
            };
            let (Some(entries), Ok(patched)) = (self.section_bytes(section), u16::try_from(section.info)) else {
                continue;
            };
            let patched_bytes = self
                .sections
                .get(usize::from(patched))
                .and_then(|s| self.section_bytes(s));
            for entry in entries.chunks_exact(entry_size) {
                let (Some(offset), Some(info)) = (u64_at(entry, 0), u64_at(entry, 8)) else {
                    continue;
                };
                let addend = if entry_size == RELA_SIZE {
                    let Some(addend) = u64_at(entry, 16) else { continue };
                    addend as i64
                } else {
                    let word = usize::try_from(offset).ok().zip(patched_bytes);
                    word.and_then(|(at, bytes)| u64_at(bytes, at)).unwrap_or(0) as i64
                };
                let Some((symbol, target)) = self.symbol_at(section.link as usize, (info >> 32) as usize) else {
                    continue;
                };
                relocations.push(Relocation {
                    section: patched,
                    offset,
                    kind: info as u32,
                    symbol,
                    target,
                    addend,
                });
            }
        }
        relocations
    }

    /// Finds the defined symbol `name` in the symbol table.
    pub fn symbol(&self, name: &[u8]) -> Option<Symbol> {
        self.symbols()
            .into_iter()
            .find_map(|(n, symbol)| (n == name).then_some(symbol))
    }

    /// The initial contents of a defined symbol, as stored in the file (`None` for `.bss`-like
    /// symbols and symbols outside their section).
    pub fn symbol_bytes(&self, symbol: &Symbol) -> Option<&'a [u8]> {
        let section = self.sections.get(usize::from(symbol.section))?;
        let data = self.section_bytes(section)?;
        // In executables and shared objects a symbol's value is an address; in relocatable files it
        // is an offset into its section, and the section's address is 0.
        let offset = symbol.value.checked_sub(section.addr).unwrap_or(symbol.value);
        let start = usize::try_from(offset).ok()?;
        let len = usize::try_from(symbol.size).ok()?;
        data.get(start..start.checked_add(len)?)
    }

    /// Whether the image's pointer global `pointer`, found loaded at `pointer_at` and holding `target`,
    /// points inside the image's own writable memory with room for `len` bytes: inside one writable
    /// object (local ones included, which loaders do not register but which are the image's memory
    /// all the same) of at least `len` bytes, or, where no object is named there, inside one writable
    /// allocated section. A loader that writes through a pointer read from an image writes only into
    /// that image this way.
    ///
    /// Where the target lies in the image's own addresses depends on how the image is loaded:
    /// * AMDGPU code objects and shared objects are mapped whole at one base, so the target less the
    ///   pointer's displacement (`pointer_at` minus its `st_value`) is an address of the file;
    /// * the CUDA driver places a cubin's sections one by one, so one displacement says nothing of
    ///   another section: there the pointer's own relocation says what it points at (a symbol plus
    ///   an addend, in that symbol's section). The driver applies it at load and no device code has
    ///   run when a plugin asks, so the loaded value is what the relocation made it, and a pointer
    ///   without one holds a constant that cannot name memory the driver placed.
    pub fn pointee_is_writable(&self, pointer: &[u8], pointer_at: u64, target: u64, len: u64) -> bool {
        let Some(pointer) = self.symbol(pointer) else {
            return false;
        };
        let placed_whole = header(self.bytes).is_some_and(|h| h.machine != EM_CUDA);
        if placed_whole {
            let displacement = pointer_at.wrapping_sub(pointer.value);
            return self.writable_at(None, target.wrapping_sub(displacement), len);
        }
        let relocation = self
            .relocations()
            .into_iter()
            .find(|r| r.section == pointer.section && r.offset == pointer.value);
        let Some((symbol, addend)) = relocation.and_then(|r| Some((r.target?, r.addend))) else {
            return false;
        };
        self.writable_at(Some(symbol.section), symbol.value.wrapping_add(addend as u64), len)
    }

    /// Whether `[addr, addr + len)` (image addresses; in `section` only, when given) lies inside one
    /// writable object of the image, or inside a writable allocated section where no object is named.
    fn writable_at(&self, section: Option<u16>, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        let writable = |index: u16| {
            self.sections
                .get(usize::from(index))
                .is_some_and(|s| s.flags & (SHF_WRITE | SHF_ALLOC) == SHF_WRITE | SHF_ALLOC)
        };
        let in_section = |index: u16| section.is_none_or(|wanted| wanted == index);
        let objects: Vec<Symbol> = self
            .symbols()
            .into_iter()
            .map(|(_, symbol)| symbol)
            .filter(|s| s.kind == STT_OBJECT && s.size > 0 && writable(s.section) && in_section(s.section))
            .collect();
        if objects
            .iter()
            .any(|s| addr >= s.value && end <= s.value.saturating_add(s.size))
        {
            return true;
        }
        let names_an_object = objects
            .iter()
            .any(|s| addr < s.value.saturating_add(s.size) && s.value < end);
        !names_an_object
            && self.sections.iter().enumerate().any(|(i, s)| {
                u16::try_from(i).is_ok_and(|i| writable(i) && in_section(i))
                    && addr >= s.addr
                    && end <= s.addr.saturating_add(s.size)
            })
    }

    /// Every note of the image as (owner name, type, descriptor).
    pub fn notes(&self) -> Vec<(&'a [u8], u32, &'a [u8])> {
        let mut notes = Vec::new();
        for section in self.sections.iter().filter(|s| s.kind == SHT_NOTE) {
            let Some(mut rest) = self.section_bytes(section) else {
                continue;
            };
            while rest.len() >= 12 {
                let (Some(namesz), Some(descsz), Some(kind)) = (u32_at(rest, 0), u32_at(rest, 4), u32_at(rest, 8))
                else {
                    break;
                };
                let name_len = namesz as usize;
                let desc_len = descsz as usize;
                let name_end = 12 + name_len.div_ceil(4) * 4;
                let Some(desc_end) = desc_len
                    .div_ceil(4)
                    .checked_mul(4)
                    .and_then(|d| d.checked_add(name_end))
                else {
                    break;
                };
                let (Some(name), Some(desc)) = (rest.get(12..12 + name_len), rest.get(name_end..name_end + desc_len))
                else {
                    break;
                };
                let name = name.strip_suffix(&[0]).unwrap_or(name);
                notes.push((name, kind, desc));
                rest = rest.get(desc_end..).unwrap_or(&[]);
            }
        }
        notes
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a small ELF file with one data section, a symbol table and a note, for tests.
    pub(crate) fn sample(machine: u16, symbols: &[(&str, u64, &[u8])]) -> Vec<u8> {
        sample_with_relocations(machine, symbols, &[])
    }

    /// [`sample`], plus a relocation section in which each `(pointer, target)` makes the 64-bit word
    /// at symbol `pointer` the address of symbol `target` (type 4, CUDA's `R_CUDA_G64`), as a
    /// compiler writes `T *pointer = &target;`.
    pub(crate) fn sample_with_relocations(
        machine: u16,
        symbols: &[(&str, u64, &[u8])],
        relocations: &[(&str, &str)],
    ) -> Vec<u8> {
        let mut data = Vec::new();
        let mut strings = vec![0u8];
        let mut syms = vec![0u8; SYM_SIZE];
        for (name, addr_offset, bytes) in symbols {
            let name_at = strings.len() as u32;
            strings.extend_from_slice(name.as_bytes());
            strings.push(0);
            let value = 0x1000 + data.len() as u64 + addr_offset;
            data.extend_from_slice(bytes);
            let mut sym = vec![0u8; SYM_SIZE];
            sym[..4].copy_from_slice(&name_at.to_le_bytes());
            sym[4] = 0x11; // a global object
            sym[6..8].copy_from_slice(&1u16.to_le_bytes());
            sym[8..16].copy_from_slice(&value.to_le_bytes());
            sym[16..24].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
            syms.extend_from_slice(&sym);
        }
        let mut note = Vec::new();
        note.extend_from_slice(&4u32.to_le_bytes());
        note.extend_from_slice(&3u32.to_le_bytes());
        note.extend_from_slice(&32u32.to_le_bytes());
        note.extend_from_slice(b"AMD\0");
        note.extend_from_slice(b"abc\0");
        let mut file = vec![0u8; EHDR_SIZE];
        file[..4].copy_from_slice(b"\x7fELF");
        file[4] = 2;
        file[5] = 1;
        file[6] = 1;
        file[16..18].copy_from_slice(&3u16.to_le_bytes());
        file[18..20].copy_from_slice(&machine.to_le_bytes());
        let mut place = |bytes: &[u8]| {
            let at = file.len() as u64;
            file.extend_from_slice(bytes);
            while !file.len().is_multiple_of(8) {
                file.push(0);
            }
            at
        };
        let data_at = place(&data);
        let syms_at = place(&syms);
        let strings_at = place(&strings);
        let note_at = place(&note);
        let index_of = |name: &str| symbols.iter().position(|(n, _, _)| *n == name).unwrap() + 1;
        let mut rela = Vec::new();
        for (pointer, target) in relocations {
            let at = syms
                .get(index_of(pointer) * SYM_SIZE + 8..index_of(pointer) * SYM_SIZE + 16)
                .unwrap();
            rela.extend_from_slice(at);
            rela.extend_from_slice(&(((index_of(target) as u64) << 32) | 4).to_le_bytes());
            rela.extend_from_slice(&0i64.to_le_bytes());
        }
        let rela_at = place(&rela);
        let shoff = file.len() as u64;
        // null, .data (addr 0x1000, writable), .symtab (link 3), .strtab, .note, .rela.data
        let data_flags = SHF_WRITE | SHF_ALLOC;
        let mut sections: Vec<(u32, u64, u64, u64, u64, u32, u32)> = vec![
            (0, 0, 0, 0, 0, 0, 0),
            (1, data_flags, 0x1000, data_at, data.len() as u64, 0, 0),
            (SHT_SYMTAB, 0, 0, syms_at, syms.len() as u64, 3, 0),
            (3, 0, 0, strings_at, strings.len() as u64, 0, 0),
            (SHT_NOTE, 0, 0, note_at, note.len() as u64, 0, 0),
        ];
        if !rela.is_empty() {
            sections.push((SHT_RELA, 0, 0, rela_at, rela.len() as u64, 2, 1));
        }
        for &(kind, flags, addr, offset, size, link, info) in &sections {
            let mut sh = vec![0u8; SHDR_SIZE];
            sh[4..8].copy_from_slice(&kind.to_le_bytes());
            sh[8..16].copy_from_slice(&flags.to_le_bytes());
            sh[44..48].copy_from_slice(&info.to_le_bytes());
            sh[16..24].copy_from_slice(&addr.to_le_bytes());
            sh[24..32].copy_from_slice(&offset.to_le_bytes());
            sh[32..40].copy_from_slice(&size.to_le_bytes());
            sh[40..44].copy_from_slice(&link.to_le_bytes());
            file.extend_from_slice(&sh);
        }
        file[40..48].copy_from_slice(&shoff.to_le_bytes());
        file[58..60].copy_from_slice(&(SHDR_SIZE as u16).to_le_bytes());
        file[60..62].copy_from_slice(&(sections.len() as u16).to_le_bytes());
        file
    }

    #[test]
    fn reads_header_symbols_and_notes() {
        let file = sample(EM_CUDA, &[("k_exec_mode", 0, &[1]), ("g", 0, &[1, 2, 3, 4])]);
        let h = header(&file).unwrap();
        assert_eq!((h.machine, h.kind), (EM_CUDA, 3));
        let image = Image::parse(&file).unwrap();
        let mode = image.symbol(b"k_exec_mode").unwrap();
        assert_eq!(mode.size, 1);
        assert_eq!(image.symbol_bytes(&mode), Some(&[1u8][..]));
        let g = image.symbol(b"g").unwrap();
        assert_eq!(image.symbol_bytes(&g), Some(&[1u8, 2, 3, 4][..]));
        assert!(image.symbol(b"missing").is_none());
        assert!(image.symbol(b"k_exec").is_none(), "names match whole");
        let notes = image.notes();
        assert_eq!(notes, vec![(&b"AMD"[..], 32, &b"abc"[..])]);
    }

    #[test]
    fn malformed_files_yield_none_without_panicking() {
        let file = sample(EM_AMDGPU, &[("x", 0, &[7; 8])]);
        assert!(header(&file[..63]).is_none());
        for cut in [0, 10, 64, 100, file.len() / 2, file.len() - 1] {
            if let Some(image) = Image::parse(&file[..cut]) {
                let _ = image.symbol(b"x").map(|s| image.symbol_bytes(&s));
                let _ = image.notes();
            }
        }
        // Corrupt every byte in turn: nothing may panic.
        for i in 0..file.len() {
            let mut bad = file.clone();
            bad[i] ^= 0xff;
            if let Some(image) = Image::parse(&bad) {
                let _ = image.symbol(b"x").map(|s| image.symbol_bytes(&s));
                let _ = image.notes();
            }
        }
        let mut wrong_class = file.clone();
        wrong_class[4] = 1;
        assert!(Image::parse(&wrong_class).is_none());
    }

    /// The client check on committed images clang-16 built: an AMDGPU code object, whose hidden client
    /// object is local, is judged by its load displacement; cubins (ptxas writes `SHT_REL` for sm_80 and
    /// `SHT_RELA` for sm_90) by the pointer's own relocation.
    #[test]
    fn a_client_pointer_is_judged_from_the_images_own_symbols_and_relocations() {
        let client = b"__llvm_libc_rpc_client";
        let code_object = include_bytes!("../../tests/data/amdgpu/cuda_module-gfx90a.hsaco");
        let image = Image::parse(code_object).unwrap();
        let (pointer, object) = (
            image.symbol(client).unwrap(),
            image.symbol(b"omprpc_client_object").unwrap(),
        );
        assert_eq!((object.is_local(), object.size), (true, 552), "hidden, so local");
        let base = 0x7f00_0000_0000u64;
        let (pointer_at, object_at) = (base + pointer.value, base + object.value);
        assert!(image.pointee_is_writable(client, pointer_at, object_at, 552));
        assert!(image.pointee_is_writable(client, pointer_at, object_at + 8, 544));
        assert!(
            !image.pointee_is_writable(client, pointer_at, object_at + 8, 552),
            "past the object"
        );
        assert!(
            !image.pointee_is_writable(client, pointer_at, object_at - 0x1000, 552),
            "elsewhere"
        );
        assert!(
            !image.pointee_is_writable(client, pointer_at, 0x1000, 552),
            "the unrelocated address"
        );
        let text = image.symbols().into_iter().find(|(_, s)| s.kind == 2).unwrap().1;
        assert!(
            !image.pointee_is_writable(client, pointer_at, base + text.value, 8),
            "code"
        );
        assert!(!image.pointee_is_writable(b"missing", pointer_at, object_at, 552));

        for cubin in [
            &include_bytes!("../../tests/data/nvptx/cuda_module-sm_80.cubin")[..],
            &include_bytes!("../../tests/data/nvptx/cuda_module-sm_90.cubin")[..],
        ] {
            let image = Image::parse(cubin).unwrap();
            // The pointer's own relocation (type 4, a 64-bit address), not the code's 32-bit halves.
            let relocation = image
                .relocations()
                .into_iter()
                .find(|r| r.symbol == b"omprpc_client_object" && r.kind == 4)
                .expect("the pointer is relocated to the client object");
            assert_eq!(relocation.addend, 0);
            // Sections are placed one by one: any loaded values, as the relocation names the object.
            assert!(image.pointee_is_writable(client, 0x5000, 0x9000, 552));
            assert!(
                !image.pointee_is_writable(client, 0x5000, 0x9000, 553),
                "bigger than the object"
            );
        }
        // A cubin-like image whose pointer has no relocation holds a constant, never the image's memory.
        let constant = sample(
            EM_CUDA,
            &[("object", 0, &[0; 552]), ("__llvm_libc_rpc_client", 0, &[0; 8])],
        );
        assert!(!Image::parse(&constant)
            .unwrap()
            .pointee_is_writable(client, 0x5000, 0x1000, 552));
        let relocated = sample_with_relocations(
            EM_CUDA,
            &[
                ("object", 0, &[0; 552]),
                ("__llvm_libc_rpc_client", 0, &[0; 8]),
                ("small", 0, &[0; 4]),
            ],
            &[("__llvm_libc_rpc_client", "small")],
        );
        assert!(!Image::parse(&relocated)
            .unwrap()
            .pointee_is_writable(client, 0x5000, 0x1000, 552));
    }
}
