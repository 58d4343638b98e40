//! Instances and devices by dispatch key: every dispatchable handle (instance, physical
//! device, device, queue, command buffer) starts with the loader's dispatch-table
//! pointer, shared by an instance and its physical devices and by a device and its
//! queues and command buffers, so one lookup finds the owner of any handle.

use rustc_hash::FxHashMap as HashMap;
use std::sync::{Arc, RwLock};

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
    read(&DEVICES, raw)
}

pub fn add_device(d: Arc<Device>) {
    let raw = d.handle.as_raw();
    insert(&DEVICES, raw, d);
}

pub fn remove_device(raw: u64) -> Option<Arc<Device>> {
    remove(&DEVICES, raw)
}

/// How many devices are open.
pub fn device_count() -> usize {
    let guard = DEVICES.read().unwrap_or_else(|e| e.into_inner());
    guard.as_ref().map_or(0, HashMap::len)
}
