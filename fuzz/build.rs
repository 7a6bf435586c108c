//! Builds the device library's own C code (`device/ctype.c`, `string.c`, `stdlib.c`: what target
//! regions run on a GPU) for the host, with every function named `omprpc_libc_<name>`, so that the
//! `libc_device_code` target can call it beside the host's C library.
fn main() {
    let device = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../device");
    let sources = ["ctype.c", "string.c", "stdlib.c"].map(|s| device.join(s));
    for source in &sources {
        println!("cargo:rerun-if-changed={}", source.display());
    }
    println!("cargo:rerun-if-changed={}", device.join("omprpc_libc_common.h").display());
    cc::Build::new()
        // The compiler the library is built with (its GPU objects and the differential test).
        .compiler("clang-16")
        .define("OMPRPC_LIBC_PREFIX", "1")
        // Each call a call, as in the library's own build.
        .flag("-fno-builtin")
        // The OpenMP pragmas that frame the code mean nothing to a plain C build.
        .flag("-Wno-unknown-pragmas")
        .files(&sources)
        .compile("omprpc_libc_device_code");
}
