//! The device-side client compiled for GPUs by clang-16: full OpenMP programs for NVIDIA (sm_70, sm_80,
//! sm_90) and AMD (gfx90a, wavefront 64; gfx1030 and gfx1100, wavefront 32) link, their device images carry what
//! the plugin looks for, the NVPTX code uses system-scope atomics, fences and warp primitives, and the
//! host plugin turns the GPU images down without a word. Running them needs a GPU (the GPU check does);
//! building them needs only the toolchains that scripts/setup-gpu-toolchains.sh installs.

mod support;

use std::ffi::c_void;
use std::process::Command;

use omprpc::util::elf;
use support::{build_gpu_program, extract_image, Gpu};

const GPUS: [Gpu; 6] = [
    Gpu::Nvptx("sm_70"),
    Gpu::Nvptx("sm_80"),
    Gpu::Nvptx("sm_90"),
    Gpu::Amdgcn("gfx90a"),
    Gpu::Amdgcn("gfx1030"),
    // Linked with a copy of Debian's device libraries given gfx1100's ISA version (see
    // support::rocm_device_libs).
    Gpu::Amdgcn("gfx1100"),
];

/// Checks one device image: the machine, the architecture in the header, the RPC client pointer, the
/// kernels' execution modes and (AMDGPU) the wavefront size in the kernel metadata.
fn check_image(image: &[u8], gpu: Gpu) {
    let header = elf::header(image).unwrap_or_else(|| panic!("{gpu:?}: not an ELF image"));
    let parsed = elf::Image::parse(image).unwrap();
    match gpu {
        Gpu::Nvptx(arch) => {
            assert_eq!(header.machine, elf::EM_CUDA, "{gpu:?}");
            let sm: u32 = arch.trim_start_matches("sm_").parse().unwrap();
            // ptxas 11.8 writes cubin ABI version 7: the SM number in the low byte of e_flags.
            assert_eq!(header.abi_version, 7, "{gpu:?}");
            assert_eq!(header.flags & 0xff, sm, "{gpu:?}: e_flags {:#x}", header.flags);
        }
        Gpu::Amdgcn(arch) => {
            assert_eq!(header.machine, elf::EM_AMDGPU, "{gpu:?}");
            let mach = match arch {
                "gfx90a" => 0x3f,
                "gfx1030" => 0x36,
                "gfx1100" => 0x41,
                _ => panic!("no e_flags known for {arch}"),
            };
            assert_eq!(header.flags & 0xff, mach, "{gpu:?}: e_flags {:#x}", header.flags);
            let wave = if arch.starts_with("gfx9") { 64u8 } else { 32 };
            let metadata = parsed
                .notes()
                .into_iter()
                .find(|(owner, kind, _)| *owner == b"AMDGPU" && *kind == 32)
                .map(|(_, _, desc)| desc)
                .unwrap_or_else(|| panic!("{gpu:?}: no AMDGPU metadata note"));
            let key = b".wavefront_size";
            let at = metadata
                .windows(key.len())
                .position(|w| w == key)
                .unwrap_or_else(|| panic!("{gpu:?}: no .wavefront_size"));
            assert_eq!(
                metadata[at + key.len()],
                wave,
                "{gpu:?}: msgpack fixint of the wavefront size"
            );
        }
    }
    let client = parsed
        .symbol(b"__llvm_libc_rpc_client")
        .unwrap_or_else(|| panic!("{gpu:?}: the image does not define __llvm_libc_rpc_client"));
    assert_eq!(client.size, 8, "{gpu:?}: a pointer to the client object");
    let modes: Vec<u8> = parsed
        .symbols()
        .into_iter()
        .filter(|(name, _)| name.ends_with(b"_exec_mode"))
        .filter_map(|(_, symbol)| parsed.symbol_bytes(&symbol).and_then(|b| b.first().copied()))
        .collect();
    assert!(!modes.is_empty(), "{gpu:?}: kernels carry their execution mode");
    assert!(modes.iter().all(|m| (1..=3).contains(m)), "{gpu:?}: modes {modes:?}");
}

/// Compiles the device client for one GPU architecture only (`--offload-device-only`), with `extra`
/// flags, into `out`.
fn device_only(triple: &str, arch: &str, extra: &[&str], out: &std::path::Path) {
    let status = Command::new("clang-16")
        .args([
            "-O2",
            "-fopenmp",
            &format!("-fopenmp-targets={triple}"),
            &format!("-Xopenmp-target={triple}"),
            &format!("-march={arch}"),
            "--offload-device-only",
            "-nogpulib",
            "-Wall",
            "-Werror",
        ])
        .args(extra)
        .arg("-I")
        .arg(support::root().join("include"))
        .arg(support::root().join("c_tests/gpu/device_client.c"))
        .arg("-o")
        .arg(out)
        .status()
        .unwrap();
    assert!(status.success(), "device-only compile for {arch}");
}

#[test]
fn the_device_client_builds_for_every_gpu_target() {
    for gpu in GPUS {
        let exe = build_gpu_program("gpu/device_client.c", gpu);
        check_image(&extract_image(&exe, gpu), gpu);
    }
    // C++: printf through variadic templates, and the host-services test programs.
    for gpu in [Gpu::Nvptx("sm_90"), Gpu::Amdgcn("gfx90a")] {
        for file in ["rpc_cxx.cpp", "rpc_services.c", "rpc_user_handler.c"] {
            let exe = build_gpu_program(file, gpu);
            check_image(&extract_image(&exe, gpu), gpu);
        }
    }
}

/// Device-only compiles to PTX text, which needs no CUDA toolkit: the client's mailbox accesses must be
/// system-scope (the mailbox is host memory shared with the host's server).
#[test]
fn nvptx_client_code_uses_system_scope_atomics_and_warp_primitives() {
    support::require_toolchain();
    for arch in ["sm_70", "sm_90"] {
        let out = support::scratch().join(format!("device_client-{arch}.ptx"));
        // Without a CUDA toolkit clang-16 assumes PTX 4.2; the warp primitives need 6.0, nanosleep 6.3.
        device_only("nvptx64-nvidia-cuda", arch, &["--cuda-feature=+ptx63", "-S"], &out);
        let ptx = std::fs::read_to_string(&out).unwrap();
        assert!(ptx.contains(&format!(".target {arch}")), "{arch}");
        for needle in [
            "atom.sys.or.b32",
            "atom.sys.and.b32",
            "membar.sys",
            "ld.volatile.u32",
            "st.volatile.u32",
            "activemask.b32",
            "vote.sync.ballot.b32",
            "shfl.sync.idx.b32",
            "bar.warp.sync",
            "nanosleep.u32",
        ] {
            assert!(ptx.contains(needle), "{arch}: no {needle} in the client's PTX");
        }
        outbox_stores_are_fenced_by_every_lane(&ptx, arch);
    }
}

/// The client's only volatile 32-bit stores are the flips of a port's outbox. As in LLVM libc's client,
/// every lane that stores one first orders its own packet writes with a system-scope fence, so no lane
/// relies on `bar.warp.sync` to order its writes at system scope: walking back from each store, a
/// `membar.sys` comes before any branch, label or predicated instruction; and the flips that follow a
/// warp barrier do so in one straight block, run by every lane that passed it (when only the leader
/// stored, every store sat behind a branch on the lane id: none followed the barrier directly).
fn outbox_stores_are_fenced_by_every_lane(ptx: &str, arch: &str) {
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    let is_mark = |l: &&&str| {
        ["membar.sys", "@", "bra", "$L", "bar.warp.sync"]
            .iter()
            .any(|m| l.starts_with(m))
    };
    let (mut stores, mut after_barrier) = (0, 0);
    for (at, _) in lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("st.volatile.u32"))
    {
        stores += 1;
        let mut marks = lines[..at].iter().rev().filter(is_mark);
        let fence = marks.next().copied().unwrap_or("the start of the file");
        assert!(
            fence.starts_with("membar.sys"),
            "{arch}: the outbox store on PTX line {} has no fence in its own block (first found walking \
             back: {fence})",
            at + 1
        );
        after_barrier += usize::from(marks.next().is_some_and(|l| l.starts_with("bar.warp.sync")));
    }
    assert!(stores >= 4, "{arch}: the client flips outboxes ({stores} stores found)");
    assert!(
        after_barrier * 2 > stores,
        "{arch}: only {after_barrier} of {stores} outbox stores follow the warp barrier in every lane"
    );
}

/// AMDGPU device code in LLVM IR: atomics and fences without a narrower `syncscope` are system-scope.
#[test]
fn amdgpu_client_atomics_are_system_scope() {
    support::require_gpu_toolchains();
    for arch in ["gfx90a", "gfx1030", "gfx1100"] {
        let out = support::scratch().join(format!("device_client-{arch}.ll"));
        device_only("amdgcn-amd-amdhsa", arch, &["-S", "-emit-llvm"], &out);
        let ir = std::fs::read_to_string(&out).unwrap();
        let atomics: Vec<&str> = ir
            .lines()
            .filter(|l| l.contains("atomicrmw") || l.contains(" fence ") || l.contains("load atomic"))
            .collect();
        assert!(atomics.len() >= 4, "{arch}: the client's atomics: {atomics:?}");
        for line in &atomics {
            assert!(
                !line.contains("syncscope("),
                "{arch}: narrower than system scope: {line}"
            );
        }
        let wave = if arch.starts_with("gfx9") { "64" } else { "32" };
        assert!(
            ir.contains(&format!("wavefrontsize{wave}")),
            "{arch}: built for wavefronts of {wave}"
        );
    }
}

#[repr(C)]
struct DeviceImage {
    start: *const u8,
    end: *const u8,
    entries_begin: *const c_void,
    entries_end: *const c_void,
}

#[repr(C)]
struct ImageInfo {
    arch: *const std::ffi::c_char,
}

/// Every plugin is offered every image: the host plugin must say no to GPU images.
#[test]
fn the_host_plugin_turns_gpu_images_down() {
    let dir = support::host_plugin_dir();
    // SAFETY: loading our own plugin, whose initialisers only set up Rust statics.
    let lib = unsafe { libloading::Library::new(dir.join("libomptarget.rtl.x86_64.nextgen.so")) }.unwrap();
    type Valid = unsafe extern "C" fn(*const DeviceImage) -> i32;
    type ValidInfo = unsafe extern "C" fn(*const DeviceImage, *const ImageInfo) -> i32;
    // SAFETY: the symbols are ours, with these signatures.
    let (valid, valid_info) = unsafe {
        (
            *lib.get::<Valid>(b"__tgt_rtl_is_valid_binary\0").unwrap(),
            *lib.get::<ValidInfo>(b"__tgt_rtl_is_valid_binary_info\0").unwrap(),
        )
    };
    for gpu in [Gpu::Nvptx("sm_90"), Gpu::Amdgcn("gfx90a")] {
        let image = extract_image(&build_gpu_program("gpu/device_client.c", gpu), gpu);
        let desc = DeviceImage {
            start: image.as_ptr(),
            // SAFETY: one past the end of `image`.
            end: unsafe { image.as_ptr().add(image.len()) },
            entries_begin: std::ptr::null(),
            entries_end: std::ptr::null(),
        };
        let arch = std::ffi::CString::new(gpu.arch()).unwrap();
        let info = ImageInfo { arch: arch.as_ptr() };
        // SAFETY: valid descriptors of live memory.
        unsafe {
            assert_eq!(valid(&desc), 0, "{gpu:?}");
            assert_eq!(valid_info(&desc, &info), 0, "{gpu:?}");
        }
    }
}

/// AMD device code rings the host after each request as ROCm's hostcall does: ockl's signal store,
/// which for a signal with an event mailbox writes the event id and raises the interrupt that wakes the
/// host thread waiting on the signal (`s_sendmsg sendmsg(MSG_INTERRUPT)`), on the handle the plugin
/// writes into the image's `__omprpc_rpc_doorbell`.
#[test]
fn amdgpu_client_code_rings_its_doorbell_with_an_interrupt() {
    let gpu = Gpu::Amdgcn("gfx90a");
    let exe = build_gpu_program("gpu/device_client.c", gpu);
    let image = support::scratch().join("device_client-gfx90a.hsaco");
    std::fs::write(&image, extract_image(&exe, gpu)).unwrap();
    let disassembly = Command::new("llvm-objdump-16")
        .arg("-d")
        .arg(&image)
        .output()
        .expect("llvm-objdump-16 (install it with: sudo sh scripts/setup-debian.sh)");
    let text = String::from_utf8_lossy(&disassembly.stdout);
    assert!(
        text.contains("s_sendmsg sendmsg(MSG_INTERRUPT)"),
        "no interrupt raised by the client's code"
    );
    let symbols = Command::new("llvm-readelf-16").arg("-s").arg(&image).output().unwrap();
    let symbols = String::from_utf8_lossy(&symbols.stdout);
    assert!(
        symbols
            .lines()
            .any(|l| l.contains("__omprpc_rpc_doorbell") && l.contains("OBJECT") && l.contains(" 8 ")),
        "the doorbell the plugin writes: {symbols}"
    );
}
