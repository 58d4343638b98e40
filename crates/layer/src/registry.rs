//! Instances and devices by dispatch key: every dispatchable handle (instance, physical
//! device, device, queue, command buffer) starts with the loader's dispatch-table
//! pointer, shared by an instance and its physical devices and by a device and its
//! queues and command buffers, so one lookup finds the owner of any handle.
//!
//! Devices are looked up on every hooked command (several per dispatch), so the
//! lookup is a thread-local cache of the last device found, checked against a
//! generation counter that every device creation and destruction bumps: no lock and no
//! reference count on the hot path (llama.cpp's decode records about 3,000 hooked
//! commands per token). For that, a device's record is never freed: `vkDestroyDevice`
//! empties it and leaves the few hundred bytes of its shell (a program makes a handful
//! of devices).

use rustc_hash::FxHashMap as HashMap;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
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
static DEVICES: RwLock<Option<HashMap<usize, &'static Device>>> = RwLock::new(None);

/// Bumped by every device added or removed: a cached lookup of an older generation is
/// not used.
static DEVICES_GENERATION: AtomicU64 = AtomicU64::new(0);

/// A lookup of a device by this thread: (dispatch key, generation, device).
type Cached = (usize, u64, Option<&'static Device>);

thread_local! {
    static LAST_DEVICE: Cell<Cached> = const { Cell::new((0, u64::MAX, None)) };
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
pub fn device(raw: u64) -> Option<&'static Device> {
    if raw == 0 {
        return None;
    }
    // SAFETY: the loader only calls the layer with live handles.
    let k = unsafe { key(raw) };
    // Read before the map: a device removed after this read is not cached as current.
    let generation = DEVICES_GENERATION.load(Ordering::Acquire);
    let cached = LAST_DEVICE
        .try_with(|c| match c.get() {
            (key, g, Some(d)) if key == k && g == generation => Some(d),
            _ => None,
        })
        .ok()
        .flatten();
    if cached.is_some() {
        return cached;
    }
    let guard = DEVICES.read().unwrap_or_else(|e| e.into_inner());
    let d = guard.as_ref()?.get(&k).copied()?;
    drop(guard);
    let _ = LAST_DEVICE.try_with(|c| c.set((k, generation, Some(d))));
    Some(d)
}

/// Registers a device; its record lives as long as the process (see the module doc).
pub fn add_device(d: Device) {
    let d: &'static Device = Box::leak(Box::new(d));
    // SAFETY: as `read`.
    let k = unsafe { key(d.handle.as_raw()) };
    let mut guard = DEVICES.write().unwrap_or_else(|e| e.into_inner());
    guard.get_or_insert_with(HashMap::default).insert(k, d);
    DEVICES_GENERATION.fetch_add(1, Ordering::Release);
}

pub fn remove_device(raw: u64) -> Option<&'static Device> {
    // SAFETY: as `read`.
    let k = unsafe { key(raw) };
    let mut guard = DEVICES.write().unwrap_or_else(|e| e.into_inner());
    let d = guard.as_mut()?.remove(&k);
    DEVICES_GENERATION.fetch_add(1, Ordering::Release);
    d
}

/// How many devices are open.
pub fn device_count() -> usize {
    let guard = DEVICES.read().unwrap_or_else(|e| e.into_inner());
    guard.as_ref().map_or(0, HashMap::len)
}
