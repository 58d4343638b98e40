//! Instances and devices by dispatch key: every dispatchable handle (instance, physical
//! device, device, queue, command buffer) starts with the loader's dispatch-table
//! pointer, shared by an instance and its physical devices and by a device and its
//! queues and command buffers, so one lookup finds the owner of any handle.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use rustc_hash::FxHashMap as HashMap;

use ash::vk;
use ash::vk::Handle;

use crate::device::Device;
use crate::fns::InstanceFns;

pub struct Instance {
    pub handle: vk::Instance,
    pub fns: InstanceFns,
    pub next_gipa: vk::PFN_vkGetInstanceProcAddr,
}

static INSTANCES: RwLock<Option<HashMap<usize, Arc<Instance>>>> = RwLock::new(None);
static DEVICES: RwLock<Option<HashMap<usize, Arc<Device>>>> = RwLock::new(None);

/// Moves on whenever a device is added or removed: a thread's cached lookup
/// ([`LAST_DEVICE`]) holds while the generation it was made in is current.
static DEVICE_GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's last device lookup: (generation, dispatch key, device). The hooks
    /// run thousands of times a token on the program's thread, nearly always for the
    /// same device; the cache spares them the lock and the map (BENCHMARKS.md run 20).
    static LAST_DEVICE: RefCell<Option<(u64, usize, Arc<Device>)>> = const { RefCell::new(None) };
}

/// The dispatch key of a dispatchable handle.
///
/// # Safety
/// `raw` is a live dispatchable Vulkan handle.
pub unsafe fn key(raw: u64) -> usize {
    *(raw as usize as *const usize)
}

fn read<T>(map: &RwLock<Option<HashMap<usize, Arc<T>>>>, raw: u64) -> Option<Arc<T>> {
    if raw == 0 {
        return None;
    }
    // SAFETY: the loader only calls the layer with live handles.
    let k = unsafe { key(raw) };
    let guard = map.read().unwrap_or_else(|e| e.into_inner());
    guard.as_ref()?.get(&k).cloned()
}

fn insert<T>(map: &RwLock<Option<HashMap<usize, Arc<T>>>>, raw: u64, v: Arc<T>) {
    // SAFETY: as `read`.
    let k = unsafe { key(raw) };
    let mut guard = map.write().unwrap_or_else(|e| e.into_inner());
    guard.get_or_insert_with(HashMap::default).insert(k, v);
}

fn remove<T>(map: &RwLock<Option<HashMap<usize, Arc<T>>>>, raw: u64) -> Option<Arc<T>> {
    // SAFETY: as `read`.
    let k = unsafe { key(raw) };
    let mut guard = map.write().unwrap_or_else(|e| e.into_inner());
    guard.as_mut()?.remove(&k)
}

/// The instance owning `raw` (an instance or physical device handle).
pub fn instance(raw: u64) -> Option<Arc<Instance>> {
    read(&INSTANCES, raw)
}

pub fn add_instance(i: Instance) {
    let raw = i.handle.as_raw();
    insert(&INSTANCES, raw, Arc::new(i));
}

pub fn remove_instance(raw: u64) -> Option<Arc<Instance>> {
    remove(&INSTANCES, raw)
}

/// The device owning `raw` (a device, queue or command buffer handle).
pub fn device(raw: u64) -> Option<Arc<Device>> {
    if raw == 0 {
        return None;
    }
    // SAFETY: the loader only calls the layer with live handles.
    let k = unsafe { key(raw) };
    let generation = DEVICE_GENERATION.load(Ordering::Acquire);
    let cached = LAST_DEVICE
        .try_with(|last| match &*last.borrow() {
            Some((g, key, d)) if *g == generation && *key == k => Some(d.clone()),
            _ => None,
        })
        .ok()
        .flatten();
    if cached.is_some() {
        return cached;
    }
    let d = read(&DEVICES, raw)?;
    let _ = LAST_DEVICE.try_with(|last| *last.borrow_mut() = Some((generation, k, d.clone())));
    Some(d)
}

pub fn add_device(d: Arc<Device>) {
    let raw = d.handle.as_raw();
    insert(&DEVICES, raw, d);
    DEVICE_GENERATION.fetch_add(1, Ordering::AcqRel);
}

pub fn remove_device(raw: u64) -> Option<Arc<Device>> {
    let d = remove(&DEVICES, raw);
    DEVICE_GENERATION.fetch_add(1, Ordering::AcqRel);
    d
}

/// How many devices are open.
pub fn device_count() -> usize {
    let guard = DEVICES.read().unwrap_or_else(|e| e.into_inner());
    guard.as_ref().map_or(0, HashMap::len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_char;
    use std::sync::Mutex;

    unsafe extern "system" fn no_function(
        _: vk::Device,
        _: *const c_char,
    ) -> vk::PFN_vkVoidFunction {
        None
    }

    fn fake_device(handle: u64, id: u32) -> Arc<Device> {
        let handle = vk::Device::from_raw(handle);
        Arc::new(Device {
            handle,
            id,
            // SAFETY: `no_function` answers every name with None.
            fns: unsafe { crate::fns::DeviceFns::load(no_function, handle) },
            next_gdpa: no_function,
            timing: gpuscope_trace::TimingMode::Off,
            stride: 1,
            family_timestamp_mask: Vec::new(),
            memory_types: Vec::new(),
            step_per_submit: false,
            host_reset: false,
            state: Mutex::new(Default::default()),
        })
    }

    /// The per-thread cache never answers with a device that was removed, nor with an
    /// old device once another took its dispatch key.
    #[test]
    fn the_cached_lookup_follows_devices_added_and_removed() {
        // A dispatchable handle points at its dispatch key.
        let key = Box::new(0x5eed_usize);
        let handle = &*key as *const usize as u64;
        let first = fake_device(handle, 1);
        add_device(first.clone());
        assert!(Arc::ptr_eq(&device(handle).unwrap(), &first));
        assert!(
            Arc::ptr_eq(&device(handle).unwrap(), &first),
            "from the cache"
        );
        remove_device(handle);
        assert!(device(handle).is_none(), "a removed device is gone");
        let second = fake_device(handle, 2);
        add_device(second.clone());
        assert_eq!(device(handle).unwrap().id, 2, "the key's new device");
        remove_device(handle);
    }
}
