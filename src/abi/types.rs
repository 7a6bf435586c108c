//! The C structures of the libomptarget 16 plugin interface (`omptarget.h`), laid out byte for byte.
//!
//! Only the ABI layer reads these; the generic core and the backends work on safe Rust values.

use std::ffi::{c_char, c_void};

/// Status code libomptarget expects on success.
pub const OFFLOAD_SUCCESS: i32 = 0;
/// Status code libomptarget expects on any failure.
pub const OFFLOAD_FAIL: i32 = -1;

/// One offload entry: a kernel (`size == 0`) or a global variable.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OffloadEntry {
    /// Host region id (kernel) or host address (global); in a device table, the device-side handle.
    pub addr: *mut c_void,
    /// NUL-terminated symbol name shared by the host and device images.
    pub name: *mut c_char,
    /// Size in bytes of a global, 0 for a kernel.
    pub size: usize,
    /// `OMP_DECLARE_TARGET_*` flags (link, ctor, dtor).
    pub flags: i32,
    /// Reserved by the compiler; copied unchanged.
    pub reserved: i32,
}

/// A device image embedded in the host program, with the entries it provides.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DeviceImage {
    /// First byte of the image.
    pub image_start: *mut c_void,
    /// One past the last byte of the image.
    pub image_end: *mut c_void,
    /// First entry of the image's entry array.
    pub entries_begin: *mut OffloadEntry,
    /// One past the last entry.
    pub entries_end: *mut OffloadEntry,
}

/// The descriptor of a registered host library (`__tgt_bin_desc`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BinDesc {
    /// Number of device images in `device_images`.
    pub num_device_images: i32,
    /// The images the library carries.
    pub device_images: *mut DeviceImage,
    /// First host entry.
    pub host_entries_begin: *mut OffloadEntry,
    /// One past the last host entry.
    pub host_entries_end: *mut OffloadEntry,
}

/// The table `load_binary` hands back: device-side entries in the image's order.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TargetTable {
    /// First device entry.
    pub entries_begin: *mut OffloadEntry,
    /// One past the last device entry.
    pub entries_end: *mut OffloadEntry,
}

/// Extra information about an image (`__tgt_image_info`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ImageInfo {
    /// Architecture string the image was compiled for, possibly null.
    pub arch: *const c_char,
}

/// libomptarget's handle on a queue of asynchronous work; NULL means "nothing outstanding".
#[repr(C)]
#[derive(Debug)]
pub struct AsyncInfo {
    /// Our queue, or null.
    pub queue: *mut c_void,
}

/// Interop information about a device (`__tgt_device_info`).
#[repr(C)]
#[derive(Debug)]
pub struct DeviceInfo {
    /// The backend's context handle, if it has one.
    pub context: *mut c_void,
    /// The backend's device handle, if it has one.
    pub device: *mut c_void,
}

/// Launch parameters of one kernel (`KernelArgsTy`, version 1 and 2 of LLVM 16).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KernelArgs {
    /// Layout version: 1 for constructors/destructors, 2 for regions.
    pub version: u32,
    /// Number of kernel arguments.
    pub num_args: u32,
    /// Base pointer of each argument.
    pub arg_base_ptrs: *mut *mut c_void,
    /// Pointer to each argument's data.
    pub arg_ptrs: *mut *mut c_void,
    /// Size of each argument's data.
    pub arg_sizes: *mut i64,
    /// Map type of each argument.
    pub arg_types: *mut i64,
    /// Names for diagnostics, possibly null.
    pub arg_names: *mut *mut c_void,
    /// User-defined mappers, possibly null.
    pub arg_mappers: *mut *mut c_void,
    /// Loop trip count of a teams/distribute loop, 0 otherwise.
    pub tripcount: u64,
    /// Bit 0: the region was launched with `nowait`.
    pub flags: u64,
    /// Requested teams per dimension; 0 means unspecified.
    pub num_teams: [u32; 3],
    /// Requested thread limit per dimension; 0 means unspecified.
    pub thread_limit: [u32; 3],
    /// Dynamic group memory requested, in bytes.
    pub dyn_cgroup_mem: u32,
}

impl KernelArgs {
    /// Whether the region was spawned with `nowait` and may complete after the launch returns.
    pub fn is_nowait(&self) -> bool {
        self.flags & 1 != 0
    }
}

/// Entry flag: `declare target link` variable.
pub const ENTRY_FLAG_LINK: i32 = 1;
/// Entry flag: global constructor kernel.
pub const ENTRY_FLAG_CTOR: i32 = 2;
/// Entry flag: global destructor kernel.
pub const ENTRY_FLAG_DTOR: i32 = 4;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layouts_match_llvm_16() {
        assert_eq!(size_of::<OffloadEntry>(), 32);
        assert_eq!(offset_of!(OffloadEntry, flags), 24);
        assert_eq!(size_of::<DeviceImage>(), 32);
        assert_eq!(size_of::<BinDesc>(), 32);
        assert_eq!(size_of::<TargetTable>(), 16);
        assert_eq!(size_of::<ImageInfo>(), 8);
        assert_eq!(size_of::<AsyncInfo>(), 8);
        assert_eq!(size_of::<DeviceInfo>(), 16);
        assert_eq!(size_of::<KernelArgs>(), 104);
        assert_eq!(offset_of!(KernelArgs, tripcount), 56);
        assert_eq!(offset_of!(KernelArgs, flags), 64);
        assert_eq!(offset_of!(KernelArgs, num_teams), 72);
        assert_eq!(offset_of!(KernelArgs, thread_limit), 84);
        assert_eq!(offset_of!(KernelArgs, dyn_cgroup_mem), 96);
    }
}
