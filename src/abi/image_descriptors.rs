//! Device images as libomptarget hands them over: descriptors, byte ranges and entry tables read out
//! of the program's memory without trusting a pointer, and the entry tables `load_binary` returns,
//! which must keep the image's entries in order and stay valid until the image is unloaded.

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::{LazyLock, Mutex};

use super::non_null;
use super::types::{BinDesc, DeviceImage, OffloadEntry, TargetTable};
use crate::plugin::HostEntry;
use crate::util::error::{Error, Result};
use crate::util::foreign_memory::{read_bytes, read_c_string};
use crate::util::raw_box::RawBox;
use crate::util::sync::lock;

/// Largest image accepted, far above real device images, so a corrupt end pointer is caught early.
const MAX_IMAGE_BYTES: usize = 1 << 32;
/// Largest entry count accepted in one image.
const MAX_ENTRIES: usize = 1 << 20;
/// Longest entry name accepted.
const MAX_NAME_BYTES: usize = 4096;
/// Most images one library descriptor may list.
const MAX_IMAGES: usize = 1 << 12;

/// Copies a `T` out of the caller's memory.
fn read_struct<T: Copy>(what: &str, ptr: *const T) -> Result<T> {
    let raw = read_bytes(what, ptr as usize, size_of::<T>())?;
    // SAFETY: `raw` holds exactly size_of::<T>() bytes; callers use this only for the plain C structs
    // of the ABI, for which every bit pattern is valid.
    Ok(unsafe { std::ptr::read_unaligned(raw.as_ptr().cast::<T>()) })
}

/// Copies the image descriptor out of the caller's memory.
pub fn read_image_descriptor(image: *mut DeviceImage) -> Result<DeviceImage> {
    non_null(image, "the device image")?;
    read_struct("the device image descriptor", image)
}

/// Start and size of the image's bytes, checked for plausibility.
pub fn image_range(desc: &DeviceImage) -> Result<(usize, usize)> {
    let start = desc.image_start as usize;
    let end = desc.image_end as usize;
    if start == 0 {
        return Err(Error::NullArg("the image's start"));
    }
    if end <= start || end - start > MAX_IMAGE_BYTES {
        return Err(Error::BadImage(format!(
            "its end {end:#x} does not follow its start {start:#x} by a plausible size"
        )));
    }
    Ok((start, end - start))
}

/// The image's host entry table, names included, as raw entries and as the core's records.
pub fn read_entries(desc: &DeviceImage) -> Result<(Vec<OffloadEntry>, Vec<HostEntry>)> {
    let (begin, end) = (desc.entries_begin as usize, desc.entries_end as usize);
    if begin == 0 && end == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let entry_size = size_of::<OffloadEntry>();
    if begin == 0 || end < begin || (end - begin) % entry_size != 0 || (end - begin) / entry_size > MAX_ENTRIES {
        return Err(Error::BadImage(format!(
            "its entry table [{begin:#x}, {end:#x}) is not a whole number of entries"
        )));
    }
    let raw = read_bytes("the image's entry table", begin, end - begin)?;
    let mut entries = Vec::with_capacity(raw.len() / entry_size);
    let mut hosts = Vec::with_capacity(raw.len() / entry_size);
    for (index, bytes) in raw.chunks_exact(entry_size).enumerate() {
        // SAFETY: `bytes` is one entry's worth of bytes; every bit pattern is valid for OffloadEntry.
        let entry = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<OffloadEntry>()) };
        let name = read_c_string(
            &format!("the name of entry {index}"),
            entry.name as usize,
            MAX_NAME_BYTES,
        )?;
        hosts.push(HostEntry {
            name,
            size: entry.size,
            flags: entry.flags,
            host_addr: entry.addr as usize,
        });
        entries.push(entry);
    }
    Ok((entries, hosts))
}

/// The byte ranges of the images a library descriptor lists (the offload wrappers that contain what
/// `load_binary` was given).
pub fn library_image_ranges(desc: *mut BinDesc) -> Result<Vec<(usize, usize)>> {
    non_null(desc, "the library descriptor")?;
    let desc = read_struct("the library descriptor", desc)?;
    let count = usize::try_from(desc.num_device_images)
        .ok()
        .filter(|&n| n <= MAX_IMAGES)
        .ok_or_else(|| Error::InvalidArg(format!("{} device images is implausible", desc.num_device_images)))?;
    if count == 0 {
        return Ok(Vec::new());
    }
    let images = read_bytes(
        "the library's device images",
        desc.device_images as usize,
        count * size_of::<DeviceImage>(),
    )?;
    Ok(images
        .chunks_exact(size_of::<DeviceImage>())
        .map(|bytes| {
            // SAFETY: one descriptor's worth of bytes; every bit pattern is valid for DeviceImage.
            let image = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<DeviceImage>()) };
            (image.image_start as usize, image.image_end as usize)
        })
        .collect())
}

/// A table handed to libomptarget, with the storage it points into (owned through raw pointers, which
/// stay valid while the table moves in and around the map).
struct Table {
    table: RawBox<TargetTable>,
    _entries: RawBox<[OffloadEntry]>,
    _names: Vec<CString>,
}

// SAFETY: the raw pointers point into this value's own boxed storage; nothing mutates it after the
// table is built.
unsafe impl Send for Table {}

/// Tables by (device, image start), so that a second `load_binary` of a loaded image gets the same table
/// and an unloaded image's table is freed.
static TABLES: LazyLock<Mutex<HashMap<(i32, usize), Table>>> = LazyLock::new(Default::default);

/// The table for an image loaded on `device`: the host entries with their device addresses.
pub fn table_for(
    device: i32,
    image_start: usize,
    host_entries: &[OffloadEntry],
    names: Vec<CString>,
    addresses: &[usize],
) -> *mut TargetTable {
    let mut tables = lock(&TABLES);
    let table = tables.entry((device, image_start)).or_insert_with(|| {
        let entries: Box<[OffloadEntry]> = host_entries
            .iter()
            .zip(&names)
            .zip(addresses)
            .map(|((host, name), &addr)| OffloadEntry {
                addr: addr as *mut c_void,
                // Moving a CString moves only its pointer; the bytes stay put.
                name: name.as_ptr().cast_mut(),
                ..*host
            })
            .collect();
        let entries = RawBox::new(entries);
        let begin = entries.as_ptr().cast::<OffloadEntry>();
        Table {
            table: RawBox::new(Box::new(TargetTable {
                entries_begin: begin,
                entries_end: begin.wrapping_add(entries.get().len()),
            })),
            _entries: entries,
            _names: names,
        }
    });
    table.table.as_ptr()
}

/// Frees the tables of images that were unloaded.
pub fn forget_tables(unloaded: &[(usize, usize)]) {
    let mut tables = lock(&TABLES);
    for &(device, start) in unloaded {
        tables.remove(&(device as i32, start));
    }
}

/// Frees every table (after a teardown).
pub fn forget_all_tables() {
    lock(&TABLES).clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn tables_keep_count_order_and_addresses() {
        let names: Vec<CString> = ["k0", "g", "k1"].iter().map(|n| CString::new(*n).unwrap()).collect();
        let host: Vec<OffloadEntry> = names
            .iter()
            .enumerate()
            .map(|(i, n)| OffloadEntry {
                addr: (0x100 * (i + 1)) as *mut c_void,
                name: n.as_ptr().cast_mut(),
                size: if i == 1 { 4 } else { 0 },
                flags: i as i32,
                reserved: 7,
            })
            .collect();
        let table = table_for(99, 0xabc, &host, names.clone(), &[0x1000, 0x2000, 0x3000]);
        // SAFETY: the table points into storage kept in TABLES until forgotten below.
        let entries = unsafe {
            let t = &*table;
            std::slice::from_raw_parts(t.entries_begin, t.entries_end.offset_from(t.entries_begin) as usize)
        };
        let got: Vec<(usize, String, usize, i32, i32)> = entries
            .iter()
            .map(|e| {
                // SAFETY: the names point into the stored CStrings.
                let name = unsafe { CStr::from_ptr(e.name) }.to_str().unwrap().to_string();
                (e.addr as usize, name, e.size, e.flags, e.reserved)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (0x1000, "k0".into(), 0, 0, 7),
                (0x2000, "g".into(), 4, 1, 7),
                (0x3000, "k1".into(), 0, 2, 7)
            ]
        );
        assert_eq!(
            table_for(99, 0xabc, &host, names, &[1, 2, 3]),
            table,
            "same image, same table"
        );
        forget_tables(&[(99, 0xabc)]);
        assert!(!lock(&TABLES).contains_key(&(99, 0xabc)));
    }
}
