//! Creating buffers, pipelines and bind groups on a [`Gpu`], and moving bytes in and out
//! of buffers: every creation and transfer goes through here and is counted.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::device::{AtomicCounters, Gpu};
use crate::error::GpuError;
use crate::resources::{
    BindGroup, BufferId, CachedModule, GpuBuffer, ModuleKey, Pipeline, PipelineInner, PipelineKey,
    ShaderSource,
};

/// Buffer sizes are rounded up to 4 bytes: copies and `write_buffer` need that alignment.
fn padded(size: u64) -> u64 {
    size.div_ceil(4).max(1) * 4
}

impl Gpu {
    /// Runs `f` inside validation and out-of-memory error scopes.
    fn scoped<T>(
        &self,
        what: impl FnOnce() -> String,
        f: impl FnOnce() -> T,
    ) -> Result<T, GpuError> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        let validation_error = pollster::block_on(validation.pop());
        let oom_error = pollster::block_on(oom.pop());
        if oom_error.is_some() {
            return Err(GpuError::OutOfMemory { what: what() });
        }
        if let Some(e) = validation_error {
            return Err(GpuError::Validation {
                what: what(),
                message: e.to_string(),
            });
        }
        Ok(value)
    }

    /// Creates a zeroed storage buffer of `size` bytes (rounded up to 4), of memory kind
    /// "other" (see [`Gpu::create_buffer_as`]).
    pub fn create_buffer(&self, label: &str, size: u64) -> Result<GpuBuffer, GpuError> {
        self.create_buffer_as(gpuscope_trace::MemoryKind::Other, label, size)
    }

    /// Creates a zeroed storage buffer of `size` bytes (rounded up to 4) holding `kind`
    /// (weights, KV cache, activations...: the profile's memory view groups by it).
    pub fn create_buffer_as(
        &self,
        kind: gpuscope_trace::MemoryKind,
        label: &str,
        size: u64,
    ) -> Result<GpuBuffer, GpuError> {
        let _span = tracing::info_span!("create_buffer", label).entered();
        let size = padded(size);
        if size > self.limits.max_buffer_size {
            return Err(GpuError::BufferTooLarge {
                label: label.to_string(),
                size,
                limit: self.limits.max_buffer_size,
                limit_name: "max_buffer_size",
                hint: "split the tensor into row chunks or use an adapter with larger limits",
            });
        }
        let buffer = self.scoped(
            || format!("creating buffer \"{label}\" ({size} bytes)"),
            || {
                self.rec.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_SRC
                        | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            },
        )?;
        self.rec.set_memory_kind(&buffer, kind);
        Ok(GpuBuffer {
            id: BufferId(self.next_buffer_id.fetch_add(1, Ordering::Relaxed)),
            label: label.into(),
            offset: 0,
            size,
            buffer,
        })
    }

    /// Creates a storage buffer holding `contents` (zero-padded to 4 bytes).
    pub fn create_buffer_init(&self, label: &str, contents: &[u8]) -> Result<GpuBuffer, GpuError> {
        self.create_buffer_init_as(gpuscope_trace::MemoryKind::Other, label, contents)
    }

    /// [`Gpu::create_buffer_init`] for a buffer of memory kind `kind`.
    pub fn create_buffer_init_as(
        &self,
        kind: gpuscope_trace::MemoryKind,
        label: &str,
        contents: &[u8],
    ) -> Result<GpuBuffer, GpuError> {
        let buf = self.create_buffer_as(kind, label, contents.len() as u64)?;
        self.write_buffer(&buf, 0, contents);
        Ok(buf)
    }

    /// Sends the queued writes ([`Gpu::write_buffer`]) to the GPU now, in an empty
    /// submit, rather than with the next step's. wgpu holds each queued write in a host
    /// staging buffer until a submit: a model's upload flushes as it goes, so that its
    /// weights are not all in staging memory at once and the GPU copies them while the
    /// rest are packed (BENCHMARKS.md run 51).
    pub fn flush_writes(&self) {
        self.queue.submit(std::iter::empty());
    }

    /// Queues a write of `data` at `offset`; counted as bytes uploaded.
    pub fn write_buffer(&self, buf: &GpuBuffer, offset: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        if data.len().is_multiple_of(4) {
            self.rec
                .write_buffer(&buf.buffer, buf.offset + offset, data);
        } else {
            let mut padded_data = data.to_vec();
            padded_data.resize(padded(data.len() as u64) as usize, 0);
            self.rec
                .write_buffer(&buf.buffer, buf.offset + offset, &padded_data);
        }
    }

    /// Reads a whole buffer back (one submit, one sync). For tests and tools; decoding
    /// uses [`crate::StepRunner`]'s single per-token readback instead.
    pub fn read_buffer(&self, buf: &GpuBuffer) -> Result<Vec<u8>, GpuError> {
        let _span = tracing::info_span!("read_buffer").entered();
        let staging = self.staging_buffer(buf.size);
        let mut encoder = self.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&buf.buffer, buf.offset, &staging, 0, buf.size);
        self.queue.submit([encoder.finish()]);
        AtomicCounters::add(&self.counters.submits, 1);
        let bytes = self.map_read(&staging, buf.size, buf.label());
        self.staging.give(staging);
        bytes
    }

    /// Maps `staging` (MAP_READ), waits, copies its first `size` bytes out, unmaps.
    pub(crate) fn map_read(
        &self,
        staging: &wgpu::Buffer,
        size: u64,
        label: &str,
    ) -> Result<Vec<u8>, GpuError> {
        let slice = staging.slice(..size);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.wait_idle()?;
        match rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Err(GpuError::Readback {
                    label: label.to_string(),
                    message: e.to_string(),
                })
            }
            Err(_) => {
                return Err(GpuError::Readback {
                    label: label.to_string(),
                    message: "the map callback never ran".into(),
                })
            }
        }
        let bytes = slice
            .get_mapped_range()
            .map_err(|e| GpuError::Readback {
                label: label.to_string(),
                message: e.to_string(),
            })?
            .to_vec();
        staging.unmap();
        AtomicCounters::add(&self.counters.bytes_downloaded, size);
        Ok(bytes)
    }

    /// A compute pipeline for `entry` of `shader` with the given override constants,
    /// from the cache when built before.
    pub fn pipeline(
        &self,
        shader: &ShaderSource,
        entry: &str,
        constants: &[(&str, f64)],
    ) -> Result<Pipeline, GpuError> {
        self.build_pipeline(shader, entry, constants, false)
    }

    /// Like [`Self::pipeline`], with the shader module created without naga's runtime
    /// checks (`wgpu::ShaderRuntimeChecks::unchecked`: no bounds checks added, loops not
    /// bounded). Only for kernels whose every index is proven in range for the buffers
    /// the caller checked, and whose loops end; the caller documents the proof.
    pub fn pipeline_trusted(
        &self,
        shader: &ShaderSource,
        entry: &str,
        constants: &[(&str, f64)],
    ) -> Result<Pipeline, GpuError> {
        self.build_pipeline(shader, entry, constants, true)
    }

    fn build_pipeline(
        &self,
        shader: &ShaderSource,
        entry: &str,
        constants: &[(&str, f64)],
        trusted: bool,
    ) -> Result<Pipeline, GpuError> {
        let key = PipelineKey {
            shader: shader.name,
            trusted,
            entry: entry.to_string(),
            constants: constants
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_bits()))
                .collect(),
        };
        if let Some(p) = self.pipelines.pipelines.lock().unwrap().get(&key) {
            return Ok(p.clone());
        }
        let _span = tracing::info_span!("create_pipeline", shader = shader.name, entry).entered();
        let shader_error = |message: String| GpuError::Shader {
            shader: shader.name.to_string(),
            entry: entry.to_string(),
            message,
        };
        let module = {
            let mut modules = self.pipelines.modules.lock().unwrap();
            let module_key = ModuleKey {
                shader: shader.name,
                trusted,
            };
            match modules.get(&module_key) {
                // One name, one source: a replay with an edited kernel must not be
                // handed the module built from the original.
                Some(cached) if cached.wgsl != shader.wgsl => {
                    return Err(shader_error(format!(
                        "a different WGSL source was already built under the name `{}`",
                        shader.name
                    )))
                }
                Some(cached) => cached.module.clone(),
                None => {
                    let desc = wgpu::ShaderModuleDescriptor {
                        label: Some(shader.name),
                        source: wgpu::ShaderSource::Wgsl(shader.wgsl.into()),
                    };
                    let m = self
                        .scoped(String::new, || {
                            if trusted {
                                // SAFETY: `pipeline_trusted`'s callers prove their
                                // indexing in range and their loops finite.
                                unsafe {
                                    self.rec.create_shader_module_trusted(
                                        desc,
                                        wgpu::ShaderRuntimeChecks::unchecked(),
                                    )
                                }
                            } else {
                                self.rec.create_shader_module(desc)
                            }
                        })
                        .map_err(|e| shader_error(error_message(e)))?;
                    modules.insert(
                        module_key,
                        CachedModule {
                            module: m.clone(),
                            wgsl: shader.wgsl,
                        },
                    );
                    m
                }
            }
        };
        let raw = self
            .scoped(String::new, || {
                self.rec
                    .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(shader.name),
                        layout: None,
                        module: &module,
                        entry_point: Some(entry),
                        compilation_options: wgpu::PipelineCompilationOptions {
                            constants,
                            zero_initialize_workgroup_memory: false,
                        },
                        cache: None,
                    })
            })
            .map_err(|e| shader_error(error_message(e)))?;
        let mut name = format!("{}:{}", shader.name, entry);
        if !constants.is_empty() {
            let consts: Vec<String> = constants.iter().map(|(k, v)| format!("{k}={v}")).collect();
            name.push_str(&format!("{{{}}}", consts.join(",")));
        }
        let pipeline = Pipeline {
            inner: Arc::new(PipelineInner {
                name,
                shader: shader.name,
                wgsl: shader.wgsl,
                entry: entry.to_string(),
                constants: constants.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                raw,
            }),
        };
        self.pipelines
            .pipelines
            .lock()
            .unwrap()
            .insert(key, pipeline.clone());
        Ok(pipeline)
    }

    /// Number of distinct pipelines built so far.
    pub fn pipeline_count(&self) -> usize {
        self.pipelines.pipelines.lock().unwrap().len()
    }

    /// Binds `buffers[i]` (whole) to binding `i` of group 0 of `pipeline`.
    pub fn bind_group(
        &self,
        pipeline: &Pipeline,
        buffers: &[&GpuBuffer],
    ) -> Result<BindGroup, GpuError> {
        let _span = tracing::info_span!("create_bind_group").entered();
        let max_binding = self.limits.max_storage_buffer_binding_size;
        let align = self.limits.min_storage_buffer_offset_alignment as u64;
        for b in buffers {
            if b.offset % align != 0 {
                return Err(GpuError::Invalid(format!(
                    "view \"{}\" starts at byte {}, not a multiple of this device's storage offset alignment ({align})",
                    b.label(),
                    b.offset
                )));
            }
            if b.size > max_binding {
                return Err(GpuError::BufferTooLarge {
                    label: b.label().to_string(),
                    size: b.size,
                    limit: max_binding,
                    limit_name: "max_storage_buffer_binding_size",
                    hint: "bind it in row chunks or use an adapter with larger limits",
                });
            }
        }
        let layout = pipeline.raw().get_bind_group_layout(0);
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &b.buffer,
                    offset: b.offset,
                    size: std::num::NonZeroU64::new(b.size),
                }),
            })
            .collect();
        let raw = self.scoped(
            || format!("binding {} buffers to {}", buffers.len(), pipeline.name()),
            || {
                self.rec.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(pipeline.name()),
                    layout: &layout,
                    entries: &entries,
                })
            },
        )?;
        Ok(BindGroup {
            raw,
            buffers: buffers.iter().map(|b| b.id()).collect(),
            bindings: buffers.iter().map(|b| (*b).clone()).collect(),
        })
    }
}

fn error_message(e: GpuError) -> String {
    match e {
        GpuError::Validation { message, .. } => message,
        other => other.to_string(),
    }
}
