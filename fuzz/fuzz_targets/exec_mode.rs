//! `plugin::image_loading`: a kernel's execution mode read from the `<kernel>_exec_mode` byte of an untrusted
//! ELF image, as `load_binary` reads it for every kernel, and the size check of device globals.
#![no_main]

mod leak_check;

#[global_allocator]
static ALLOCATOR: leak_check::Counting = leak_check::Counting;

use std::ffi::CString;

use libfuzzer_sys::fuzz_target;
use omprpc::backend::ExecMode;
use omprpc::plugin::image_loading::{check_global_size, exec_mode};
use omprpc::util::elf;

const SUFFIX: &[u8] = b"_exec_mode";

/// What `exec_mode` must answer: the default without a stored byte, else the byte's mode or an error.
fn expected(image: &elf::Image, kernel: &[u8], default: ExecMode) -> Option<ExecMode> {
    let name = [kernel, SUFFIX].concat();
    match image
        .symbol(&name)
        .and_then(|s| image.symbol_bytes(&s))
        .and_then(|b| b.first().copied())
    {
        None => Some(default),
        Some(byte) => ExecMode::from_byte(byte),
    }
}

fn check(image: Option<&elf::Image>, kernel: &[u8], default: ExecMode) {
    let got = exec_mode(image, kernel, default);
    match image {
        None => assert_eq!(got.as_ref().ok(), Some(&default), "no image: the default"),
        Some(image) => match (got, expected(image, kernel, default)) {
            (Ok(mode), Some(want)) => assert_eq!(mode, want),
            (Err(e), None) => {
                let text = e.to_string();
                let name = String::from_utf8_lossy(&[kernel, SUFFIX].concat()).into_owned();
                assert!(text.contains(&name), "the error names the symbol: {text}");
            }
            (got, want) => panic!("exec_mode gave {:?}, expected {want:?}", got.map_err(|e| e.to_string())),
        },
    }
}

fuzz_target!(|data: &[u8]| leak_check::run(data, one_input));

/// Checks one input (see the header comment).
fn one_input(data: &[u8]) {
    let default = [ExecMode::Generic, ExecMode::Spmd, ExecMode::GenericSpmd][data.len() % 3];
    let image = elf::Image::parse(data);
    // A kernel name from the input's last bytes (most images have none such; the default applies).
    let tail = &data[data.len().saturating_sub(24)..];
    check(image.as_ref(), tail, default);
    check(None, tail, default);
    let Some(image) = image else {
        return;
    };
    // Every kernel the image declares a mode for, as libomptarget's entries would name them.
    for (name, symbol) in image.symbols().into_iter().take(64) {
        if let Some(kernel) = name.strip_suffix(SUFFIX) {
            check(Some(&image), kernel, default);
        }
        // Globals: the host's size against the image's; names never hold a NUL.
        let cname = CString::new(name).expect("symbol names stop at their NUL");
        let device_size = symbol.size as usize;
        assert!(check_global_size(&cname, device_size, device_size).is_ok());
        let other = device_size ^ (data.len() | 1);
        let err = check_global_size(&cname, other, device_size).unwrap_err().to_string();
        assert!(err.contains(&cname.to_string_lossy().into_owned()), "{err}");
    }
}
