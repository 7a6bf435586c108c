//! Where things are: the plugin this command belongs to, libomptarget 16, the stock plugin names it
//! loads, the user's directories. One place, so that `run`, `info` and `install` agree.

use std::path::{Path, PathBuf};

/// The names libomptarget 16 tries first for its host, CUDA and AMDGPU plugins. omprpc answers to
/// each (it picks its backend from the name it is loaded under); a copy under each, never a link,
/// since the dynamic loader hands back one instance for one file.
pub const STOCK_NAMES: [&str; 3] = [
    "libomptarget.rtl.x86_64.nextgen.so",
    "libomptarget.rtl.cuda.nextgen.so",
    "libomptarget.rtl.amdgpu.nextgen.so",
];

/// Where Debian's libomptarget 16 lives, below a root (`/` but in tests).
pub const LLVM16_LIB: &str = "usr/lib/llvm-16/lib";

/// The file whose presence says libomptarget 16 is installed.
pub const LIBOMPTARGET: &str = "libomptarget.so.16";

/// The plugin's file name as cargo builds it.
pub const PLUGIN_FILE: &str = "libomprpc.so";

/// The device library's file name (`scripts/build-device-lib.sh`).
pub const DEVICE_LIBRARY: &str = "libomprpc-device.a";

/// An error for the user: one line saying what went wrong and what to do.
pub type Failure = String;

/// The plugin to serve with: `OMPRPC_PLUGIN` when set, else `libomprpc.so` beside this command (as
/// cargo builds them), else in `../lib` (an installed prefix).
pub fn plugin() -> Result<PathBuf, Failure> {
    if let Some(path) = std::env::var_os("OMPRPC_PLUGIN").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("OMPRPC_PLUGIN names {}, which is not a file", path.display()))
        };
    }
    let candidates = beside_me(&[PLUGIN_FILE, &format!("../lib/{PLUGIN_FILE}")])?;
    candidates.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        format!(
            "cannot find the plugin: no {} (build it with `cargo build --release`, or set OMPRPC_PLUGIN)",
            candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        )
    })
}

/// Paths relative to the directory of this command's executable.
pub fn beside_me(relative: &[&str]) -> Result<Vec<PathBuf>, Failure> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this command's own file: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    Ok(relative.iter().map(|r| dir.join(r)).collect())
}

/// The device library beside this command, in `../lib`, or where `scripts/build-device-lib.sh` puts
/// it by default in a checkout (`target/device`); `OMPRPC_DEVICE_LIBRARY` names another.
pub fn device_library() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("OMPRPC_DEVICE_LIBRARY").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let relative = [
        DEVICE_LIBRARY.to_string(),
        format!("../lib/{DEVICE_LIBRARY}"),
        format!("../device/{DEVICE_LIBRARY}"),
    ];
    beside_me(&relative.iter().map(String::as_str).collect::<Vec<_>>())
        .ok()?
        .into_iter()
        .find(|p| p.is_file())
}

/// The user's cache directory for omprpc (`$XDG_CACHE_HOME/omprpc`, else `~/.cache/omprpc`).
pub fn cache_dir() -> Result<PathBuf, Failure> {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("omprpc"));
    }
    Ok(home()?.join(".cache/omprpc"))
}

/// The user's home directory.
pub fn home() -> Result<PathBuf, Failure> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| "HOME is not set; set it and retry".to_string())
}

/// libomptarget 16's directory below `root`, or why it is not usable.
pub fn llvm16_lib(root: &Path) -> Result<PathBuf, Failure> {
    let dir = root.join(LLVM16_LIB);
    if dir.join(LIBOMPTARGET).is_file() {
        Ok(dir)
    } else {
        Err(format!(
            "libomptarget 16 is not installed: no {}; install it with `apt-get install libomp-16-dev` (or run sh scripts/setup-debian.sh)",
            dir.join(LIBOMPTARGET).display()
        ))
    }
}

/// Copies `from` to `to` by way of a temporary file in `to`'s directory and a rename, so that a
/// program starting meanwhile (another rank of a job) sees the old file or the new one, never half.
pub fn copy_atomically(from: &Path, to: &Path) -> Result<(), Failure> {
    let dir = to.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        to.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    std::fs::copy(from, &tmp)
        .and_then(|_| std::fs::rename(&tmp, to))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot copy {} to {}: {}", from.display(), to.display(), with_hint(&e))
        })
}

/// An I/O error in words, with what to do when it is a matter of permissions.
pub fn with_hint(error: &std::io::Error) -> String {
    if error.kind() == std::io::ErrorKind::PermissionDenied {
        format!("{error}; run it as root (e.g. with sudo), or install with --user")
    } else {
        error.to_string()
    }
}
