//! `omprpc install` / `omprpc uninstall`: the plugin under the stock names, for one user (a directory
//! of their own, put on `LD_LIBRARY_PATH` by a line they add to their profile) or for the whole
//! machine (over the stock plugins of libomptarget 16, which are kept aside and put back byte for
//! byte). A manifest records the SHA-256 of every file installed, so that uninstall removes only
//! files it installed and unchanged since, and refuses, touching nothing, otherwise.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::layout::{self, Failure, STOCK_NAMES};

/// Where an install goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `~/.local/lib/omprpc`, for the user's own programs.
    User,
    /// libomptarget 16's own directory, for every program on the machine.
    System,
}

/// The manifest's first line: what wrote it, and its format.
const MANIFEST_HEADER: &str = "omprpc install manifest 1";
/// The suffix of a stock plugin kept aside, beside it (a rename in one directory keeps every byte,
/// its mode and times, and a symbolic link as a link).
const STOCK_SUFFIX: &str = ".omprpc-stock";

/// One installed file: its stock name, the SHA-256 of what was installed, and whether a stock file
/// was kept aside for it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    name: String,
    sha256: String,
    kept_stock: bool,
}

/// Where the plugin copies go and where the manifest is, for `scope` below `root`.
fn places(scope: Scope, root: &Path) -> Result<(PathBuf, PathBuf), Failure> {
    match scope {
        Scope::User => {
            let dir = layout::home()?.join(".local/lib/omprpc");
            let manifest = dir.join(".omprpc-installed");
            Ok((dir, manifest))
        }
        Scope::System => Ok((layout::llvm16_lib(root)?, root.join("var/lib/omprpc/installed-system"))),
    }
}

/// Installs (or updates) the plugin for `scope`; returns what to tell the user.
pub fn install(scope: Scope, root: &Path) -> Result<String, Failure> {
    layout::llvm16_lib(root)?;
    let plugin = layout::plugin()?;
    let (dir, manifest_path) = places(scope, root)?;
    let previous = read_manifest(&manifest_path)?;
    if let Some(entries) = &previous {
        check_unchanged(&dir, entries)?;
    }
    let sha256 = file_sha256(&plugin)?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {}", dir.display(), layout::with_hint(&e)))?;
    let mut entries = Vec::new();
    // What this run did, undone in reverse if a later step fails, so that a failed install leaves
    // the directory as it found it.
    let mut kept_aside: Vec<PathBuf> = Vec::new();
    let mut written: Vec<PathBuf> = Vec::new();
    let result = (|| -> Result<(), Failure> {
        for name in STOCK_NAMES {
            let target = dir.join(name);
            let was_ours = previous.as_ref().and_then(|p| p.iter().find(|e| e.name == name));
            let kept_stock = match was_ours {
                Some(entry) => entry.kept_stock,
                None if scope == Scope::System && target.symlink_metadata().is_ok() => {
                    let aside = stock_path(&target);
                    if aside.symlink_metadata().is_ok() {
                        return Err(format!(
                            "{} is left from an earlier install whose manifest {} is gone; put it back as {} or remove it, then retry",
                            aside.display(),
                            manifest_path.display(),
                            target.display()
                        ));
                    }
                    std::fs::rename(&target, &aside)
                        .map_err(|e| format!("cannot keep {} aside: {}", target.display(), layout::with_hint(&e)))?;
                    kept_aside.push(target.clone());
                    true
                }
                None if target.symlink_metadata().is_ok() => {
                    return Err(format!(
                        "{} exists and omprpc did not install it; remove it or choose another install",
                        target.display()
                    ));
                }
                None => false,
            };
            layout::copy_atomically(&plugin, &target)?;
            written.push(target);
            entries.push(Entry {
                name: name.to_string(),
                sha256: sha256.clone(),
                kept_stock,
            });
        }
        write_manifest(&manifest_path, &entries)
    })();
    if let Err(failure) = result {
        if previous.is_none() {
            for path in written.iter().rev() {
                let _ = std::fs::remove_file(path);
            }
            for target in kept_aside.iter().rev() {
                let _ = std::fs::rename(stock_path(target), target);
            }
        }
        return Err(failure);
    }
    let what = if previous.is_some() { "updated" } else { "installed" };
    Ok(match scope {
        Scope::User => format!(
            "omprpc {what} in {dir} for your programs. Add this line to your shell's profile (~/.profile \
             or ~/.bashrc) and start a new shell:\n    export LD_LIBRARY_PATH=\"{dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\"",
            dir = dir.display()
        ),
        Scope::System => format!(
            "omprpc {what} in {} as the host, CUDA and AMDGPU plugin of every program; the stock plugins \
             are kept aside, and `omprpc uninstall --system` puts them back",
            dir.display()
        ),
    })
}

/// Takes back what [`install`] put in place for `scope`: removes its files when they are unchanged
/// and puts the stock files back; refuses, changing nothing, when any file is not the one installed.
pub fn uninstall(scope: Scope, root: &Path) -> Result<String, Failure> {
    let (dir, manifest_path) = places(scope, root)?;
    let Some(entries) = read_manifest(&manifest_path)? else {
        return Err(format!(
            "omprpc is not installed there: no {} (nothing changed)",
            manifest_path.display()
        ));
    };
    check_unchanged(&dir, &entries)?;
    for entry in &entries {
        let target = dir.join(&entry.name);
        if entry.kept_stock {
            std::fs::rename(stock_path(&target), &target).map_err(|e| {
                format!(
                    "cannot put the stock {} back: {}",
                    target.display(),
                    layout::with_hint(&e)
                )
            })?;
        } else {
            std::fs::remove_file(&target)
                .map_err(|e| format!("cannot remove {}: {}", target.display(), layout::with_hint(&e)))?;
        }
    }
    std::fs::remove_file(&manifest_path).map_err(|e| format!("cannot remove {}: {e}", manifest_path.display()))?;
    Ok(match scope {
        Scope::User => {
            // The directory was made by install; left only when the user put files of their own in it.
            let _ = std::fs::remove_dir(&dir);
            format!(
                "omprpc removed from {}. Remove the LD_LIBRARY_PATH line that names it from your shell's profile",
                dir.display()
            )
        }
        Scope::System => {
            let _ = std::fs::remove_dir(manifest_path.parent().unwrap_or(&dir));
            format!("omprpc removed from {}; the stock plugins are back", dir.display())
        }
    })
}

/// Fails, naming the file, when any installed file is missing or no longer what was installed (a
/// package upgrade, or a hand, replaced it), or a kept stock file is gone.
fn check_unchanged(dir: &Path, entries: &[Entry]) -> Result<(), Failure> {
    for entry in entries {
        let target = dir.join(&entry.name);
        let now = file_sha256(&target)?;
        if now != entry.sha256 {
            return Err(format!(
                "{} is not the file omprpc installed (changed since, perhaps by a package upgrade); nothing changed. Put back the file you want there and remove {} by hand",
                target.display(),
                stock_path(&target).display()
            ));
        }
        if entry.kept_stock && stock_path(&target).symlink_metadata().is_err() {
            return Err(format!(
                "the stock file kept aside as {} is gone; nothing changed",
                stock_path(&target).display()
            ));
        }
    }
    Ok(())
}

/// Where the stock file `target` is kept while omprpc is installed over it.
fn stock_path(target: &Path) -> PathBuf {
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(STOCK_SUFFIX);
    target.with_file_name(name)
}

/// The SHA-256 of a file's bytes, in hex.
fn file_sha256(path: &Path) -> Result<String, Failure> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect())
}

/// The manifest's entries, or `None` when there is none.
fn read_manifest(path: &Path) -> Result<Option<Vec<Entry>>, Failure> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let damaged = || format!("{} is not an omprpc install manifest; nothing changed", path.display());
    let mut lines = text.lines();
    if lines.next() != Some(MANIFEST_HEADER) {
        return Err(damaged());
    }
    lines
        .map(|line| match line.split(' ').collect::<Vec<_>>()[..] {
            ["file", name, sha256, stock] if STOCK_NAMES.contains(&name) && sha256.len() == 64 => Ok(Entry {
                name: name.to_string(),
                sha256: sha256.to_string(),
                kept_stock: match stock {
                    "kept" => true,
                    "none" => false,
                    _ => return Err(damaged()),
                },
            }),
            _ => Err(damaged()),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Writes the manifest (by way of a temporary file and a rename: never half written).
fn write_manifest(path: &Path, entries: &[Entry]) -> Result<(), Failure> {
    let mut text = format!("{MANIFEST_HEADER}\n");
    for entry in entries {
        let stock = if entry.kept_stock { "kept" } else { "none" };
        text.push_str(&format!("file {} {} {stock}\n", entry.name, entry.sha256));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
