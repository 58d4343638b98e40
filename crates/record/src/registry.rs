//! What the recorder knows of a program's objects: shaders (with their WGSL and
//! reflected bindings), compute pipelines, buffers and bind groups, looked up by the
//! wgpu handle (wgpu handles hash and compare by identity).
//!
//! Objects created through the recorder are registered as they are made; objects a
//! program made with plain wgpu can be registered afterwards. The registry keeps a clone
//! of each handle: captures read buffers back and re-run dispatches through them.

use std::collections::HashMap;
use std::sync::Arc;

use gpuscope_trace::capture::Access;
use gpuscope_trace::MemoryKind;

use crate::hazards::BufferAccess;
use crate::names::Name;
use crate::reflect::{reflect, ShaderInterface};

pub(crate) struct ShaderRecord {
    pub(crate) name: String,
    /// The WGSL source, when the module was made from WGSL.
    pub(crate) wgsl: Option<Arc<str>>,
    /// Reflected interface (`None` when not WGSL or not parseable).
    pub(crate) interface: Option<ShaderInterface>,
}

pub(crate) struct PipelineRecord {
    pub(crate) raw: wgpu::ComputePipeline,
    /// Index into `shaders`; `None` when registered without its module.
    pub(crate) shader: Option<usize>,
    pub(crate) entry: String,
    pub(crate) constants: Vec<(String, f64)>,
    /// `shader:entry{NAME=value,...}`: unique per (shader, entry, constants).
    pub(crate) name: String,
    /// The op name dispatches of this pipeline get unless told otherwise.
    pub(crate) default_op: Name,
}

impl PipelineRecord {
    /// The access the shader declares for `(group, binding)`; read-write when unknown
    /// (the conservative answer for barriers and outputs).
    pub(crate) fn access(&self, shaders: &[ShaderRecord], group: u32, binding: u32) -> Access {
        self.shader
            .and_then(|s| shaders[s].interface.as_ref())
            .and_then(|i| i.group_bindings.get(&(group, binding)).copied())
            .unwrap_or(Access::ReadWrite)
    }
}

pub(crate) struct BufferRecord {
    pub(crate) raw: wgpu::Buffer,
    pub(crate) id: u64,
    pub(crate) label: String,
    pub(crate) kind: MemoryKind,
    pub(crate) created_step: Option<u32>,
    pub(crate) dropped_step: Option<u32>,
    /// Created by the recorder for itself (timestamps, staging), not by the program.
    pub(crate) own: bool,
}

/// One buffer binding of a bind group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct BoundBuffer {
    pub(crate) binding: u32,
    /// Recorder buffer id.
    pub(crate) buffer: u64,
    pub(crate) offset: u64,
    pub(crate) size: u64,
}

pub(crate) struct BindGroupRecord {
    pub(crate) raw: wgpu::BindGroup,
    pub(crate) entries: Vec<BoundBuffer>,
    /// Bindings that are not buffers (textures, samplers): captures cannot replay them.
    pub(crate) other_bindings: u32,
}

/// A bind group used at a group index of a pipeline (registry indices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct AccessKey {
    pub(crate) pipeline: u32,
    pub(crate) group: u32,
    pub(crate) bind_group: u32,
}

#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) shaders: Vec<ShaderRecord>,
    pub(crate) shader_index: HashMap<wgpu::ShaderModule, usize>,
    pub(crate) pipelines: Vec<PipelineRecord>,
    pub(crate) pipeline_index: HashMap<wgpu::ComputePipeline, u32>,
    pub(crate) buffers: Vec<BufferRecord>,
    pub(crate) buffer_index: HashMap<wgpu::Buffer, u32>,
    pub(crate) bind_groups: Vec<BindGroupRecord>,
    pub(crate) bind_group_index: HashMap<wgpu::BindGroup, u32>,
    /// Each bound buffer with its access, made once per combination, so a dispatch only
    /// looks it up.
    pub(crate) access_cache: HashMap<AccessKey, Arc<[BufferAccess]>>,
    next_buffer_id: u64,
}

impl Registry {
    pub(crate) fn add_shader(
        &mut self,
        module: &wgpu::ShaderModule,
        name: &str,
        wgsl: Option<&str>,
    ) -> usize {
        if let Some(&i) = self.shader_index.get(module) {
            return i;
        }
        let interface = wgsl.and_then(|w| reflect(w).ok());
        self.shaders.push(ShaderRecord {
            name: name.to_string(),
            wgsl: wgsl.map(Arc::from),
            interface,
        });
        let i = self.shaders.len() - 1;
        self.shader_index.insert(module.clone(), i);
        i
    }

    pub(crate) fn add_pipeline(&mut self, record: PipelineRecord) -> u32 {
        if let Some(&i) = self.pipeline_index.get(&record.raw) {
            return i;
        }
        let i = self.pipelines.len() as u32;
        self.pipeline_index.insert(record.raw.clone(), i);
        self.pipelines.push(record);
        i
    }

    pub(crate) fn add_buffer(
        &mut self,
        raw: &wgpu::Buffer,
        label: &str,
        kind: MemoryKind,
        created_step: Option<u32>,
        own: bool,
    ) -> u64 {
        if let Some(&i) = self.buffer_index.get(raw) {
            return self.buffers[i as usize].id;
        }
        self.next_buffer_id += 1;
        let id = self.next_buffer_id;
        self.buffer_index
            .insert(raw.clone(), self.buffers.len() as u32);
        self.buffers.push(BufferRecord {
            raw: raw.clone(),
            id,
            label: label.to_string(),
            kind,
            created_step,
            dropped_step: None,
            own,
        });
        id
    }

    pub(crate) fn buffer(&self, raw: &wgpu::Buffer) -> Option<&BufferRecord> {
        self.buffer_index
            .get(raw)
            .map(|&i| &self.buffers[i as usize])
    }

    pub(crate) fn buffer_mut(&mut self, raw: &wgpu::Buffer) -> Option<&mut BufferRecord> {
        self.buffer_index
            .get(raw)
            .map(|&i| &mut self.buffers[i as usize])
    }

    /// Buffer by recorder id (ids are dense from 1).
    pub(crate) fn buffer_by_id(&self, id: u64) -> Option<&BufferRecord> {
        self.buffers.get((id as usize).checked_sub(1)?)
    }

    pub(crate) fn add_bind_group(&mut self, record: BindGroupRecord) -> u32 {
        if let Some(&i) = self.bind_group_index.get(&record.raw) {
            return i;
        }
        let i = self.bind_groups.len() as u32;
        self.bind_group_index.insert(record.raw.clone(), i);
        self.bind_groups.push(record);
        i
    }

    /// The buffers `group` binds for `pipeline`, with the access the shader declares.
    pub(crate) fn accesses(&mut self, pipeline: u32, group: u32, bg: u32) -> Arc<[BufferAccess]> {
        let key = AccessKey {
            pipeline,
            group,
            bind_group: bg,
        };
        if let Some(a) = self.access_cache.get(&key) {
            return a.clone();
        }
        let p = &self.pipelines[pipeline as usize];
        let list: Arc<[BufferAccess]> = self.bind_groups[bg as usize]
            .entries
            .iter()
            .map(|e| BufferAccess {
                buffer: e.buffer,
                access: p.access(&self.shaders, group, e.binding),
            })
            .collect();
        self.access_cache.insert(key, list.clone());
        list
    }
}

/// `shader:entry{NAME=value,...}`.
pub(crate) fn pipeline_name(shader: &str, entry: &str, constants: &[(String, f64)]) -> String {
    let mut name = format!("{shader}:{entry}");
    if !constants.is_empty() {
        let consts: Vec<String> = constants.iter().map(|(k, v)| format!("{k}={v}")).collect();
        name.push_str(&format!("{{{}}}", consts.join(",")));
    }
    name
}
