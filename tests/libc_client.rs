//! Host services for device code whose RPC client nobody here wrote: LLVM libc 19.1.7's own client
//! (`rpc::client`, from libc's `rpc_client.cpp`) and libc's own GPU stdio, malloc/free and printf,
//! compiled from LLVM's sources for the host-offload target by clang-16 and run through
//! libomptarget 16 with our plugin (`c_tests/libc_client/`). The sources come from Debian's
//! llvm-toolchain-19 source package, fetched once by `scripts/fetch-libc-source.sh` into a cache
//! outside the checkout; a test fails, naming the script, when they cannot be had.

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use support::{check_ours_ran, run_text, Plugin};

/// libc's sources that the device code is built from, each compiled in a target region of its own.
const LIBC_SOURCES: [&str; 15] = [
    "src/__support/RPC/rpc_client.cpp",
    "src/__support/GPU/allocator.cpp",
    "src/gpu/rpc_fprintf.cpp",
    "src/stdio/gpu/fopen.cpp",
    "src/stdio/gpu/fclose.cpp",
    "src/stdio/gpu/fwrite.cpp",
    "src/stdio/gpu/fputs.cpp",
    "src/stdio/gpu/puts.cpp",
    "src/stdio/gpu/fread.cpp",
    "src/stdio/gpu/fseek.cpp",
    "src/stdio/gpu/fflush.cpp",
    "src/stdio/gpu/feof.cpp",
    "src/stdio/gpu/ferror.cpp",
    "src/stdio/gpu/fgets.cpp",
    "src/stdio/gpu/remove.cpp",
];

/// clang-16's flags for device code that includes libc's sources, for the host-offload target.
fn libc_flags() -> Vec<String> {
    let libc = support::llvm_libc_source().join("libc");
    vec![
        "-O1".into(),
        "-fPIC".into(),
        "-fopenmp".into(),
        "-fopenmp-targets=x86_64-pc-linux-gnu".into(),
        "-std=c++17".into(),
        // libc's headers declare functions outside `declare target`; clang warns about each.
        "-Wno-openmp-target".into(),
        format!("-I{}", libc.display()),
        format!("-I{}", libc.join("include").display()),
        format!("-I{}", support::root().join("include").display()),
        "-DLIBC_NAMESPACE=__llvm_libc_omprpc_test".into(),
    ]
}

fn out_dir() -> PathBuf {
    let dir = support::scratch().join("libc_client");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a compiler command, failing the test with its output when it fails.
fn compile(mut cmd: Command, what: &str) {
    let out = cmd
        .output()
        .expect("running clang-16 (sudo sh scripts/setup-debian.sh)");
    assert!(
        out.status.success(),
        "building {what} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// libc's objects, built once per test process (in parallel).
fn libc_objects() -> Vec<PathBuf> {
    static OBJECTS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    OBJECTS
        .get_or_init(|| {
            support::require_toolchain();
            let dir = out_dir().join("libc");
            std::fs::create_dir_all(&dir).unwrap();
            let jobs: Vec<(PathBuf, std::thread::JoinHandle<()>)> = LIBC_SOURCES
                .iter()
                .map(|source| {
                    let stem = source.trim_end_matches(".cpp").replace('/', "_");
                    let wrapper = dir.join(format!("{stem}.cpp"));
                    std::fs::write(
                        &wrapper,
                        format!(
                            "#pragma omp begin declare target\n#include \"{source}\"\n#pragma omp end declare target\n"
                        ),
                    )
                    .unwrap();
                    let object = dir.join(format!("{stem}.o"));
                    let mut cmd = Command::new("clang++-16");
                    cmd.args(libc_flags()).arg("-c").arg(&wrapper).arg("-o").arg(&object);
                    let what = source.to_string();
                    (object, std::thread::spawn(move || compile(cmd, &what)))
                })
                .collect();
            jobs.into_iter()
                .map(|(object, job)| {
                    job.join().expect("a libc source failed to build");
                    object
                })
                .collect()
        })
        .clone()
}

/// Builds `c_tests/libc_client/<source>` with libc's objects into `name`, with `extra` flags.
fn build(source: &str, name: &str, extra: &[&str]) -> PathBuf {
    let out = out_dir().join(name);
    let mut cmd = Command::new("clang++-16");
    cmd.args(libc_flags())
        .args(["-Wall", "-Werror"])
        .args(extra)
        .arg(support::root().join("c_tests/libc_client").join(source))
        .args(libc_objects())
        .arg("-o")
        .arg(&out);
    compile(cmd, source);
    out
}

fn client() -> PathBuf {
    static CLIENT: OnceLock<PathBuf> = OnceLock::new();
    CLIENT.get_or_init(|| build("client.cpp", "client", &[])).clone()
}

#[test]
fn libc_stdio_malloc_and_user_calls_are_served() {
    let file = out_dir().join("calls.txt");
    let out = run_text(&client(), &["calls", file.to_str().unwrap()], Plugin::Ours, &[]);
    assert!(out.status.success(), "{}\n{}", out.status, out.stderr);
    assert_eq!(
        out.stdout,
        "libc client: printf 42 3.25\n\
         stdout 28 stderr 0\n\
         file: wrote 16, at 10, read 6 \"abcdef\", fclose 0, again -1\n\
         after fclose: fwrite 0 fread 0 fseek -1\n\
         made-up stream: fprintf -1 fclose -1\n\
         malloc 1, user opcode 43, remove 0\n"
    );
    check_ours_ran(&out.stderr).unwrap();
    let refused = "that the device does not have open (closed already, or never returned by fopen); the call failed";
    let bad_free =
        "of memory that is not a live block of the device's malloc (freed already, or never returned by it); ignored";
    let expected = [
        "libc client: to stderr".to_string(),
        format!("omprpc error: device 0: fclose on stream 0x_ {refused}"),
        format!("omprpc error: device 0: fwrite, fputs or fprintf on stream 0x_ {refused}"),
        format!("omprpc error: device 0: fread on stream 0x_ {refused}"),
        format!("omprpc error: device 0: fseek on stream 0x_ {refused}"),
        format!("omprpc error: device 0: fwrite, fputs or fprintf on stream 0x_ {refused}"),
        format!("omprpc error: device 0: fclose on stream 0x_ {refused}"),
        format!("omprpc error: device 0: free(0x_) {bad_free}"),
        format!("omprpc error: device 0: free(0x_) {bad_free}"),
    ];
    assert_eq!(
        support::mask_addresses(&support::other_stderr(&out.stderr)),
        expected.join("\n") + "\n",
        "every bad stream and free named once, the process unharmed"
    );
    assert!(!file.exists(), "the device removed its file");
}

#[test]
fn thousands_of_libc_calls_from_many_threads_arrive_once() {
    for ports in [None, Some("1")] {
        let env: Vec<(&str, &str)> = ports.map(|p| ("OMPRPC_RPC_PORTS", p)).into_iter().collect();
        let out = run_text(&client(), &["threads", "3000"], Plugin::Ours, &env);
        assert!(out.status.success(), "{}\n{}", out.status, out.stderr);
        check_ours_ran(&out.stderr).unwrap();
        let mut seen = BTreeSet::new();
        for line in out.stdout.lines().filter(|l| l.starts_with("call ")) {
            let words: Vec<&str> = line.split_whitespace().collect();
            assert!(
                words.len() == 7 && words[2] == "from" && words[3] == "team" && words[5] == "thread",
                "garbled line: {line:?}"
            );
            let n: u32 = words[1].parse().unwrap();
            assert!(seen.insert(n), "line for call {n} arrived twice (ports {ports:?})");
        }
        assert_eq!(seen.len(), 3000, "every call arrives exactly once (ports {ports:?})");
        assert!(
            out.stdout.ends_with(&format!("checksum: {}\n", 2999 * 3000 / 2)),
            "{}",
            out.stdout
        );
    }
}

#[test]
fn libc_exit_from_the_device_ends_the_process_with_its_status() {
    let out = run_text(&client(), &["exit"], Plugin::Ours, &[]);
    assert_eq!(out.status.code(), Some(7), "{}\n{}", out.status, out.stderr);
    assert_eq!(out.stdout, "libc client: before exit\n", "flushed, and nothing after");
}

/// Three libraries, each with libc's client object of its own, on one device: the first keeps
/// calling while the second is loaded, called and closed, and a third loaded and called after it.
#[test]
fn libraries_with_their_own_libc_clients_share_a_device() {
    let libraries: Vec<PathBuf> = (1..=3)
        .map(|id| {
            build(
                "library.cpp",
                &format!("liblibc{id}.so"),
                &["-shared", &format!("-DLIBRARY_ID={id}")],
            )
        })
        .collect();
    let main = out_dir().join("libraries_main");
    let mut cmd = Command::new("clang-16");
    cmd.args(["-O1", "-Wall", "-Werror"])
        .arg(support::root().join("c_tests/libc_client/main.c"))
        .args(["-ldl", "-lpthread", "-o"])
        .arg(&main);
    compile(cmd, "main.c");
    let args: Vec<&str> = libraries.iter().map(|p| p.to_str().unwrap()).collect();
    let out = run_text(&main, &args, Plugin::Ours, &[]);
    assert!(out.status.success(), "{}\n{}", out.status, out.stderr);
    check_ours_ran(&out.stderr).unwrap();
    let summary = out.stdout.lines().last().unwrap_or_default();
    let rounds: usize = summary
        .strip_prefix("library 1: ")
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no summary: {summary:?}"));
    assert!(rounds >= 20, "{summary}");
    assert_eq!(
        summary,
        format!(
            "library 1: {rounds} rounds, {} lines written; libraries 2 and 3: 400 lines written",
            rounds * 50
        )
    );
    let mut seen = BTreeSet::new();
    for line in out
        .stdout
        .lines()
        .filter(|l| l.starts_with("library ") && l.contains(" round "))
    {
        assert!(seen.insert(line.to_string()), "{line:?} arrived twice");
    }
    let expected: BTreeSet<String> = (0..rounds)
        .flat_map(|round| (0..50).map(move |line| format!("library 1 round {round} line {line}")))
        .chain(std::iter::once("library 1 round -1 line 0".to_string()))
        .chain((2..=3).flat_map(|id| {
            (0..4).flat_map(move |round| (0..50).map(move |line| format!("library {id} round {round} line {line}")))
        }))
        .collect();
    assert_eq!(seen.len(), expected.len(), "every line exactly once");
    assert_eq!(seen, expected);
    assert_eq!(support::other_stderr(&out.stderr), "", "silent");
}

/// Where clang-16 cannot build libc 19.1's client for a GPU, the reason: the builtins libc's GPU
/// utilities use came after clang 16. The test fails if that changes, so that the GPU build gets
/// added then.
#[test]
fn clang_16_cannot_build_libc_19s_gpu_client_and_says_why() {
    support::require_gpu_toolchains();
    let libc = support::llvm_libc_source().join("libc");
    let source = out_dir().join("gpu_client.cpp");
    std::fs::write(
        &source,
        "#include <stdint.h>\n#pragma omp begin declare target\n\
         #include \"src/__support/RPC/rpc_client.cpp\"\n#include \"src/__support/GPU/allocator.cpp\"\n\
         #pragma omp end declare target\n\
         int main() {\n  uint64_t r = 0;\n#pragma omp target map(from : r)\n\
         r = (uint64_t)LIBC_NAMESPACE::gpu::allocate(64);\n  return r != 0;\n}\n",
    )
    .unwrap();
    for (gpu, missing) in [
        (
            support::Gpu::Nvptx("sm_90"),
            &[
                "__nvvm_activemask",
                "__builtin_readsteadycounter",
                "__nvvm_exit",
                "__nvvm_reflect",
            ][..],
        ),
        (
            support::Gpu::Amdgcn("gfx90a"),
            &["__builtin_amdgcn_wavefrontsize", "__builtin_readsteadycounter"][..],
        ),
    ] {
        let out = gpu
            .compiler("clang++-16")
            .args([
                "-std=c++17",
                "-Wno-openmp-target",
                "-DLIBC_NAMESPACE=__llvm_libc_omprpc_test",
            ])
            .arg(format!("-I{}", libc.display()))
            .arg(format!("-I{}", libc.join("include").display()))
            .arg(&source)
            .arg("-o")
            .arg(out_dir().join(format!("gpu_client_{gpu:?}")))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{gpu:?}: clang-16 now builds libc's GPU client; test it on GPUs"
        );
        for builtin in missing {
            assert!(
                stderr.contains(&format!("undeclared identifier '{builtin}'")),
                "{gpu:?}: expected clang-16 to lack {builtin}:\n{stderr}"
            );
        }
    }
}
