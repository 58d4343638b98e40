//! Objects the program creates: shader modules (saved, entry points read), compute
//! pipelines (with their specialization constants and workgroup size), buffers and
//! memory (by type and use), descriptor updates, and the debug-utils names it gives
//! them.

use std::ffi::CStr;

use ash::vk;
use ash::vk::Handle;
use gpuscope_trace::capture::fnv1a64;
use gpuscope_trace::recording::{
    AllocationRecord, EntryPoint, NameRecord, PipelineRecord, Record, ShaderRecord,
};

use crate::device::{Device, DeviceState};
use crate::registry;
use crate::{guard, spirv, writer};

/// The hook for `name`, if this module has one.
pub fn hook(name: &[u8]) -> Option<*const ()> {
    Some(match name {
        b"vkCreateShaderModule" => create_shader_module as *const (),
        b"vkCreateComputePipelines" => create_compute_pipelines as *const (),
        b"vkCreateBuffer" => create_buffer as *const (),
        b"vkBindBufferMemory" => bind_buffer_memory as *const (),
        b"vkAllocateMemory" => allocate_memory as *const (),
        b"vkFreeMemory" => free_memory as *const (),
        b"vkUpdateDescriptorSets" => update_descriptor_sets as *const (),
        b"vkSetDebugUtilsObjectNameEXT" => set_object_name as *const (),
        _ => return None,
    })
}

/// The debug-utils functions the layer offers even when the driver has none (they only
/// name things; without the driver's, the layer keeps the names and returns success).
pub fn provided_when_missing(name: &[u8]) -> bool {
    matches!(
        name,
        b"vkSetDebugUtilsObjectNameEXT"
            | b"vkCmdBeginDebugUtilsLabelEXT"
            | b"vkCmdEndDebugUtilsLabelEXT"
    )
}

fn count(st: &mut DeviceState, key: &'static str, n: u64) {
    *st.host_counters.entry(key).or_default() += n;
}

/// The step being recorded (for resources created during a run).
fn current_step() -> Option<u32> {
    writer::with(|_| ()).map(|()| writer::next_step())
}

/// Records a SPIR-V module: saved under its hash, entry points read.
unsafe fn record_module(d: &Device, st: &mut DeviceState, code: &[u8]) -> Option<u32> {
    let hash = fnv1a64(code);
    let entries = spirv::compute_entries(&spirv::words(code));
    let id = writer::with(|w| {
        let _ = w.save_shader(&hash, code);
        w.ids.shaders += 1;
        w.ids.shaders - 1
    })?;
    writer::record(Record::Shader(ShaderRecord {
        id,
        device: d.id,
        hash,
        bytes: code.len() as u64,
        entry_points: entries
            .iter()
            .map(|e| EntryPoint {
                name: e.name.clone(),
                workgroup_size: e.size.map(|s| s.map(|x| x.resolve(&[]))),
            })
            .collect(),
        name: None,
    }));
    st.shader_entries.insert(id, entries);
    Some(id)
}

unsafe fn code_of<'a>(info: &'a vk::ShaderModuleCreateInfo<'a>) -> &'a [u8] {
    if info.p_code.is_null() {
        return &[];
    }
    std::slice::from_raw_parts(info.p_code.cast::<u8>(), info.code_size)
}

unsafe extern "system" fn create_shader_module(
    device: vk::Device,
    info: *const vk::ShaderModuleCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::ShaderModule,
) -> vk::Result {
    let Some(d) = registry::device(device.as_raw()) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let Some(next) = d.fns.create_shader_module else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let r = next(device, info, allocator, out);
    if r == vk::Result::SUCCESS {
        guard("vkCreateShaderModule", || {
            let mut st = d.lock();
            if let Some(id) = record_module(d, &mut st, code_of(&*info)) {
                st.modules.insert((*out).as_raw(), id);
            }
        });
    }
    r
}

/// Specialization constants as (id, raw bits of their value).
unsafe fn constants(spec: *const vk::SpecializationInfo) -> Vec<(u32, u64)> {
    let Some(s) = spec.as_ref() else {
        return Vec::new();
    };
    let data: &[u8] = if s.p_data.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(s.p_data.cast(), s.data_size)
    };
    (0..s.map_entry_count as usize)
        .filter_map(|i| {
            let e = &*s.p_map_entries.add(i);
            let bytes = data.get(e.offset as usize..e.offset as usize + e.size.min(8))?;
            let mut v = [0u8; 8];
            v[..bytes.len()].copy_from_slice(bytes);
            Some((e.constant_id, u64::from_le_bytes(v)))
        })
        .collect()
}

/// The shader a pipeline stage runs: its module, or a module given inline (pNext).
unsafe fn stage_shader(
    d: &Device,
    st: &mut DeviceState,
    stage: &vk::PipelineShaderStageCreateInfo,
) -> Option<u32> {
    if stage.module != vk::ShaderModule::null() {
        return st.modules.get(&stage.module.as_raw()).copied();
    }
    let mut next = stage.p_next.cast::<vk::BaseInStructure>();
    while let Some(b) = next.as_ref() {
        if b.s_type == vk::StructureType::SHADER_MODULE_CREATE_INFO {
            let info = &*(next.cast::<vk::ShaderModuleCreateInfo>());
            return record_module(d, st, code_of(info));
        }
        next = b.p_next;
    }
    None
}

unsafe extern "system" fn create_compute_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    n: u32,
    infos: *const vk::ComputePipelineCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::Pipeline,
) -> vk::Result {
    let Some(d) = registry::device(device.as_raw()) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let Some(next) = d.fns.create_compute_pipelines else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let r = next(device, cache, n, infos, allocator, out);
    if r == vk::Result::SUCCESS {
        guard("vkCreateComputePipelines", || {
            let mut st = d.lock();
            count(&mut st, "pipelines_created", u64::from(n));
            for i in 0..n as usize {
                record_pipeline(d, &mut st, &*infos.add(i), *out.add(i));
            }
        });
    }
    r
}

unsafe fn record_pipeline(
    d: &Device,
    st: &mut DeviceState,
    info: &vk::ComputePipelineCreateInfo,
    pipeline: vk::Pipeline,
) {
    let stage = &info.stage;
    let Some(shader) = stage_shader(d, st, stage) else {
        return;
    };
    let entry_point = stage
        .name_as_c_str()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let constants = constants(stage.p_specialization_info);
    let workgroup_size = st
        .shader_entries
        .get(&shader)
        .and_then(|es| es.iter().find(|e| e.name == entry_point))
        .and_then(|e| e.size)
        .map(|s| s.map(|x| x.resolve(&constants)));
    let Some(id) = writer::with(|w| {
        w.ids.pipelines += 1;
        w.ids.pipelines - 1
    }) else {
        return;
    };
    st.pipelines.insert(pipeline.as_raw(), id);
    writer::record(Record::Pipeline(PipelineRecord {
        id,
        device: d.id,
        shader,
        entry_point,
        constants,
        workgroup_size,
        name: None,
        step: current_step(),
    }));
}

/// What a buffer of these usages is for, as the memory view groups them.
fn usage_kind(usage: vk::BufferUsageFlags) -> &'static str {
    if usage.contains(vk::BufferUsageFlags::STORAGE_BUFFER) {
        "storage"
    } else if usage.contains(vk::BufferUsageFlags::UNIFORM_BUFFER) {
        "uniform"
    } else if usage
        .intersects(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST)
    {
        "staging"
    } else {
        "other"
    }
}

unsafe extern "system" fn create_buffer(
    device: vk::Device,
    info: *const vk::BufferCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::Buffer,
) -> vk::Result {
    let Some(d) = registry::device(device.as_raw()) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let Some(next) = d.fns.create_buffer else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let r = next(device, info, allocator, out);
    if r == vk::Result::SUCCESS {
        guard("vkCreateBuffer", || {
            let mut st = d.lock();
            count(&mut st, "buffers_created", 1);
            st.buffer_usage
                .insert((*out).as_raw(), usage_kind((*info).usage));
        });
    }
    r
}

fn properties(flags: vk::MemoryPropertyFlags) -> String {
    let mut names = Vec::new();
    for (f, n) in [
        (vk::MemoryPropertyFlags::DEVICE_LOCAL, "device_local"),
        (vk::MemoryPropertyFlags::HOST_VISIBLE, "host_visible"),
        (vk::MemoryPropertyFlags::HOST_COHERENT, "host_coherent"),
        (vk::MemoryPropertyFlags::HOST_CACHED, "host_cached"),
    ] {
        if flags.contains(f) {
            names.push(n);
        }
    }
    names.join("|")
}

fn allocation(
    d: &Device,
    (id, bytes, memory_type): (u64, u64, u32),
    event: &str,
    usage: Option<&str>,
) -> Record {
    let flags = d
        .memory_types
        .get(memory_type as usize)
        .copied()
        .unwrap_or_default();
    Record::Allocation(AllocationRecord {
        device: d.id,
        id,
        bytes,
        memory_type,
        properties: properties(flags),
        event: event.into(),
        step: current_step(),
        usage: usage.map(str::to_string),
    })
}

unsafe extern "system" fn bind_buffer_memory(
    device: vk::Device,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    offset: vk::DeviceSize,
) -> vk::Result {
    let Some(d) = registry::device(device.as_raw()) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let Some(next) = d.fns.bind_buffer_memory else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let r = next(device, buffer, memory, offset);
    if r == vk::Result::SUCCESS {
        guard("vkBindBufferMemory", || {
            let st = d.lock();
            let usage = st.buffer_usage.get(&buffer.as_raw()).copied();
            let Some(&m) = st.memory.get(&memory.as_raw()) else {
                return;
            };
            drop(st);
            writer::record(allocation(d, m, "bind", usage));
        });
    }
    r
}

unsafe extern "system" fn allocate_memory(
    device: vk::Device,
    info: *const vk::MemoryAllocateInfo,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::DeviceMemory,
) -> vk::Result {
    let Some(d) = registry::device(device.as_raw()) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let Some(next) = d.fns.allocate_memory else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let r = next(device, info, allocator, out);
    if r == vk::Result::SUCCESS {
        guard("vkAllocateMemory", || {
            let (bytes, ty) = ((*info).allocation_size, (*info).memory_type_index);
            let mut st = d.lock();
            let id = st.allocations_made;
            st.allocations_made += 1;
            st.memory.insert((*out).as_raw(), (id, bytes, ty));
            count(&mut st, "allocations", 1);
            count(&mut st, "allocated_bytes", bytes);
            drop(st);
            writer::record(allocation(d, (id, bytes, ty), "alloc", None));
        });
    }
    r
}

unsafe extern "system" fn free_memory(
    device: vk::Device,
    memory: vk::DeviceMemory,
    allocator: *const vk::AllocationCallbacks,
) {
    let Some(d) = registry::device(device.as_raw()) else {
        return;
    };
    guard("vkFreeMemory", || {
        let mut st = d.lock();
        if let Some(m) = st.memory.remove(&memory.as_raw()) {
            count(&mut st, "frees", 1);
            drop(st);
            writer::record(allocation(d, m, "free", None));
        }
    });
    if let Some(next) = d.fns.free_memory {
        next(device, memory, allocator);
    }
}

unsafe extern "system" fn update_descriptor_sets(
    device: vk::Device,
    n_writes: u32,
    writes: *const vk::WriteDescriptorSet,
    n_copies: u32,
    copies: *const vk::CopyDescriptorSet,
) {
    let Some(d) = registry::device(device.as_raw()) else {
        return;
    };
    // An atomic, not the device lock: llama.cpp updates a set for every dispatch.
    d.descriptor_updates.fetch_add(
        u64::from(n_writes) + u64::from(n_copies),
        std::sync::atomic::Ordering::Relaxed,
    );
    if let Some(next) = d.fns.update_descriptor_sets {
        next(device, n_writes, writes, n_copies, copies);
    }
}

unsafe extern "system" fn set_object_name(
    device: vk::Device,
    info: *const vk::DebugUtilsObjectNameInfoEXT,
) -> vk::Result {
    let Some(d) = registry::device(device.as_raw()) else {
        return vk::Result::SUCCESS;
    };
    guard("vkSetDebugUtilsObjectNameEXT", || note_name(d, &*info));
    match d.fns.set_debug_utils_object_name {
        Some(next) => next(device, info),
        None => vk::Result::SUCCESS,
    }
}

unsafe fn note_name(d: &Device, info: &vk::DebugUtilsObjectNameInfoEXT) {
    let Some(name) = info.object_name_as_c_str().map(CStr::to_string_lossy) else {
        return;
    };
    let mut st = d.lock();
    let h = info.object_handle;
    let (kind, id) = match info.object_type {
        vk::ObjectType::PIPELINE => ("pipeline", st.pipelines.get(&h).copied()),
        vk::ObjectType::SHADER_MODULE => ("shader", st.modules.get(&h).copied()),
        vk::ObjectType::QUEUE => ("queue", st.queues.get(&h).map(|q| q.id)),
        vk::ObjectType::COMMAND_BUFFER => {
            if let Some(c) = st.command_buffers.get_mut(&h) {
                c.name = Some(name.into_owned());
            }
            return;
        }
        _ => return,
    };
    drop(st);
    if let Some(id) = id {
        writer::record(Record::Name(NameRecord {
            kind: kind.into(),
            id,
            name: name.into_owned(),
        }));
    }
}
