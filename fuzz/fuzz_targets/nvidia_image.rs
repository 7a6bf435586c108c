//! `backend::cuda::cubin`: cubin and PTX detection from an image's first bytes, the capability in a
//! cubin's `e_flags`, `sm_XY` architecture strings, and the rule that decides which devices run an
//! image (what `CudaBackend::is_compatible_image` does, minus the driver).
#![no_main]

mod leak_check;

#[global_allocator]
static ALLOCATOR: leak_check::Counting = leak_check::Counting;

use libfuzzer_sys::fuzz_target;
use omprpc::backend::cuda::cubin::{cubin_capability, Capability, NvidiaImage, EM_CUDA};
use omprpc::backend::IMAGE_HEADER_BYTES;
use omprpc::util::elf;

/// Devices the rule is checked against: the generations clang 16 targets and the extremes.
const DEVICES: [u32; 10] = [10, 35, 52, 70, 75, 80, 86, 89, 90, 100];

fn check_capability_text(text: &str) {
    let Some(cap) = Capability::parse(text) else {
        return;
    };
    assert!(text.starts_with("sm_"), "{text:?} parsed without the sm_ prefix");
    assert!(cap.minor < 10 && cap.major >= 1, "{cap:?} from {text:?}");
    // Printing and parsing again gives the same capability.
    assert_eq!(Capability::parse(&cap.to_string()), Some(cap), "{text:?} -> {cap}");
}

fuzz_target!(|data: &[u8]| leak_check::run(data, one_input));

/// Checks one input (see the header comment).
fn one_input(data: &[u8]) {
    let header = &data[..data.len().min(IMAGE_HEADER_BYTES)];
    let detected = NvidiaImage::detect(header);
    match (elf::header(header), detected) {
        (Some(h), Some(NvidiaImage::Cubin(cap))) => {
            assert_eq!(h.machine, EM_CUDA, "only machine 190 is a cubin");
            assert_eq!(cap, cubin_capability(h.abi_version, h.flags));
            // Only the ELF header decides.
            assert_eq!(NvidiaImage::detect(&header[..64]), detected);
            assert_eq!(NvidiaImage::detect(data), detected);
        }
        (Some(h), None) => assert_ne!(h.machine, EM_CUDA, "a cubin was not recognised"),
        (Some(_), Some(NvidiaImage::Ptx(_))) => panic!("an ELF file taken for PTX"),
        (None, Some(NvidiaImage::Cubin(_))) => panic!("a cubin without an ELF header"),
        (None, Some(NvidiaImage::Ptx(cap))) => {
            let text = std::str::from_utf8(header.split(|&b| b == 0).next().unwrap()).unwrap();
            assert!(
                text.contains(".version") && text.contains(".target"),
                "PTX without .version/.target"
            );
            assert!(cap.minor < 10);
        }
        (None, None) => {}
    }
    if let Some(image) = detected {
        let cap = match image {
            NvidiaImage::Cubin(c) | NvidiaImage::Ptx(c) => c,
        };
        assert!(image.runs_on(cap), "an image runs on the device it was built for");
        for sm in DEVICES {
            let device = Capability::from_sm(sm);
            if image.runs_on(device) {
                match image {
                    NvidiaImage::Cubin(c) => assert!(device.major == c.major && device.minor >= c.minor),
                    NvidiaImage::Ptx(c) => assert!(device >= c),
                }
            }
        }
    }

    // Architecture strings as `__tgt_image_info` carries them: the whole input, and its words.
    let text = String::from_utf8_lossy(data);
    check_capability_text(&text);
    for word in text.split_whitespace().take(8) {
        check_capability_text(word);
        // The offload wrapper's arch overrides a cubin's own capability, as in is_compatible_image.
        if let (Some(NvidiaImage::Cubin(_)), Some(cap)) = (detected, Capability::parse(word)) {
            assert!(NvidiaImage::Cubin(cap).runs_on(cap));
        }
    }
    // Every combination of ABI version and flags yields a capability that prints as sm_<n>.
    if data.len() >= 5 {
        let cap = cubin_capability(data[0], u32::from_le_bytes(data[1..5].try_into().unwrap()));
        assert!(cap.minor < 10);
        let _ = cap.to_string();
    }
}
