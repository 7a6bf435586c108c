//! Loading an image the way libomptarget 16's generic device does (`GenericDeviceTy::loadBinary`):
//! the module from the backend, the device environment written when the image has one, every kernel
//! with its execution mode read from the image's ELF symbol table, every global checked against the
//! size the host expects.

use std::ffi::{c_void, CString};

use super::api::HostEntry;
use super::device::KernelRecord;
use super::launch::KernelLimits;
use crate::backend::{Backend, DeviceLimits, ExecMode};
use crate::util::config::Config;
use crate::util::elf;
use crate::util::error::{Context, Error, Result};

/// The symbol through which libomptarget 16's device runtime reads its environment.
pub const DEVICE_ENVIRONMENT_SYMBOL: &std::ffi::CStr = c"__omp_rtl_device_environment";

/// `DeviceEnvironmentTy` of LLVM 16 (`DeviceEnvironment.h`): 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceEnvironment {
    /// `LIBOMPTARGET_DEVICE_RTL_DEBUG`.
    pub debug_kind: u32,
    /// Devices of this plugin.
    pub num_devices: u32,
    /// This device's (plugin-local) number.
    pub device_num: u32,
    /// `LIBOMPTARGET_SHARED_MEMORY_SIZE`.
    pub dynamic_mem_size: u32,
}

impl DeviceEnvironment {
    /// The environment of device `device` of `num_devices` under `config`.
    pub fn new(config: &Config, num_devices: usize, device: usize) -> DeviceEnvironment {
        DeviceEnvironment {
            debug_kind: config.device_rtl_debug,
            num_devices: num_devices as u32,
            device_num: device as u32,
            dynamic_mem_size: config.shared_memory_bytes,
        }
    }

    /// Its bytes as the device runtime reads them.
    pub fn to_bytes(self) -> [u8; 16] {
        let mut bytes = [0u8; 16];
        for (i, v) in [
            self.debug_kind,
            self.num_devices,
            self.device_num,
            self.dynamic_mem_size,
        ]
        .into_iter()
        .enumerate()
        {
            bytes[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        bytes
    }
}

/// The execution mode of kernel `name` from the image's `<name>_exec_mode` byte: `default` when the
/// image has no such symbol (host images never do), an error when the byte is not a mode.
pub fn exec_mode(image: Option<&elf::Image>, name: &[u8], default: ExecMode) -> Result<ExecMode> {
    let symbol_name = [name, b"_exec_mode"].concat();
    let Some(byte) = image
        .and_then(|image| image.symbol(&symbol_name).and_then(|s| image.symbol_bytes(&s)))
        .and_then(|bytes| bytes.first().copied())
    else {
        return Ok(default);
    };
    ExecMode::from_byte(byte).ok_or_else(|| {
        Error::BadImage(format!(
            "{} is {byte}, not an execution mode (1 generic, 2 SPMD, 3 generic-SPMD)",
            String::from_utf8_lossy(&symbol_name)
        ))
    })
}

/// Checks that a device global has the size the host table gives it.
pub fn check_global_size(name: &CString, host_size: usize, device_size: usize) -> Result<()> {
    if host_size == device_size {
        Ok(())
    } else {
        Err(Error::BadImage(format!(
            "global '{}' has {device_size} bytes in the device image but {host_size} on the host",
            name.to_string_lossy()
        )))
    }
}

/// What resolving one image's host entries produced.
pub struct Resolved<B: Backend> {
    /// Device address of every entry, in order.
    pub addresses: Vec<usize>,
    /// The kernels among them.
    pub kernels: Vec<&'static KernelRecord<B>>,
}

/// Resolves every host entry against a loaded module: kernels become (leaked) kernel records whose
/// addresses the table carries; globals become their device addresses, size-checked.
#[allow(clippy::too_many_arguments)]
pub fn resolve_entries<B: Backend>(
    backend: &B,
    device: usize,
    module: &B::Module,
    elf_image: Option<&elf::Image>,
    entries: &[HostEntry],
    limits: &DeviceLimits,
    config: &Config,
) -> Result<Resolved<B>> {
    let mut addresses = Vec::with_capacity(entries.len());
    let mut kernels: Vec<&'static KernelRecord<B>> = Vec::new();
    for entry in entries {
        let shown = || entry.name.to_string_lossy().into_owned();
        if entry.size == 0 {
            let symbol = backend
                .kernel(device, module, &entry.name)
                .context(|| format!("loading kernel {}", shown()))?;
            let mode = exec_mode(elf_image, entry.name.to_bytes(), limits.default_exec_mode)
                .context(|| format!("loading kernel {}", shown()))?;
            let record: &'static KernelRecord<B> = Box::leak(Box::new(KernelRecord {
                name: entry.name.clone(),
                kernel: symbol.kernel,
                mode,
                limits: KernelLimits::new(
                    limits,
                    symbol.max_threads,
                    if limits.team_caps_apply { config.max_teams } else { 0 },
                    if limits.team_caps_apply {
                        config.max_team_threads
                    } else {
                        0
                    },
                    config.shared_memory_bytes,
                ),
            }));
            kernels.push(record);
            addresses.push(record as *const KernelRecord<B> as usize);
        } else {
            let global = backend
                .global(device, module, &entry.name)
                .context(|| format!("loading global {}", shown()))?;
            check_global_size(&entry.name, entry.size, global.size)?;
            addresses.push(global.addr as usize);
        }
    }
    Ok(Resolved { addresses, kernels })
}

/// Where an image's device environment is, if it has one of the size LLVM 16 writes; `Err` carries
/// the size found when it differs.
pub fn device_environment_target<B: Backend>(
    backend: &B,
    device: usize,
    module: &B::Module,
) -> Result<Option<std::result::Result<*mut c_void, usize>>> {
    let global = match backend.global(device, module, DEVICE_ENVIRONMENT_SYMBOL) {
        Ok(global) => global,
        // An image without it needs none (as the stock plugin says, "continue execution anyway").
        Err(Error::MissingSymbol { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    if global.size == std::mem::size_of::<DeviceEnvironment>() {
        Ok(Some(Ok(global.addr)))
    } else {
        Ok(Some(Err(global.size)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::elf::tests::sample;

    #[test]
    fn exec_modes_come_from_the_symbol_table() {
        let file = sample(
            elf::EM_CUDA,
            &[
                ("a_exec_mode", 0, &[1]),
                ("b_exec_mode", 0, &[2]),
                ("c_exec_mode", 0, &[3]),
                ("d_exec_mode", 0, &[9]),
            ],
        );
        let image = elf::Image::parse(&file).unwrap();
        let mode = |name: &[u8]| exec_mode(Some(&image), name, ExecMode::Spmd);
        assert_eq!(mode(b"a").unwrap(), ExecMode::Generic);
        assert_eq!(mode(b"b").unwrap(), ExecMode::Spmd);
        assert_eq!(mode(b"c").unwrap(), ExecMode::GenericSpmd);
        let err = mode(b"d").unwrap_err().to_string();
        assert!(err.contains("d_exec_mode is 9"), "{err}");
        assert_eq!(mode(b"missing").unwrap(), ExecMode::Spmd, "missing: the default");
        assert_eq!(exec_mode(None, b"a", ExecMode::Generic).unwrap(), ExecMode::Generic);
    }

    #[test]
    fn global_sizes_must_match() {
        let name = CString::new("counter").unwrap();
        assert!(check_global_size(&name, 4, 4).is_ok());
        let err = check_global_size(&name, 8, 4).unwrap_err().to_string();
        assert_eq!(
            err,
            "cannot load the device image: global 'counter' has 4 bytes in the device image but 8 on the host"
        );
    }

    #[test]
    fn the_device_environment_has_llvm_16_layout() {
        let env = [
            ("LIBOMPTARGET_DEVICE_RTL_DEBUG", "3"),
            ("LIBOMPTARGET_SHARED_MEMORY_SIZE", "512"),
        ];
        let config = Config::from_lookup(|n| env.iter().find(|(k, _)| *k == n).map(|(_, v)| v.to_string()));
        let bytes = DeviceEnvironment::new(&config, 4, 2).to_bytes();
        assert_eq!(std::mem::size_of::<DeviceEnvironment>(), 16);
        assert_eq!(bytes, [3, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 0]);
    }
}
