//! The loader's way in: interface negotiation, `vkGet*ProcAddr`, and the instance and
//! device lifetimes (where the layer links itself into the chain).

use std::ffi::{c_char, CStr};
use std::sync::Mutex;

use ash::vk;
use ash::vk::Handle;
use ash_layer::{
    get_device_chain_info, get_instance_chain_info, LayerFunction, NegotiateLayerInterface,
};
use gpuscope_trace::recording::{DeviceRecord, Record};
use gpuscope_trace::TimingMode;

use super::{commands, objects, queues};
use crate::config::TIMING;
use crate::device::{Device, DeviceState};
use crate::fns::{DeviceFns, InstanceFns};
use crate::registry::{self, Instance};
use crate::{guard, writer};

/// # Safety
/// Called by the Vulkan loader with a valid negotiation struct.
#[no_mangle]
pub unsafe extern "system" fn vkNegotiateLoaderLayerInterfaceVersion(
    s: *mut NegotiateLayerInterface,
) -> vk::Result {
    let Some(s) = s.as_mut() else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    if s.loader_layer_interface_version < 2 {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
    s.loader_layer_interface_version = 2;
    s.pfn_get_instance_proc_addr = Some(get_instance_proc_addr);
    s.pfn_get_device_proc_addr = Some(get_device_proc_addr);
    s.pfn_get_physical_device_proc_addr = None;
    vk::Result::SUCCESS
}

/// The layer's `vkGetInstanceProcAddr`.
///
/// # Safety
/// Called by the loader (or the program) with a valid instance (or null) and a
/// nul-terminated name.
pub unsafe extern "system" fn get_instance_proc_addr(
    instance: vk::Instance,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    let n = CStr::from_ptr(name).to_bytes();
    let own: Option<*const ()> = match n {
        b"vkGetInstanceProcAddr" => Some(get_instance_proc_addr as *const ()),
        b"vkCreateInstance" => Some(create_instance as *const ()),
        b"vkDestroyInstance" => Some(destroy_instance as *const ()),
        b"vkCreateDevice" => Some(create_device as *const ()),
        b"vkGetDeviceProcAddr" => Some(get_device_proc_addr as *const ()),
        _ => device_hook(n),
    };
    if let Some(f) = own {
        return Some(std::mem::transmute::<*const (), unsafe extern "system" fn()>(f));
    }
    let next = registry::instance(instance.as_raw())?.next_gipa;
    next(instance, name)
}

/// The layer's `vkGetDeviceProcAddr`: its hook where the next layer has the function
/// (the debug-utils functions always: the layer provides them when the driver lacks
/// them), else the next layer's function.
///
/// # Safety
/// Called by the loader (or the program) with a valid device and a nul-terminated name.
pub unsafe extern "system" fn get_device_proc_addr(
    device: vk::Device,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    let n = CStr::from_ptr(name).to_bytes();
    if n == b"vkGetDeviceProcAddr" {
        return Some(
            std::mem::transmute::<*const (), unsafe extern "system" fn()>(
                get_device_proc_addr as *const (),
            ),
        );
    }
    let d = registry::device(device.as_raw())?;
    let next = (d.next_gdpa)(device, name);
    match device_hook(n) {
        Some(f) if next.is_some() || objects::provided_when_missing(n) => {
            Some(std::mem::transmute::<*const (), unsafe extern "system" fn()>(f))
        }
        _ => next,
    }
}

/// The layer's hook for a device-level function name, if it has one.
fn device_hook(n: &[u8]) -> Option<*const ()> {
    if n == b"vkDestroyDevice" {
        return Some(destroy_device as *const ());
    }
    queues::hook(n)
        .or_else(|| commands::hook(n))
        .or_else(|| objects::hook(n))
}

unsafe extern "system" fn create_instance(
    info: *const vk::InstanceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::Instance,
) -> vk::Result {
    let Some(mut chain) = get_instance_chain_info(&*info, LayerFunction::LAYER_LINK_INFO) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let chain = chain.as_mut();
    let Some(link) = chain.u.p_layer_info.as_ref() else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let Some(next_gipa) = link.pfn_next_get_instance_proc_addr else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    // The next layer sees the link after ours.
    chain.u.p_layer_info = link.p_next;
    let Some(next_create) = next_gipa(vk::Instance::null(), c"vkCreateInstance".as_ptr()) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let next_create: vk::PFN_vkCreateInstance = std::mem::transmute(next_create);
    let r = next_create(info, allocator, out);
    if r != vk::Result::SUCCESS {
        return r;
    }
    let instance = *out;
    guard("vkCreateInstance", || {
        registry::add_instance(Instance {
            handle: instance,
            fns: InstanceFns::load(next_gipa, instance),
            next_gipa,
        })
    });
    r
}

unsafe extern "system" fn destroy_instance(
    instance: vk::Instance,
    allocator: *const vk::AllocationCallbacks,
) {
    let Some(i) = registry::remove_instance(instance.as_raw()) else {
        return;
    };
    if let Some(destroy) = i.fns.destroy_instance {
        destroy(instance, allocator);
    }
}

unsafe extern "system" fn create_device(
    physical: vk::PhysicalDevice,
    info: *const vk::DeviceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::Device,
) -> vk::Result {
    let Some(instance) = registry::instance(physical.as_raw()) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let Some(mut chain) = get_device_chain_info(&*info, LayerFunction::LAYER_LINK_INFO) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let chain = chain.as_mut();
    let Some(link) = chain.u.p_layer_info.as_ref() else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let (Some(next_gipa), Some(next_gdpa)) = (
        link.pfn_next_get_instance_proc_addr,
        link.pfn_next_get_device_proc_addr,
    ) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    chain.u.p_layer_info = link.p_next;
    let Some(next_create) = next_gipa(instance.handle, c"vkCreateDevice".as_ptr()) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let next_create: vk::PFN_vkCreateDevice = std::mem::transmute(next_create);
    let r = next_create(physical, info, allocator, out);
    if r != vk::Result::SUCCESS {
        return r;
    }
    let device = *out;
    let host_reset = host_query_reset_enabled(&*info);
    guard("vkCreateDevice", || {
        register_device(&instance, physical, device, next_gdpa, host_reset)
    });
    r
}

/// Whether the program enabled `hostQueryReset` (Vulkan 1.2, or
/// `VK_EXT_host_query_reset`) in the device's feature chain. The layer only reads the
/// chain: enabling a feature the program did not ask for would change its device.
unsafe fn host_query_reset_enabled(info: &vk::DeviceCreateInfo) -> bool {
    let mut next = info.p_next.cast::<vk::BaseInStructure>();
    while let Some(s) = next.as_ref() {
        let enabled = match s.s_type {
            vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES => {
                (*next.cast::<vk::PhysicalDeviceVulkan12Features>()).host_query_reset
            }
            vk::StructureType::PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES => {
                (*next.cast::<vk::PhysicalDeviceHostQueryResetFeatures>()).host_query_reset
            }
            _ => vk::FALSE,
        };
        if enabled != vk::FALSE {
            return true;
        }
        next = s.p_next;
    }
    false
}

/// What the layer keeps of a new device, and its record.
unsafe fn register_device(
    instance: &Instance,
    physical: vk::PhysicalDevice,
    device: vk::Device,
    next_gdpa: vk::PFN_vkGetDeviceProcAddr,
    host_reset: bool,
) {
    let props = physical_properties(instance, physical);
    let config = crate::config();
    let recording = config.out.is_some();
    let (mut timing, mut stride, mut why) = config.timing_for(props.vendor_id);
    let families = queue_families(instance, physical);
    let masks: Vec<u64> = families
        .iter()
        .map(|f| match f.timestamp_valid_bits {
            0 => 0,
            64.. => u64::MAX,
            b => (1u64 << b) - 1,
        })
        .collect();
    if masks.iter().all(|&m| m == 0) && timing != TimingMode::Off {
        (timing, stride, why) = (
            TimingMode::Off,
            1,
            "no queue family of this device writes timestamps".into(),
        );
    }
    if !recording {
        timing = TimingMode::Off;
    }
    let _ = TIMING.set((timing, stride, why));
    let id = writer::with(|w| {
        w.ids.devices += 1;
        w.ids.devices - 1
    })
    .unwrap_or(0);
    let fns = DeviceFns::load(next_gdpa, device);
    registry::add_device(Device {
        handle: device,
        id,
        fns,
        next_gdpa,
        timing,
        stride,
        family_timestamp_mask: masks,
        memory_types: memory_types(instance, physical),
        step_per_submit: config.step_per_submit,
        stop_labels: config.stop_labels,
        host_reset: host_reset && fns.reset_query_pool.is_some(),
        dispatches_recorded: Default::default(),
        descriptor_updates: Default::default(),
        state: Mutex::new(DeviceState::default()),
    });
    writer::record(Record::Device(DeviceRecord {
        id,
        name: props.name,
        vendor_id: props.vendor_id,
        device_id: props.device_id,
        device_type: props.device_type,
        driver_name: props.driver_name,
        driver_info: props.driver_info,
        api_version: props.api_version,
        timestamp_period_ns: props.timestamp_period_ns,
        max_storage_buffer_range: props.max_storage_buffer_range,
        max_buffer_size: props.max_buffer_size,
    }));
    writer::end_at_exit();
}

struct Properties {
    name: String,
    vendor_id: u32,
    device_id: u32,
    device_type: String,
    driver_name: String,
    driver_info: String,
    api_version: String,
    timestamp_period_ns: f64,
    max_storage_buffer_range: u64,
    max_buffer_size: u64,
}

unsafe fn physical_properties(i: &Instance, physical: vk::PhysicalDevice) -> Properties {
    let mut props = vk::PhysicalDeviceProperties::default();
    if let Some(get) = i.fns.get_physical_device_properties {
        get(physical, &mut props);
    }
    let (mut driver_name, mut driver_info) = (String::new(), String::new());
    let mut max_buffer_size = 0;
    if let (Some(get2), true) = (
        i.fns.get_physical_device_properties2,
        props.api_version >= vk::API_VERSION_1_2,
    ) {
        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        let mut maintenance4 = vk::PhysicalDeviceMaintenance4Properties::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver);
        if props.api_version >= vk::API_VERSION_1_3 {
            p2 = p2.push_next(&mut maintenance4);
        }
        get2(physical, &mut p2);
        driver_name = c_chars(&driver.driver_name);
        driver_info = c_chars(&driver.driver_info);
        max_buffer_size = maintenance4.max_buffer_size;
    }
    let v = props.api_version;
    Properties {
        name: c_chars(&props.device_name),
        vendor_id: props.vendor_id,
        device_id: props.device_id,
        device_type: format!("{:?}", props.device_type),
        driver_name,
        driver_info,
        api_version: format!(
            "{}.{}.{}",
            vk::api_version_major(v),
            vk::api_version_minor(v),
            vk::api_version_patch(v)
        ),
        timestamp_period_ns: f64::from(props.limits.timestamp_period),
        max_storage_buffer_range: u64::from(props.limits.max_storage_buffer_range),
        max_buffer_size,
    }
}

fn c_chars(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

unsafe fn queue_families(
    i: &Instance,
    physical: vk::PhysicalDevice,
) -> Vec<vk::QueueFamilyProperties> {
    let Some(get) = i.fns.get_physical_device_queue_family_properties else {
        return Vec::new();
    };
    let mut n = 0u32;
    get(physical, &mut n, std::ptr::null_mut());
    let mut v = vec![vk::QueueFamilyProperties::default(); n as usize];
    get(physical, &mut n, v.as_mut_ptr());
    v.truncate(n as usize);
    v
}

unsafe fn memory_types(i: &Instance, physical: vk::PhysicalDevice) -> Vec<vk::MemoryPropertyFlags> {
    let Some(get) = i.fns.get_physical_device_memory_properties else {
        return Vec::new();
    };
    let mut m = vk::PhysicalDeviceMemoryProperties::default();
    get(physical, &mut m);
    m.memory_types[..(m.memory_type_count as usize).min(vk::MAX_MEMORY_TYPES)]
        .iter()
        .map(|t| t.property_flags)
        .collect()
}

unsafe extern "system" fn destroy_device(
    device: vk::Device,
    allocator: *const vk::AllocationCallbacks,
) {
    let Some(d) = registry::remove_device(device.as_raw()) else {
        return;
    };
    guard("vkDestroyDevice", || {
        let mut st = d.lock();
        // What the program never synced is lost; the layer's own pools go.
        let mut pools = std::mem::take(&mut st.spare_pools);
        for c in st.command_buffers.values_mut() {
            pools.append(&mut c.query_pools);
        }
        if let Some(destroy) = d.fns.destroy_query_pool {
            for p in pools {
                destroy(device, p, std::ptr::null());
            }
        }
        // The record's shell stays (see `registry`); what it held goes.
        crate::device::forget_cells();
        *st = DeviceState::default();
    });
    if let Some(destroy) = d.fns.destroy_device {
        destroy(device, allocator);
    }
    if registry::device_count() == 0 {
        guard("vkDestroyDevice", || {
            writer::record(Record::End {
                reason: "the program destroyed its devices".into(),
            });
            writer::drain();
        });
    }
}
