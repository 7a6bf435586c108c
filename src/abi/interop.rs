//! OpenMP interop (`omp_interop_t`): the async infos that `init_async_info` hands out, whose queue is
//! the backend's real stream, and the records that let `release_async_info` free only those.

use std::ffi::c_void;
use std::sync::{LazyLock, Mutex};

use super::types::AsyncInfo;
use crate::plugin::PluginApi;
use crate::util::address_map::AddressSet;
use crate::util::error::{Error, Result};
use crate::util::sync::lock;

/// Async infos handed out by `init_async_info`, so that `release_async_info` frees only those.
static HANDED_OUT: LazyLock<Mutex<AddressSet>> = LazyLock::new(Default::default);

/// A new async info holding a queue of device `local` (the queue's native handle).
pub fn new_async_info(api: &dyn PluginApi, local: i32) -> Result<*mut AsyncInfo> {
    let queue: *mut c_void = api.interop_queue(local)?;
    let info = Box::into_raw(Box::new(AsyncInfo { queue }));
    lock(&HANDED_OUT).insert(info as usize);
    Ok(info)
}

/// Waits for the work of an async info from [`new_async_info`] and frees it; anything else is refused.
///
/// # Safety
/// `info` is null or a pointer; only one that `new_async_info` returned is dereferenced.
pub unsafe fn release_async_info(api: &dyn PluginApi, id: i32, info: *mut AsyncInfo) -> Result<()> {
    if !lock(&HANDED_OUT).remove(&(info as usize)) {
        return Err(Error::UnknownHandle {
            what: "async info",
            addr: info as usize,
        });
    }
    // SAFETY: the address was recorded, so it came from Box::into_raw in `new_async_info` and was not
    // released since (it has just been removed).
    let mut info = unsafe { Box::from_raw(info) };
    if info.queue.is_null() {
        return Ok(());
    }
    api.synchronize(id, &mut info.queue)
}
