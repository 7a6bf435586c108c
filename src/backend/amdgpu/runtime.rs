//! The HSA runtime opened and its entry points as functions that return `Result`: a failing
//! `hsa_status_t` becomes [`Error::Driver`] naming the call and the status by its header name and
//! hexadecimal value (`HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)`). This is the one place where HSA
//! statuses become errors.

use std::ffi::{c_void, CStr};

use super::sys::{self, agent_info, device_type, HsaAgent, HsaStatus, HSA_STATUS_SUCCESS};
use crate::backend::gpu::library::{open_first, OpenError};
use crate::util::error::{Error, Result, HSA};

/// An opened runtime: its entry points and the file they came from. It stays loaded for the life of
/// the process (libomptarget may call the plugin until exit).
pub struct Runtime {
    /// The entry points.
    pub functions: sys::Functions,
    /// The file it came from, for messages ("libhsa-runtime64.so.1", a simulated runtime's name).
    pub library: String,
}

impl Runtime {
    /// Opens the first of `candidates` that loads and resolves every entry point.
    pub fn open(candidates: &[&str]) -> std::result::Result<Runtime, OpenError> {
        let opened = open_first(candidates, sys::resolve)?;
        Ok(Runtime {
            functions: opened.functions,
            library: opened.library,
        })
    }
}

/// Checked calls into an opened runtime.
#[derive(Clone, Copy)]
pub struct Api {
    runtime: &'static Runtime,
}

/// What the plugin needs to know of one agent to decide whether it is a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentSummary {
    /// The runtime's handle.
    pub agent: HsaAgent,
    /// `HSA_AGENT_INFO_DEVICE`: CPU, GPU or DSP.
    pub device_type: u32,
    /// `HSA_AGENT_INFO_NAME`: for a GPU its target, e.g. "gfx90a".
    pub name: String,
}

impl Api {
    /// Checked calls into `runtime`.
    pub fn new(runtime: &'static Runtime) -> Api {
        Api { runtime }
    }

    /// The library the runtime came from.
    pub fn library(&self) -> &str {
        &self.runtime.library
    }

    fn f(&self) -> &sys::Functions {
        &self.runtime.functions
    }

    /// `Ok` for success, else the error naming `call` and the status.
    pub fn check(&self, call: &'static str, status: HsaStatus) -> Result<()> {
        if status == HSA_STATUS_SUCCESS {
            return Ok(());
        }
        Err(Error::Driver {
            driver: HSA,
            call,
            code: i64::from(status),
            name: sys::status_name(status)
                .map(str::to_string)
                .unwrap_or_else(|| "an unknown hsa_status_t".into()),
        })
    }

    /// `hsa_init`: counted by the runtime, so every success is matched by one [`Api::shut_down`].
    pub fn init(&self) -> Result<()> {
        // SAFETY: hsa_init has no preconditions.
        self.check("hsa_init", unsafe { (self.f().hsa_init)() })
    }

    /// `hsa_shut_down`, once per successful [`Api::init`].
    pub fn shut_down(&self) -> Result<()> {
        // SAFETY: hsa_shut_down has no preconditions; the runtime refuses it when not initialised.
        self.check("hsa_shut_down", unsafe { (self.f().hsa_shut_down)() })
    }

    /// Every agent the runtime offers, with its type and name, in the runtime's order.
    pub fn agents(&self) -> Result<Vec<AgentSummary>> {
        unsafe extern "C" fn collect(agent: HsaAgent, data: *mut c_void) -> HsaStatus {
            // SAFETY: `data` is the `Vec` passed to hsa_iterate_agents below, alive and not otherwise
            // borrowed while the runtime calls back during that call.
            let agents = unsafe { &mut *data.cast::<Vec<HsaAgent>>() };
            agents.push(agent);
            HSA_STATUS_SUCCESS
        }
        let mut agents: Vec<HsaAgent> = Vec::new();
        // SAFETY: the callback matches hsa_iterate_agents' and only pushes into `agents`.
        self.check("hsa_iterate_agents", unsafe {
            (self.f().hsa_iterate_agents)(collect, (&mut agents as *mut Vec<HsaAgent>).cast())
        })?;
        agents
            .into_iter()
            .map(|agent| {
                Ok(AgentSummary {
                    agent,
                    device_type: self.agent_u32(agent, agent_info::DEVICE, "hsa_agent_get_info(DEVICE)")?,
                    name: self.agent_name(agent)?,
                })
            })
            .collect()
    }

    /// A 4-byte attribute of `agent`.
    pub fn agent_u32(&self, agent: HsaAgent, attribute: u32, call: &'static str) -> Result<u32> {
        let mut value = 0u32;
        // SAFETY: every attribute read through here is documented as 4 bytes, which `value` holds.
        self.check(call, unsafe {
            (self.f().hsa_agent_get_info)(agent, attribute, (&mut value as *mut u32).cast())
        })?;
        Ok(value)
    }

    /// `HSA_AGENT_INFO_NAME`: a 64-byte NUL-padded string.
    pub fn agent_name(&self, agent: HsaAgent) -> Result<String> {
        let mut name = [0u8; 65];
        // SAFETY: the runtime writes at most 64 bytes for this attribute; the last byte stays 0.
        self.check("hsa_agent_get_info(NAME)", unsafe {
            (self.f().hsa_agent_get_info)(agent, agent_info::NAME, name.as_mut_ptr().cast())
        })?;
        Ok(CStr::from_bytes_until_nul(&name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default())
    }
}

/// Whether an agent is a GPU the plugin offers as a device.
pub fn is_gpu(agent: &AgentSummary) -> bool {
    agent.device_type == device_type::GPU
}
