//! Whether the system runs its NVIDIA GPUs in confidential-computing mode, asked of NVML
//! (`libnvidia-ml.so.1`, loaded at run time like the driver; the CUDA driver API does not say). In
//! that mode kernels cannot read ordinary host memory, the RPC mailbox included, so a kernel's host
//! call would wait for ever: host services are refused instead.

use std::ffi::c_uint;

/// `nvmlConfComputeSystemState_t`.
#[repr(C)]
#[derive(Default)]
struct ConfComputeSystemState {
    environment: c_uint,
    cc_feature: c_uint,
    dev_tools_mode: c_uint,
}

/// `NVML_CC_SYSTEM_FEATURE_ENABLED`.
const CC_FEATURE_ENABLED: c_uint = 1;
/// `NVML_SUCCESS`.
const SUCCESS: c_uint = 0;

/// Whether NVML reports confidential computing enabled; false where NVML, the query (drivers before
/// 535) or its answer is missing.
pub fn confidential_computing() -> bool {
    type Init = unsafe extern "C" fn() -> c_uint;
    type State = unsafe extern "C" fn(*mut ConfComputeSystemState) -> c_uint;
    // SAFETY: loading NVML runs its initialisers, which only set up the library itself.
    let Ok(nvml) = (unsafe { libloading::Library::new("libnvidia-ml.so.1") }) else {
        return false;
    };
    // SAFETY: the types are these entry points' C signatures in nvml.h.
    let functions = unsafe {
        (
            nvml.get::<Init>(b"nvmlInit_v2\0"),
            nvml.get::<State>(b"nvmlSystemGetConfComputeState\0"),
            nvml.get::<Init>(b"nvmlShutdown\0"),
        )
    };
    let (Ok(init), Ok(state), Ok(shutdown)) = functions else {
        return false;
    };
    let mut answer = ConfComputeSystemState::default();
    // SAFETY: NVML is initialised before the query and shut down after it; `answer` is writable.
    unsafe {
        if init() != SUCCESS {
            return false;
        }
        let asked = state(&mut answer);
        shutdown();
        asked == SUCCESS && answer.cc_feature == CC_FEATURE_ENABLED
    }
}
