//! omprpc's device library (`device/`, `libomprpc-device.a`), which gives unchanged programs host
//! services and the C library functions that run on the device: its own code run through omprpc's
//! host device against the host's printf and glibc,
//! unchanged programs linked with it for every GPU target, and the printf argument layout it relies on
//! checked against the struct clang-16 builds for nvptx64 and amdgcn. Host services need the `rpc`
//! feature.
#![cfg(feature = "rpc")]

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use omprpc::rpc::services::printf::{arguments, layout, Arg};
use support::{build_program, check_ours_ran, run, Gpu, Plugin};

/// `c_tests/libc_library.c` for a host device with one lane, or as a simulated warp of `lanes`.
fn libc_library(lanes: usize) -> PathBuf {
    if lanes == 1 {
        build_program("libc_library.c")
    } else {
        support::build_program_with("libc_library.c", &[&format!("-DOMPRPC_SIMULATED_LANES={lanes}")])
    }
}

/// The library's code prints what the host's printf prints, from one lane and from every lane of a
/// simulated warp of 32 and 64 (each lane's line once, in lane order, with a line of its own too), and
/// its stdio and malloc calls behave as the C library's in every lane.
#[test]
fn library_code_prints_what_the_hosts_printf_prints() {
    for lanes in [1usize, 32, 64] {
        let out = run(&libc_library(lanes), &[], Plugin::Ours, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{lanes} lanes: exited with {}; stderr:\n{stderr}",
            out.status
        );
        check_ours_ran(&stderr).unwrap();
        let (device, host) = stdout
            .split_once("--- the host's printf:\n")
            .unwrap_or_else(|| panic!("no host half in:\n{stdout}"));
        let (host_printed, results) = host.split_once("--- results:").expect("results");
        assert!(host_printed.lines().count() >= 13 * lanes, "{host_printed}");
        let tail = format!(
            "{}{}{}{}",
            "puts line\n".repeat(lanes),
            "fputs line\n".repeat(lanes),
            "!".repeat(lanes),
            "\n".repeat(lanes)
        );
        assert_eq!(
            device,
            format!("{host_printed}{tail}"),
            "{lanes} lanes: the library's printf (first) against the host's"
        );
        let mut lines = results.lines();
        let ours = lines.next().unwrap().trim();
        let theirs = lines
            .next()
            .unwrap()
            .trim_start_matches("--- the host's results:")
            .trim();
        assert_eq!(ours, theirs, "{lanes} lanes: printf's results");
        assert_eq!(
            lines.next(),
            Some("streams: 0 0 33 10 | 1 19 0 19 0 0 0 0 | written by lane 00"),
            "puts, fputs, putchar, fputc | fopen, fwrite, fflush, ftell, fseek, feof/ferror, fclose, remove | fgets"
        );
        assert_eq!(
            lines.next(),
            Some("characters: 0 119114 81 81 -9 0"),
            "fseek, fgetc and getc ('w', 'r'), ungetc('Q') and fgetc, fgetc at the end (EOF, feof 1), \
             clearerr (feof and ferror 0)"
        );
        assert_eq!(
            lines.next(),
            Some("memory: 1"),
            "malloc, realloc, calloc, aligned_alloc"
        );
        assert_eq!(
            lines.next(),
            Some("lanes agree: 1"),
            "{lanes} lanes: every lane's results, its own file read back"
        );
    }
}

/// `exit` from one lane (the last of a simulated warp) ends the program with its status, after
/// what was printed.
#[test]
fn library_exit_ends_the_program_with_its_status() {
    for lanes in [1usize, 32, 64] {
        let out = run(&libc_library(lanes), &["x"], Plugin::Ours, &[]);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{lanes} lanes: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("lanes agree: 1\n"),
            "{lanes} lanes: output flushed"
        );
    }
}

#[test]
fn library_assert_reports_as_a_host_assert_and_aborts() {
    use std::os::unix::process::ExitStatusExt;
    for lanes in [1usize, 32, 64] {
        let out = run(&libc_library(lanes), &["a"], Plugin::Ours, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{lanes} lanes: {stderr}");
        assert!(
            stderr.contains(": libc_library.c:99: main: Assertion `two + 2 == 5' failed.\n"),
            "{lanes} lanes: glibc's message for the device's assertion:\n{stderr}"
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("lanes agree: 1\n"),
            "{lanes} lanes: output flushed first"
        );
    }
}

/// The library built for every GPU target, once per test process.
fn library_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        support::require_gpu_toolchains();
        let dir = support::scratch().join("device-library");
        let out = Command::new("sh")
            .arg(support::root().join("scripts/build-device-lib.sh"))
            .arg(&dir)
            .output()
            .expect("sh");
        assert!(
            out.status.success(),
            "scripts/build-device-lib.sh failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
    .clone()
}

/// Builds `c_tests/gpu/unchanged.c` for `gpu` with `extra` flags; the compiler's output on failure.
fn build_unchanged(gpu: Gpu, extra: &[String]) -> Result<PathBuf, String> {
    build_gpu_program("unchanged.c", gpu, extra)
}

/// Builds `c_tests/gpu/<file>` (C, or C++17 for `.cpp`) for `gpu` with `extra` flags; the compiler's
/// output on failure.
fn build_gpu_program(file: &str, gpu: Gpu, extra: &[String]) -> Result<PathBuf, String> {
    // A name of this build's own: tests running at once build the same file for the same target.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let build = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let exe = support::scratch()
        .join("gpu")
        .join(format!("{file}-{}-{build}", gpu.arch()));
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    let cxx = file.ends_with(".cpp");
    let out = gpu
        .compiler(if cxx { "clang++-16" } else { "clang-16" })
        .args(["-O2", "-Wall", "-Werror"])
        .args(if cxx { &["-std=c++17"][..] } else { &[] })
        .arg(support::root().join("c_tests/gpu").join(file))
        // After the source, as a linker needs an archive after the objects that use it.
        .args(extra)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("clang-16");
    if out.status.success() {
        Ok(exe)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The symbols of an ELF file as `llvm-readelf-16 -s` lists them: (binding, section, name).
fn symbols(image: &[u8]) -> Vec<(String, String, String)> {
    // A file of this call's own: tests running at once list the symbols of the same program's image.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = support::scratch().join(format!("symbols-{}-{call}.image", std::process::id()));
    let name = name.as_path();
    std::fs::write(name, image).unwrap();
    let out = Command::new("llvm-readelf-16")
        .args(["-s", "--wide"])
        .arg(name)
        .output()
        .expect("llvm-readelf-16 (sh scripts/setup-debian.sh installs llvm-16)");
    let _ = std::fs::remove_file(name);
    assert!(
        out.status.success(),
        "llvm-readelf-16: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() == 8 && fields[0].ends_with(':'))
                .then(|| (fields[4].to_string(), fields[6].to_string(), fields[7].to_string()))
        })
        .collect()
}

const GPUS: [Gpu; 13] = [
    Gpu::Nvptx("sm_70"),
    Gpu::Nvptx("sm_72"),
    Gpu::Nvptx("sm_75"),
    Gpu::Nvptx("sm_80"),
    Gpu::Nvptx("sm_86"),
    Gpu::Nvptx("sm_89"),
    Gpu::Nvptx("sm_90"),
    Gpu::Amdgcn("gfx906"),
    Gpu::Amdgcn("gfx908"),
    Gpu::Amdgcn("gfx90a"),
    Gpu::Amdgcn("gfx940"),
    Gpu::Amdgcn("gfx1030"),
    Gpu::Amdgcn("gfx1100"),
];

/// The C library calls of `unchanged.c`, which the device link must find defined.
const CALLS: [&str; 25] = [
    "__llvm_omp_vprintf",
    "fgetc",
    "getc",
    "getchar",
    "ungetc",
    "clearerr",
    "puts",
    "putchar",
    "fputs",
    "fopen",
    "fwrite",
    "fflush",
    "fseek",
    "fgets",
    "ftell",
    "feof",
    "ferror",
    "fread",
    "fclose",
    "remove",
    "malloc",
    "calloc",
    "realloc",
    "aligned_alloc",
    "__assert_fail",
];

#[test]
fn unchanged_programs_link_with_the_library_for_every_gpu_target() {
    let dir = library_dir();
    let flags = vec![
        "-include".to_string(),
        dir.join("omprpc_libc.h").display().to_string(),
        format!("-L{}", dir.display()),
        "-lomprpc-device".to_string(),
    ];
    let mut failures = Vec::new();
    for gpu in GPUS {
        let exe = match build_unchanged(gpu, &flags) {
            Ok(exe) => exe,
            Err(e) => {
                failures.push(format!("{gpu:?} did not build:\n{e}"));
                continue;
            }
        };
        let image = support::extract_image(&exe, gpu);
        let symbols = symbols(&image);
        let undefined: Vec<&str> = symbols
            .iter()
            .filter(|(_, section, name)| section == "UND" && CALLS.contains(&name.as_str()))
            .map(|(_, _, name)| name.as_str())
            .collect();
        if !undefined.is_empty() {
            failures.push(format!("{gpu:?}: undefined in the image: {undefined:?}"));
        }
        if !symbols
            .iter()
            .any(|(_, section, name)| name == "__llvm_libc_rpc_client" && section != "UND")
        {
            failures.push(format!(
                "{gpu:?}: no RPC client in the image, so the library's calls are not in it"
            ));
        }
        if let Gpu::Nvptx(_) = gpu {
            // nvlink keeps function symbols: printf must be the library's, not the device runtime's,
            // and malloc and free the library's (the device heap), not CUDA's (a call into the
            // driver's own heap, which leaves no function of that name in the image).
            for wanted in ["__llvm_omp_vprintf", "malloc", "free"] {
                if !symbols
                    .iter()
                    .any(|(_, section, name)| name == wanted && section != "UND")
                {
                    failures.push(format!("{gpu:?}: {wanted} is not defined in the image"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The C library functions that run on the device (`device/ctype.c`, `string.c`, `stdlib.c`) give
/// glibc's results for the same inputs: `c_tests/libc_differential.c` calls both on tens of thousands of
/// cases in a target region on the host device (built without builtins, so that each call is one).
#[test]
fn the_librarys_own_functions_give_glibcs_results() {
    let exe = support::build_program_with("libc_differential.c", &["-fno-builtin"]);
    let (checks, _) = compared(&exe, Plugin::Ours, "the library against glibc");
    assert!(checks > 50_000, "only {checks} cases were compared");
}

/// The library's locale.h (`device/locale.c`: only the "C" locale) answers as glibc does in the "C"
/// locale: `c_tests/libc_locale.c` compares setlocale, localeconv's every field, newlocale, duplocale,
/// freelocale and uselocale, and their errno, in a target region on the host device.
#[test]
fn the_librarys_locale_functions_give_glibcs_c_locale() {
    let exe = support::build_program_with("libc_locale.c", &["-fno-builtin"]);
    let (checks, _) = compared(&exe, Plugin::Ours, "the library's locale.h against glibc");
    assert!(checks > 400, "only {checks} cases were compared");
}

/// The library's stdbit.h (`device/stdbit.c`, C23's 70 bit functions, which glibc 2.36 lacks) gives
/// what loops over the bits give: `c_tests/libc_stdbit.c` checks every function of every type (every
/// unsigned char and short; edges, powers of two and their neighbours and pseudo-random values for the
/// wider types), and `omprpc_stdbit.h`'s type-generic forms, in a target region on the host device.
#[test]
fn the_librarys_stdbit_functions_give_the_bits_answers() {
    let exe = support::build_program_with("libc_stdbit.c", &["-fno-builtin"]);
    let (checks, _) = compared(&exe, Plugin::Ours, "the library's stdbit.h against loops");
    assert!(checks > 7_000_000, "only {checks} cases were compared");
}

/// Runs a program that compares the library with glibc (its last line "N checks, M mismatches")
/// through `plugin`: how many cases it compared, and its stderr. Fails, saying `what` was compared,
/// unless it ended well with no mismatch.
fn compared(exe: &std::path::Path, plugin: Plugin, what: &str) -> (u64, String) {
    let ours = matches!(plugin, Plugin::Ours);
    let out = run(exe, &[], plugin, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if ours {
        check_ours_ran(&stderr).unwrap();
    }
    let (checks, mismatches) = stdout
        .lines()
        .last()
        .unwrap_or_default()
        .strip_suffix(" mismatches")
        .and_then(|rest| rest.split_once(" checks, "))
        .map(|(checks, mismatches)| (checks.parse::<u64>().unwrap(), mismatches.to_string()))
        .unwrap_or_else(|| panic!("{what}: no summary in:\n{stdout}{stderr}"));
    assert!(out.status.success() && mismatches == "0", "{what}:\n{stdout}{stderr}");
    (checks, stderr)
}

/// The library's `strtod`, `strtof`, `strtold` and `atof` (`device/strtod.c`, the host's C library
/// converting through the plugin's STRTOD service) give glibc's value bits, end pointers and errno:
/// `c_tests/libc_strtod.c` calls both on thousands of inputs in a target region on the host device
/// (edge cases, random numbers of every length, exact midpoints between doubles, numbers longer than
/// the device's cut); built for a simulated warp of 32, every lane then converts numbers of its own at
/// once.
#[test]
fn the_librarys_strtod_gives_glibcs_results() {
    for (flags, least) in [
        (&["-fno-builtin"][..], 80_000),
        (
            &["-fno-builtin", "-DOMPRPC_SIMULATED_LANES=32"][..],
            80_000 + 32 * 60 * 4,
        ),
    ] {
        let exe = support::build_program_with("libc_strtod.c", flags);
        let what = format!("{flags:?}: the library's strtod against glibc");
        let (checks, _) = compared(&exe, Plugin::Ours, &what);
        assert!(checks > least, "{flags:?}: only {checks} cases were compared");
    }
}

/// `snprintf`, `sprintf` and `asprintf` of device code (`omprpc_device.h`'s typed forms, which
/// `omprpc_libc.h` routes a GPU program's calls to, and the library's `asprintf`) give glibc's result and
/// bytes for the same inputs, formatted by the host through FORMAT_TO_BUFFER:
/// `c_tests/libc_snprintf.c` compares them with the host's glibc on thousands of cases in a target region
/// on the host device, and checks what it refuses (-1, the buffer untouched); the host's error lines say
/// why. Then the same from every lane of a simulated warp of 32, each lane its own text and size, with
/// all lanes, a third of them, and each alone; and the same cases through the stock plugin, where the
/// header formats on the host without a server.
#[test]
fn snprintf_in_target_regions_gives_glibcs_bytes_and_results() {
    let what = "device snprintf against glibc";
    let exe = build_program("libc_snprintf.c");
    let (checks, stderr) = compared(&exe, Plugin::Ours, what);
    assert!(checks > 50_000, "only {checks} cases were compared");
    for refusal in [
        "snprintf(\"n:%n %d\"): %n is not available to device code",
        "snprintf(\"%1$d\"): positional arguments (%1$d) are not available to device code",
        "snprintf(\"%*d\"): the output would write at least 2000001 bytes to the device's buffer, more than the \
         1048576",
    ] {
        assert!(stderr.contains(refusal), "no error line {refusal:?} in:\n{stderr}");
    }
    let warp = support::build_program_with("libc_snprintf.c", &["-DOMPRPC_SIMULATED_LANES=32"]);
    let (lanes, _) = compared(&warp, Plugin::Ours, what);
    assert_eq!(
        lanes,
        32 + 11 + 32 + 11,
        "every lane, a third of them, each alone; the refusals"
    );
    let (fallback, _) = compared(&exe, Plugin::Stock, what);
    assert_eq!(fallback, checks, "the same cases without a server");
}

/// `omprpc_sscanf`, `omprpc_fscanf` and `omprpc_scanf` (`omprpc_device.h`, which `omprpc_libc.h` routes a
/// GPU program's `sscanf`, `fscanf` and `scanf` to) give glibc's result and stored bytes, parsed by the
/// host through SCAN: `c_tests/libc_sscanf.c` compares them with the host's glibc on thousands of cases
/// in a target region on the host device (every conversion, width, length modifier, scansets, `%n`,
/// failures, limits, floats), a file it writes and stdin reopened on it, and refusals (EOF, nothing
/// stored, an error line each); built for a simulated warp of 32, each lane parses its own text.
/// Without a server the same calls are the host's own.
#[test]
fn sscanf_in_target_regions_gives_glibcs_results_and_stored_bytes() {
    let what = "device sscanf against glibc";
    let exe = build_program("libc_sscanf.c");
    let (checks, stderr) = compared(&exe, Plugin::Ours, what);
    assert!(checks > 10_000, "only {checks} cases were compared");
    for refusal in [
        "sscanf(\"%1$d\"): positional arguments (%1$d) are not available to device code; nothing stored",
        "sscanf(\"%ms\"): the allocating modifier m (%ms) is not available to device code",
        "sscanf(\"%ls\"): wide conversions (%ls, %lc, %l[, %S, %C) are not available to device code",
        "sscanf(\"%d %d\"): the format stores 2 conversions but 1 pointers were passed",
    ] {
        assert!(stderr.contains(refusal), "no error line {refusal:?} in:\n{stderr}");
    }
    let warp = support::build_program_with("libc_sscanf.c", &["-DOMPRPC_SIMULATED_LANES=32"]);
    let (lanes, _) = compared(&warp, Plugin::Ours, what);
    assert_eq!(
        lanes,
        32 + 11 + 32 + 7,
        "every lane, a third of them, each alone; the refusals"
    );
    let (fallback, _) = compared(&exe, Plugin::Stock, what);
    assert_eq!(
        fallback,
        checks - 4,
        "the same cases without a server, but the host's refusals"
    );
}

/// The library's clocks (`device/time.c`) in a target region on the host device: `CLOCK_MONOTONIC`
/// never goes back, `clock()` is that clock in microseconds, `nanosleep` sleeps at least the time asked
/// (by its own clock and the host's; no upper bound), other clock ids and bad requests fail with
/// EINVAL (`c_tests/libc_time.c`).
#[test]
fn the_librarys_clocks_are_monotonic_and_nanosleep_sleeps_long_enough() {
    let exe = support::build_program_with("libc_time.c", &["-fno-builtin"]);
    let out = run(&exe, &[], Plugin::Ours, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    check_ours_ran(&stderr).unwrap();
    assert!(stdout.contains("on the device: 1\n"), "{stdout}{stderr}");
    let summary = stdout.lines().last().unwrap_or_default();
    let (checks, failures) = summary
        .strip_suffix(" failures")
        .and_then(|rest| rest.split_once(" checks, "))
        .unwrap_or_else(|| panic!("no summary in:\n{stdout}{stderr}"));
    assert!(
        out.status.success() && failures == "0",
        "the library's clocks:\n{stdout}{stderr}"
    );
    assert!(checks.parse::<u64>().unwrap() > 2_000, "only {checks} checks");
}

/// The library's `getenv` (`device/omprpc_libc.c`, the host's C library answering through the
/// plugin's GETENV service) gives glibc's answer for a set variable, an empty one, one of 5,000 bytes,
/// an unset one and odd names, in a copy of the device's own that stays the same when asked again;
/// NULL for a NULL name (`c_tests/libc_getenv.c`).
#[test]
fn the_librarys_getenv_gives_the_hosts_environment() {
    let exe = support::build_program_with("libc_getenv.c", &["-fno-builtin"]);
    let long = "x".repeat(5000);
    let env = [
        ("OMPRPC_GETENV_SET", "value of a set variable"),
        ("OMPRPC_GETENV_EMPTY", ""),
        ("OMPRPC_GETENV_LONG", long.as_str()),
    ];
    assert!(
        std::env::var_os("OMPRPC_GETENV_UNSET").is_none(),
        "the test needs OMPRPC_GETENV_UNSET unset"
    );
    let out = run(&exe, &[], Plugin::Ours, &env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    check_ours_ran(&stderr).unwrap();
    assert!(stdout.contains("on the device: 1\n"), "{stdout}{stderr}");
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        out.status.success() && summary.ends_with(" checks, 0 mismatches"),
        "the library's getenv:\n{stdout}{stderr}"
    );
    let checks: u64 = summary.split(' ').next().unwrap().parse().unwrap();
    assert_eq!(
        checks, 27,
        "every name's checks (4 for each of the 4 set, 1 for each of the 5 unset) and 6 more"
    );
}

/// The library's `exit` runs the device's `atexit` handlers (64 at most, the last registered first),
/// `_Exit` runs none, and `quick_exit` runs those of `at_quick_exit` (64 at most, the last first) and
/// not `atexit`'s; each ends the process with its status, through the host, with what the host and the
/// device wrote before there once, in order, and the device's unclosed file flushed
/// (`c_tests/libc_exit.c`).
#[test]
fn library_exit_runs_atexit_handlers_and_underscore_exit_does_not() {
    let exe = support::build_program_with("libc_exit.c", &["-fno-builtin"]);
    let before = "host: before the target region\ndevice: registered 0, then -1\n\
                  device: quick registered 0, then -1\n";
    for (mode, status, handlers) in [
        ("exit", 5, "device: handler 2, after 62\ndevice: handler 1\n"),
        ("_Exit", 6, ""),
        (
            "quick_exit",
            7,
            "device: quick handler 2, after 62\ndevice: quick handler 1\n",
        ),
    ] {
        let file = support::scratch().join(format!("libc_exit_{mode}.txt"));
        let _ = std::fs::remove_file(&file);
        let out = run(&exe, &[mode, file.to_str().unwrap()], Plugin::Ours, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{mode}: {stdout}{stderr}");
        assert_eq!(
            stdout,
            format!("{before}{handlers}"),
            "{mode}: every line once, in order"
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap_or_default(),
            "written by the device\n",
            "{mode}: the device's file flushed"
        );
    }
}

/// The C library calls of `c_tests/gpu/libc_calls.c` that the library defines, which the device link must
/// find defined (glibc's ctype macros read `__ctype_*_loc`; `errno` is `__errno_location`): those that
/// run on the device, and `strtod`, `strtof`, `atof` and `_Exit`, which reach the host.
const DEVICE_CALLS: [&str; 75] = [
    "strerror",
    "__ctype_b_loc",
    "__ctype_tolower_loc",
    "__ctype_toupper_loc",
    "__errno_location",
    "isalnum",
    "isalpha",
    "isdigit",
    "isspace",
    "tolower",
    "toupper",
    "wctob",
    "strlen",
    "strnlen",
    "strcmp",
    "strncmp",
    "strcasecmp",
    "strncasecmp",
    "strcoll",
    "memcmp",
    "bcmp",
    "strchr",
    "strrchr",
    "strchrnul",
    "index",
    "rindex",
    "memchr",
    "memrchr",
    "strstr",
    "strcasestr",
    "memmem",
    "strpbrk",
    "strspn",
    "strcspn",
    "strcpy",
    "strcat",
    "strncat",
    "stpcpy",
    "strncpy",
    "stpncpy",
    "strlcpy",
    "strlcat",
    "strxfrm",
    "bcopy",
    "bzero",
    "mempcpy",
    "memccpy",
    "strtok",
    "strtok_r",
    "strsep",
    "strdup",
    "strndup",
    "strtol",
    "strtoul",
    "strtoll",
    "strtoull",
    "strtoimax",
    "strtoumax",
    "atoi",
    "atol",
    "atoll",
    "div",
    "qsort",
    "qsort_r",
    "bsearch",
    "srand",
    "rand",
    "strtod",
    "strtof",
    "atof",
    "clock_gettime",
    "clock",
    "nanosleep",
    "atexit",
    "_Exit",
];

/// A GPU program's `snprintf`, `sprintf` and `asprintf` with `-include omprpc_libc.h` take 31 arguments
/// after the format, and 32 stop the build with one message that names them and the limit, for NVIDIA
/// and AMD (`c_tests/printf_argument_limit.c`, compiled only: the message comes from the front end).
#[test]
fn gpu_snprintf_with_too_many_arguments_is_refused_naming_the_limit() {
    support::require_gpu_toolchains();
    let root = support::root();
    let header = root.join("include/omprpc_libc.h").display().to_string();
    for gpu in [Gpu::Nvptx("sm_80"), Gpu::Amdgcn("gfx90a")] {
        let build = |extra: &[&str]| {
            let object = support::scratch().join(format!("printf_argument_limit-{}-{}.o", gpu.arch(), extra.len()));
            let out = gpu
                .compiler("clang-16")
                .args([
                    "-c",
                    "-Wall",
                    "-Werror",
                    "-D_GNU_SOURCE",
                    "-DLIBC",
                    "-include",
                    &header,
                    "-I",
                ])
                .arg(root.join("include"))
                .args(extra)
                .arg(root.join("c_tests/printf_argument_limit.c"))
                .arg("-o")
                .arg(&object)
                .output()
                .expect("clang-16");
            let _ = std::fs::remove_file(&object);
            (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
        };
        let (built, stderr) = build(&[]);
        assert!(built, "{gpu:?}, 31 arguments: {stderr}");
        let (built, stderr) = build(&["-DTOO_MANY_ARGS"]);
        assert!(!built, "{gpu:?}, 32 arguments built");
        assert!(
            stderr.contains(
                "(snprintf, sprintf and asprintf on a GPU with omprpc_libc.h) take at most 31 arguments after \
                 the format"
            ),
            "{gpu:?}: {stderr}"
        );
        assert_eq!(stderr.matches("error:").count(), 1, "{gpu:?}, one error: {stderr}");
        let (built, stderr) = build(&["-DSCANF"]);
        assert!(built, "{gpu:?}, sscanf with 31 pointers: {stderr}");
        let (built, stderr) = build(&["-DSCANF", "-DTOO_MANY_ARGS"]);
        assert!(!built, "{gpu:?}, sscanf with 32 pointers built");
        assert!(
            stderr.contains("(sscanf, fscanf and scanf on a GPU with omprpc_libc.h) take at most 31 arguments"),
            "{gpu:?}: {stderr}"
        );
        assert_eq!(stderr.matches("error:").count(), 1, "{gpu:?}, one error: {stderr}");
    }
}

/// The calls of `c_tests/gpu/libc_calls.c` that `omprpc_libc.h` routes to typed forms the host formats
/// (`snprintf`, `sprintf`, and `asprintf`, the library's `omprpc_libc_asprintf_args`) or parses
/// (`sscanf`, `fscanf`, `scanf`, glibc's C99 names of them included): none may be left
/// for the device link (nvlink would fail on it; AMD would not have compiled the variadic call).
const FORMAT_CALLS: [&str; 12] = [
    "snprintf",
    "sprintf",
    "asprintf",
    "vsnprintf",
    "vsprintf",
    "omprpc_libc_asprintf_args",
    "sscanf",
    "fscanf",
    "scanf",
    "__isoc99_sscanf",
    "__isoc99_fscanf",
    "__isoc99_scanf",
];

/// `getenv`, `quick_exit` and `at_quick_exit` (`device/omprpc_libc.c`) and locale.h's functions
/// (`device/locale.c`), which `c_tests/gpu/libc_calls.c` calls too.
const HOST_AND_LOCALE_CALLS: [&str; 9] = [
    "getenv",
    "quick_exit",
    "at_quick_exit",
    "setlocale",
    "localeconv",
    "newlocale",
    "duplocale",
    "freelocale",
    "uselocale",
];

/// stdbit.h's 70 functions (`device/stdbit.c`), which `c_tests/gpu/libc_calls.c` calls through
/// `omprpc_stdbit.h`: each of the 14 for each of the 5 unsigned types.
const STDBIT_CALLS: [&str; 70] = [
    "stdc_leading_zeros_uc",
    "stdc_leading_zeros_us",
    "stdc_leading_zeros_ui",
    "stdc_leading_zeros_ul",
    "stdc_leading_zeros_ull",
    "stdc_leading_ones_uc",
    "stdc_leading_ones_us",
    "stdc_leading_ones_ui",
    "stdc_leading_ones_ul",
    "stdc_leading_ones_ull",
    "stdc_trailing_zeros_uc",
    "stdc_trailing_zeros_us",
    "stdc_trailing_zeros_ui",
    "stdc_trailing_zeros_ul",
    "stdc_trailing_zeros_ull",
    "stdc_trailing_ones_uc",
    "stdc_trailing_ones_us",
    "stdc_trailing_ones_ui",
    "stdc_trailing_ones_ul",
    "stdc_trailing_ones_ull",
    "stdc_first_leading_zero_uc",
    "stdc_first_leading_zero_us",
    "stdc_first_leading_zero_ui",
    "stdc_first_leading_zero_ul",
    "stdc_first_leading_zero_ull",
    "stdc_first_leading_one_uc",
    "stdc_first_leading_one_us",
    "stdc_first_leading_one_ui",
    "stdc_first_leading_one_ul",
    "stdc_first_leading_one_ull",
    "stdc_first_trailing_zero_uc",
    "stdc_first_trailing_zero_us",
    "stdc_first_trailing_zero_ui",
    "stdc_first_trailing_zero_ul",
    "stdc_first_trailing_zero_ull",
    "stdc_first_trailing_one_uc",
    "stdc_first_trailing_one_us",
    "stdc_first_trailing_one_ui",
    "stdc_first_trailing_one_ul",
    "stdc_first_trailing_one_ull",
    "stdc_count_zeros_uc",
    "stdc_count_zeros_us",
    "stdc_count_zeros_ui",
    "stdc_count_zeros_ul",
    "stdc_count_zeros_ull",
    "stdc_count_ones_uc",
    "stdc_count_ones_us",
    "stdc_count_ones_ui",
    "stdc_count_ones_ul",
    "stdc_count_ones_ull",
    "stdc_has_single_bit_uc",
    "stdc_has_single_bit_us",
    "stdc_has_single_bit_ui",
    "stdc_has_single_bit_ul",
    "stdc_has_single_bit_ull",
    "stdc_bit_width_uc",
    "stdc_bit_width_us",
    "stdc_bit_width_ui",
    "stdc_bit_width_ul",
    "stdc_bit_width_ull",
    "stdc_bit_floor_uc",
    "stdc_bit_floor_us",
    "stdc_bit_floor_ui",
    "stdc_bit_floor_ul",
    "stdc_bit_floor_ull",
    "stdc_bit_ceil_uc",
    "stdc_bit_ceil_us",
    "stdc_bit_ceil_ui",
    "stdc_bit_ceil_ul",
    "stdc_bit_ceil_ull",
];

/// A program that calls the C library functions that run on the device links with the library for
/// every GPU target, and without it does not (so that the check sees a missing one); with
/// `-include omprpc_libc.h`, for its snprintf, sprintf and asprintf.
#[test]
fn c_library_functions_that_run_on_the_device_link_for_every_gpu_target() {
    let dir = library_dir();
    let gnu = "-D_GNU_SOURCE".to_string();
    let header = ["-include".to_string(), dir.join("omprpc_libc.h").display().to_string()];
    let without = [gnu.clone(), header[0].clone(), header[1].clone()];
    let err =
        build_gpu_program("libc_calls.c", Gpu::Amdgcn("gfx90a"), &without).expect_err("linked without the library");
    assert!(err.contains("undefined symbol: strlen"), "{err}");
    let mut flags = without.to_vec();
    flags.extend([format!("-L{}", dir.display()), "-lomprpc-device".to_string()]);
    let names = [
        &DEVICE_CALLS[..],
        &FORMAT_CALLS[..],
        &STDBIT_CALLS[..],
        &HOST_AND_LOCALE_CALLS[..],
    ]
    .concat();
    let failures = undefined_for_every_gpu("libc_calls.c", &flags, &names);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Builds `c_tests/gpu/<file>` with `flags` for every GPU target and returns what went wrong: a build
/// that failed, or an image in which one of `names` is still undefined.
fn undefined_for_every_gpu(file: &str, flags: &[String], names: &[&str]) -> Vec<String> {
    let mut failures = Vec::new();
    for gpu in GPUS {
        let exe = match build_gpu_program(file, gpu, flags) {
            Ok(exe) => exe,
            Err(e) => {
                failures.push(format!("{file} for {gpu:?} did not build:\n{e}"));
                continue;
            }
        };
        let image = support::extract_image(&exe, gpu);
        let undefined: Vec<String> = symbols(&image)
            .into_iter()
            .filter(|(_, section, name)| section == "UND" && names.contains(&name.as_str()))
            .map(|(_, _, name)| name)
            .collect();
        if !undefined.is_empty() {
            failures.push(format!("{file} for {gpu:?}: undefined in the image: {undefined:?}"));
        }
    }
    failures
}

/// LLVM's own tests of libc in target regions (LLVM 19.1.7's `offload/test/libc`: `host_call.c`,
/// `puts.c`, `malloc.c`, `fwrite.c`, `assert.c`, `global_ctor_dtor.cpp`), unchanged, link with the
/// library for sm_80 and gfx90a, each call they make defined in the image; except that clang-16 itself
/// refuses device global constructors for NVIDIA GPUs.
#[test]
fn llvms_own_libc_tests_link_with_the_library() {
    let dir = library_dir();
    let tests = support::llvm_libc_source().join("offload/test/libc");
    let calls = ["rpc_host_call", "puts", "malloc", "free", "fwrite", "__assert_fail"];
    let mut failures = Vec::new();
    for name in [
        "host_call.c",
        "puts.c",
        "malloc.c",
        "fwrite.c",
        "assert.c",
        "global_ctor_dtor.cpp",
    ] {
        for gpu in [Gpu::Nvptx("sm_80"), Gpu::Amdgcn("gfx90a")] {
            let exe = support::scratch()
                .join("gpu")
                .join(format!("llvm-{name}-{}", gpu.arch()));
            std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
            let out = gpu
                .compiler(if name.ends_with(".cpp") {
                    "clang++-16"
                } else {
                    "clang-16"
                })
                .arg("-O2")
                .arg(tests.join(name))
                .arg(format!("-L{}", dir.display()))
                .arg("-lomprpc-device")
                .arg("-o")
                .arg(&exe)
                .output()
                .expect("clang-16");
            let stderr = String::from_utf8_lossy(&out.stderr);
            if name.ends_with(".cpp") && matches!(gpu, Gpu::Nvptx(_)) {
                if out.status.success() || !stderr.contains("nontrivial global ctor, which NVPTX does not support") {
                    failures.push(format!(
                        "{name} for {gpu:?}: clang-16 was expected to refuse it:\n{stderr}"
                    ));
                }
                continue;
            }
            if !out.status.success() {
                failures.push(format!("{name} for {gpu:?} did not build:\n{stderr}"));
                continue;
            }
            let image = support::extract_image(&exe, gpu);
            let undefined: Vec<String> = symbols(&image)
                .into_iter()
                .filter(|(_, section, name)| section == "UND" && calls.contains(&name.as_str()))
                .map(|(_, _, name)| name)
                .collect();
            if !undefined.is_empty() {
                failures.push(format!("{name} for {gpu:?}: undefined in the image: {undefined:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// C++'s operator new and delete that clang-16 leaves undefined in target regions (it defines the plain
/// and sized forms inline, and the nothrow ones on NVIDIA), by their symbols.
const CXX_OPERATORS: [&str; 14] = [
    "_ZnwmRKSt9nothrow_t",
    "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t",
    "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPvRKSt9nothrow_t",
    "_ZdaPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_t",
    "_ZdaPvSt11align_val_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t",
    "_ZdaPvSt11align_val_tRKSt9nothrow_t",
    "malloc",
    "free",
];

/// `c_tests/gpu/cxx_new.cpp` (new and delete in every form, aligned types included) links with the
/// library for every GPU target, and without it does not on AMD, naming the operators it lacks.
#[test]
fn cxx_new_and_delete_in_every_form_link_for_every_gpu_target() {
    let dir = library_dir();
    let err = build_gpu_program("cxx_new.cpp", Gpu::Amdgcn("gfx90a"), &[]).expect_err("linked without the library");
    assert!(
        err.contains("undefined symbol: operator new(unsigned long, std::align_val_t)"),
        "{err}"
    );
    let flags = vec![format!("-L{}", dir.display()), "-lomprpc-device".to_string()];
    let failures = undefined_for_every_gpu("cxx_new.cpp", &flags, &CXX_OPERATORS);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The body of the definition of `__assert_fail` in a device module's text: PTX (`.func __assert_fail`
/// with a body) or LLVM IR (`define ... @__assert_fail(`).
fn assert_fail_body(module: &str) -> Option<&str> {
    let start = module.match_indices("__assert_fail").map(|(at, _)| at).find(|&at| {
        let line_start = module[..at].rfind('\n').map_or(0, |i| i + 1);
        let line = &module[line_start..];
        let header = &module[at..];
        let definition_follows = header.find('{').is_some_and(|brace| !header[..brace].contains(';'));
        let directive = line.trim_start_matches(".weak ").trim_start_matches(".visible ");
        (directive.starts_with(".func") || line.starts_with("define ")) && definition_follows
    })?;
    let body = &module[start..];
    Some(&body[..body.find("\n}").unwrap_or(body.len())])
}

/// Whether the `__assert_fail` that a device module defines is the library's (it reports through host
/// services, and aborts without them) rather than LLVM 16's device runtime's (CUDA's `vprintf` and a
/// trap on NVIDIA, a bare trap on AMD).
fn assert_fail_is_the_librarys(module: &str) -> bool {
    assert_fail_body(module).is_some_and(|body| {
        (body.contains("omprpc_libc_report_assertion") || body.contains("abort")) && !body.contains("vprintf")
    })
}

/// Builds `unchanged.c` for `gpu` with the library (and `extra`), keeping the compiler's intermediate
/// files, and returns the text of the device module it linked: the PTX of the unit on NVIDIA, where
/// clang-16 links the device runtime into each unit, and the linked module on AMD.
fn linked_device_module(gpu: Gpu, extra: &[&str]) -> String {
    let dir = support::scratch().join(format!("assert-{}-{}", gpu.arch(), extra.len()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let library = library_dir();
    let out = gpu
        .compiler("clang-16")
        .current_dir(&dir)
        .args(["-O2", "-save-temps"])
        .args(extra)
        .arg(support::root().join("c_tests/gpu/unchanged.c"))
        .arg(format!("-L{}", library.display()))
        .arg("-lomprpc-device")
        .args(["-o", "unchanged"])
        .output()
        .expect("clang-16");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    match gpu {
        Gpu::Nvptx(_) => std::fs::read_to_string(dir.join("unchanged-openmp-nvptx64-nvidia-cuda.s")).unwrap(),
        Gpu::Amdgcn(arch) => {
            let linked = dir.join(format!("unchanged.amdgcn-amd-amdhsa.{arch}.postlink.bc"));
            let text = Command::new("llvm-dis-16")
                .arg(&linked)
                .arg("-o")
                .arg("-")
                .output()
                .expect("llvm-dis-16");
            assert!(text.status.success(), "llvm-dis-16 {}", linked.display());
            String::from_utf8(text.stdout).unwrap()
        }
    }
}

/// A failed `assert` in a target region reports through the library, not through LLVM 16's device
/// runtime, which also defines `__assert_fail`: on sm_80 with `-include omprpc_libc.h` (without it,
/// the unit's assert is the runtime's, which the check sees), on gfx90a at link, with no header.
#[test]
fn the_librarys_assert_fail_is_the_one_linked() {
    let header = library_dir().join("omprpc_libc.h").display().to_string();
    let sm_80 = linked_device_module(Gpu::Nvptx("sm_80"), &["-include", &header]);
    assert!(
        assert_fail_is_the_librarys(&sm_80),
        "sm_80: {:?}",
        assert_fail_body(&sm_80)
    );
    let without_header = linked_device_module(Gpu::Nvptx("sm_80"), &["-DUNCHANGED_WITHOUT_FPRINTF"]);
    assert!(
        assert_fail_body(&without_header).is_some() && !assert_fail_is_the_librarys(&without_header),
        "without the header, sm_80's unit keeps the device runtime's: {:?}",
        assert_fail_body(&without_header)
    );
    let gfx90a = linked_device_module(Gpu::Amdgcn("gfx90a"), &["-DUNCHANGED_WITHOUT_FPRINTF"]);
    assert!(
        assert_fail_is_the_librarys(&gfx90a),
        "gfx90a: {:?}",
        assert_fail_body(&gfx90a)
    );
    // The device runtime's own, as the check sees it.
    let runtime = Command::new("llvm-dis-16")
        .args(["/usr/lib/llvm-16/lib/libomptarget-amdgpu-gfx90a.bc", "-o", "-"])
        .output()
        .expect("llvm-dis-16");
    let runtime = String::from_utf8(runtime.stdout).unwrap();
    assert!(assert_fail_body(&runtime).is_some() && !assert_fail_is_the_librarys(&runtime));
}

#[test]
fn without_the_library_an_unchanged_program_does_not_link_and_with_it_needs_no_header_on_amd() {
    let dir = library_dir();
    // Without the opt-in header, fprintf cannot be compiled for AMD: the program's own fprintf calls
    // are what the header is for, so this build leaves them out.
    let no_fprintf = ["-DUNCHANGED_WITHOUT_FPRINTF".to_string()];
    let err = build_unchanged(Gpu::Amdgcn("gfx90a"), &no_fprintf).expect_err("linked without the library");
    assert!(err.contains("undefined symbol: puts"), "{err}");
    let mut with_library = no_fprintf.to_vec();
    with_library.push(format!("-L{}", dir.display()));
    with_library.push("-lomprpc-device".to_string());
    let exe = build_unchanged(Gpu::Amdgcn("gfx90a"), &with_library).unwrap();
    let image = support::extract_image(&exe, Gpu::Amdgcn("gfx90a"));
    let symbols = symbols(&image);
    assert!(
        symbols
            .iter()
            .any(|(_, s, name)| name == "__llvm_libc_rpc_client" && s != "UND"),
        "the library's client is in the image"
    );
}

/// The LLVM types of each `__llvm_omp_vprintf` call's argument struct in a device module, with the
/// size clang passes, in call order.
fn printf_structs(ir: &str) -> Vec<(Vec<String>, usize)> {
    let mut types = std::collections::HashMap::new();
    for line in ir.lines() {
        if let Some((name, body)) = line.split_once(" = type { ") {
            let fields: Vec<String> = body.trim_end_matches(" }").split(", ").map(str::to_string).collect();
            types.insert(name.to_string(), fields);
        }
    }
    let mut allocas = std::collections::HashMap::new();
    let mut calls = Vec::new();
    for line in ir.lines() {
        let line = line.trim();
        if let Some((value, rest)) = line.split_once(" = alloca %printf_args") {
            let name = format!("%printf_args{}", rest.split(',').next().unwrap());
            allocas.insert(value.to_string(), name);
        }
        if let Some((_, args)) = line.split_once("call i32 @__llvm_omp_vprintf(") {
            // `..., i32 80)`, perhaps followed by attributes.
            let last = args.rsplit("i32 ").next().unwrap();
            let digits: String = last.chars().take_while(char::is_ascii_digit).collect();
            calls.push(digits.parse().unwrap());
        }
    }
    let mut names: Vec<&String> = allocas.values().collect();
    names.sort_by_key(|n| {
        n.trim_start_matches("%printf_args")
            .trim_start_matches('.')
            .parse::<i64>()
            .unwrap_or(-1)
    });
    names
        .into_iter()
        .zip(calls)
        .map(|(name, size)| (types[name].clone(), size))
        .collect()
}

/// Formats with every promoted type, in the order of `c_tests/gpu/printf_layout.c`.
const LAYOUT_FORMATS: [&str; 6] = [
    "%d %s %f %c %ld %hhd %p %Lf\n",
    "%hd %lld %zu %e %s %c\n",
    "%*.*f %Lg %d\n",
    "%ls %lc %g %jd %td\n",
    "%c %Lf %c\n",
    "%f %d %f %d %s %d %Le\n",
];

#[test]
fn printf_arguments_are_laid_out_as_clang_16_lays_them_out() {
    support::require_gpu_toolchains();
    for gpu in [Gpu::Nvptx("sm_80"), Gpu::Amdgcn("gfx90a")] {
        let ir_file = support::scratch().join(format!("printf_layout-{}.ll", gpu.arch()));
        let out = gpu
            .compiler("clang-16")
            .args(["-O0", "-S", "-emit-llvm", "--offload-device-only"])
            .arg(support::root().join("c_tests/gpu/printf_layout.c"))
            .arg("-o")
            .arg(&ir_file)
            .output()
            .expect("clang-16");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let structs = printf_structs(&std::fs::read_to_string(&ir_file).unwrap());
        assert_eq!(structs.len(), LAYOUT_FORMATS.len(), "{gpu:?}: one struct per printf");
        for ((fields, size), format) in structs.iter().zip(LAYOUT_FORMATS) {
            let args = arguments(format!("{format}\0").as_bytes()).unwrap();
            let kinds: Vec<&str> = args
                .iter()
                .map(|arg| match arg {
                    Arg::Int => "i32",
                    Arg::Long => "i64",
                    Arg::Double => "double",
                    Arg::LongDouble => "x86_fp80",
                    Arg::Pointer | Arg::String | Arg::WideString => "ptr",
                })
                .collect();
            assert_eq!(fields, &kinds, "{gpu:?}: the struct clang builds for {format:?}");
            let (_, end) = layout(&args);
            let align = args.iter().map(|a| a.size()).max().unwrap_or(1);
            assert_eq!(end.div_ceil(align) * align, *size, "{gpu:?}: size of {format:?}");
        }
    }
}

/// The AMD realtime counter's frequency the library assumes until a loader writes the agent's own
/// (`__llvm_libc_clock_freq`, with LLVM libc's defaults): 25 MHz on GFX9 parts before gfx940, 100 MHz on
/// gfx940 and RDNA, read from the linked images of a program that calls `clock`.
#[test]
fn amd_clocks_assume_llvm_libcs_frequency_for_each_architecture() {
    let dir = library_dir();
    let flags = [
        "-D_GNU_SOURCE".to_string(),
        "-include".to_string(),
        dir.join("omprpc_libc.h").display().to_string(),
        format!("-L{}", dir.display()),
        "-lomprpc-device".to_string(),
    ];
    for (arch, hz) in [
        ("gfx90a", 25_000_000u64),
        ("gfx940", 100_000_000),
        ("gfx1030", 100_000_000),
    ] {
        let gpu = Gpu::Amdgcn(arch);
        let exe = build_gpu_program("libc_calls.c", gpu, &flags).unwrap();
        let image = support::extract_image(&exe, gpu);
        let elf = omprpc::util::elf::Image::parse(&image).expect("an ELF image");
        let symbol = elf
            .symbol(b"__llvm_libc_clock_freq")
            .expect("the library's clock frequency is linked");
        let bytes = elf.symbol_bytes(&symbol).expect("with its initial value");
        assert_eq!(u64::from_le_bytes(bytes[..8].try_into().unwrap()), hz, "{arch}");
    }
}
