//! `omprpc run PROG [ARGS]`: the program runs with omprpc as its host, CUDA and AMDGPU plugin, from a
//! directory of the user's own put first on `LD_LIBRARY_PATH`; nothing on the system changes.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::layout::{self, Failure, STOCK_NAMES};

/// What the private directory's copies were made from: the plugin's path, size and change time. A
/// rebuild changes them, and the next `run` copies again.
const STAMP: &str = "made-from";

/// Replaces this process with `program`, so that its exit status and signals are the caller's to see
/// as if it had been started directly; returns only when it cannot be started.
pub fn run(program: &OsString, args: &[OsString]) -> Failure {
    let dir = match layout::plugin().and_then(|plugin| private_plugin_dir(&plugin)) {
        Ok(dir) => dir,
        Err(failure) => return failure,
    };
    let search = match std::env::var_os("LD_LIBRARY_PATH").filter(|p| !p.is_empty()) {
        Some(rest) => {
            let mut path = dir.clone().into_os_string();
            path.push(":");
            path.push(rest);
            path
        }
        None => dir.into_os_string(),
    };
    let error = std::process::Command::new(program)
        .args(args)
        .env("LD_LIBRARY_PATH", search)
        .exec();
    format!("cannot run {}: {error}", Path::new(program).display())
}

/// The directory holding the plugin under the stock names, made on first use and brought up to date
/// whenever `plugin` has been rebuilt since; one per plugin file, in the user's cache.
pub fn private_plugin_dir(plugin: &Path) -> Result<PathBuf, Failure> {
    let plugin = plugin
        .canonicalize()
        .map_err(|e| format!("cannot read {}: {e}", plugin.display()))?;
    let meta = std::fs::metadata(&plugin).map_err(|e| format!("cannot read {}: {e}", plugin.display()))?;
    let stamp = format!(
        "{}\n{}\n{}.{}\n",
        plugin.display(),
        meta.len(),
        meta.ctime(),
        meta.ctime_nsec()
    );
    let key = Sha256::digest(plugin.as_os_str().as_encoded_bytes());
    let hex: String = key.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let dir = layout::cache_dir()?.join("run").join(hex);
    let up_to_date = std::fs::read_to_string(dir.join(STAMP)).is_ok_and(|s| s == stamp)
        && STOCK_NAMES
            .iter()
            .all(|name| std::fs::metadata(dir.join(name)).is_ok_and(|copy| copy.len() == meta.len()));
    if !up_to_date {
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        for name in STOCK_NAMES {
            layout::copy_atomically(&plugin, &dir.join(name))?;
        }
        let tmp = dir.join(format!(".{STAMP}.{}", std::process::id()));
        std::fs::write(&tmp, &stamp)
            .and_then(|()| std::fs::rename(&tmp, dir.join(STAMP)))
            .map_err(|e| format!("cannot write {}: {e}", dir.join(STAMP).display()))?;
    }
    Ok(dir)
}
