//! What the integration tests share: finding the built plugin, installing it under a stock plugin
//! name, building the C programs of `c_tests/` with clang-16, and running them through libomptarget 16
//! with our plugin or with the stock one.
#![allow(dead_code)]

pub mod abi;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock, PoisonError};

/// The command that installs everything the tests need on Debian 12.
pub const SETUP: &str = "sudo sh scripts/setup-debian.sh";

/// Where Debian's LLVM 16 lives.
pub const LLVM16: &str = "/usr/lib/llvm-16";

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Fails the test, naming the set-up command, when a prerequisite is missing. Never a silent skip.
pub fn require_toolchain() {
    let mut missing = Vec::new();
    for tool in ["clang-16", "clang++-16"] {
        if Command::new(tool).arg("--version").output().is_err() {
            missing.push(format!("{tool} (package clang-16)"));
        }
    }
    for (file, package) in [
        ("lib/libomptarget.so.16", "libomp-16-dev"),
        ("lib/libomptarget.rtl.x86_64.nextgen.so.16", "libomp-16-dev"),
        ("lib/libomp.so.5", "libomp-16-dev"),
    ] {
        if !Path::new(LLVM16).join(file).exists() {
            missing.push(format!("{LLVM16}/{file} (package {package})"));
        }
    }
    assert!(
        missing.is_empty(),
        "missing prerequisites: {}. Install them with: {SETUP}",
        missing.join(", ")
    );
}

/// The command that installs the GPU toolchains (rocm-device-libs, lld-16, and ptxas/nvlink/libdevice
/// from Debian's nvidia-cuda-toolkit, unpacked into target/toolchains).
pub const GPU_SETUP: &str = "sudo sh scripts/setup-gpu-toolchains.sh (run by scripts/setup-debian.sh)";

/// Where Debian's rocm-device-libs puts the AMDGPU device libraries.
pub const ROCM_DEVICE_LIBS: &str = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";

/// The minimal CUDA root that clang-16 needs for NVPTX (`--cuda-path`).
pub fn cuda_root() -> PathBuf {
    std::env::var_os("OMPRPC_TOOLCHAINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/toolchains"))
        .join("cuda")
}

/// The real CUDA driver library (Debian's libcuda1, unpacked by the GPU set-up); it loads, and
/// `cuInit` reports no device, on a machine without a GPU.
pub fn real_libcuda() -> PathBuf {
    let path = cuda_root().with_file_name("libcuda").join("libcuda.so.1");
    assert!(
        path.exists(),
        "missing the CUDA driver library {}. Install it with: {GPU_SETUP}",
        path.display()
    );
    path
}

/// The directory holding the real HSA runtime and the libraries it loads (Debian's
/// libhsa-runtime64-1 and its dependencies, unpacked by the GPU set-up); a program that opens it needs
/// the directory on `LD_LIBRARY_PATH`. It loads, and `hsa_init` fails, on a machine without an AMD GPU.
pub fn real_libhsa_dir() -> PathBuf {
    let dir = cuda_root().with_file_name("libhsa");
    assert!(
        dir.join("libhsa-runtime64.so.1").exists(),
        "missing the HSA runtime {}/libhsa-runtime64.so.1. Install it with: {GPU_SETUP}",
        dir.display()
    );
    dir
}

/// Loads, by path from `dir`, the libraries the HSA runtime opens by soname (the kernel-driver thunk
/// `libhsakmt.so.1` among them, real or fake), so that the runtime finds these when the plugin opens
/// it, and never the system's. They stay loaded for the test process's life.
pub fn load_hsa_runtime_dependencies(dir: &Path) {
    let order = std::fs::read_to_string(dir.join("load-order")).expect("the fake driver's load-order file");
    for dependency in order.lines() {
        // SAFETY: loading these libraries runs their initialisers, which have no preconditions.
        let library = unsafe {
            libloading::os::unix::Library::open(Some(dir.join(dependency)), libc::RTLD_NOW | libc::RTLD_GLOBAL)
        }
        .unwrap_or_else(|e| panic!("{dependency}: {e}"));
        std::mem::forget(library);
    }
}

/// The AMDGPU device libraries for `arch`: Debian's, or, for a processor they stop short of (gfx1100),
/// the copy that `scripts/rocm-device-libs.sh` makes, as the image and library scripts use.
pub fn rocm_device_libs(arch: &str) -> PathBuf {
    static DIRS: PathCache = OnceLock::new();
    once_per_process(&DIRS, arch, || {
        let out = Command::new("sh")
            .arg(root().join("scripts/rocm-device-libs.sh"))
            .arg(arch)
            .arg(scratch())
            .output()
            .expect("sh");
        assert!(
            out.status.success(),
            "scripts/rocm-device-libs.sh {arch}: {} (install the toolchains with: sudo sh scripts/setup-debian.sh)",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
}

/// Fails the test, naming the set-up command, when the GPU toolchains are missing.
pub fn require_gpu_toolchains() {
    require_toolchain();
    let mut missing = Vec::new();
    for (path, what) in [
        (cuda_root().join("bin/ptxas"), "ptxas"),
        (cuda_root().join("bin/nvlink"), "nvlink"),
        (cuda_root().join("nvvm/libdevice/libdevice.10.bc"), "libdevice"),
        (PathBuf::from(ROCM_DEVICE_LIBS), "rocm-device-libs"),
        (PathBuf::from("/usr/bin/ld.lld-16"), "lld-16"),
    ] {
        if !path.exists() {
            missing.push(format!("{what} ({})", path.display()));
        }
    }
    assert!(
        missing.is_empty(),
        "missing GPU toolchains: {}. Install them with: {GPU_SETUP}",
        missing.join(", ")
    );
}

/// A GPU to build for.
#[derive(Clone, Copy, Debug)]
pub enum Gpu {
    /// NVIDIA, `sm_XY`.
    Nvptx(&'static str),
    /// AMD, `gfxNNN`.
    Amdgcn(&'static str),
}

impl Gpu {
    /// The offload triple.
    pub fn triple(self) -> &'static str {
        match self {
            Gpu::Nvptx(_) => "nvptx64-nvidia-cuda",
            Gpu::Amdgcn(_) => "amdgcn-amd-amdhsa",
        }
    }

    /// The architecture.
    pub fn arch(self) -> &'static str {
        match self {
            Gpu::Nvptx(arch) | Gpu::Amdgcn(arch) => arch,
        }
    }

    /// clang-16's flags for an OpenMP build offloading to this GPU.
    pub fn flags(self) -> Vec<String> {
        let mut flags = vec![
            "-fopenmp".to_string(),
            format!("-fopenmp-targets={}", self.triple()),
            format!("-Xopenmp-target={}", self.triple()),
            format!("-march={}", self.arch()),
        ];
        match self {
            Gpu::Nvptx(_) => {
                flags.push(format!("--cuda-path={}", cuda_root().display()));
                // clang-16 knows CUDA 11.8 only "partially"; it works, and says so.
                flags.push("-Wno-unknown-cuda-version".into());
            }
            Gpu::Amdgcn(arch) => flags.push(format!("--rocm-device-lib-path={}", rocm_device_libs(arch).display())),
        }
        flags
    }

    /// `program` (`clang-16`, `clang++-16`) with this GPU's offload flags, and CUDA's tools first on
    /// `PATH` (clang-16 runs ptxas and nvlink by name).
    pub fn compiler(self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(self.flags()).env(
            "PATH",
            format!(
                "{}:{}",
                cuda_root().join("bin").display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        );
        cmd
    }
}

/// Builds `c_tests/<file>` for `gpu` with `-Wall -Werror` once per test process and returns the
/// executable.
pub fn build_gpu_program(file: &str, gpu: Gpu) -> PathBuf {
    require_gpu_toolchains();
    static BUILT: PathCache = OnceLock::new();
    let key = format!("{file} {}", gpu.arch());
    once_per_process(&BUILT, &key, || compile_gpu_program(file, gpu))
}

fn compile_gpu_program(file: &str, gpu: Gpu) -> PathBuf {
    let src = root().join("c_tests").join(file);
    let stem = Path::new(file).file_stem().unwrap().to_str().unwrap();
    let dir = scratch().join("gpu");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(format!("{stem}-{}", gpu.arch()));
    let cxx = file.ends_with(".cpp");
    let mut cmd = gpu.compiler(if cxx { "clang++-16" } else { "clang-16" });
    cmd.args(["-O2", "-Wall", "-Werror"])
        .arg("-I")
        .arg(root().join("c_tests"))
        .arg("-I")
        .arg(root().join("include"));
    if cxx {
        cmd.arg("-std=c++17");
    }
    cmd.arg(&src).arg("-o").arg(&exe);
    let out = cmd.output().expect("running clang-16");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "building {file} for {gpu:?} failed:\n{stderr}");
    exe
}

/// The device image that `exe` carries for `gpu`, as libomptarget hands it to a plugin.
pub fn extract_image(exe: &Path, gpu: Gpu) -> Vec<u8> {
    // A name of this call's own: tests running at once may extract from the same program.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = exe.with_extension(format!("{}.{}.{call}.image", gpu.arch(), std::process::id()));
    let _ = std::fs::remove_file(&out);
    let status = Command::new("clang-offload-packager-16")
        .arg(exe)
        .arg(format!(
            "--image=file={},triple={},arch={}",
            out.display(),
            gpu.triple(),
            gpu.arch()
        ))
        .status()
        .expect("clang-offload-packager-16 (package clang-16)");
    assert!(
        status.success() && out.exists(),
        "no {gpu:?} image in {}",
        exe.display()
    );
    let image = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    image
}

/// Scratch space for the tests, inside the target directory.
pub fn scratch() -> PathBuf {
    let dir = profile_dir().join("omprpc-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A path for `name` in the scratch directory `dir` (made if missing), with no file there yet: for
/// what a test's program writes (a trace), so that an earlier run's file cannot pass for it.
pub fn fresh_scratch_file(dir: &str, name: &str) -> PathBuf {
    let dir = scratch().join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

/// The Chrome trace a run wrote to `path` (`OMPRPC_TRACE`), parsed; the run's `stderr` goes into the
/// message when the file is missing or not JSON.
pub fn read_trace(path: &Path, stderr: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}\n{stderr}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("the trace is not valid JSON ({e}):\n{text}"))
}

/// The events of category `cat` in a parsed trace ("kernel", "host call").
pub fn trace_events<'a>(trace: &'a serde_json::Value, cat: &str) -> Vec<&'a serde_json::Value> {
    trace["traceEvents"]
        .as_array()
        .expect("traceEvents is an array")
        .iter()
        .filter(|e| e["cat"] == cat)
        .collect()
}

/// The rows of every `omprpc stats:` table in `stderr` (headers left out), split into columns; a user
/// opcode's two words ("user 0x8100") are one column, "user_0x8100".
pub fn stats_rows(stderr: &str) -> Vec<Vec<String>> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("omprpc stats:"))
        .filter(|l| !l.contains("opcode"))
        .map(|l| {
            l.replace(" user 0x", " user_0x")
                .split_whitespace()
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// `target/<profile>`, where cargo put `libomprpc.so` for this test run.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test binary>
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// The plugin, freshly built for this profile. `cargo test --test X` and `cargo bench` compile the
/// library for linking but need not refresh the shared object, so the first call builds it (a no-op
/// when it is up to date).
pub fn built_plugin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = profile_dir();
            let mut cmd = Command::new(env!("CARGO"));
            cmd.args(["build", "--lib", "--manifest-path"])
                .arg(root().join("Cargo.toml"));
            if dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let status = cmd.status().expect("running cargo build");
            assert!(status.success(), "cargo build of the plugin failed");
            let lib = dir.join("libomprpc.so");
            assert!(lib.exists(), "{} is missing after cargo build", lib.display());
            lib
        })
        .clone()
}

/// The Rust example `name`, built for this profile (once per test process).
pub fn built_example(name: &str) -> PathBuf {
    static BUILT: PathCache = OnceLock::new();
    once_per_process(&BUILT, name, || {
        let dir = profile_dir();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "--example", name, "--manifest-path"])
            .arg(root().join("Cargo.toml"));
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("running cargo build");
        assert!(status.success(), "cargo build of the example {name} failed");
        dir.join("examples").join(name)
    })
}

/// A cache of paths made once per key and test process.
type PathCache = OnceLock<Mutex<HashMap<String, PathBuf>>>;

/// The path `make` produced for `key` in this test process, making it on first use.
fn once_per_process(cache: &'static PathCache, key: &str, make: impl FnOnce() -> PathBuf) -> PathBuf {
    let mut paths = cache
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    paths.entry(key.to_string()).or_insert_with(make).clone()
}

/// A directory holding our plugin under `name` (copied, so the loader sees a separate object), for
/// putting first on `LD_LIBRARY_PATH`.
pub fn plugin_dir_as(name: &str) -> PathBuf {
    static DIRS: PathCache = OnceLock::new();
    once_per_process(&DIRS, name, || {
        let dir = scratch().join(format!("plugin-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::copy(built_plugin(), &tmp).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
        dir
    })
}

/// The directory with our plugin installed as the host plugin.
pub fn host_plugin_dir() -> PathBuf {
    plugin_dir_as("libomptarget.rtl.x86_64.nextgen.so")
}

/// Builds `c_tests/<file>` (or `<file>` relative to the repository when it names a directory) once per
/// test process and returns the executable.
pub fn build_program(file: &str) -> PathBuf {
    build_program_with(file, &[])
}

/// [`build_program`] with extra compiler flags (e.g. `-DNAME=VALUE`).
pub fn build_program_with(file: &str, flags: &[&str]) -> PathBuf {
    require_toolchain();
    static BUILT: PathCache = OnceLock::new();
    let key = format!("{file} {}", flags.join(" "));
    once_per_process(&BUILT, &key, || compile_program(file, flags))
}

fn compile_program(file: &str, flags: &[&str]) -> PathBuf {
    let src = if file.contains('/') {
        root().join(file)
    } else {
        root().join("c_tests").join(file)
    };
    let stem = Path::new(file).file_stem().unwrap().to_str().unwrap();
    let cxx = file.ends_with(".cpp");
    let out_dir = scratch().join("bin");
    std::fs::create_dir_all(&out_dir).unwrap();
    let suffix: String = flags
        .iter()
        .flat_map(|f| f.chars().filter(|c| c.is_ascii_alphanumeric()))
        .collect();
    let exe = out_dir.join(if suffix.is_empty() {
        stem.to_string()
    } else {
        format!("{stem}-{suffix}")
    });
    let mut cmd = Command::new(if cxx { "clang++-16" } else { "clang-16" });
    cmd.args([
        "-fopenmp",
        "-fopenmp-targets=x86_64-pc-linux-gnu",
        "-Wall",
        "-Werror",
        "-O1",
    ]);
    if cxx {
        cmd.arg("-std=c++17");
    }
    cmd.arg("-I")
        .arg(root().join("c_tests"))
        .arg("-I")
        .arg(root().join("include"));
    cmd.args(flags);
    cmd.arg(&src).arg("-o").arg(&exe);
    let out = cmd.output().expect("running clang-16");
    assert!(
        out.status.success(),
        "building {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Which plugin a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plugin {
    /// Ours, first on `LD_LIBRARY_PATH` as `libomptarget.rtl.x86_64.nextgen.so`.
    Ours,
    /// Debian's stock plugin.
    Stock,
}

/// Longest a test program may run before it counts as hung and is killed.
pub const RUN_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs `exe` with `args` through `plugin`, with extra environment `env`; a run that outlasts
/// [`RUN_LIMIT`] is killed and fails the test as a hang.
pub fn run(exe: &Path, args: &[&str], plugin: Plugin, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args);
    cmd.env_remove("LIBOMPTARGET_INFO")
        .env_remove("OMPRPC_BACKEND")
        .env_remove("OMPRPC_HOST_DEVICES");
    match plugin {
        Plugin::Ours => {
            cmd.env("LD_LIBRARY_PATH", host_plugin_dir());
        }
        Plugin::Stock => {
            cmd.env_remove("LD_LIBRARY_PATH");
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_with_limit(cmd, RUN_LIMIT)
}

/// Runs `exe` with `search` as its `LD_LIBRARY_PATH` (where libomptarget finds the plugins under
/// test), none of the plugin's settings but those in `env`, and a minute's limit; returns whether it
/// succeeded, its stdout and its stderr.
pub fn run_with_search_path(exe: &Path, search: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let mut cmd = Command::new(exe);
    cmd.env("LD_LIBRARY_PATH", search)
        .env_remove("LIBOMPTARGET_INFO")
        .env_remove("OMPRPC_BACKEND")
        .env_remove("OMPRPC_HSA_LIBRARY")
        .env_remove("OMPRPC_CUDA_LIBRARY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run_with_limit(cmd, std::time::Duration::from_secs(60));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `cmd` to completion, killing it after `limit`; output goes through files so that a full pipe
/// can never stall it.
pub fn run_with_limit(mut cmd: Command, limit: std::time::Duration) -> Output {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = scratch().join("runs");
    std::fs::create_dir_all(&dir).unwrap();
    let out_path = dir.join(format!("{}-{n}.out", std::process::id()));
    let err_path = dir.join(format!("{}-{n}.err", std::process::id()));
    cmd.stdin(std::process::Stdio::null());
    cmd.stdout(std::fs::File::create(&out_path).unwrap());
    cmd.stderr(std::fs::File::create(&err_path).unwrap());
    // A program just written by this process can be briefly busy (ETXTBSY): a child forked by another
    // test thread while the compiler's output was open for writing holds it until that child execs.
    let mut tries = 0;
    let mut child = loop {
        match cmd.spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            spawned => break spawned.unwrap_or_else(|e| panic!("running {cmd:?}: {e}")),
        }
    };
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
            let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
            panic!("{cmd:?} hung: killed after {limit:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let output = Output {
        status,
        stdout: std::fs::read(&out_path).unwrap_or_default(),
        stderr: std::fs::read(&err_path).unwrap_or_default(),
    };
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    output
}

/// A finished run with its output as text.
pub struct Ran {
    /// How the program ended.
    pub status: std::process::ExitStatus,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// [`run`], with the output decoded as text, for tests that read it.
pub fn run_text(exe: &Path, args: &[&str], plugin: Plugin, env: &[(&str, &str)]) -> Ran {
    let out = run(exe, args, plugin, env);
    Ran {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The plugin paths a c_tests program listed on stderr at exit.
pub fn mapped_plugins(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("omprpc-test: mapped "))
        .map(str::to_string)
        .collect()
}

/// stderr without the plugin list.
pub fn other_stderr(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with("omprpc-test: "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Checks that our plugin, and no stock host plugin, served the run.
pub fn check_ours_ran(stderr: &str) -> Result<(), String> {
    let mapped = mapped_plugins(stderr);
    let ours = host_plugin_dir().join("libomptarget.rtl.x86_64.nextgen.so");
    let ours = ours.to_str().unwrap();
    if !mapped.iter().any(|p| p == ours) {
        return Err(format!("our plugin {ours} was not mapped; mapped: {mapped:?}"));
    }
    if let Some(stock) = mapped
        .iter()
        .find(|p| p.contains("libomptarget.rtl.x86_64") && p.as_str() != ours)
    {
        return Err(format!("a stock host plugin was mapped too: {stock}"));
    }
    Ok(())
}

/// Checks that the stock nextgen host plugin served the run.
pub fn check_stock_ran(stderr: &str) -> Result<(), String> {
    let mapped = mapped_plugins(stderr);
    let stock = format!("{LLVM16}/lib/libomptarget.rtl.x86_64.nextgen.so.16");
    if mapped.contains(&stock) {
        Ok(())
    } else {
        Err(format!("the stock plugin {stock} was not mapped; mapped: {mapped:?}"))
    }
}

/// The strings the simulated-warp programs print (`c_tests/rpc_simulated_warp.c`,
/// `examples/simulated_warp.rs`): empty, short, and long enough to need two and three packets.
pub const SIMULATED_WORDS: [&str; 5] = [
    "",
    "a",
    "word",
    "a string of more than fifty-six bytes, which needs a second packet to travel",
    "a string of more than one hundred and twenty bytes, which needs three packets to travel from the \
     device to the host, and then some more",
];

/// The line lane `lane` of a simulated warp prints.
pub fn simulated_lane_line(lane: usize) -> String {
    format!(
        "lane {lane:2}: {}|{}|{:.3}|{}\n",
        SIMULATED_WORDS[lane % 5],
        lane * lane,
        lane as f64 / 8.0,
        (b'A' + (lane % 26) as u8) as char
    )
}

/// The median of benchmark samples.
pub fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// The number after `prefix` on its line of a program's `stdout` (a trailing "KiB" allowed).
pub fn field<T: std::str::FromStr>(stdout: &str, prefix: &str) -> T {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().trim_end_matches("KiB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no '{prefix}' line in:\n{stdout}"))
}

/// `text` with every hexadecimal number written `0x_`.
pub fn mask_addresses(text: &str) -> String {
    let mut masked = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("0x") {
        masked.push_str(&rest[..at + 2]);
        rest = &rest[at + 2..];
        let digits = rest.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(rest.len());
        if digits > 0 {
            masked.push('_');
        }
        rest = &rest[digits..];
    }
    masked.push_str(rest);
    masked
}

/// The folder holding `libc/` (and `offload/test/libc/`) of LLVM 19.1.7, fetched on first use by
/// `scripts/fetch-libc-source.sh`.
pub fn llvm_libc_source() -> PathBuf {
    static SOURCE: OnceLock<PathBuf> = OnceLock::new();
    SOURCE
        .get_or_init(|| {
            let out = Command::new("sh")
                .arg(root().join("scripts/fetch-libc-source.sh"))
                .output()
                .expect("running sh");
            assert!(
                out.status.success(),
                "LLVM libc 19.1.7's source could not be fetched, so its client cannot be tested:\n{}\
                 Fetch it with: sh scripts/fetch-libc-source.sh (run by {})",
                String::from_utf8_lossy(&out.stderr),
                SETUP
            );
            PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
        })
        .clone()
}
