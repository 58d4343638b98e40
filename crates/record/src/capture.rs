//! Captures: every command a program recorded, written in gpuscope's capture format
//! (`gpuscope_trace::capture`), so `gpuscope inspect` and `gpuscope replay` (whole,
//! per command, with a substituted kernel) read a program's capture like gpuscope's own.
//!
//! Usage: [`Recorder::begin_capture`] (with data: every readable buffer of the program
//! is read back now, outside any step), the steps run as usual, then
//! [`Recorder::end_capture`] hands a [`Capture`]; optionally
//! [`Capture::capture_outputs`] (the chosen steps run again from the captured contents,
//! dispatch by dispatch, with a readback after each — an untimed second run: the kernels
//! are deterministic, so the outputs are the timed run's); then [`Capture::write`].
//!
//! What is recorded per step: its graph (passes and dispatches, deduplicated: a loop
//! that encodes the same work every step stores one graph), its uploads
//! ([`Recorder::write_buffer`]), its readbacks ([`Recorder::copy_buffer_to_buffer`] into
//! a mappable buffer) and its measurements. Captures hold bind group 0 of each dispatch
//! and buffer bindings only; work outside that is refused by `end_capture` with what it
//! was, rather than written as a capture that would replay differently.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::Path;

use gpuscope_trace::capture::{
    Access, BindGroupDesc, BindingDesc, BindingOutput, BlobSlice, BufferContents, BufferDesc,
    BufferRange, CaptureWriter, CapturedData, Commands, ConstantSet, DispatchDesc,
    DispatchMeasurement, DispatchOutputs, GraphDesc, LayoutDesc, LayoutEntry, Manifest, OnExisting,
    PassDesc, PipelineDesc, ShaderDesc, StepDesc, StepMeasurement, StepOutputs, Stream, Upload,
    CAPTURE_FORMAT,
};
use gpuscope_trace::{TimingInfo, WorkloadDesc};

use crate::error::RecordError;
use crate::recorder::{Recorder, State};
use crate::step::DoneStep;
use crate::walk::{read_back, walk, StepOutputsBytes, WalkDispatch};

/// What to capture.
#[derive(Debug, Clone, Default)]
pub struct CaptureOptions {
    /// The capture's name (prefix of its candle-style views).
    pub name: String,
    /// Record every buffer's contents at `begin_capture` (needed to replay outputs and
    /// to capture dispatch outputs).
    pub with_data: bool,
    /// [`crate::Recorder::finish_into`] also records the outputs of every dispatch of
    /// this many last steps (a replay then compares its outputs with them).
    pub outputs_of_last_steps: u32,
}

/// One captured dispatch in registry terms (remapped to capture indices at the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cmd {
    pipeline: u32,
    group0: u32,
    other_groups: bool,
    workgroups: [u32; 3],
}

/// A capture in progress.
pub(crate) struct CaptureState {
    options: CaptureOptions,
    first_step: u32,
    initial: Option<BTreeMap<u64, Vec<u8>>>,
    /// Distinct graphs (with registry indices) and each step's graph.
    graphs: Vec<(
        Vec<(String, Option<u32>, Vec<(Cmd, String, String, Option<u32>)>)>,
        GraphDesc,
    )>,
    steps: Vec<StepDesc>,
    step_commands: Vec<Vec<Cmd>>,
    uploads_blob: Vec<u8>,
    readbacks: Vec<BufferRange>,
    problems: Vec<String>,
}

const UPLOADS_BLOB: &str = "blobs/uploads.bin";

impl Recorder {
    /// Starts capturing the steps that begin from now on (recorded ones only). With
    /// data, reads every readable buffer of the program back first.
    pub fn begin_capture(&self, options: CaptureOptions) -> Result<(), RecordError> {
        let readable: Vec<(u64, wgpu::Buffer)> = {
            let st = self.state();
            if st.capturing.is_some() {
                return Err(RecordError::Capture(
                    "a capture is already being recorded".into(),
                ));
            }
            if st.open {
                return Err(RecordError::Capture(
                    "begin_capture while a step is open: call it between steps".into(),
                ));
            }
            st.registry
                .buffers
                .iter()
                .filter(|b| !b.own && b.raw.usage().contains(wgpu::BufferUsages::COPY_SRC))
                .filter(|b| {
                    !b.raw
                        .usage()
                        .intersects(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::MAP_WRITE)
                })
                .map(|b| (b.id, b.raw.clone()))
                .collect()
        };
        let initial = if options.with_data {
            let mut m = BTreeMap::new();
            for (id, b) in readable {
                m.insert(
                    id,
                    read_back(&self.shared.device, &self.shared.queue, &b, 0, b.size())?,
                );
            }
            Some(m)
        } else {
            None
        };
        let mut st = self.state();
        let first_step = st.next_step;
        st.capturing = Some(CaptureState {
            options,
            first_step,
            initial,
            graphs: Vec::new(),
            steps: Vec::new(),
            step_commands: Vec::new(),
            uploads_blob: Vec::new(),
            readbacks: Vec::new(),
            problems: Vec::new(),
        });
        Ok(())
    }

    /// Stops capturing (after waiting for the captured steps' measurements) and hands
    /// the capture over, described with `workload`.
    pub fn end_capture(&self, workload: WorkloadDesc) -> Result<Capture, RecordError> {
        let mut st = self.state();
        if st.open {
            return Err(RecordError::Capture(
                "end_capture while a step is open: end the step first".into(),
            ));
        }
        self.finalize(&mut st, Some(u32::MAX))?;
        let cap = st
            .capturing
            .take()
            .ok_or_else(|| RecordError::Capture("end_capture without begin_capture".into()))?;
        if let Some(p) = cap.problems.first() {
            return Err(RecordError::Capture(p.clone()));
        }
        assemble(self, &st, cap, workload)
    }
}

/// Called when a step closes: a captured step's graph, uploads and measurements.
pub(crate) fn on_close(st: &mut State, done: &DoneStep) {
    let Some(cap) = st.capturing.as_mut() else {
        return;
    };
    let rec = &done.rec;
    if !rec.recorded || rec.id < cap.first_step {
        return;
    }
    let mut passes = Vec::new();
    let mut cmds = Vec::new();
    for p in &rec.passes {
        let mut ds = Vec::new();
        for d in
            &rec.dispatches[p.first_dispatch as usize..(p.first_dispatch + p.dispatches) as usize]
        {
            let cmd = Cmd {
                pipeline: d.pipeline,
                group0: d.groups[0],
                other_groups: d.groups[1..].iter().any(|&g| g != u32::MAX),
                workgroups: d.workgroups,
            };
            if cmd.other_groups && cap.problems.is_empty() {
                cap.problems.push(format!(
                    "dispatch `{}` sets a bind group other than 0: captures hold bind group 0 only",
                    st.names.get(d.label)
                ));
            }
            if d.indirect && cap.problems.is_empty() {
                cap.problems.push(format!(
                    "dispatch `{}` is indirect: captures hold direct dispatches only",
                    st.names.get(d.label)
                ));
            }
            cmds.push(cmd);
            ds.push((
                cmd,
                st.names.get(d.op).to_string(),
                st.names.get(d.label).to_string(),
                d.layer,
            ));
        }
        passes.push((st.names.get(p.name).to_string(), p.layer, ds));
    }
    let graph = match cap.graphs.iter().position(|(g, _)| *g == passes) {
        Some(i) => i,
        None => {
            cap.graphs.push((passes, GraphDesc::default()));
            cap.graphs.len() - 1
        }
    };
    let mut uploads = Vec::new();
    for u in &rec.uploads {
        uploads.push(Upload {
            buffer: u.buffer,
            offset: u.offset,
            data: BlobSlice {
                blob: UPLOADS_BLOB.into(),
                start: cap.uploads_blob.len() as u64,
                len: u.data.len() as u64,
            },
        });
        cap.uploads_blob.extend_from_slice(&u.data);
    }
    if cap.readbacks.is_empty() {
        cap.readbacks = rec
            .readbacks
            .iter()
            .map(|&(buffer, offset, size)| BufferRange {
                buffer,
                offset,
                size,
            })
            .collect();
    }
    let (position, token_id) = rec.token.unwrap_or((cap.steps.len() as u32, 0));
    cap.steps.push(StepDesc {
        index: cap.steps.len() as u32,
        position,
        token_id,
        graph,
        uploads,
        measured: Some(StepMeasurement {
            wall_ns: done.wall_ns,
            gpu_busy_ns: done.gpu_busy_ns,
            counters: rec.counters,
            dispatches: rec
                .dispatches
                .iter()
                .zip(&done.dispatch_times)
                .map(|(d, t)| DispatchMeasurement {
                    gpu: t.gpu,
                    issue: t.issue,
                    cpu_encode_ns: d.cpu_encode_ns,
                    bytes: d.cost.bytes,
                    flops: d.cost.flops,
                })
                .collect(),
        }),
    });
    cap.step_commands.push(cmds);
}

/// A finished capture, ready to be written (and to have outputs recorded).
pub struct Capture {
    rec: Recorder,
    manifest: Manifest,
    commands: Commands,
    stream: Stream,
    sources: Vec<String>,
    uploads_blob: Vec<u8>,
    initial: Option<BTreeMap<u64, Vec<u8>>>,
    outputs: Vec<(usize, StepOutputsBytes)>,
    /// Each step's dispatches in registry terms, for running steps again.
    step_commands: Vec<Vec<Cmd>>,
}

fn assemble(
    rec: &Recorder,
    st: &State,
    cap: CaptureState,
    workload: WorkloadDesc,
) -> Result<Capture, RecordError> {
    let reg = &st.registry;
    let mut commands = Commands::default();
    let mut sources = Vec::new();
    let mut shader_index: HashMap<usize, usize> = HashMap::new();
    let mut pipeline_index: HashMap<u32, usize> = HashMap::new();
    let mut group_index: HashMap<(usize, Vec<(u32, u64, u64, u64)>), usize> = HashMap::new();
    let mut used_buffers: BTreeMap<u64, ()> = BTreeMap::new();
    let mut pipeline_of = |commands: &mut Commands,
                           sources: &mut Vec<String>,
                           p: u32|
     -> Result<usize, RecordError> {
        if let Some(&i) = pipeline_index.get(&p) {
            return Ok(i);
        }
        let pr = reg.pipelines.get(p as usize).ok_or_else(|| {
            RecordError::Capture("a dispatch used a pipeline the recorder never saw".into())
        })?;
        let s = pr.shader.ok_or_else(|| {
            RecordError::Capture(format!(
                "pipeline `{}` was registered without its shader module: captures need the WGSL",
                pr.name
            ))
        })?;
        let shader = &reg.shaders[s];
        let (Some(wgsl), Some(iface)) = (&shader.wgsl, &shader.interface) else {
            return Err(RecordError::Capture(format!(
                "shader `{}` has no WGSL source the recorder could read: captures need it",
                shader.name
            )));
        };
        let si = match shader_index.get(&s) {
            Some(&i) => i,
            None => {
                commands.shaders.push(ShaderDesc {
                    name: shader.name.clone(),
                    source: format!(
                        "shaders/{}.wgsl",
                        gpuscope_trace::capture::write::file_stem(&shader.name)
                    ),
                    entry_points: Vec::new(),
                });
                sources.push(wgsl.to_string());
                shader_index.insert(s, commands.shaders.len() - 1);
                commands.shaders.len() - 1
            }
        };
        if !commands.shaders[si].entry_points.contains(&pr.entry) {
            commands.shaders[si].entry_points.push(pr.entry.clone());
        }
        let consts = ConstantSet {
            values: pr.constants.clone(),
        };
        let constants = match commands
            .constant_sets
            .iter()
            .position(|k| same_consts(k, &consts))
        {
            Some(k) => k,
            None => {
                commands.constant_sets.push(consts);
                commands.constant_sets.len() - 1
            }
        };
        let layout = LayoutDesc {
            entries: iface
                .bindings
                .iter()
                .map(|(&binding, &access)| LayoutEntry { binding, access })
                .collect(),
        };
        let layout = match commands.layouts.iter().position(|l| *l == layout) {
            Some(l) => l,
            None => {
                commands.layouts.push(layout);
                commands.layouts.len() - 1
            }
        };
        commands.pipelines.push(PipelineDesc {
            name: pr.name.clone(),
            shader: si,
            entry: pr.entry.clone(),
            constants,
            layout,
        });
        pipeline_index.insert(p, commands.pipelines.len() - 1);
        Ok(commands.pipelines.len() - 1)
    };
    let mut graphs = Vec::new();
    for (passes, _) in &cap.graphs {
        let mut gd = GraphDesc::default();
        for (name, layer, ds) in passes {
            let mut pd = PassDesc {
                name: name.clone(),
                layer: *layer,
                dispatches: Vec::new(),
            };
            for (cmd, op, label, dlayer) in ds {
                let pi = pipeline_of(&mut commands, &mut sources, cmd.pipeline)?;
                let bg = reg.bind_groups.get(cmd.group0 as usize).ok_or_else(|| {
                    RecordError::Capture(format!(
                        "dispatch `{label}` has no bind group 0 the recorder saw"
                    ))
                })?;
                if bg.other_bindings > 0 {
                    return Err(RecordError::Capture(format!(
                        "dispatch `{label}` binds textures or samplers: captures hold buffer bindings only"
                    )));
                }
                // Bind groups are the same command when they bind the same ranges for the
                // same pipeline, whichever wgpu object carries them.
                let key: (usize, Vec<(u32, u64, u64, u64)>) = (
                    pi,
                    bg.entries
                        .iter()
                        .map(|e| (e.binding, e.buffer, e.offset, e.size))
                        .collect(),
                );
                let gi = match group_index.get(&key) {
                    Some(&i) => i,
                    None => {
                        commands.bind_groups.push(BindGroupDesc {
                            pipeline: pi,
                            entries: bg
                                .entries
                                .iter()
                                .map(|e| BindingDesc {
                                    binding: e.binding,
                                    buffer: e.buffer,
                                    offset: e.offset,
                                    size: e.size,
                                    label: reg
                                        .buffer_by_id(e.buffer)
                                        .map(|b| b.label.clone())
                                        .unwrap_or_default(),
                                })
                                .collect(),
                        });
                        group_index.insert(key, commands.bind_groups.len() - 1);
                        commands.bind_groups.len() - 1
                    }
                };
                let access = |binding: u32| {
                    reg.pipelines[cmd.pipeline as usize].access(&reg.shaders, 0, binding)
                };
                let mut reads = Vec::new();
                let mut writes = Vec::new();
                for e in &bg.entries {
                    used_buffers.insert(e.buffer, ());
                    reads.push(e.buffer);
                    if access(e.binding) == Access::ReadWrite {
                        writes.push(e.buffer);
                    }
                }
                reads.dedup();
                writes.dedup();
                pd.dispatches.push(DispatchDesc {
                    pipeline: pi,
                    bind_group: gi,
                    workgroups: cmd.workgroups,
                    op: op.clone(),
                    label: label.clone(),
                    layer: *dlayer,
                    reads,
                    writes,
                });
            }
            gd.passes.push(pd);
        }
        graphs.push(gd);
    }
    for s in &cap.steps {
        for u in &s.uploads {
            used_buffers.insert(u.buffer, ());
        }
    }
    for r in &cap.readbacks {
        used_buffers.insert(r.buffer, ());
    }
    commands.buffers = used_buffers
        .keys()
        .filter_map(|&id| reg.buffer_by_id(id))
        .map(|b| BufferDesc {
            id: b.id,
            label: b.label.clone(),
            size: b.raw.size(),
            usage: b
                .raw
                .usage()
                .iter_names()
                .map(|(n, _)| n.to_string())
                .collect(),
        })
        .collect();
    if let Some(initial) = &cap.initial {
        if let Some(b) = commands
            .buffers
            .iter()
            .find(|b| !initial.contains_key(&b.id))
        {
            return Err(RecordError::Capture(format!(
                "buffer `{}` could not be read back for the capture's data (it needs COPY_SRC usage, \
                 and must exist at begin_capture)",
                b.label
            )));
        }
    }
    let initial = cap.initial.map(|mut m| {
        m.retain(|id, _| used_buffers.contains_key(id));
        m
    });
    let manifest = Manifest {
        format: CAPTURE_FORMAT,
        tool: format!("gpuscope-record {}", env!("CARGO_PKG_VERSION")),
        name: cap.options.name.clone(),
        adapter: rec.adapter_desc(),
        limits: limits(&rec.shared.limits),
        timing: TimingInfo {
            mode: st.timing.mode,
            reason: st.timing.reason.clone(),
            timestamp_period_ns: rec.shared.period_ns,
            sampling: st.timing.sampling.clone(),
        },
        workload,
        files: Vec::new(),
        incomplete: None,
    };
    Ok(Capture {
        rec: rec.clone(),
        manifest,
        commands,
        stream: Stream {
            graphs,
            readbacks: cap.readbacks,
            steps: cap.steps,
        },
        sources,
        uploads_blob: cap.uploads_blob,
        initial,
        outputs: Vec::new(),
        step_commands: cap.step_commands,
    })
}

impl Capture {
    /// Steps captured.
    pub fn steps(&self) -> usize {
        self.stream.steps.len()
    }

    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// Marks the capture as holding only the steps completed before the run was stopped
    /// (`why`: an interrupt, a GPU fault); `inspect` and `replay` show it.
    pub fn mark_incomplete(&mut self, why: impl Into<String>) {
        self.manifest.incomplete = Some(why.into());
    }

    /// Records the outputs of every dispatch of steps `range` (indices into the captured
    /// steps) by running steps `0..range.end` again from the captured contents, the
    /// chosen ones dispatch by dispatch. Needs a capture with data. Leaves the buffers
    /// holding that run's results.
    pub fn capture_outputs(&mut self, range: Range<usize>) -> Result<(), RecordError> {
        let Some(initial) = &self.initial else {
            return Err(RecordError::Capture(
                "dispatch outputs need the buffer contents: capture with data".into(),
            ));
        };
        if range.end > self.steps() || range.is_empty() {
            return Err(RecordError::Capture(format!(
                "outputs of steps {}..{} asked, {} steps were captured",
                range.start,
                range.end,
                self.steps()
            )));
        }
        let st = self.rec.state();
        let reg = &st.registry;
        let buffer = |id: u64| reg.buffer_by_id(id).map(|b| &b.raw);
        let contents: Vec<(&wgpu::Buffer, &[u8])> = initial
            .iter()
            .filter_map(|(id, bytes)| buffer(*id).map(|b| (b, bytes.as_slice())))
            .collect();
        let uploads: Vec<Vec<(&wgpu::Buffer, u64, &[u8])>> = self.stream.steps[..range.end]
            .iter()
            .map(|s| {
                s.uploads
                    .iter()
                    .filter_map(|u| {
                        let at = u.data.start as usize..(u.data.start + u.data.len) as usize;
                        buffer(u.buffer).map(|b| (b, u.offset, &self.uploads_blob[at]))
                    })
                    .collect()
            })
            .collect();
        let steps: Vec<Vec<WalkDispatch>> = self.step_commands[..range.end]
            .iter()
            .map(|cmds| {
                cmds.iter()
                    .map(|c| {
                        let p = &reg.pipelines[c.pipeline as usize];
                        let bg = &reg.bind_groups[c.group0 as usize];
                        WalkDispatch {
                            pipeline: &p.raw,
                            bind_groups: vec![(0, &bg.raw)],
                            workgroups: c.workgroups,
                            written: bg
                                .entries
                                .iter()
                                .filter(|e| {
                                    p.access(&reg.shaders, 0, e.binding) == Access::ReadWrite
                                })
                                .filter_map(|e| {
                                    buffer(e.buffer).map(|b| (e.binding, b, e.offset, e.size))
                                })
                                .collect(),
                        }
                    })
                    .collect()
            })
            .collect();
        let outputs = walk(
            &self.rec.shared.device,
            &self.rec.shared.queue,
            &steps,
            &contents,
            &uploads,
            range,
        )?;
        drop(st);
        self.outputs = outputs;
        Ok(())
    }

    /// Writes the capture directory, atomically (see [`gpuscope_trace::capture::target`]);
    /// an existing capture at `dir` is replaced only with [`OnExisting::Replace`].
    pub fn write(&self, dir: &Path, on_existing: OnExisting) -> Result<(), RecordError> {
        let err = |e: gpuscope_trace::capture::CaptureError| RecordError::Capture(e.to_string());
        let mut w = CaptureWriter::create(dir, on_existing).map_err(err)?;
        for (s, src) in self.commands.shaders.iter().zip(&self.sources) {
            w.write_file(&s.source, "shader", src.as_bytes())
                .map_err(err)?;
        }
        w.write_file(UPLOADS_BLOB, "blob", &self.uploads_blob)
            .map_err(err)?;
        let data = match &self.initial {
            None => None,
            Some(initial) => {
                let mut d = CapturedData::default();
                for (id, bytes) in initial {
                    let blob = format!("blobs/buffer-{id}.bin");
                    w.write_file(&blob, "blob", bytes).map_err(err)?;
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
                    w.write_file(&blob, "blob", &bytes).map_err(err)?;
                    d.outputs.push(StepOutputs {
                        step: *step,
                        dispatches: outs,
                    });
                }
                Some(d)
            }
        };
        w.finish(
            self.manifest.clone(),
            &self.commands,
            &self.stream,
            data.as_ref(),
        )
        .map_err(err)
    }
}

fn same_consts(a: &ConstantSet, b: &ConstantSet) -> bool {
    a.values.len() == b.values.len()
        && a.values
            .iter()
            .zip(&b.values)
            .all(|(x, y)| x.0 == y.0 && x.1.to_bits() == y.1.to_bits())
}

/// The device limits a replay checks against.
pub fn limits(l: &wgpu::Limits) -> BTreeMap<String, u64> {
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
