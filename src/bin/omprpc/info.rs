//! `omprpc info`: the devices a program run through omprpc sees (what `llvm-omp-device-info` shows
//! with omprpc as its plugins), then one line for each thing that decides them: the plugin, which
//! libomptarget programs load and which plugins it would load now, each backend's devices and the
//! driver library behind them, the device library and host services. "Why do I see no GPU?" is
//! answered by reading down the list.

use std::path::{Path, PathBuf};

use omprpc::plugin::Plugin;
use omprpc::util::config::{BackendKind, Config};

use crate::layout::{self, STOCK_NAMES};

/// What `info` prints, and whether anything is usable (some backend has devices and programs can
/// load omprpc): the command's exit status.
pub struct Report {
    pub text: String,
    pub usable: bool,
}

/// Surveys the machine below `root` (the system is `/`).
pub fn info(root: &Path) -> Report {
    let mut lines = Vec::new();
    let plugin = layout::plugin();
    let libomptarget = layout::llvm16_lib(root);

    match (&plugin, &libomptarget) {
        (Ok(plugin), Ok(lib)) => match device_table(plugin, lib) {
            Ok(table) => lines.push(table),
            Err(why) => lines.push(format!("(no device table: {why})\n")),
        },
        _ => lines.push("(no device table: see below)\n".to_string()),
    }
    match &plugin {
        Ok(path) => lines.push(format!(
            "plugin: {} (omprpc {})",
            path.display(),
            env!("CARGO_PKG_VERSION")
        )),
        Err(why) => lines.push(format!("plugin: {why}")),
    }
    match &libomptarget {
        Ok(lib) => {
            lines.push(format!("libomptarget 16: {}", lib.join(layout::LIBOMPTARGET).display()));
            if let Some(other) = first_on_search_path(layout::LIBOMPTARGET) {
                lines.push(format!(
                    "libomptarget 16: programs load {} instead, found first on LD_LIBRARY_PATH; omprpc is made for Debian's",
                    other.display()
                ));
            }
            for (name, backend) in STOCK_NAMES.iter().zip(["host", "CUDA", "AMDGPU"]) {
                lines.push(loaded_now(lib, name, backend));
            }
        }
        Err(why) => lines.push(format!("libomptarget 16: {why}")),
    }
    let mut devices = 0;
    // Read once: a bad setting is reported once, as a program reports it.
    let settings = Config::from_env();
    for kind in [BackendKind::Host, BackendKind::Cuda, BackendKind::Amdgpu] {
        let config = Config {
            backend_override: Some(kind),
            ..settings.clone()
        };
        let opened = Plugin::open(config, None);
        devices += opened.device_count();
        lines.push(format!(
            "{} backend: {} device(s): {}",
            kind.name(),
            opened.device_count(),
            opened.device_count_reason()
        ));
        if let Some(prefix) = match kind {
            BackendKind::Cuda => Some("libcuda.so"),
            BackendKind::Amdgpu => Some("libhsa-runtime64.so"),
            BackendKind::Host => None,
        } {
            lines.push(match mapped_library(prefix) {
                Some(path) => format!(
                    "{} backend: driver library {}{}",
                    kind.name(),
                    path.display(),
                    version_of(kind, &path)
                ),
                None => format!(
                    "{} backend: no driver library loaded ({prefix}*); install the vendor's driver to use these GPUs",
                    kind.name()
                ),
            });
        }
    }
    lines.push(device_library());
    lines.push(if omprpc::rpc::AVAILABLE {
        "host services: on (LLVM libc 19's RPC server is built in)".to_string()
    } else {
        "host services: off (this build has no `rpc` feature; rebuild with default features)".to_string()
    });
    Report {
        text: lines.join("\n"),
        usable: plugin.is_ok() && libomptarget.is_ok() && devices > 0,
    }
}

/// `llvm-omp-device-info`'s output with omprpc as every plugin (through `omprpc run`'s directory).
fn device_table(plugin: &Path, llvm16_lib: &Path) -> Result<String, String> {
    let tool = llvm16_lib.with_file_name("bin").join("llvm-omp-device-info");
    if !tool.is_file() {
        return Err(format!(
            "no {}; install it with `apt-get install libomp-16-dev`",
            tool.display()
        ));
    }
    let dir = crate::run::private_plugin_dir(plugin)?;
    let out = std::process::Command::new(&tool)
        .env("LD_LIBRARY_PATH", &dir)
        .env_remove("LIBOMPTARGET_INFO")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tool.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            tool.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The first directory of `LD_LIBRARY_PATH` holding `name`, which a program would load before the
/// one its RUNPATH names.
fn first_on_search_path(name: &str) -> Option<PathBuf> {
    let search = std::env::var_os("LD_LIBRARY_PATH")?;
    std::env::split_paths(&search)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Which file a program started now would load under the stock `name`, and whether it is omprpc.
fn loaded_now(llvm16_lib: &Path, name: &str, backend: &str) -> String {
    let path = first_on_search_path(name).unwrap_or_else(|| llvm16_lib.join(name));
    let what = match std::fs::read(&path) {
        Err(_) => "missing: libomptarget then tries the older plugin name".to_string(),
        Ok(bytes) if exports(&bytes, "omprpc_version") => "omprpc (installed, or on LD_LIBRARY_PATH)".to_string(),
        Ok(_) => "the stock plugin (`omprpc run PROG` or `omprpc install` puts omprpc there)".to_string(),
    };
    format!("{backend} plugin a program loads now: {} - {what}", path.display())
}

/// Whether the ELF file `bytes` exports `symbol` (omprpc's plugin exports `omprpc_version`).
fn exports(bytes: &[u8], symbol: &str) -> bool {
    use object::{Object, ObjectSymbol};
    object::File::parse(bytes)
        .map(|file| {
            file.dynamic_symbols()
                .any(|s| s.is_definition() && s.name() == Ok(symbol))
        })
        .unwrap_or(false)
}

/// The file of a library this process has mapped whose name starts with `prefix`.
fn mapped_library(prefix: &str) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(PathBuf::from)
        .find(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
}

/// The driver's version: the CUDA driver API's, asked of the library (it answers without a GPU), and
/// the one in the library's real file name when it has one (`libcuda.so.535.183.01`: the driver
/// package's, as `nvidia-smi` shows it).
fn version_of(kind: BackendKind, path: &Path) -> String {
    let mut versions = Vec::new();
    if kind == BackendKind::Cuda {
        if let Some(api) = cuda_driver_api_version(path) {
            versions.push(format!("driver API {}.{}", api / 1000, api % 1000 / 10));
        }
    }
    let real = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let name = real.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if let Some((_, version)) = name.split_once(".so.").filter(|(_, v)| v.contains('.')) {
        versions.push(format!("version {version}"));
    }
    if versions.is_empty() {
        String::new()
    } else {
        format!(" ({})", versions.join(", "))
    }
}

/// `cuDriverGetVersion` of the CUDA driver library at `path` (already loaded by the survey).
fn cuda_driver_api_version(path: &Path) -> Option<i32> {
    // SAFETY: the library is the CUDA driver the survey loaded already (its initialisers have run);
    // opening it again only takes a reference.
    let library = unsafe { libloading::Library::new(path) }.ok()?;
    // SAFETY: cuDriverGetVersion's C signature is `CUresult (int *)`.
    let get = unsafe { library.get::<unsafe extern "C" fn(*mut i32) -> i32>(b"cuDriverGetVersion\0") }.ok()?;
    let mut version = 0;
    // SAFETY: `version` is a writable int; the call needs no cuInit.
    (unsafe { get(&mut version) } == 0).then_some(version)
}

/// Where the device library is and which GPU architectures it was built for.
fn device_library() -> String {
    let Some(path) = layout::device_library() else {
        return format!(
            "device library: no {} beside this command; build it with `sh scripts/build-device-lib.sh DIR` and copy it here, or set OMPRPC_DEVICE_LIBRARY (needed only to link unchanged programs' printf, malloc... on GPUs)",
            layout::DEVICE_LIBRARY
        );
    };
    match architectures(&path) {
        Ok(archs) if !archs.is_empty() => {
            format!("device library: {}, for {}", path.display(), archs.join(", "))
        }
        Ok(_) => format!("device library: {} holds no GPU objects of omprpc's", path.display()),
        Err(why) => format!("device library: {}: {why}", path.display()),
    }
}

/// The architectures of the device library's members (`omprpc_libc-<arch>.o`, one per architecture,
/// as `scripts/build-device-lib.sh` names them).
fn architectures(path: &Path) -> Result<Vec<String>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    let archive = object::read::archive::ArchiveFile::parse(&*bytes).map_err(|e| format!("not an archive: {e}"))?;
    let mut archs = Vec::new();
    for member in archive.members() {
        let member = member.map_err(|e| format!("damaged archive: {e}"))?;
        let name = String::from_utf8_lossy(member.name());
        if let Some(arch) = name.strip_prefix("omprpc_libc-").and_then(|n| n.strip_suffix(".o")) {
            archs.push(arch.to_string());
        }
    }
    Ok(archs)
}
