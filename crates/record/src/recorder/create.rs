//! Creation mirrors: `device.create_*` calls forwarded, and what the recorder learns
//! from each (shader WGSL, pipeline constants, bound buffer ranges), or the same learned
//! from objects a program made itself (`register_*`).

use std::time::Instant;

use gpuscope_trace::MemoryKind;

use super::{field, Recorder, State};
use crate::registry::{pipeline_name, BindGroupRecord, BoundBuffer, PipelineRecord};

impl Recorder {
    /// `device.create_shader_module`, remembering the WGSL (captures, barrier inference
    /// from declared binding access). The label names the shader.
    pub fn create_shader_module(
        &self,
        desc: wgpu::ShaderModuleDescriptor<'_>,
    ) -> wgpu::ShaderModule {
        self.register_created_module(desc, |d| self.shared.device.create_shader_module(d))
    }

    /// `device.create_shader_module_trusted`, remembering the WGSL like
    /// [`Self::create_shader_module`].
    ///
    /// # Safety
    /// wgpu's contract for `create_shader_module_trusted`: with checks turned off, every
    /// index the shader computes must be in range for the buffers it is bound to, and
    /// every loop must end.
    pub unsafe fn create_shader_module_trusted(
        &self,
        desc: wgpu::ShaderModuleDescriptor<'_>,
        checks: wgpu::ShaderRuntimeChecks,
    ) -> wgpu::ShaderModule {
        self.register_created_module(desc, |d| {
            // SAFETY: forwarded from this function's contract.
            unsafe { self.shared.device.create_shader_module_trusted(d, checks) }
        })
    }

    /// Creates a module with `create` and registers it under its label and WGSL.
    fn register_created_module(
        &self,
        desc: wgpu::ShaderModuleDescriptor<'_>,
        create: impl FnOnce(wgpu::ShaderModuleDescriptor<'_>) -> wgpu::ShaderModule,
    ) -> wgpu::ShaderModule {
        let start = Instant::now();
        let label = desc.label.unwrap_or("shader").to_string();
        let wgsl = match &desc.source {
            wgpu::ShaderSource::Wgsl(src) => Some(src.to_string()),
            _ => None,
        };
        let module = create(desc);
        let mut st = self.state();
        st.registry.add_shader(&module, &label, wgsl.as_deref());
        self.push_span(
            &mut st,
            "create_shader_module",
            start,
            Instant::now(),
            None,
            Some(&label),
        );
        module
    }

    /// Registers a module the program made itself; give its WGSL when it has one.
    pub fn register_shader_module(
        &self,
        module: &wgpu::ShaderModule,
        name: &str,
        wgsl: Option<&str>,
    ) {
        self.state().registry.add_shader(module, name, wgsl);
    }

    /// `device.create_compute_pipeline`, remembering its shader, entry point and
    /// override constants.
    pub fn create_compute_pipeline(
        &self,
        desc: &wgpu::ComputePipelineDescriptor<'_>,
    ) -> wgpu::ComputePipeline {
        let start = Instant::now();
        let raw = self.shared.device.create_compute_pipeline(desc);
        let constants: Vec<(String, f64)> = desc
            .compilation_options
            .constants
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        let mut st = self.state();
        self.add_pipeline(
            &mut st,
            &raw,
            Some(desc.module),
            desc.entry_point,
            constants,
            desc.label,
        );
        self.count(&mut st, field::PIPELINES, 1);
        self.push_span(
            &mut st,
            "create_pipeline",
            start,
            Instant::now(),
            None,
            desc.label,
        );
        raw
    }

    /// Registers a pipeline the program made itself.
    pub fn register_compute_pipeline(
        &self,
        pipeline: &wgpu::ComputePipeline,
        module: Option<&wgpu::ShaderModule>,
        entry_point: Option<&str>,
        constants: &[(&str, f64)],
    ) {
        let mut st = self.state();
        let constants = constants.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        self.add_pipeline(&mut st, pipeline, module, entry_point, constants, None);
    }

    fn add_pipeline(
        &self,
        st: &mut State,
        raw: &wgpu::ComputePipeline,
        module: Option<&wgpu::ShaderModule>,
        entry: Option<&str>,
        constants: Vec<(String, f64)>,
        label: Option<&str>,
    ) -> u32 {
        let shader = module.and_then(|m| st.registry.shader_index.get(m).copied());
        let shader_name = match shader {
            Some(s) => st.registry.shaders[s].name.clone(),
            None => label.unwrap_or("pipeline").to_string(),
        };
        let entry = entry
            .map(str::to_string)
            .or_else(|| {
                shader
                    .and_then(|s| st.registry.shaders[s].interface.as_ref())
                    .and_then(|i| i.compute_entries.first().cloned())
            })
            .unwrap_or_else(|| "main".into());
        let default_op = st.names.intern(label.unwrap_or(&shader_name));
        let name = pipeline_name(&shader_name, &entry, &constants);
        st.registry.add_pipeline(PipelineRecord {
            raw: raw.clone(),
            shader,
            entry,
            constants,
            name,
            default_op,
        })
    }

    /// `device.create_buffer`. Its memory kind is guessed from its usage (mappable:
    /// staging; query resolve: timestamps; else other) until
    /// [`Recorder::set_memory_kind`] says better.
    pub fn create_buffer(&self, desc: &wgpu::BufferDescriptor<'_>) -> wgpu::Buffer {
        let start = Instant::now();
        let raw = self.shared.device.create_buffer(desc);
        let kind = if desc
            .usage
            .intersects(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::MAP_WRITE)
        {
            MemoryKind::Staging
        } else if desc.usage.contains(wgpu::BufferUsages::QUERY_RESOLVE) {
            MemoryKind::Timestamps
        } else {
            MemoryKind::Other
        };
        let label = desc.label.unwrap_or("buffer");
        let mut st = self.state();
        let step = st.last_begun;
        st.registry.add_buffer(&raw, label, kind, step, false);
        self.count(&mut st, field::BUFFERS, 1);
        self.push_span(
            &mut st,
            "create_buffer",
            start,
            Instant::now(),
            None,
            Some(label),
        );
        raw
    }

    /// Registers a buffer the program made itself.
    pub fn register_buffer(&self, buffer: &wgpu::Buffer, label: &str, kind: MemoryKind) {
        let mut st = self.state();
        st.registry.add_buffer(buffer, label, kind, None, false);
    }

    /// Says what a buffer holds (weights, KV cache, activations...) for the memory view.
    pub fn set_memory_kind(&self, buffer: &wgpu::Buffer, kind: MemoryKind) {
        if let Some(b) = self.state().registry.buffer_mut(buffer) {
            b.kind = kind;
        }
    }

    /// Marks a buffer as released by the program (the memory view stops counting it).
    pub fn forget_buffer(&self, buffer: &wgpu::Buffer) {
        let mut st = self.state();
        let step = st.last_begun;
        if let Some(b) = st.registry.buffer_mut(buffer) {
            b.dropped_step = step;
        }
    }

    /// `device.create_bind_group`, remembering which buffer ranges it binds.
    pub fn create_bind_group(&self, desc: &wgpu::BindGroupDescriptor<'_>) -> wgpu::BindGroup {
        let start = Instant::now();
        let raw = self.shared.device.create_bind_group(desc);
        let mut st = self.state();
        self.add_bind_group(&mut st, &raw, desc);
        self.count(&mut st, field::BIND_GROUPS, 1);
        self.push_span(
            &mut st,
            "create_bind_group",
            start,
            Instant::now(),
            None,
            desc.label,
        );
        raw
    }

    /// Registers a bind group the program made itself, with the descriptor it used.
    pub fn register_bind_group(
        &self,
        bind_group: &wgpu::BindGroup,
        desc: &wgpu::BindGroupDescriptor<'_>,
    ) {
        let mut st = self.state();
        self.add_bind_group(&mut st, bind_group, desc);
    }

    fn add_bind_group(
        &self,
        st: &mut State,
        raw: &wgpu::BindGroup,
        desc: &wgpu::BindGroupDescriptor<'_>,
    ) {
        let mut entries = Vec::new();
        let mut other = 0;
        for e in desc.entries {
            match &e.resource {
                wgpu::BindingResource::Buffer(b) => {
                    let buffer = match st.registry.buffer(b.buffer) {
                        Some(r) => r.id,
                        None => {
                            // Seen first here: register it so hazards and captures know it.
                            let step = st.last_begun;
                            st.registry.add_buffer(
                                b.buffer,
                                "unregistered",
                                MemoryKind::Other,
                                step,
                                false,
                            )
                        }
                    };
                    let size = b
                        .size
                        .map(|s| s.get())
                        .unwrap_or(b.buffer.size().saturating_sub(b.offset));
                    entries.push(BoundBuffer {
                        binding: e.binding,
                        buffer,
                        offset: b.offset,
                        size,
                    });
                }
                _ => other += 1,
            }
        }
        st.registry.add_bind_group(BindGroupRecord {
            raw: raw.clone(),
            entries,
            other_bindings: other,
        });
    }
}
