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

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use gpuscope_trace::capture::{
    Access, BindingOutput, BlobSlice, BufferContents, CaptureWriter, CapturedData, Commands,
    DispatchOutputs, Manifest, OnExisting, StepOutputs, Stream, CAPTURE_FORMAT,
};
use gpuscope_trace::{TimingInfo, WorkloadDesc};

use crate::error::RecorderError;
use crate::recorder::{Recorder, State};
use crate::walk::{read_back, walk, StepOutputsBytes, WalkDispatch};
use assemble::{assemble_commands, Assembled};
use state::{CaptureState, Cmd, UPLOADS_BLOB};

mod assemble;
pub(crate) mod state;

pub use state::CaptureOptions;

impl Recorder {
    /// Starts capturing the steps that begin from now on (recorded ones only). With
    /// data, reads every readable buffer of the program back first.
    pub fn begin_capture(&self, options: CaptureOptions) -> Result<(), RecorderError> {
        let readable: Vec<(u64, wgpu::Buffer)> = {
            let st = self.state();
            if st.capturing.is_some() {
                return Err(RecorderError::Capture(
                    "a capture is already being recorded".into(),
                ));
            }
            if st.open {
                return Err(RecorderError::Capture(
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
        st.capturing = Some(CaptureState::new(options, first_step, initial));
        Ok(())
    }

    /// Stops capturing (after waiting for the captured steps' measurements) and hands
    /// the capture over, described with `workload`.
    pub fn end_capture(&self, workload: WorkloadDesc) -> Result<Capture, RecorderError> {
        let mut st = self.state();
        if st.open {
            return Err(RecorderError::Capture(
                "end_capture while a step is open: end the step first".into(),
            ));
        }
        self.finalize(&mut st, Some(u32::MAX))?;
        let cap = st
            .capturing
            .take()
            .ok_or_else(|| RecorderError::Capture("end_capture without begin_capture".into()))?;
        if let Some(p) = cap.problems.first() {
            return Err(RecorderError::Capture(p.clone()));
        }
        assemble(self, &st, cap, workload)
    }
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

/// The capture of `cap`'s steps, described with the recorder's adapter and timing.
fn assemble(
    rec: &Recorder,
    st: &State,
    cap: CaptureState,
    workload: WorkloadDesc,
) -> Result<Capture, RecorderError> {
    let Assembled {
        commands,
        sources,
        graphs,
        used_buffers,
    } = assemble_commands(&st.registry, &cap)?;
    if let Some(initial) = &cap.initial {
        if let Some(b) = commands
            .buffers
            .iter()
            .find(|b| !initial.contains_key(&b.id))
        {
            return Err(RecorderError::Capture(format!(
                "buffer `{}` could not be read back for the capture's data (it needs COPY_SRC usage, \
                 and must exist at begin_capture)",
                b.label
            )));
        }
    }
    let initial = cap.initial.map(|mut m| {
        m.retain(|id, _| used_buffers.contains(id));
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
    pub fn capture_outputs(&mut self, range: Range<usize>) -> Result<(), RecorderError> {
        let Some(initial) = &self.initial else {
            return Err(RecorderError::Capture(
                "dispatch outputs need the buffer contents: capture with data".into(),
            ));
        };
        if range.end > self.steps() || range.is_empty() {
            return Err(RecorderError::Capture(format!(
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
    pub fn write(&self, dir: &Path, on_existing: OnExisting) -> Result<(), RecorderError> {
        let err = |e: gpuscope_trace::capture::CaptureError| RecorderError::Capture(e.to_string());
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
