//! Instances and devices by dispatch key: every dispatchable handle (instance, physical
//! device, device, queue, command buffer) starts with the loader's dispatch-table
//! pointer, shared by an instance and its physical devices and by a device and its
//! queues and command buffers, so one lookup finds the owner of any handle.
//!
//! Devices are looked up on every hooked command (several per dispatch), so the
//! lookup is a scan of a few global slots of (dispatch key, device): two relaxed loads
//! per slot, no lock, no reference count and no thread-local (whose every access is a
//! `__tls_get_addr` call in a shared library) on the hot path (llama.cpp's decode
//! records about 3,000 hooked commands per token). For that, a device's record is never
//! freed: `vkDestroyDevice` empties it and leaves the few hundred bytes of its shell (a
//! program makes a handful of devices). Devices past the slots are found in a map
//! under a lock.

use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
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

/// Slots scanned before the map: a program has one or two devices.
const SLOTS: usize = 4;

/// Each slot's dispatch key (0: free) and device. A slot's device is written before
/// its key is published, and a device's record is never freed, so a reader that sees
/// a key sees a live device.
static SLOT_KEYS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static SLOT_DEVICES: [AtomicPtr<Device>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

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
    for (slot_key, slot_device) in SLOT_KEYS.iter().zip(&SLOT_DEVICES) {
        if slot_key.load(Ordering::Acquire) == k {
            let d = slot_device.load(Ordering::Acquire);
            // The key again: the slot was not given to another device meanwhile.
            if slot_key.load(Ordering::Acquire) == k {
                // SAFETY: published after its device, which is never freed (module doc).
                return unsafe { d.as_ref() };
            }
        }
    }
    let guard = DEVICES.read().unwrap_or_else(|e| e.into_inner());
    guard.as_ref()?.get(&k).copied()
}

/// Registers a device; its record lives as long as the process (see the module doc).
pub fn add_device(d: Device) {
    let d: &'static Device = Box::leak(Box::new(d));
    // SAFETY: as `read`.
    let k = unsafe { key(d.handle.as_raw()) };
    let mut guard = DEVICES.write().unwrap_or_else(|e| e.into_inner());
    guard.get_or_insert_with(HashMap::default).insert(k, d);
    // Under the map's lock: slots are claimed and freed by one thread at a time.
    if let Some(i) = SLOT_KEYS
        .iter()
        .position(|s| s.load(Ordering::Relaxed) == 0)
    {
        SLOT_DEVICES[i].store(std::ptr::from_ref(d).cast_mut(), Ordering::Release);
        SLOT_KEYS[i].store(k, Ordering::Release);
    }
}

pub fn remove_device(raw: u64) -> Option<&'static Device> {
    // SAFETY: as `read`.
    let k = unsafe { key(raw) };
    let mut guard = DEVICES.write().unwrap_or_else(|e| e.into_inner());
    for s in &SLOT_KEYS {
        if s.load(Ordering::Relaxed) == k {
            s.store(0, Ordering::Release);
        }
    }
    guard.as_mut()?.remove(&k)
}

/// How many devices are open.
pub fn device_count() -> usize {
    let guard = DEVICES.read().unwrap_or_else(|e| e.into_inner());
    guard.as_ref().map_or(0, HashMap::len)
}
