//! Running one step (one decoded token) of a [`Graph`] through the recorder.
//!
//! The step runner is a program of the public instrumentation API
//! ([`gpuscope_record::Recorder`]), like any other: per step it opens a recorder step,
//! writes the caller's uploads, encodes one instrumented compute pass per section with
//! pass timing (one for the whole step otherwise, [`one_pass_per_step`]),
//! copies the caller's readbacks into a staging buffer, resolves the step's timestamps
//! into the same encoder, submits once (a prompt's runner: in growing chunks,
//! [`StepRunner::submit_in_chunks`]) and ends the step. [`StepRunner::finish`] waits
//! for the readback (one sync, counted in that step) and takes the step's measurements
//! from the recorder. Nothing is created per step.
//!
//! We do not use wgpu-profiler here: its scopes are strings resolved per frame, while we
//! need raw tick values tied to our own dispatch records to flag zero, negative and
//! out-of-order intervals rather than average them in (see `gpuscope_record::timing`).

use std::time::Instant;

use gpuscope_record::{DispatchInfo, StepId};
use gpuscope_trace::{Counters, DispatchEvent, PassEvent, TimingMode};

use crate::device::Gpu;
use crate::dispatch::Graph;
use crate::error::GpuError;
use crate::resources::GpuBuffer;

pub use gpuscope_record::{DispatchSample, PassSample};

/// The result of one step.
#[derive(Debug, Clone, Default)]
pub struct StepOutput {
    /// The bytes of each readback buffer, in the order given to [`StepRunner::new`].
    pub readbacks: Vec<Vec<u8>>,
    /// The time this step added to the run: from the later of its start and the
    /// previous step's readback to its own readback's arrival.
    pub wall_ns: u64,
    /// Sum of the valid pass spans; `None` with timing off, sampled, or no valid span.
    pub gpu_busy_ns: Option<u64>,
    /// The wall time by phase.
    pub cpu: gpuscope_trace::CpuTimes,
    pub counters: Counters,
    pub dispatches: Vec<DispatchSample>,
    pub passes: Vec<PassSample>,
}

/// Steps a runner can have in flight: while the GPU runs token N, the CPU encodes and
/// submits token N+1 (the argmax token never leaves the GPU, so N+1 does not wait for
/// N's readback). Two is enough to hide encoding behind the GPU.
pub const MAX_IN_FLIGHT: usize = 2;

/// Dispatches in the first command buffer of a step submitted in chunks
/// ([`StepRunner::submit_in_chunks`]); each later chunk holds at least twice the last.
const FIRST_CHUNK_DISPATCHES: usize = 16;

/// Whether a step is encoded as one compute pass rather than one per section: always but
/// with pass timing, which needs a pass per section for its per-layer spans. Each pass
/// costs CPU time to begin and end, which SmolLM2's decode on an H100 was bound by
/// (measured: BENCHMARKS.md, run 9). Dispatch spans are placed in layers by their
/// dispatch's layer.
pub fn one_pass_per_step(timing: TimingMode) -> bool {
    timing != TimingMode::Pass
}

/// Compute passes a step of `graph` is encoded in under `timing`.
pub fn passes_per_step(graph: &Graph, timing: TimingMode) -> usize {
    if one_pass_per_step(timing) {
        1
    } else {
        graph.sections.len()
    }
}

/// A submitted step whose readback has not been collected yet.
pub struct PendingStep {
    slot: usize,
    step: StepId,
    submission: wgpu::SubmissionIndex,
    mapped: std::sync::mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
}

impl PendingStep {
    /// The recorder step this is.
    pub fn step(&self) -> StepId {
        self.step
    }
}

struct Slot {
    staging: wgpu::Buffer,
    busy: bool,
}

/// Runs the same graph step after step, its staging buffers made once.
/// [`StepRunner::step`] runs one step to completion; [`StepRunner::submit`] and
/// [`StepRunner::finish`] let up to [`MAX_IN_FLIGHT`] steps overlap.
pub struct StepRunner {
    slots: Vec<Slot>,
    next_slot: usize,
    readbacks: Vec<(GpuBuffer, u64)>,
    staging_size: u64,
    /// Op, label and layer of every dispatch, interned once.
    infos: Vec<DispatchInfo>,
    passes_per_step: usize,
    /// Whether this runner's steps go into the recorder's profile.
    recorded: bool,
    /// The sections each command buffer of a step holds, in order (one chunk of every
    /// section unless [`StepRunner::submit_in_chunks`]); made once, not per step.
    chunks: Vec<std::ops::Range<usize>>,
    /// Where the staging buffers go back when the runner is dropped.
    pool: crate::pool::SharedPool,
    rec: gpuscope_record::Recorder,
}

impl Drop for StepRunner {
    fn drop(&mut self) {
        for slot in self.slots.drain(..) {
            // A slot still in flight may be mapped or pending: let it go with the runner.
            if !slot.busy {
                self.pool.give(slot.staging);
            }
        }
    }
}

impl StepRunner {
    /// Prepares to run `graph` with the device's timing mode, reading back `readbacks`
    /// (whole buffers) after every step.
    pub fn new(gpu: &Gpu, graph: &Graph, readbacks: &[&GpuBuffer]) -> Result<StepRunner, GpuError> {
        let rec = gpu.recorder();
        let infos = graph
            .dispatches()
            .map(|d| DispatchInfo {
                op: Some(rec.name(&d.op)),
                label: Some(rec.name(&d.label)),
                layer: d.layer,
                cost: d.cost,
            })
            .collect();
        let mut offset = 0u64;
        let mut placed = Vec::new();
        for b in readbacks {
            placed.push(((*b).clone(), offset));
            offset += b.size().div_ceil(8) * 8;
        }
        let staging_size = offset.max(8);
        let slots = (0..MAX_IN_FLIGHT)
            .map(|_| Slot {
                staging: gpu.staging_buffer(staging_size),
                busy: false,
            })
            .collect();
        // Room for a timestamp per dispatch and pass, plus the alignment of resolves.
        rec.reserve_timestamps((2 * graph.dispatch_count() + 2 * graph.sections.len() + 64) as u32);
        gpu.check_uncaptured("creating the step's readback buffers")?;
        Ok(StepRunner {
            slots,
            next_slot: 0,
            readbacks: placed,
            staging_size,
            infos,
            passes_per_step: graph.sections.len(),
            recorded: true,
            chunks: std::iter::once(0..graph.sections.len()).collect(),
            pool: gpu.staging.clone(),
            rec: rec.clone(),
        })
    }

    /// Like [`StepRunner::new`], after switching the device's timing mode (e.g. to `off`
    /// to measure what profiling costs). The device must have been opened with the
    /// features the mode needs.
    pub fn with_timing(
        gpu: &Gpu,
        graph: &Graph,
        readbacks: &[&GpuBuffer],
        timing: TimingMode,
    ) -> Result<StepRunner, GpuError> {
        if timing != gpu.timing() {
            gpu.set_timing(gpuscope_record::TimingRequest::Exactly(timing))?;
        }
        Self::new(gpu, graph, readbacks)
    }

    /// Whether this runner's steps go into the recorder's profile (warm-up and replays
    /// of outputs say no; their measurements still come back in [`StepOutput`]).
    pub fn set_recorded(&mut self, recorded: bool) {
        self.recorded = recorded;
    }

    /// Submits each step of `graph` (the runner's) in chunks of whole sections, the
    /// first of at least `FIRST_CHUNK_DISPATCHES` (16) dispatches and each next at least
    /// twice the last, instead of once: the GPU starts on the first layers while the CPU
    /// encodes the rest. For a long graph run once per call (a prompt), whose encoding
    /// no other step hides (decode steps overlap their encoding with the previous step's
    /// run: [`MAX_IN_FLIGHT`]). Measured in BENCHMARKS.md, run 47.
    pub fn submit_in_chunks(&mut self, graph: &Graph) {
        let n = graph.sections.len();
        let mut chunks = Vec::new();
        let (mut start, mut held, mut want) = (0, 0, FIRST_CHUNK_DISPATCHES);
        for (i, section) in graph.sections.iter().enumerate() {
            held += section.dispatches.len();
            if held >= want && i + 1 < n {
                chunks.push(start..i + 1);
                (start, held, want) = (i + 1, 0, 2 * want);
            }
        }
        chunks.push(start..n);
        self.chunks = chunks;
    }

    /// The device's timing mode (the recorder's, which all runners of a device share).
    pub fn timing(&self) -> TimingMode {
        self.rec.timing()
    }

    /// Steps submitted and not yet finished.
    pub fn in_flight(&self) -> usize {
        self.slots.iter().filter(|s| s.busy).count()
    }

    /// Uploads, encodes, submits once, and reads back once; waits for the result.
    pub fn step(
        &mut self,
        gpu: &Gpu,
        graph: &Graph,
        uploads: &[(&GpuBuffer, u64, &[u8])],
    ) -> Result<StepOutput, GpuError> {
        let pending = self.submit(gpu, graph, uploads)?;
        self.finish(gpu, graph, pending)
    }

    /// Uploads, encodes and submits one step without waiting for it. At most
    /// [`MAX_IN_FLIGHT`] steps may be pending; finish them in submission order.
    pub fn submit(
        &mut self,
        gpu: &Gpu,
        graph: &Graph,
        uploads: &[(&GpuBuffer, u64, &[u8])],
    ) -> Result<PendingStep, GpuError> {
        if graph.dispatch_count() != self.infos.len()
            || graph.sections.len() != self.passes_per_step
        {
            return Err(GpuError::Invalid(format!(
                "step graph has {} dispatches in {} passes, the runner was built for {} in {}",
                graph.dispatch_count(),
                graph.sections.len(),
                self.infos.len(),
                self.passes_per_step
            )));
        }
        let slot_index = self.next_slot;
        if self.slots[slot_index].busy {
            return Err(GpuError::Invalid(format!(
                "{MAX_IN_FLIGHT} steps are already in flight; finish one before submitting another"
            )));
        }
        let rec = gpu.recorder();
        let step = rec.begin_step_with("", self.recorded)?;
        for (buf, offset, data) in uploads {
            gpu.write_buffer(buf, *offset, data);
        }
        let slot = &self.slots[slot_index];
        let mut index = 0;
        let infos = &self.infos;
        let mut encode = |pass: &mut gpuscope_record::RecordingPass<'_>,
                          section: &crate::dispatch::Section| {
            for d in &section.dispatches {
                // The declared cost can change per step (attention's grows).
                pass.set_dispatch_info(DispatchInfo {
                    cost: d.cost,
                    ..infos[index]
                });
                pass.set_pipeline(d.pipeline.raw());
                pass.set_bind_group(0, &d.bind_group.raw, &[]);
                pass.dispatch_workgroups(d.workgroups[0], d.workgroups[1], d.workgroups[2]);
                index += 1;
            }
        };
        let desc = |label| wgpu::ComputePassDescriptor {
            label: Some(label),
            timestamp_writes: None,
        };
        let chunks = &self.chunks;
        let mut submission = None;
        for (c, chunk) in chunks.iter().enumerate() {
            let sections = &graph.sections[chunk.clone()];
            let commands = {
                let _span = tracing::info_span!("encode").entered();
                let mut encoder = gpu.device.create_command_encoder(&Default::default());
                if one_pass_per_step(rec.timing()) {
                    let mut pass = rec.begin_compute_pass(&mut encoder, &desc("step"));
                    for section in sections {
                        encode(&mut pass, section);
                    }
                } else {
                    for section in sections {
                        let mut pass = rec.begin_compute_pass(&mut encoder, &desc(&section.name));
                        encode(&mut pass, section);
                    }
                }
                if c + 1 == chunks.len() {
                    for (buf, offset) in &self.readbacks {
                        rec.copy_buffer_to_buffer(
                            &mut encoder,
                            &buf.buffer,
                            buf.offset(),
                            &slot.staging,
                            *offset,
                            buf.size(),
                        );
                    }
                    rec.resolve_timestamps(&mut encoder);
                }
                encoder.finish()
            };
            let _span = tracing::info_span!("submit").entered();
            submission = Some(rec.submit([commands]));
        }
        let submission = submission.expect("a step has at least one chunk");
        // The map request rides behind the submission; it completes when the GPU is done.
        let (tx, rx) = std::sync::mpsc::channel();
        slot.staging
            .slice(..self.staging_size)
            .map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
        rec.end_step()?;
        self.slots[slot_index].busy = true;
        self.next_slot = (slot_index + 1) % self.slots.len();
        Ok(PendingStep {
            slot: slot_index,
            step,
            submission,
            mapped: rx,
        })
    }

    /// Waits for a submitted step (one sync), reads its results back and takes its
    /// measurements from the recorder.
    pub fn finish(
        &mut self,
        gpu: &Gpu,
        graph: &Graph,
        pending: PendingStep,
    ) -> Result<StepOutput, GpuError> {
        self.finish_tagged(gpu, graph, pending, |_| None)
    }

    /// [`StepRunner::finish`], tagging the step with a (position, token id) computed
    /// from its readbacks before its record is closed (token decoders).
    pub fn finish_tagged(
        &mut self,
        gpu: &Gpu,
        _graph: &Graph,
        pending: PendingStep,
        tag: impl FnOnce(&[Vec<u8>]) -> Option<(u32, u32)>,
    ) -> Result<StepOutput, GpuError> {
        let rec = gpu.recorder();
        let slot = &mut self.slots[pending.slot];
        slot.busy = false;
        {
            let _span = tracing::info_span!("gpu_wait").entered();
            rec.poll_for(
                pending.step,
                wgpu::PollType::Wait {
                    submission_index: Some(pending.submission),
                    timeout: None,
                },
            )
            .map_err(|e| GpuError::Poll {
                message: e.to_string(),
            })?;
        }
        gpu.check_uncaptured("running a step")?;
        let readback_start = Instant::now();
        let readback_error = |message: String| GpuError::Readback {
            label: "step readback".into(),
            message,
        };
        // The submission is done, but when another thread polls the same device at the
        // same time, it may be the one running our map callback: wait for it briefly,
        // polling to drive it, rather than assume it already ran.
        let deadline = Instant::now() + std::time::Duration::from_secs(30);
        loop {
            match pending
                .mapped
                .recv_timeout(std::time::Duration::from_millis(1))
            {
                Ok(Ok(())) => break,
                Ok(Err(e)) => return Err(readback_error(e.to_string())),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(readback_error(
                        "the map callback was dropped without running".into(),
                    ))
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {
                    let _ = gpu.device.poll(wgpu::PollType::Poll);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    return Err(readback_error(
                        "the map callback did not run within 30 s of the GPU finishing".into(),
                    ))
                }
            }
        }
        let readbacks: Vec<Vec<u8>> = {
            let range = slot
                .staging
                .slice(..self.staging_size)
                .get_mapped_range()
                .map_err(|e| readback_error(e.to_string()))?;
            self.readbacks
                .iter()
                .map(|(b, off)| range[*off as usize..(*off + b.size()) as usize].to_vec())
                .collect()
        };
        slot.staging.unmap();
        if let Some((position, token)) = tag(&readbacks) {
            rec.set_step_token(pending.step, position, token);
        }
        rec.step_finished(pending.step);
        rec.record_span("readback", readback_start, Instant::now(), None);
        let r = rec.step_result(pending.step)?;
        Ok(StepOutput {
            readbacks,
            wall_ns: r.wall_ns,
            gpu_busy_ns: r.gpu_busy_ns,
            cpu: r.cpu,
            counters: r.counters,
            dispatches: r.dispatches,
            passes: r.passes,
        })
    }
}

impl Gpu {
    /// Encodes `graph` as one step of its own (not part of any profile), submits it and
    /// waits (tests and tools).
    pub fn run_once(&self, graph: &Graph) -> Result<(), GpuError> {
        let rec = self.recorder();
        let step = rec.begin_step_with("run_once", false)?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        for section in &graph.sections {
            let mut pass = rec.begin_compute_pass(
                &mut encoder,
                &wgpu::ComputePassDescriptor {
                    label: Some(&section.name),
                    timestamp_writes: None,
                },
            );
            for d in &section.dispatches {
                pass.describe(&d.op, &d.label, d.layer, d.cost);
                pass.set_pipeline(d.pipeline.raw());
                pass.set_bind_group(0, &d.bind_group.raw, &[]);
                pass.dispatch_workgroups(d.workgroups[0], d.workgroups[1], d.workgroups[2]);
            }
        }
        rec.resolve_timestamps(&mut encoder);
        rec.submit([encoder.finish()]);
        rec.end_step()?;
        let waited = self.wait_idle();
        rec.step_finished(step);
        rec.step_result(step)?;
        waited
    }
}

/// Builds the trace events of one step from its graph and samples.
pub fn step_events(
    graph: &Graph,
    token: u32,
    out: &StepOutput,
) -> (Vec<DispatchEvent>, Vec<PassEvent>) {
    let mut dispatches = Vec::with_capacity(graph.dispatch_count());
    let mut passes = Vec::with_capacity(graph.sections.len());
    let mut index = 0u32;
    for (pass_index, section) in graph.sections.iter().enumerate() {
        let p = out.passes.get(pass_index).copied().unwrap_or_default();
        passes.push(PassEvent {
            token,
            index: pass_index as u32,
            name: section.name.clone().into(),
            layer: section.layer,
            dispatches: section.dispatches.len() as u32,
            gpu: p.gpu,
            timestamp_issue: p.issue,
        });
        for d in &section.dispatches {
            let s = out
                .dispatches
                .get(index as usize)
                .copied()
                .unwrap_or_default();
            dispatches.push(DispatchEvent {
                token,
                index,
                op: d.op.clone().into(),
                label: d.label.clone().into(),
                layer: d.layer,
                pass: pass_index as u32,
                pipeline: d.pipeline.name().to_string().into(),
                workgroups: d.workgroups,
                bytes: s.cost.bytes,
                flops: s.cost.flops,
                cpu_encode_ns: s.cpu_encode_ns,
                gpu: s.gpu,
                timestamp_issue: s.issue,
            });
            index += 1;
        }
    }
    (dispatches, passes)
}
