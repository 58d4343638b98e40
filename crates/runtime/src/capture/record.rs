//! Recording a capture of a run: the graph once, then each step's uploads and
//! measurements, and optionally the data.
//!
//! Usage (what `gpuscope profile --capture` does):
//!
//! 1. [`CaptureRecorder::new`] after the graph is built (and after warm-up steps, which
//!    are not recorded);
//! 2. [`CaptureRecorder::begin`] just before the first recorded step: with data, every
//!    bound buffer is read back now (its contents before the recorded steps, one sync
//!    per buffer, outside the timed run), and the step tap starts;
//! 3. the timed steps run as usual;
//! 4. [`CaptureRecorder::end`] with each step's record, in order;
//! 5. optionally [`CaptureRecorder::capture_outputs`]: the chosen steps run again from
//!    the captured contents, dispatch by dispatch with a readback after each — a second,
//!    untimed run (the kernels are deterministic, so the outputs are the timed run's);
//!    it overwrites the buffers' contents;
//! 6. [`CaptureRecorder::write`].

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::Path;

use gpuscope_trace::capture::{
    Access, BindGroupDesc, BindingDesc, BindingOutput, BlobSlice, BufferContents, BufferDesc,
    BufferRange, CaptureWriter, CapturedData, Commands, ConstantSet, DispatchDesc,
    DispatchMeasurement, DispatchOutputs, GraphDesc, LayoutDesc, LayoutEntry, Manifest, PassDesc,
    PipelineDesc, ShaderDesc, StepDesc, StepMeasurement, StepOutputs, Stream, Upload,
    CAPTURE_FORMAT,
};
use gpuscope_trace::{TimingInfo, WorkloadDesc};

use crate::capture::error::RecordError;
use crate::capture::reflect::reflect;
use crate::capture::tap::TappedStep;
use crate::capture::walk::{walk, StepOutputsBytes};
use crate::device::Gpu;
use crate::dispatch::Graph;
use crate::resources::GpuBuffer;
use crate::step::StepOutput;

/// What the caller knows about one recorded step.
pub struct StepRecord<'a> {
    pub index: u32,
    pub position: u32,
    pub token_id: u32,
    pub output: &'a StepOutput,
}

pub struct CaptureRecorder {
    name: String,
    manifest: Manifest,
    commands: Commands,
    graph_desc: GraphDesc,
    /// The recorded graph (for the output run).
    graph: Graph,
    /// Whole buffers by id (and whether a whole-buffer binding named them).
    buffers: BTreeMap<u64, (GpuBuffer, bool)>,
    /// WGSL per shader, in `commands.shaders` order.
    sources: Vec<&'static str>,
    /// Per dispatch of the graph, the read-write binding indices.
    written: Vec<Vec<u32>>,
    steps: Vec<StepDesc>,
    readbacks: Vec<BufferRange>,
    uploads_blob: Vec<u8>,
    tapped: Vec<TappedStep>,
    initial: Option<BTreeMap<u64, Vec<u8>>>,
    outputs: Vec<(usize, StepOutputsBytes)>,
}

fn whole(b: &GpuBuffer) -> GpuBuffer {
    b.whole()
}

/// A bind group by content: pipeline index and (buffer id, offset, size) per binding.
type GroupKey = (usize, Vec<(u64, u64, u64)>);

const UPLOADS_BLOB: &str = "blobs/uploads.bin";

impl CaptureRecorder {
    /// Records `graph`'s resources: shaders (reflected with naga for their bindings'
    /// access), constant sets, layouts, pipelines, buffers, bind groups.
    pub fn new(
        gpu: &Gpu,
        graph: &Graph,
        name: &str,
        workload: WorkloadDesc,
    ) -> Result<CaptureRecorder, RecordError> {
        let mut c = Commands::default();
        let mut shader_index: HashMap<&str, usize> = HashMap::new();
        let mut interfaces = Vec::new();
        let mut pipeline_index: HashMap<String, usize> = HashMap::new();
        let mut group_index: HashMap<GroupKey, usize> = HashMap::new();
        let mut buffers: BTreeMap<u64, (GpuBuffer, bool)> = BTreeMap::new();
        let mut written = Vec::new();
        let mut sources = Vec::new();
        let mut passes = Vec::new();
        for section in &graph.sections {
            let mut dispatches = Vec::new();
            for d in &section.dispatches {
                let p = &d.pipeline;
                let s = match shader_index.get(p.shader()) {
                    Some(&s) => s,
                    None => {
                        let iface = reflect(p.wgsl()).map_err(|message| RecordError::Reflect {
                            shader: p.shader().into(),
                            message,
                        })?;
                        interfaces.push(iface);
                        sources.push(p.wgsl());
                        c.shaders.push(ShaderDesc {
                            name: p.shader().to_string(),
                            source: format!(
                                "shaders/{}.wgsl",
                                gpuscope_trace::capture::write::file_stem(p.shader())
                            ),
                            entry_points: Vec::new(),
                        });
                        shader_index.insert(p.shader(), c.shaders.len() - 1);
                        c.shaders.len() - 1
                    }
                };
                if !c.shaders[s].entry_points.iter().any(|e| e == p.entry()) {
                    c.shaders[s].entry_points.push(p.entry().to_string());
                }
                let bindings = d.bind_group.bindings();
                let pi = match pipeline_index.get(p.name()) {
                    Some(&i) => i,
                    None => {
                        let consts = ConstantSet {
                            values: p.constants().to_vec(),
                        };
                        let constants =
                            match c.constant_sets.iter().position(|k| same_consts(k, &consts)) {
                                Some(k) => k,
                                None => {
                                    c.constant_sets.push(consts);
                                    c.constant_sets.len() - 1
                                }
                            };
                        let layout = LayoutDesc {
                            entries: (0..bindings.len() as u32)
                                .map(|b| LayoutEntry {
                                    binding: b,
                                    // Undeclared cannot happen for a bind group wgpu accepted;
                                    // read_write is the conservative answer.
                                    access: interfaces[s]
                                        .bindings
                                        .get(&b)
                                        .copied()
                                        .unwrap_or(Access::ReadWrite),
                                })
                                .collect(),
                        };
                        let layout = match c.layouts.iter().position(|l| *l == layout) {
                            Some(l) => l,
                            None => {
                                c.layouts.push(layout);
                                c.layouts.len() - 1
                            }
                        };
                        c.pipelines.push(PipelineDesc {
                            name: p.name().to_string(),
                            shader: s,
                            entry: p.entry().to_string(),
                            constants,
                            layout,
                        });
                        pipeline_index.insert(p.name().to_string(), c.pipelines.len() - 1);
                        c.pipelines.len() - 1
                    }
                };
                let key: Vec<(u64, u64, u64)> = bindings
                    .iter()
                    .map(|b| (b.id().0, b.offset(), b.size()))
                    .collect();
                let gi = *group_index.entry((pi, key)).or_insert_with(|| {
                    c.bind_groups.push(BindGroupDesc {
                        pipeline: pi,
                        entries: bindings
                            .iter()
                            .enumerate()
                            .map(|(i, b)| BindingDesc {
                                binding: i as u32,
                                buffer: b.id().0,
                                offset: b.offset(),
                                size: b.size(),
                                label: b.label().to_string(),
                            })
                            .collect(),
                    });
                    c.bind_groups.len() - 1
                });
                for b in bindings {
                    note_buffer(&mut buffers, b);
                }
                let layout = &c.layouts[c.pipelines[pi].layout];
                written.push(
                    layout
                        .entries
                        .iter()
                        .filter(|e| e.access == Access::ReadWrite)
                        .map(|e| e.binding)
                        .collect(),
                );
                dispatches.push(DispatchDesc {
                    pipeline: pi,
                    bind_group: gi,
                    workgroups: d.workgroups,
                    op: d.op.clone(),
                    label: d.label.clone(),
                    layer: d.layer,
                    reads: d.reads.iter().map(|b| b.0).collect(),
                    writes: d.writes.iter().map(|b| b.0).collect(),
                });
            }
            passes.push(PassDesc {
                name: section.name.clone(),
                layer: section.layer,
                dispatches,
            });
        }
        let mut rec = CaptureRecorder {
            name: name.to_string(),
            manifest: Manifest {
                format: CAPTURE_FORMAT,
                tool: format!("gpuscope {}", env!("CARGO_PKG_VERSION")),
                name: name.to_string(),
                adapter: gpu.adapter_desc(),
                limits: limits(gpu.limits()),
                timing: TimingInfo {
                    mode: gpu.timing(),
                    reason: gpu.timing_reason().to_string(),
                    timestamp_period_ns: gpu.queue().get_timestamp_period() as f64,
                },
                workload,
                files: Vec::new(),
            },
            commands: c,
            graph_desc: GraphDesc { passes },
            graph: graph.clone(),
            buffers,
            sources,
            written,
            steps: Vec::new(),
            readbacks: Vec::new(),
            uploads_blob: Vec::new(),
            tapped: Vec::new(),
            initial: None,
            outputs: Vec::new(),
        };
        rec.sync_buffer_descs();
        Ok(rec)
    }

    fn sync_buffer_descs(&mut self) {
        self.commands.buffers = self
            .buffers
            .values()
            .map(|(b, _)| BufferDesc {
                id: b.id().0,
                label: b.label().to_string(),
                size: b.size(),
                usage: b
                    .raw()
                    .usage()
                    .iter_names()
                    .map(|(n, _)| n.to_string())
                    .collect(),
            })
            .collect();
    }

    /// Just before the first recorded step: reads every bound buffer back when
    /// `with_data`, then starts the step tap.
    pub fn begin(&mut self, gpu: &Gpu, with_data: bool) -> Result<(), RecordError> {
        if with_data {
            let mut initial = BTreeMap::new();
            for (id, (b, _)) in &self.buffers {
                initial.insert(*id, gpu.read_buffer(b)?);
            }
            self.initial = Some(initial);
        }
        gpu.start_step_tap();
        Ok(())
    }

    /// After the last recorded step: stops the tap and records each step (in the order
    /// they were submitted) with its uploads and measurements.
    pub fn end(&mut self, gpu: &Gpu, steps: &[StepRecord]) -> Result<(), RecordError> {
        let tapped = gpu.stop_step_tap();
        if tapped.len() != steps.len() {
            return Err(RecordError::Invalid(format!(
                "the capture saw {} submitted steps but {} were recorded; every step between begin and end must be recorded",
                tapped.len(),
                steps.len()
            )));
        }
        for (t, s) in tapped.iter().zip(steps) {
            let mut uploads = Vec::new();
            for (buf, offset, data) in &t.uploads {
                note_buffer(&mut self.buffers, buf);
                uploads.push(Upload {
                    buffer: buf.id().0,
                    offset: *offset,
                    data: BlobSlice {
                        blob: UPLOADS_BLOB.into(),
                        start: self.uploads_blob.len() as u64,
                        len: data.len() as u64,
                    },
                });
                self.uploads_blob.extend_from_slice(data);
            }
            if self.readbacks.is_empty() {
                for b in &t.readbacks {
                    note_buffer(&mut self.buffers, b);
                    self.readbacks.push(BufferRange {
                        buffer: b.id().0,
                        offset: b.offset(),
                        size: b.size(),
                    });
                }
            }
            let o = s.output;
            self.steps.push(StepDesc {
                index: s.index,
                position: s.position,
                token_id: s.token_id,
                graph: 0,
                uploads,
                measured: Some(StepMeasurement {
                    wall_ns: o.wall_ns,
                    gpu_busy_ns: o.gpu_busy_ns,
                    counters: o.counters,
                    dispatches: o
                        .dispatches
                        .iter()
                        .map(|d| DispatchMeasurement {
                            gpu: d.gpu,
                            issue: d.issue,
                            cpu_encode_ns: d.cpu_encode_ns,
                            bytes: d.cost.bytes,
                            flops: d.cost.flops,
                        })
                        .collect(),
                }),
            });
        }
        self.tapped.extend(tapped);
        self.sync_buffer_descs();
        Ok(())
    }

    /// Records the outputs of every dispatch of steps `range` (indices into the recorded
    /// steps) by running steps `0..range.end` again from the captured contents, the
    /// chosen ones dispatch by dispatch. Needs [`CaptureRecorder::begin`] with data.
    /// Leaves the buffers holding that run's results.
    pub fn capture_outputs(&mut self, gpu: &Gpu, range: Range<usize>) -> Result<(), RecordError> {
        let Some(initial) = &self.initial else {
            return Err(RecordError::Invalid(
                "dispatch outputs need the buffer contents: capture with data".into(),
            ));
        };
        if range.end > self.tapped.len() || range.is_empty() {
            return Err(RecordError::Invalid(format!(
                "--capture-tokens {}..{}: {} tokens were recorded",
                range.start,
                range.end,
                self.tapped.len()
            )));
        }
        let contents: Vec<(GpuBuffer, &[u8])> = initial
            .iter()
            .map(|(id, bytes)| (self.buffers[id].0.clone(), bytes.as_slice()))
            .collect();
        let uploads: Vec<Vec<(GpuBuffer, u64, &[u8])>> = self.tapped[..range.end]
            .iter()
            .map(|t| {
                t.uploads
                    .iter()
                    .map(|(b, off, d)| (whole(b), *off, d.as_slice()))
                    .collect()
            })
            .collect();
        let graphs = vec![&self.graph; range.end];
        let written = vec![self.written.as_slice(); range.end];
        self.outputs = walk(gpu, &graphs, &written, &contents, &uploads, range)?;
        Ok(())
    }

    /// Writes the capture directory.
    pub fn write(&self, dir: &Path) -> Result<(), RecordError> {
        let mut w = CaptureWriter::create(dir)?;
        for (s, src) in self.commands.shaders.iter().zip(&self.sources) {
            w.write_file(&s.source, "shader", src.as_bytes())?;
        }
        w.write_file(UPLOADS_BLOB, "blob", &self.uploads_blob)?;
        let data = match &self.initial {
            None => None,
            Some(initial) => {
                let mut d = CapturedData::default();
                for (id, bytes) in initial {
                    let blob = format!("blobs/buffer-{id}.bin");
                    w.write_file(&blob, "blob", bytes)?;
                    d.initial.push(BufferContents {
                        buffer: *id,
                        data: BlobSlice {
                            blob,
                            start: 0,
                            len: bytes.len() as u64,
                        },
                    });
                }
                for (step, dispatches) in &self.outputs {
                    let blob = format!("blobs/outputs-step-{step}.bin");
                    let mut bytes = Vec::new();
                    let mut outs = Vec::new();
                    for d in dispatches {
                        let mut list = Vec::new();
                        for (binding, data) in d {
                            list.push(BindingOutput {
                                binding: *binding,
                                data: BlobSlice {
                                    blob: blob.clone(),
                                    start: bytes.len() as u64,
                                    len: data.len() as u64,
                                },
                            });
                            bytes.extend_from_slice(data);
                        }
                        outs.push(DispatchOutputs { outputs: list });
                    }
                    w.write_file(&blob, "blob", &bytes)?;
                    d.outputs.push(StepOutputs {
                        step: *step,
                        dispatches: outs,
                    });
                }
                Some(d)
            }
        };
        let stream = Stream {
            graphs: vec![self.graph_desc.clone()],
            readbacks: self.readbacks.clone(),
            steps: self.steps.clone(),
        };
        w.finish(
            self.manifest.clone(),
            &self.commands,
            &stream,
            data.as_ref(),
        )?;
        Ok(())
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Steps recorded so far.
    pub fn steps(&self) -> usize {
        self.steps.len()
    }
}

/// Keeps one whole-buffer handle per id, named after a whole-buffer binding when there
/// is one (`qkv` rather than its view `q`).
fn note_buffer(buffers: &mut BTreeMap<u64, (GpuBuffer, bool)>, b: &GpuBuffer) {
    let id = b.id().0;
    let is_whole = b.offset() == 0 && b.size() == b.raw().size();
    match buffers.get(&id) {
        Some((_, true)) => {}
        Some((_, false)) if is_whole => {
            buffers.insert(id, (whole(b), true));
        }
        Some(_) => {}
        None => {
            buffers.insert(id, (whole(b), is_whole));
        }
    }
}

fn same_consts(a: &ConstantSet, b: &ConstantSet) -> bool {
    a.values.len() == b.values.len()
        && a.values
            .iter()
            .zip(&b.values)
            .all(|(x, y)| x.0 == y.0 && x.1.to_bits() == y.1.to_bits())
}

fn limits(l: &wgpu::Limits) -> BTreeMap<String, u64> {
    [
        ("max_buffer_size", l.max_buffer_size),
        (
            "max_storage_buffer_binding_size",
            l.max_storage_buffer_binding_size,
        ),
        (
            "min_storage_buffer_offset_alignment",
            l.min_storage_buffer_offset_alignment as u64,
        ),
        (
            "max_storage_buffers_per_shader_stage",
            l.max_storage_buffers_per_shader_stage as u64,
        ),
        (
            "max_compute_workgroup_storage_size",
            l.max_compute_workgroup_storage_size as u64,
        ),
        (
            "max_compute_invocations_per_workgroup",
            l.max_compute_invocations_per_workgroup as u64,
        ),
        (
            "max_compute_workgroup_size_x",
            l.max_compute_workgroup_size_x as u64,
        ),
        (
            "max_compute_workgroup_size_y",
            l.max_compute_workgroup_size_y as u64,
        ),
        (
            "max_compute_workgroup_size_z",
            l.max_compute_workgroup_size_z as u64,
        ),
        (
            "max_compute_workgroups_per_dimension",
            l.max_compute_workgroups_per_dimension as u64,
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}
