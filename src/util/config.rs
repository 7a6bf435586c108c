//! Settings read once from the environment into typed values. An invalid value is reported once and
//! the default kept, so a typo never silently changes behaviour.

use super::log;

/// Which device family the plugin drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// The host CPU (`libomptarget.rtl.x86_64`).
    Host,
    /// NVIDIA GPUs through the CUDA driver (`libomptarget.rtl.cuda`).
    Cuda,
    /// AMD GPUs through the HSA runtime (`libomptarget.rtl.amdgpu`).
    Amdgpu,
}

impl BackendKind {
    /// Parses an `OMPRPC_BACKEND` value.
    pub fn parse(text: &str) -> Option<BackendKind> {
        match text.trim().to_ascii_lowercase().as_str() {
            "host" | "x86_64" => Some(BackendKind::Host),
            "cuda" | "nvptx" => Some(BackendKind::Cuda),
            "amdgpu" | "hsa" => Some(BackendKind::Amdgpu),
            _ => None,
        }
    }

    /// Works out the backend from the file name the plugin was loaded under, as libomptarget names
    /// plugins: `libomptarget.rtl.<arch>[.nextgen].so[.<version>]`.
    pub fn from_plugin_file_name(file_name: &str) -> Option<BackendKind> {
        let rest = file_name.strip_prefix("libomptarget.rtl.")?;
        let (arch, suffix) = rest.split_once('.')?;
        let suffix = suffix.strip_prefix("nextgen.").unwrap_or(suffix);
        let version = suffix.strip_prefix("so")?;
        let version_ok = version.is_empty()
            || version.strip_prefix('.').is_some_and(|v| {
                !v.is_empty()
                    && v.split('.')
                        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            });
        if !version_ok {
            return None;
        }
        match arch {
            "x86_64" => Some(BackendKind::Host),
            "cuda" => Some(BackendKind::Cuda),
            "amdgpu" => Some(BackendKind::Amdgpu),
            _ => None,
        }
    }

    /// The name users see in messages and in `OMPRPC_BACKEND`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Host => "host",
            BackendKind::Cuda => "cuda",
            BackendKind::Amdgpu => "amdgpu",
        }
    }

    /// The family's name in prose ("CUDA").
    pub fn display_name(self) -> &'static str {
        match self {
            BackendKind::Host => "host",
            BackendKind::Cuda => "CUDA",
            BackendKind::Amdgpu => "AMDGPU",
        }
    }
}

/// Default number of host devices; the stock x86_64 plugin hard-codes 4.
pub const DEFAULT_HOST_DEVICES: usize = 4;
/// Upper bound on `OMPRPC_HOST_DEVICES`, far above any sensible use, so a typo cannot exhaust memory.
pub const MAX_HOST_DEVICES: usize = 1024;

/// The plugin's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `OMPRPC_BACKEND`: overrides the backend implied by the file name.
    pub backend_override: Option<BackendKind>,
    /// `OMPRPC_HOST_DEVICES`: number of host devices.
    pub host_devices: usize,
    /// `LIBOMPTARGET_INFO`: the information mask.
    pub info_level: u32,
    /// `LIBOMPTARGET_NUM_INITIAL_STREAMS`: queues created per device up front.
    pub initial_queues: usize,
    /// `LIBOMPTARGET_NUM_INITIAL_EVENTS`: events created per device up front.
    pub initial_events: usize,
    /// `OMPRPC_RPC_PORTS`: RPC ports per device, or the backend's default.
    pub rpc_ports: Option<u32>,
    /// `LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD`: device allocations up to this size are recycled by the
    /// core's memory manager (on backends whose allocations are expensive); 0 turns it off.
    pub memory_manager_threshold: usize,
    /// `LIBOMPTARGET_SHARED_MEMORY_SIZE`: dynamic shared memory given to every kernel launch, and
    /// written to the device environment.
    pub shared_memory_bytes: u32,
    /// `LIBOMPTARGET_DEVICE_RTL_DEBUG`: the device runtime's debug flags (device environment).
    pub device_rtl_debug: u32,
    /// `OMPRPC_HOST_RPC_LANES`: lanes per RPC port on host devices for images that do not export
    /// their own count (LLVM libc's client); 1, or 32 or 64 for testing a warp-shaped client.
    pub host_rpc_lanes: u32,
    /// `OMP_NUM_TEAMS`: caps the teams of a launch when set (0 = no cap).
    pub max_teams: u32,
    /// `OMP_TEAMS_THREAD_LIMIT`: caps the threads of a team when set (0 = no cap).
    pub max_team_threads: u32,
    /// `LIBOMPTARGET_STACK_SIZE`: per-thread stack of GPU kernels, set on the device when given.
    pub device_stack_bytes: Option<usize>,
    /// `LIBOMPTARGET_HEAP_SIZE`: the GPU's device-side `malloc` heap, set on the device when given.
    pub device_heap_bytes: Option<usize>,
    /// `OMPRPC_DEVICE_HEAP_SIZE`: bytes reserved at a time on a GPU for device code's `malloc` served
    /// by the host (host services), or the default from the device's memory.
    pub rpc_heap_bytes: Option<usize>,
    /// `OMPRPC_CUDA_LIBRARY`: the CUDA driver library to open instead of `libcuda.so.1`/`libcuda.so`.
    pub cuda_library: Option<String>,
    /// `OMPRPC_HSA_LIBRARY`: the HSA runtime to open instead of `libhsa-runtime64.so.1`/`.so`.
    pub hsa_library: Option<String>,
    /// The AMDGPU settings the stock AMDGPU plugin reads, with its defaults.
    pub amdgpu: AmdgpuSettings,
}

/// `LIBOMPTARGET_AMDGPU_*`: what the stock AMDGPU plugin of LLVM 16 lets a user tune.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmdgpuSettings {
    /// `LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES` (4): HSA queues per device, shared by its streams.
    pub hsa_queues: usize,
    /// `LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE` (512): packets per HSA queue (rounded to a power of two).
    pub hsa_queue_size: usize,
    /// `LIBOMPTARGET_AMDGPU_TEAMS_PER_CU` (4): default teams per compute unit.
    pub teams_per_cu: usize,
    /// `LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES` (1 MiB): host copies this large or larger pin the
    /// host buffer and wait, instead of going through a staging buffer.
    pub max_async_copy_bytes: usize,
    /// `LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS` (64): signals created per device up front.
    pub initial_signals: usize,
}

/// libomptarget's default for `LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD` (8 KiB).
pub const DEFAULT_MEMORY_MANAGER_THRESHOLD: usize = 1 << 13;

impl Config {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Config {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// The settings that `pairs` of names and values give, the rest unset: for tests.
    #[cfg(test)]
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Config {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    /// Reads the settings through `lookup`, so tests need not touch the process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Config {
        let info_level = match lookup("LIBOMPTARGET_INFO") {
            None => 0,
            Some(text) => log::parse_info_level(&text).unwrap_or_else(|| {
                log::error(format_args!(
                    "LIBOMPTARGET_INFO='{text}' is not an integer; ignoring it"
                ));
                0
            }),
        };
        let backend_override = lookup("OMPRPC_BACKEND").and_then(|text| {
            let kind = BackendKind::parse(&text);
            if kind.is_none() {
                log::error(format_args!(
                    "OMPRPC_BACKEND='{text}' is not one of host, cuda, amdgpu; using the plugin's file name instead"
                ));
            }
            kind
        });
        Config {
            backend_override,
            host_devices: count_setting(
                &lookup,
                "OMPRPC_HOST_DEVICES",
                DEFAULT_HOST_DEVICES,
                1,
                MAX_HOST_DEVICES,
            ),
            info_level,
            initial_queues: count_setting(&lookup, "LIBOMPTARGET_NUM_INITIAL_STREAMS", 32, 0, 4096),
            initial_events: count_setting(&lookup, "LIBOMPTARGET_NUM_INITIAL_EVENTS", 32, 0, 4096),
            rpc_ports: optional_count(&lookup, "OMPRPC_RPC_PORTS", 1, 4096, "the device's default").map(|n| n as u32),
            memory_manager_threshold: count_setting(
                &lookup,
                "LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD",
                DEFAULT_MEMORY_MANAGER_THRESHOLD,
                0,
                1 << 30,
            ),
            shared_memory_bytes: count_setting(&lookup, "LIBOMPTARGET_SHARED_MEMORY_SIZE", 0, 0, u32::MAX as usize)
                as u32,
            device_rtl_debug: count_setting(&lookup, "LIBOMPTARGET_DEVICE_RTL_DEBUG", 0, 0, u32::MAX as usize) as u32,
            host_rpc_lanes: match lookup("OMPRPC_HOST_RPC_LANES").as_deref().map(str::trim) {
                None | Some("1") => 1,
                Some("32") => 32,
                Some("64") => 64,
                Some(other) => {
                    log::error(format_args!(
                        "OMPRPC_HOST_RPC_LANES='{other}' is not 1, 32 or 64; using 1"
                    ));
                    1
                }
            },
            max_teams: optional_count(&lookup, "OMP_NUM_TEAMS", 1, u32::MAX as usize, "no cap").unwrap_or(0) as u32,
            max_team_threads: optional_count(&lookup, "OMP_TEAMS_THREAD_LIMIT", 1, u32::MAX as usize, "no cap")
                .unwrap_or(0) as u32,
            device_stack_bytes: optional_count(&lookup, "LIBOMPTARGET_STACK_SIZE", 0, usize::MAX, "the driver's"),
            device_heap_bytes: optional_count(&lookup, "LIBOMPTARGET_HEAP_SIZE", 0, usize::MAX, "the driver's"),
            rpc_heap_bytes: optional_count(&lookup, "OMPRPC_DEVICE_HEAP_SIZE", 1, 1 << 40, "the device's default"),
            cuda_library: lookup("OMPRPC_CUDA_LIBRARY").filter(|path| !path.trim().is_empty()),
            hsa_library: lookup("OMPRPC_HSA_LIBRARY").filter(|path| !path.trim().is_empty()),
            amdgpu: AmdgpuSettings {
                hsa_queues: count_setting(&lookup, "LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES", 4, 1, 1024),
                hsa_queue_size: count_setting(&lookup, "LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE", 512, 2, 1 << 20),
                teams_per_cu: count_setting(&lookup, "LIBOMPTARGET_AMDGPU_TEAMS_PER_CU", 4, 1, 1 << 16),
                max_async_copy_bytes: count_setting(
                    &lookup,
                    "LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES",
                    1 << 20,
                    0,
                    usize::MAX,
                ),
                initial_signals: count_setting(&lookup, "LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS", 64, 0, 1 << 16),
            },
        }
    }
}

/// How host calls are served: port by port through windows (the default), or by libc's whole-server
/// scan (`OMPRPC_RPC_SERVE=scan`, to compare the two in benchmarks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServeMode {
    /// One port at a time, through a window of libc's server onto that port.
    PortByPort,
    /// libc's own scan of every port of a server.
    WholeServerScan,
}

/// How the serving threads wait for host calls while a kernel that may make them runs
/// (`OMPRPC_RPC_WAIT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RpcWait {
    /// Sleep after a short spin: until device code rings the doorbell where it can, else in naps
    /// that grow with the lull, short while calls may come soon and longer once the device has been
    /// quiet for a while (`adaptive`, the default; the lengths are the serving threads' own choice,
    /// [`crate::rpc::serving::threads`]).
    #[default]
    Adaptive,
    /// As `Adaptive`, but the naps never grow beyond `longest`, however long the lull (a number of
    /// microseconds): the most a call after a lull waits to be seen on NVIDIA GPUs, or from LLVM
    /// libc's own client, whatever it costs.
    Sleep {
        /// The longest nap.
        longest: std::time::Duration,
    },
    /// Never sleep while such a kernel runs: the lowest latency, at the cost of a core (`spin`).
    Spin,
}

/// The most `OMPRPC_RPC_WAIT` may ask for (a second): longer naps would leave calls waiting longer than
/// any user wants, with no CPU left to save.
pub const MAX_LONGEST_NAP_US: u64 = 1_000_000;

/// Reads `OMPRPC_RPC_WAIT`: `spin`, `adaptive`, or the longest nap in microseconds (an empty value is
/// none of them, as for the numeric settings).
fn parse_rpc_wait(text: &str) -> Option<RpcWait> {
    match text.trim().to_ascii_lowercase().as_str() {
        "adaptive" => Some(RpcWait::Adaptive),
        "spin" => Some(RpcWait::Spin),
        number => {
            let us: u64 = number.parse().ok()?;
            (1..=MAX_LONGEST_NAP_US).contains(&us).then(|| RpcWait::Sleep {
                longest: std::time::Duration::from_micros(us),
            })
        }
    }
}

/// Events the trace keeps unless `OMPRPC_TRACE_EVENTS` says otherwise (32 MB).
pub const DEFAULT_TRACE_EVENTS: usize = 1_000_000;
/// The most events `OMPRPC_TRACE_EVENTS` may ask for (3.2 GB), so that a typo cannot exhaust memory.
pub const MAX_TRACE_EVENTS: usize = 100_000_000;
/// The longest `OMPRPC_WATCHDOG_MS` (a day).
pub const MAX_WATCHDOG_MS: u64 = 86_400_000;

/// The settings of host services. Unlike [`Config`] (one per plugin) they are the process's, as the
/// statistics, the trace, the watchdog and the serving threads are: read once, by [`host_services`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostServiceSettings {
    /// `OMPRPC_STATS`: print per-opcode statistics of host calls at exit.
    pub stats: bool,
    /// `OMPRPC_TRACE`: the file a timeline of host calls is written to at exit.
    pub trace: Option<std::path::PathBuf>,
    /// `OMPRPC_TRACE_EVENTS`: events the trace keeps (the newest).
    pub trace_events: usize,
    /// `OMPRPC_WATCHDOG_MS`: report host calls open longer than this.
    pub watchdog: Option<std::time::Duration>,
    /// `OMPRPC_RPC_SERVE`: how requests are served.
    pub serve: ServeMode,
    /// `OMPRPC_RPC_WAIT`: how the serving threads wait for requests.
    pub rpc_wait: RpcWait,
}

impl HostServiceSettings {
    /// Reads the settings through `lookup`; an invalid value is reported once and the default kept.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> HostServiceSettings {
        let stats = lookup("OMPRPC_STATS").is_some_and(|text| {
            parse_switch(&text).unwrap_or_else(|| {
                log::error(format_args!(
                    "OMPRPC_STATS='{text}' is not one of 1, true, yes, on, 0, false, no, off; statistics stay off"
                ));
                false
            })
        });
        let watchdog = lookup("OMPRPC_WATCHDOG_MS").and_then(|text| {
            let parsed = parse_watchdog_ms(&text);
            if parsed.is_none() && !text.trim().is_empty() {
                log::error(format_args!(
                    "OMPRPC_WATCHDOG_MS='{text}' is not a number of milliseconds from 1 to {MAX_WATCHDOG_MS}; no watchdog"
                ));
            }
            parsed
        });
        let serve = match lookup("OMPRPC_RPC_SERVE").as_deref().map(str::trim) {
            Some("scan") => ServeMode::WholeServerScan,
            Some("" | "port") | None => ServeMode::PortByPort,
            Some(other) => {
                log::error(format_args!(
                    "OMPRPC_RPC_SERVE='{other}' is not 'port' or 'scan'; serving port by port"
                ));
                ServeMode::PortByPort
            }
        };
        let rpc_wait = lookup("OMPRPC_RPC_WAIT").map_or_else(RpcWait::default, |text| {
            parse_rpc_wait(&text).unwrap_or_else(|| {
                log::error(format_args!(
                    "OMPRPC_RPC_WAIT='{text}' is not 'adaptive', 'spin' or a number of microseconds from 1 to \
                     {MAX_LONGEST_NAP_US}; using adaptive"
                ));
                RpcWait::default()
            })
        });
        HostServiceSettings {
            rpc_wait,
            stats,
            trace: lookup("OMPRPC_TRACE")
                .filter(|path| !path.is_empty())
                .map(std::path::PathBuf::from),
            trace_events: count_setting(
                &lookup,
                "OMPRPC_TRACE_EVENTS",
                DEFAULT_TRACE_EVENTS,
                1,
                MAX_TRACE_EVENTS,
            ),
            watchdog,
            serve,
        }
    }
}

/// The host-service settings of this process, read from its environment the first time they are
/// asked for; cheap enough to ask on every host call.
pub fn host_services() -> &'static HostServiceSettings {
    static SETTINGS: std::sync::OnceLock<HostServiceSettings> = std::sync::OnceLock::new();
    SETTINGS.get_or_init(|| {
        HostServiceSettings::from_lookup(|name| std::env::var_os(name).map(|text| text.to_string_lossy().into_owned()))
    })
}

/// Reads an on/off switch: `Some(true)` or `Some(false)`, or `None` when it means neither.
fn parse_switch(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "" | "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Reads a watchdog limit in milliseconds (1 ms to a day).
fn parse_watchdog_ms(text: &str) -> Option<std::time::Duration> {
    let ms: u64 = text.trim().parse().ok()?;
    (1..=MAX_WATCHDOG_MS)
        .contains(&ms)
        .then(|| std::time::Duration::from_millis(ms))
}

/// A setting with no default value: `None` when unset or invalid (an invalid value is reported, saying
/// that `fallback` applies instead).
fn optional_count(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &str,
    min: usize,
    max: usize,
    fallback: &str,
) -> Option<usize> {
    let text = lookup(name)?;
    match text.trim().parse::<usize>() {
        Ok(v) if (min..=max).contains(&v) => Some(v),
        _ => {
            log::error(format_args!(
                "{name}='{text}' is not a whole number from {min} to {max}; using {fallback}"
            ));
            None
        }
    }
}

fn count_setting(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &str,
    default: usize,
    min: usize,
    max: usize,
) -> usize {
    let Some(text) = lookup(name) else {
        return default;
    };
    match text.trim().parse::<usize>() {
        Ok(v) if (min..=max).contains(&v) => v,
        _ => {
            log::error(format_args!(
                "{name}='{text}' is not a whole number from {min} to {max}; using {default}"
            ));
            default
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_follows_the_stock_plugin_names() {
        use BackendKind::*;
        let cases = [
            ("libomptarget.rtl.x86_64.nextgen.so", Some(Host)),
            ("libomptarget.rtl.x86_64.so", Some(Host)),
            ("libomptarget.rtl.x86_64.so.16", Some(Host)),
            ("libomptarget.rtl.cuda.nextgen.so", Some(Cuda)),
            ("libomptarget.rtl.cuda.so", Some(Cuda)),
            ("libomptarget.rtl.amdgpu.nextgen.so", Some(Amdgpu)),
            ("libomptarget.rtl.amdgpu.nextgen.so.16", Some(Amdgpu)),
            ("libomptarget.rtl.ppc64.so", None),
            ("libomptarget.rtl.x86_64.nextgen.dll", None),
            ("libomptarget.rtl.x86_64.so.", None),
            ("libomptarget.rtl.x86_64.so.1x", None),
            ("libomprpc.so", None),
            ("", None),
        ];
        for (name, want) in cases {
            assert_eq!(BackendKind::from_plugin_file_name(name), want, "{name}");
        }
    }

    #[test]
    fn host_service_settings_keep_defaults_on_bad_values() {
        use std::time::Duration;
        let read = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            HostServiceSettings::from_lookup(move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
        };
        let unset = read(&[]);
        assert!(!unset.stats && unset.trace.is_none() && unset.watchdog.is_none());
        assert_eq!(
            (unset.trace_events, unset.serve),
            (DEFAULT_TRACE_EVENTS, ServeMode::PortByPort)
        );
        for on in ["1", "true", "YES", " on "] {
            assert!(read(&[("OMPRPC_STATS", on)]).stats, "{on:?}");
        }
        for off in ["", "0", "false", "No", "off", "2", "enabled"] {
            assert!(!read(&[("OMPRPC_STATS", off)]).stats, "{off:?}");
        }
        assert_eq!(parse_switch("2"), None);
        assert_eq!(
            read(&[("OMPRPC_WATCHDOG_MS", " 250 ")]).watchdog,
            Some(Duration::from_millis(250))
        );
        for bad in ["0", "ten", "86400001", ""] {
            assert_eq!(read(&[("OMPRPC_WATCHDOG_MS", bad)]).watchdog, None, "{bad:?}");
        }
        assert_eq!(read(&[("OMPRPC_TRACE_EVENTS", " 5000 ")]).trace_events, 5_000);
        for bad in ["0", "lots", "1000000000"] {
            assert_eq!(
                read(&[("OMPRPC_TRACE_EVENTS", bad)]).trace_events,
                DEFAULT_TRACE_EVENTS,
                "{bad:?}"
            );
        }
        assert_eq!(read(&[("OMPRPC_TRACE", "")]).trace, None);
        assert_eq!(
            read(&[("OMPRPC_TRACE", "t.json")]).trace.as_deref(),
            Some(std::path::Path::new("t.json"))
        );
        assert_eq!(read(&[("OMPRPC_RPC_SERVE", "scan")]).serve, ServeMode::WholeServerScan);
        assert_eq!(read(&[("OMPRPC_RPC_SERVE", "scanning")]).serve, ServeMode::PortByPort);
        assert_eq!(read(&[]).rpc_wait, RpcWait::Adaptive);
        assert_eq!(read(&[("OMPRPC_RPC_WAIT", " Spin ")]).rpc_wait, RpcWait::Spin);
        assert_eq!(read(&[("OMPRPC_RPC_WAIT", "adaptive")]).rpc_wait, RpcWait::Adaptive);
        assert_eq!(
            read(&[("OMPRPC_RPC_WAIT", "50")]).rpc_wait,
            RpcWait::Sleep {
                longest: Duration::from_micros(50)
            }
        );
        for bad in ["", "0", "fast", "1000001", "-5", "1.5"] {
            assert_eq!(read(&[("OMPRPC_RPC_WAIT", bad)]).rpc_wait, RpcWait::Adaptive, "{bad:?}");
        }
    }

    #[test]
    fn backend_override_values() {
        assert_eq!(BackendKind::parse("HOST"), Some(BackendKind::Host));
        assert_eq!(BackendKind::parse("cuda"), Some(BackendKind::Cuda));
        assert_eq!(BackendKind::parse("amdgpu"), Some(BackendKind::Amdgpu));
        assert_eq!(BackendKind::parse("gpu"), None);
    }

    #[test]
    fn settings_keep_defaults_on_bad_values() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        let c = Config::from_lookup(env(&[]));
        assert_eq!(c.host_devices, 4);
        assert_eq!(c.backend_override, None);
        assert_eq!(c.info_level, 0);
        let c = Config::from_lookup(env(&[("OMPRPC_HOST_DEVICES", "2"), ("OMPRPC_BACKEND", "cuda")]));
        assert_eq!(c.host_devices, 2);
        assert_eq!(c.backend_override, Some(BackendKind::Cuda));
        let c = Config::from_lookup(env(&[("OMPRPC_HOST_DEVICES", "0"), ("LIBOMPTARGET_INFO", "-1")]));
        assert_eq!(c.host_devices, 4);
        assert_eq!(c.info_level, u32::MAX);
        let c = Config::from_lookup(env(&[("OMPRPC_HOST_DEVICES", "999999")]));
        assert_eq!(c.host_devices, 4);
        assert_eq!(c.rpc_ports, None);
        let c = Config::from_lookup(env(&[("OMPRPC_RPC_PORTS", "4096")]));
        assert_eq!(c.rpc_ports, Some(4096));
        let c = Config::from_lookup(env(&[("OMPRPC_RPC_PORTS", "5000")]));
        assert_eq!(c.rpc_ports, None, "out of range keeps the default");
        assert_eq!(c.memory_manager_threshold, 8192);
        let c = Config::from_lookup(env(&[
            ("LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD", "0"),
            ("LIBOMPTARGET_SHARED_MEMORY_SIZE", "256"),
            ("OMP_NUM_TEAMS", "7"),
            ("OMP_TEAMS_THREAD_LIMIT", "x"),
        ]));
        assert_eq!(c.memory_manager_threshold, 0, "0 turns the memory manager off");
        assert_eq!(c.shared_memory_bytes, 256);
        assert_eq!(c.max_teams, 7);
        assert_eq!(c.max_team_threads, 0);
    }
}
