//! Buffers, pipelines and bind groups as the runtime hands them out, and the pipeline
//! cache. They are made by [`Gpu`](crate::Gpu)'s methods in `create`, where every
//! creation is counted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::GpuError;

/// A WGSL source with the kernel-family name it is known by.
#[derive(Debug, Clone, Copy)]
pub struct ShaderSource {
    pub name: &'static str,
    pub wgsl: &'static str,
}

/// Identifies a buffer for hazard tracking and captures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub u64);

/// A storage buffer (`STORAGE | COPY_SRC | COPY_DST`), or a view of a range of one
/// ([`GpuBuffer::view`]). Cloning shares the buffer.
#[derive(Debug, Clone)]
pub struct GpuBuffer {
    pub(crate) id: BufferId,
    pub(crate) label: Arc<str>,
    /// Start of this view in the underlying buffer (0 for a whole buffer).
    pub(crate) offset: u64,
    pub(crate) size: u64,
    pub(crate) buffer: wgpu::Buffer,
}

impl GpuBuffer {
    /// A view of `size` bytes at `offset`, bound like a buffer of its own. Views share
    /// the buffer's id, so hazards between them are counted conservatively (as wgpu
    /// itself tracks usage per buffer). `offset` must be a multiple of the device's
    /// `min_storage_buffer_offset_alignment` for the view to be bound.
    pub fn view(&self, label: &str, offset: u64, size: u64) -> Result<GpuBuffer, GpuError> {
        if offset + size > self.size
            || size == 0
            || !offset.is_multiple_of(4)
            || !size.is_multiple_of(4)
        {
            return Err(GpuError::Invalid(format!(
                "view \"{label}\" of {size} bytes at {offset} does not fit buffer \"{}\" ({} bytes) on 4-byte bounds",
                self.label, self.size
            )));
        }
        Ok(GpuBuffer {
            id: self.id,
            label: label.into(),
            offset: self.offset + offset,
            size,
            buffer: self.buffer.clone(),
        })
    }

    /// The whole underlying buffer of this view (a copy of itself for a whole buffer),
    /// with this view's label.
    pub fn whole(&self) -> GpuBuffer {
        GpuBuffer {
            id: self.id,
            label: self.label.clone(),
            offset: 0,
            size: self.buffer.size(),
            buffer: self.buffer.clone(),
        }
    }

    /// Start of this view in the underlying wgpu buffer.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn id(&self) -> BufferId {
        self.id
    }
    pub fn label(&self) -> &str {
        &self.label
    }
    pub fn size(&self) -> u64 {
        self.size
    }
    pub fn raw(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

/// A compute pipeline from the cache. Cloning shares it.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub(crate) inner: Arc<PipelineInner>,
}

#[derive(Debug)]
pub(crate) struct PipelineInner {
    pub(crate) name: String,
    pub(crate) shader: &'static str,
    /// The WGSL it was built from: captures record it, replays rebuild from it.
    pub(crate) wgsl: &'static str,
    pub(crate) entry: String,
    pub(crate) constants: Vec<(String, f64)>,
    pub(crate) raw: wgpu::ComputePipeline,
}

impl Pipeline {
    /// `shader:entry{NAME=value,...}`: unique per cache entry.
    pub fn name(&self) -> &str {
        &self.inner.name
    }
    pub fn shader(&self) -> &'static str {
        self.inner.shader
    }
    /// The WGSL source of [`Pipeline::shader`].
    pub fn wgsl(&self) -> &'static str {
        self.inner.wgsl
    }
    pub fn entry(&self) -> &str {
        &self.inner.entry
    }
    pub fn constants(&self) -> &[(String, f64)] {
        &self.inner.constants
    }
    pub fn raw(&self) -> &wgpu::ComputePipeline {
        &self.inner.raw
    }
}

/// A bind group for group 0 of one pipeline.
#[derive(Debug, Clone)]
pub struct BindGroup {
    pub(crate) raw: wgpu::BindGroup,
    pub(crate) buffers: Vec<BufferId>,
    /// The buffer (or view: offset and size) bound to each binding; captures record
    /// them and read their contents.
    pub(crate) bindings: Vec<GpuBuffer>,
}

impl BindGroup {
    pub fn raw(&self) -> &wgpu::BindGroup {
        &self.raw
    }
    /// The buffers bound, binding 0 first.
    pub fn buffers(&self) -> &[BufferId] {
        &self.buffers
    }
    /// The buffers or views bound, binding 0 first.
    pub fn bindings(&self) -> &[GpuBuffer] {
        &self.bindings
    }
}

/// What makes two pipelines the same cache entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PipelineKey {
    pub(crate) shader: &'static str,
    /// Built without naga's runtime checks.
    pub(crate) trusted: bool,
    pub(crate) entry: String,
    /// Override constants, by name, as bits.
    pub(crate) constants: Vec<(String, u64)>,
}

/// What makes two shader modules the same cache entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ModuleKey {
    pub(crate) shader: &'static str,
    /// Built without naga's runtime checks.
    pub(crate) trusted: bool,
}

/// A shader module built, and the source it was built from.
pub(crate) struct CachedModule {
    pub(crate) module: wgpu::ShaderModule,
    pub(crate) wgsl: &'static str,
}

/// Shader modules by name, pipelines by (shader, entry point, override constants).
#[derive(Default)]
pub(crate) struct PipelineCache {
    pub(crate) modules: Mutex<HashMap<ModuleKey, CachedModule>>,
    pub(crate) pipelines: Mutex<HashMap<PipelineKey, Pipeline>>,
}
