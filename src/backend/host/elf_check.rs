//! Recognises host device images: 64-bit little-endian x86-64 ELF shared objects.

use crate::util::elf::{self, EM_X86_64};

const ET_DYN: u16 = 3;

/// Why an image is not an x86-64 shared object, or `Ok` when it is one this backend can load.
/// `image` holds at least the image's first bytes (the whole image is not needed); `image_len` is the
/// size of the whole image.
pub fn check_x86_64_shared_object(image: &[u8], image_len: usize) -> Result<(), &'static str> {
    if image.len() < 64 || image_len < 64 {
        return Err("shorter than an ELF header");
    }
    if image[..4] != *b"\x7fELF" {
        return Err("not an ELF file");
    }
    if image[4] != 2 {
        return Err("not a 64-bit ELF file");
    }
    if image[5] != 1 {
        return Err("not a little-endian ELF file");
    }
    let header = elf::header(image).ok_or("not an ELF file")?;
    if header.machine != EM_X86_64 {
        return Err("not built for x86-64");
    }
    if header.kind != ET_DYN {
        return Err("not a shared object");
    }
    let phnum = u64::from(header.program_headers);
    let ph_end = u64::from(header.program_header_size)
        .checked_mul(phnum)
        .and_then(|n| n.checked_add(header.program_headers_offset));
    match ph_end {
        Some(end) if phnum > 0 && end <= image_len as u64 => Ok(()),
        _ => Err("program headers missing or past the end of the image (truncated?)"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal header of an x86-64 shared object with one program header, for tests.
    pub(crate) fn minimal_x86_64_so() -> Vec<u8> {
        let mut image = vec![0u8; 64 + 56];
        image[..4].copy_from_slice(b"\x7fELF");
        image[4] = 2;
        image[5] = 1;
        image[6] = 1;
        image[16..18].copy_from_slice(&ET_DYN.to_le_bytes());
        image[18..20].copy_from_slice(&EM_X86_64.to_le_bytes());
        image[32..40].copy_from_slice(&64u64.to_le_bytes());
        image[52..54].copy_from_slice(&64u16.to_le_bytes());
        image[54..56].copy_from_slice(&56u16.to_le_bytes());
        image[56..58].copy_from_slice(&1u16.to_le_bytes());
        image
    }

    fn check(image: &[u8]) -> Result<(), &'static str> {
        check_x86_64_shared_object(image, image.len())
    }

    #[test]
    fn accepts_an_x86_64_shared_object() {
        assert_eq!(check(&minimal_x86_64_so()), Ok(()));
    }

    #[test]
    fn rejects_everything_else() {
        let good = minimal_x86_64_so();
        let with = |offset: usize, bytes: &[u8]| {
            let mut image = good.clone();
            image[offset..offset + bytes.len()].copy_from_slice(bytes);
            image
        };
        assert_eq!(check(&[]), Err("shorter than an ELF header"));
        assert_eq!(check(&good[..63]), Err("shorter than an ELF header"));
        assert_eq!(check(&with(0, b"\x7fELG")), Err("not an ELF file"));
        assert_eq!(check(&with(4, &[1])), Err("not a 64-bit ELF file"));
        assert_eq!(check(&with(5, &[2])), Err("not a little-endian ELF file"));
        // CUDA (190) and AMDGPU (224) images are ELF too, and must be turned down quietly.
        assert_eq!(check(&with(18, &190u16.to_le_bytes())), Err("not built for x86-64"));
        assert_eq!(check(&with(18, &224u16.to_le_bytes())), Err("not built for x86-64"));
        assert_eq!(check(&with(16, &2u16.to_le_bytes())), Err("not a shared object"));
        assert!(check(&good[..100]).is_err(), "truncated program headers");
        assert!(check(&with(56, &0u16.to_le_bytes())).is_err());
        assert!(check(&with(32, &u64::MAX.to_le_bytes())).is_err());
        // Only the header is needed, but the program headers must lie inside the whole image.
        assert_eq!(check_x86_64_shared_object(&good[..64], good.len()), Ok(()));
        assert!(check_x86_64_shared_object(&good[..64], 64).is_err());
    }
}
