//! Device entry tables: the table `load_binary` returns must have the image's entries, in the image's
//! order, with device-side addresses, and stay valid for the life of the process.

use std::ffi::{c_void, CString};

use crate::abi::types::{OffloadEntry, TargetTable};
use crate::backend::Module;
use crate::plugin::error::Result;

/// A kernel as libomptarget sees it: the `addr` of its table entry points here.
#[derive(Debug)]
pub struct Kernel {
    /// The entry's symbol name, for messages.
    pub name: CString,
    /// The backend's handle on the function.
    pub function: *mut c_void,
}

// SAFETY: `function` is an address inside a loaded image that is never unloaded; it is only passed back
// to the backend, which may use it from any thread.
unsafe impl Send for Kernel {}
// SAFETY: immutable after creation; see `Send`.
unsafe impl Sync for Kernel {}

/// An image loaded on one device, with the table handed to libomptarget.
pub struct LoadedImage {
    /// `ImageStart` of the image, to recognise a second `load_binary` of the same image.
    pub image_start: usize,
    /// The table returned to libomptarget; boxed so that its address never moves.
    pub table: Box<TargetTable>,
    /// Storage of the table's entries; never resized after creation.
    pub entries: Box<[OffloadEntry]>,
    /// Owned copies of the entry names the table points to.
    pub names: Vec<CString>,
    /// The kernels of this image, whose addresses the table carries.
    pub kernels: Vec<&'static Kernel>,
    /// Keeps the image loaded.
    pub module: Box<dyn Module>,
}

// SAFETY: the raw pointers in `table` and `entries` point into this value's own boxed storage (or
// into the never-unloaded image); the plugin writes them once, before handing the table out.
unsafe impl Send for LoadedImage {}
// SAFETY: as for `Send`; shared access only reads.
unsafe impl Sync for LoadedImage {}

/// One entry of the image's host table, read and copied out of the program's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostEntry {
    /// The symbol name shared by the host and the device image.
    pub name: CString,
    /// 0 for a kernel, else the size of the global.
    pub size: usize,
    /// The entry's flags, copied to the device table.
    pub flags: i32,
    /// Reserved field, copied to the device table.
    pub reserved: i32,
}

/// Builds the device table for `host_entries` from symbols of `module`.
pub fn build(image_start: usize, host_entries: &[HostEntry], module: Box<dyn Module>) -> Result<LoadedImage> {
    let mut entries = Vec::with_capacity(host_entries.len());
    let mut names = Vec::with_capacity(host_entries.len());
    let mut kernels = Vec::new();
    for host in host_entries {
        let name = host.name.clone();
        let addr = if host.size == 0 {
            let function = module.function(&name)?;
            let kernel: &'static Kernel = Box::leak(Box::new(Kernel {
                name: name.clone(),
                function,
            }));
            kernels.push(kernel);
            kernel as *const Kernel as *mut c_void
        } else {
            module.global(&name)?
        };
        entries.push(OffloadEntry {
            addr,
            name: name.as_ptr().cast_mut(),
            size: host.size,
            flags: host.flags,
            reserved: host.reserved,
        });
        // Moving a CString moves only its pointer; the bytes `name` points to stay put.
        names.push(name);
    }
    let mut entries = entries.into_boxed_slice();
    let range = entries.as_mut_ptr_range();
    Ok(LoadedImage {
        image_start,
        table: Box::new(TargetTable {
            entries_begin: range.start,
            entries_end: range.end,
        }),
        entries,
        names,
        kernels,
        module,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::error::Error;
    use std::collections::HashMap;
    use std::ffi::CStr;

    struct FakeModule(HashMap<&'static str, usize>);

    impl Module for FakeModule {
        fn function(&self, name: &CStr) -> Result<*mut c_void> {
            self.global(name)
        }
        fn global(&self, name: &CStr) -> Result<*mut c_void> {
            let name = name.to_str().unwrap();
            self.0
                .get(name)
                .map(|&a| a as *mut c_void)
                .ok_or_else(|| Error::MissingSymbol {
                    image: "fake".into(),
                    symbol: name.into(),
                })
        }
    }

    fn entry(name: &str, size: usize, flags: i32) -> HostEntry {
        HostEntry {
            name: CString::new(name).unwrap(),
            size,
            flags,
            reserved: 0,
        }
    }

    #[test]
    fn keeps_count_and_order_and_maps_addresses() {
        let module = FakeModule(HashMap::from([("k0", 0x1000), ("g", 0x2000), ("k1", 0x3000)]));
        let host = [entry("k0", 0, 0), entry("g", 4, 0), entry("k1", 0, 2)];
        let image = build(0xabc, &host, Box::new(module)).unwrap();
        let table = &image.entries;
        assert_eq!(table.len(), 3);
        assert_eq!(image.table.entries_begin, table.as_ptr().cast_mut());
        // SAFETY: the table points into `entries`, which is alive.
        assert_eq!(
            unsafe { image.table.entries_end.offset_from(image.table.entries_begin) },
            3
        );
        let names: Vec<_> = table
            .iter()
            // SAFETY: the names point into `image.names`, which is alive.
            .map(|e| unsafe { CStr::from_ptr(e.name) }.to_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["k0", "g", "k1"]);
        assert_eq!(table[1].addr as usize, 0x2000);
        assert_eq!(table[1].size, 4);
        assert_eq!(table[2].flags, 2);
        assert_eq!(image.kernels.len(), 2);
        assert_eq!(table[0].addr as usize, image.kernels[0] as *const Kernel as usize);
        assert_eq!(image.kernels[1].function as usize, 0x3000);
    }

    #[test]
    fn a_table_that_does_not_match_the_image_fails() {
        let module = FakeModule(HashMap::from([("k0", 0x1000)]));
        let host = [entry("k0", 0, 0), entry("missing", 8, 0)];
        let err = build(0, &host, Box::new(module)).err().unwrap();
        assert!(err.to_string().contains("'missing'"), "{err}");
    }
}
