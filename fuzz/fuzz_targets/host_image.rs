//! `backend::host::elf_check`: whether untrusted bytes are an x86-64 shared object the host backend
//! loads, called as `__tgt_rtl_is_valid_binary` does: with the image's first 4 KiB and its whole length.
#![no_main]

mod leak_check;

#[global_allocator]
static ALLOCATOR: leak_check::Counting = leak_check::Counting;

use libfuzzer_sys::fuzz_target;
use omprpc::backend::host::elf_check::check_x86_64_shared_object;
use omprpc::backend::host::HostBackend;
use omprpc::backend::{Backend, IMAGE_HEADER_BYTES};
use omprpc::util::config::Config;
use std::sync::LazyLock;

static BACKEND: LazyLock<HostBackend> = LazyLock::new(|| HostBackend::from_config(&Config::from_lookup(|_| None)));

/// What the check must answer, from the ELF specification: a 64-bit LE x86-64 `ET_DYN` file whose
/// program header table is non-empty and ends inside the image.
fn expected(image: &[u8], image_len: usize) -> bool {
    if image.len() < 64 || image_len < 64 {
        return false;
    }
    let u16_at = |at: usize| u64::from(u16::from_le_bytes([image[at], image[at + 1]]));
    let phoff = u64::from_le_bytes(image[32..40].try_into().unwrap());
    let (phentsize, phnum) = (u16_at(54), u16_at(56));
    image[..4] == *b"\x7fELF"
        && image[4] == 2
        && image[5] == 1
        && u16_at(18) == 62
        && u16_at(16) == 3
        && phnum > 0
        && u128::from(phoff) + u128::from(phentsize) * u128::from(phnum) <= image_len as u128
}

fuzz_target!(|data: &[u8]| leak_check::run(data, one_input));

/// Checks one input (see the header comment).
fn one_input(data: &[u8]) {
    let header = &data[..data.len().min(IMAGE_HEADER_BYTES)];
    // The image's length libomptarget passes, and a claimed length from bytes the check ignores
    // (`e_shnum` and `e_shstrndx`), as a corrupt image end would give.
    let claimed = data
        .get(60..64)
        .map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap()) as usize);
    for image_len in [data.len(), claimed] {
        let result = check_x86_64_shared_object(header, image_len);
        assert_eq!(
            result.is_ok(),
            expected(header, image_len),
            "{result:?} for image_len {image_len}"
        );
        // Only the ELF header is read: 64 bytes decide as well as 4 KiB.
        if header.len() >= 64 {
            assert_eq!(check_x86_64_shared_object(&header[..64], image_len), result);
        }
        assert_eq!(check_x86_64_shared_object(data, image_len), result);
        assert_eq!(BACKEND.is_compatible_image(header, image_len, None), result.is_ok());
    }
}
