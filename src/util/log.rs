//! Messages in libomptarget's style: information only when `LIBOMPTARGET_INFO` asks for it, errors always.
//!
//! Each message is written with one `write` call so that lines from several threads never interleave.

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

/// `LIBOMPTARGET_INFO` bit under which plugins report what they do (kernel launches, images, devices).
pub const INFO_PLUGIN: u32 = 0x10;

static INFO_LEVEL: AtomicU32 = AtomicU32::new(0);

/// Parses `LIBOMPTARGET_INFO` the way libomptarget does (a decimal integer, `-1` for everything).
pub fn parse_info_level(text: &str) -> Option<u32> {
    let text = text.trim();
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        return u32::from_str_radix(hex, 16).ok();
    }
    text.parse::<i64>().ok().map(|v| v as u32)
}

/// Sets the info mask: at start-up from the environment, later from `__tgt_set_info_flag`.
pub fn set_info_level(level: u32) {
    INFO_LEVEL.store(level, Ordering::Relaxed);
}

/// Whether messages of `kind` are wanted; cheap enough for every kernel launch.
pub fn info_enabled(kind: u32) -> bool {
    INFO_LEVEL.load(Ordering::Relaxed) & kind != 0
}

fn emit(line: String) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(line.as_bytes());
}

/// Reports what `OMPRPC_WATCHDOG_MS` watches for; always shown, since the user asked for it.
pub fn watchdog(text: impl std::fmt::Display) {
    emit(format!("omprpc watchdog: {text}\n"));
}

/// Reports a failure; always shown, because the caller gets only `OFFLOAD_FAIL` and needs the reason.
pub fn error(text: impl std::fmt::Display) {
    emit(format!("omprpc error: {text}\n"));
}

/// Reports plugin-wide information under `LIBOMPTARGET_INFO`.
pub fn info(text: impl std::fmt::Display) {
    if info_enabled(INFO_PLUGIN) {
        emit(format!("omprpc info: {text}\n"));
    }
}

/// Reports information about one device under `LIBOMPTARGET_INFO`, prefixed as libomptarget does.
pub fn device_info(device: usize, text: impl std::fmt::Display) {
    if info_enabled(INFO_PLUGIN) {
        emit(format!("omprpc device {device} info: {text}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_level_parses_like_libomptarget() {
        assert_eq!(parse_info_level("16"), Some(16));
        assert_eq!(parse_info_level("-1"), Some(u32::MAX));
        assert_eq!(parse_info_level("0x10"), Some(16));
        assert_eq!(parse_info_level(" 3 "), Some(3));
        assert_eq!(parse_info_level("yes"), None);
    }
}
