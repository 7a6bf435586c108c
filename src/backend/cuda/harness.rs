//! The backend test suite's harness for the CUDA backend over the simulated driver, with the real
//! cubin `tests/data/nvptx/cuda_module-sm_90.cubin` as its program.

use std::sync::{Arc, MutexGuard};

use super::simulated::{self, SimGpu};
use super::CudaBackend;
use crate::backend::suite::{Harness, KernelBody, Live, Op, SeenLaunch, TestProgram};
use crate::plugin::{Core, PluginApi};
use crate::util::config::Config;

pub(super) const H100: SimGpu = SimGpu {
    major: 9,
    minor: 0,
    sms: 132,
    host_pointers: true,
};

/// The driver's entry points, each with the operation it is part of.
const CALLS: [(&str, Op); 37] = [
    ("cuDevicePrimaryCtxGetState", Op::InitDevice),
    ("cuDevicePrimaryCtxSetFlags_v2", Op::InitDevice),
    ("cuDevicePrimaryCtxRetain", Op::InitDevice),
    ("cuCtxSetCurrent", Op::InitDevice),
    ("cuCtxSetLimit", Op::InitDevice),
    ("cuDeviceGetAttribute", Op::InitDevice),
    ("cuDeviceTotalMem_v2", Op::InitDevice),
    ("cuDevicePrimaryCtxRelease_v2", Op::ReleaseDevice),
    ("cuModuleLoadDataEx", Op::LoadModule),
    ("cuModuleUnload", Op::UnloadModule),
    ("cuModuleGetFunction", Op::FindKernel),
    ("cuFuncGetAttribute", Op::FindKernel),
    ("cuModuleGetGlobal_v2", Op::FindGlobal),
    ("cuMemAlloc_v2", Op::AllocDevice),
    ("cuMemFree_v2", Op::FreeDevice),
    ("cuMemAllocHost_v2", Op::AllocHost),
    ("cuMemFreeHost", Op::FreeHost),
    ("cuStreamCreate", Op::CreateQueue),
    ("cuStreamDestroy_v2", Op::DestroyQueue),
    ("cuEventCreate", Op::CreateEvent),
    ("cuEventDestroy_v2", Op::DestroyEvent),
    ("cuMemcpyHtoDAsync_v2", Op::CopyToDevice),
    ("cuMemcpyDtoHAsync_v2", Op::CopyToHost),
    ("cuMemcpyPeerAsync", Op::CopyPeer),
    ("cuMemcpyDtoDAsync_v2", Op::CopyDeviceToDevice),
    ("cuLaunchKernel", Op::Launch),
    ("cuStreamSynchronize", Op::SynchronizeQueue),
    ("cuStreamQuery", Op::QueryQueue),
    ("cuEventRecord", Op::RecordEvent),
    ("cuStreamWaitEvent", Op::WaitEvent),
    ("cuEventSynchronize", Op::SynchronizeEvent),
    ("cuMemHostRegister_v2", Op::Pin),
    ("cuMemHostUnregister", Op::Unpin),
    ("cuMemHostGetDevicePointer_v2", Op::Other),
    ("cuMemAllocManaged", Op::Other),
    ("cuDeviceCanAccessPeer", Op::Other),
    ("cuCtxEnablePeerAccess", Op::Other),
];

pub(super) fn cubin(arch: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/data/nvptx/cuda_module-{arch}.cubin",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}; rebuild with scripts/make-nvptx-test-images.sh"))
}

pub(super) fn serial() -> MutexGuard<'static, ()> {
    simulated::SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh simulated driver with `gpus`, and the core over the CUDA backend on it.
pub(super) fn core_on(gpus: &[SimGpu], pairs: &[(&str, &str)]) -> Box<dyn PluginApi> {
    simulated::reset(gpus, 0);
    let config = Config::from_pairs(pairs);
    let backend = CudaBackend::with_driver(simulated::driver(), &config).unwrap();
    Core::new_boxed(backend, config)
}

/// The CUDA backend on simulated H100s; it holds the simulated driver (one test at a time).
pub(crate) struct CudaHarness {
    core: Box<dyn PluginApi>,
    _serial: MutexGuard<'static, ()>,
}

impl Harness for CudaHarness {
    fn start(devices: usize, settings: &[(&str, &str)]) -> Self {
        let serial = serial();
        CudaHarness {
            core: core_on(&vec![H100; devices], settings),
            _serial: serial,
        }
    }

    fn core(&self) -> &dyn PluginApi {
        &*self.core
    }

    fn program(&self) -> TestProgram {
        TestProgram::of_cuda_module(cubin("sm_90"), 2)
    }

    fn default_geometry(&self) -> (u32, u32) {
        (128, 3200)
    }

    fn device_memory(&self) -> u64 {
        80 << 30
    }

    fn native_device_id(&self, device: usize) -> usize {
        device
    }

    fn pinned_device_address(&self, _device: usize, host: usize) -> usize {
        host // an H100 uses a pinned range at its host address
    }

    fn log(&self) -> Vec<Op> {
        let world = simulated::world();
        world
            .as_ref()
            .unwrap()
            .record
            .log
            .iter()
            .map(|&call| match call {
                // Made before the driver is used on a thread, not only when a device is prepared.
                "cuCtxSetCurrent" => Op::Other,
                _ => CALLS.iter().find(|(c, _)| *c == call).map_or(Op::Other, |&(_, op)| op),
            })
            .collect()
    }

    fn driver_call_count(&self, call: &str) -> usize {
        simulated::world().as_ref().unwrap().record.count(call)
    }

    fn driver_calls(op: Op) -> Vec<&'static str> {
        CALLS.iter().filter(|(_, o)| *o == op).map(|&(c, _)| c).collect()
    }

    fn fail_call(&self, call: &'static str) {
        simulated::fail_next(call, 999);
    }

    fn failure_text(call: &str) -> Vec<String> {
        vec![call.to_string(), "CUDA_ERROR_UNKNOWN (999)".into()]
    }

    fn live(&self) -> Live {
        let (memory, modules, queues, events, devices) = simulated::live();
        Live {
            memory,
            modules,
            queues,
            events,
            devices,
        }
    }

    fn pinned(&self) -> usize {
        simulated::world().as_ref().unwrap().registered.len()
    }

    fn launches(&self) -> Vec<SeenLaunch> {
        let world = simulated::world();
        world
            .as_ref()
            .unwrap()
            .launches
            .iter()
            .map(|l| SeenLaunch {
                kernel: l.kernel.clone(),
                geometry: l.geometry,
                queue: l.stream,
            })
            .collect()
    }

    fn runs_work_on_its_own() -> bool {
        true
    }

    fn hold(&self, on: bool) {
        simulated::hold(on);
    }

    fn register_kernel(&self, name: &str, args: usize, body: KernelBody) {
        simulated::register_kernel(
            name,
            args,
            Arc::new(move |values: &[u64]| {
                body(values);
                Ok(())
            }),
        );
    }

    fn clear_kernels(&self) {
        simulated::clear_kernels();
    }

    fn fail_kernel(&self, name: &str) -> String {
        self.fail_kernel_after(name, 0, Arc::new(|_: &[u64]| {}))
    }

    fn fail_kernel_after(&self, name: &str, args: usize, body: KernelBody) -> String {
        simulated::register_kernel(
            name,
            args,
            Arc::new(move |values: &[u64]| {
                body(values);
                Err(super::sys::CUDA_ERROR_ILLEGAL_ADDRESS)
            }),
        );
        "CUDA_ERROR_ILLEGAL_ADDRESS (700)".into()
    }

    fn limit_memory(&self, extra: usize) {
        let mut world = simulated::world();
        let world = world.as_mut().unwrap();
        world.capacity = Some(world.memory.values().sum::<usize>() + extra);
    }

    fn within_memory_limit(&self) -> bool {
        let world = simulated::world();
        let world = world.as_ref().unwrap();
        world.memory.values().sum::<usize>() <= world.capacity.unwrap_or(usize::MAX)
    }

    fn memory_blocks(&self) -> Vec<(usize, usize)> {
        let world = simulated::world();
        world.as_ref().unwrap().memory.iter().map(|(&a, &s)| (a, s)).collect()
    }

    fn violations(&self) -> Vec<String> {
        #[cfg(feature = "rpc")]
        return simulated::world().as_ref().unwrap().violations.clone();
        #[cfg(not(feature = "rpc"))]
        Vec::new()
    }

    fn module_global(&self, name: &str) -> Option<(usize, usize)> {
        let world = simulated::world();
        let module = world.as_ref().unwrap().modules.values().next()?;
        module.globals.get(name).copied()
    }
}

impl Drop for CudaHarness {
    /// Kernel bodies hold what their tests captured; they go with the test, even one that failed.
    fn drop(&mut self) {
        simulated::clear_kernels();
    }
}
