//! Encoding, submitting and timing one step (one decoded token) of a [`Graph`].
//!
//! Per step: the uploads the caller asks for, one command encoder with one compute pass
//! per section, one submit, and one readback that carries both the caller's results and
//! the resolved timestamps — so profiling adds no sync. Nothing is created per step.
//!
//! Timestamps in `dispatch` mode are written once at the start of each pass and once
//! after each dispatch (n + 1 per pass, not 2n: on NVIDIA each timestamp inside a pass
//! costs microseconds, see shared/docs/GPU-HOSTS.md). Dispatch i's span runs from the
//! timestamp before it to the one after it, so it includes the barrier it waited on.
//!
//! We do not use wgpu-profiler here: its scopes are strings resolved per frame, while we
//! need raw tick values tied to our own dispatch records to flag zero, negative and
//! out-of-order intervals rather than average them in.

use std::time::Instant;

use gpuscope_trace::{Counters, DispatchEvent, GpuSpan, PassEvent, TimestampIssue, TimingMode};

use crate::device::{AtomicCounters, Gpu};
use crate::dispatch::Graph;
use crate::error::GpuError;
use crate::resources::GpuBuffer;

/// wgpu's limit on queries per query set.
const MAX_QUERIES: u32 = 4096;

/// What one dispatch of one step measured; plain numbers so a step allocates nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct DispatchSample {
    /// The cost the dispatch declared at this step (attention's grows with the context).
    pub cost: crate::Cost,
    pub cpu_encode_ns: u64,
    pub gpu: Option<GpuSpan>,
    pub issue: Option<TimestampIssue>,
}

/// What one pass of one step measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct PassSample {
    pub gpu: Option<GpuSpan>,
    pub issue: Option<TimestampIssue>,
}

/// The result of one step.
#[derive(Debug, Clone, Default)]
pub struct StepOutput {
    /// The bytes of each readback buffer, in the order given to [`StepRunner::new`].
    pub readbacks: Vec<Vec<u8>>,
    /// CPU wall time from the first upload to the readback's arrival.
    pub wall_ns: u64,
    /// Sum of the valid pass spans; `None` with timing off or no valid span.
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

/// Per-step resources, one set per step that can be in flight.
struct Slot {
    query_set: Option<wgpu::QuerySet>,
    resolve: Option<wgpu::Buffer>,
    staging: wgpu::Buffer,
    busy: bool,
}

/// A submitted step whose readback has not been collected yet.
pub struct PendingStep {
    slot: usize,
    samples: Vec<DispatchSample>,
    start: Instant,
    upload_ns: u64,
    encode_ns: u64,
    submit_ns: u64,
    bytes_uploaded: u64,
    created_while_submitting: Counters,
    submission: wgpu::SubmissionIndex,
    mapped: std::sync::mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
}

/// Runs the same graph step after step, with its query sets and staging buffers made
/// once. [`StepRunner::step`] runs one step to completion; [`StepRunner::submit`] and
/// [`StepRunner::finish`] let up to [`MAX_IN_FLIGHT`] steps overlap.
pub struct StepRunner {
    timing: TimingMode,
    slots: Vec<Slot>,
    next_slot: usize,
    readbacks: Vec<(GpuBuffer, u64)>,
    timestamps_offset: u64,
    query_count: u32,
    staging_size: u64,
    barriers_per_step: u64,
    dispatches_per_step: usize,
    passes_per_step: usize,
    period_ns: f64,
    origin_ticks: Option<u64>,
    /// When the last finished step's readback arrived (pipelined wall time starts there).
    last_done: Option<Instant>,
    /// Where the staging buffers go back when the runner is dropped.
    pool: crate::pool::SharedPool,
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

fn creations(c: &Counters) -> Counters {
    Counters {
        buffers_created: c.buffers_created,
        bind_groups_created: c.bind_groups_created,
        pipelines_created: c.pipelines_created,
        ..Counters::default()
    }
}

impl StepRunner {
    /// Prepares to run `graph` with the device's timing mode, reading back `readbacks`
    /// (whole buffers) after every step.
    pub fn new(gpu: &Gpu, graph: &Graph, readbacks: &[&GpuBuffer]) -> Result<StepRunner, GpuError> {
        Self::with_timing(gpu, graph, readbacks, gpu.timing())
    }

    /// Like [`StepRunner::new`] with another timing mode, e.g. `off` to measure what
    /// profiling costs. The device must have been opened with the features it needs.
    pub fn with_timing(
        gpu: &Gpu,
        graph: &Graph,
        readbacks: &[&GpuBuffer],
        timing: TimingMode,
    ) -> Result<StepRunner, GpuError> {
        let needed = match timing {
            TimingMode::Off => wgpu::Features::empty(),
            TimingMode::Pass => wgpu::Features::TIMESTAMP_QUERY,
            TimingMode::Dispatch => {
                wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
            }
        };
        if !gpu.features().contains(needed) {
            return Err(GpuError::Invalid(format!(
                "timing mode `{timing}` needs {needed:?}, which this device was not opened with"
            )));
        }
        let query_count: u32 = match timing {
            TimingMode::Off => 0,
            TimingMode::Pass => 2 * graph.sections.len() as u32,
            TimingMode::Dispatch => (graph.dispatch_count() + graph.sections.len()) as u32,
        };
        if query_count > MAX_QUERIES {
            return Err(GpuError::Invalid(format!(
                "the graph needs {query_count} timestamps per step, more than wgpu's {MAX_QUERIES}; use --timing pass"
            )));
        }
        let mut offset = 0u64;
        let mut placed = Vec::new();
        for b in readbacks {
            placed.push(((*b).clone(), offset));
            offset += b.size().div_ceil(8) * 8;
        }
        let timestamps_offset = offset;
        let staging_size = (offset + 8 * query_count as u64).max(8);
        let mut slots = Vec::new();
        for _ in 0..MAX_IN_FLIGHT {
            let staging = gpu.staging_buffer(staging_size);
            let (query_set, resolve) = if query_count > 0 {
                let qs = gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("gpuscope.timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: query_count,
                });
                let resolve = gpu.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("gpuscope.timestamp_resolve"),
                    size: 8 * query_count as u64,
                    usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                AtomicCounters::add(&gpu.counters.buffers_created, 1);
                (Some(qs), Some(resolve))
            } else {
                (None, None)
            };
            slots.push(Slot {
                query_set,
                resolve,
                staging,
                busy: false,
            });
        }
        gpu.check_uncaptured("creating the step's readback and query buffers")?;
        Ok(StepRunner {
            timing,
            slots,
            next_slot: 0,
            readbacks: placed,
            timestamps_offset,
            query_count,
            staging_size,
            barriers_per_step: graph.barriers(),
            dispatches_per_step: graph.dispatch_count(),
            passes_per_step: graph.sections.len(),
            period_ns: gpu.queue.get_timestamp_period() as f64,
            origin_ticks: None,
            last_done: None,
            pool: gpu.staging.clone(),
        })
    }

    pub fn timing(&self) -> TimingMode {
        self.timing
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
        if graph.dispatch_count() != self.dispatches_per_step
            || graph.sections.len() != self.passes_per_step
        {
            return Err(GpuError::Invalid(format!(
                "step graph has {} dispatches in {} passes, the runner was built for {} in {}",
                graph.dispatch_count(),
                graph.sections.len(),
                self.dispatches_per_step,
                self.passes_per_step
            )));
        }
        let slot_index = self.next_slot;
        if self.slots[slot_index].busy {
            return Err(GpuError::Invalid(format!(
                "{MAX_IN_FLIGHT} steps are already in flight; finish one before submitting another"
            )));
        }
        gpu.tap.record(uploads, &self.readbacks);
        let before = creations(&gpu.counters());
        let start = Instant::now();
        let mut bytes_uploaded = 0;
        for (buf, offset, data) in uploads {
            gpu.write_buffer(buf, *offset, data);
            bytes_uploaded += data.len() as u64;
        }
        let uploaded = Instant::now();
        let mut samples = vec![DispatchSample::default(); self.dispatches_per_step];
        let slot = &self.slots[slot_index];
        let commands = {
            let _span = tracing::info_span!("encode").entered();
            let mut encoder = gpu.device.create_command_encoder(&Default::default());
            encode_graph(
                gpu,
                &mut encoder,
                graph,
                self.timing,
                slot.query_set.as_ref(),
                &mut samples,
            );
            if let (Some(qs), Some(resolve)) = (&slot.query_set, &slot.resolve) {
                encoder.resolve_query_set(qs, 0..self.query_count, resolve, 0);
                encoder.copy_buffer_to_buffer(
                    resolve,
                    0,
                    &slot.staging,
                    self.timestamps_offset,
                    8 * self.query_count as u64,
                );
            }
            for (buf, offset) in &self.readbacks {
                encoder.copy_buffer_to_buffer(
                    &buf.buffer,
                    buf.offset(),
                    &slot.staging,
                    *offset,
                    buf.size(),
                );
            }
            encoder.finish()
        };
        let encoded = Instant::now();
        let submission = {
            let _span = tracing::info_span!("submit").entered();
            gpu.queue.submit([commands])
        };
        // The map request rides behind the submission; it completes when the GPU is done.
        let (tx, rx) = std::sync::mpsc::channel();
        slot.staging
            .slice(..self.staging_size)
            .map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
        let submitted = Instant::now();
        AtomicCounters::add(&gpu.counters.submits, 1);
        AtomicCounters::add(&gpu.counters.barriers, self.barriers_per_step);
        self.slots[slot_index].busy = true;
        self.next_slot = (slot_index + 1) % self.slots.len();
        Ok(PendingStep {
            slot: slot_index,
            samples,
            start,
            upload_ns: (uploaded - start).as_nanos() as u64,
            encode_ns: (encoded - uploaded).as_nanos() as u64,
            submit_ns: (submitted - encoded).as_nanos() as u64,
            bytes_uploaded,
            created_while_submitting: creations(&gpu.counters()).since(&before),
            submission,
            mapped: rx,
        })
    }

    /// Waits for a submitted step (one sync), reads its results back and decodes its
    /// timestamps.
    ///
    /// Wall time is measured from the later of the step's start and the previous
    /// step's completion, so overlapped steps are not counted twice: it is the time this
    /// step added to the run.
    pub fn finish(
        &mut self,
        gpu: &Gpu,
        graph: &Graph,
        pending: PendingStep,
    ) -> Result<StepOutput, GpuError> {
        let before = creations(&gpu.counters());
        let waiting = Instant::now();
        let slot = &mut self.slots[pending.slot];
        slot.busy = false;
        {
            let _span = tracing::info_span!("gpu_wait").entered();
            AtomicCounters::add(&gpu.counters.syncs, 1);
            gpu.device
                .poll(wgpu::PollType::Wait {
                    submission_index: Some(pending.submission),
                    timeout: None,
                })
                .map_err(|e| GpuError::Poll {
                    message: e.to_string(),
                })?;
        }
        gpu.check_uncaptured("running a step")?;
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
        let bytes = {
            let range = slot
                .staging
                .slice(..self.staging_size)
                .get_mapped_range()
                .map_err(|e| readback_error(e.to_string()))?;
            range.to_vec()
        };
        slot.staging.unmap();
        AtomicCounters::add(&gpu.counters.bytes_downloaded, self.staging_size);
        let done = Instant::now();
        let from = match self.last_done {
            Some(prev) if prev > pending.start => prev,
            _ => pending.start,
        };
        self.last_done = Some(done);
        let cpu = gpuscope_trace::CpuTimes {
            upload_ns: pending.upload_ns,
            encode_ns: pending.encode_ns,
            submit_ns: pending.submit_ns,
            wait_ns: (done - waiting).as_nanos() as u64,
        };
        let readbacks = self
            .readbacks
            .iter()
            .map(|(b, off)| bytes[*off as usize..(*off + b.size()) as usize].to_vec())
            .collect();
        let ticks: Vec<u64> = bytes[self.timestamps_offset as usize..]
            .chunks_exact(8)
            .take(self.query_count as usize)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let mut samples = pending.samples;
        let passes = self.decode_timestamps(graph, &ticks, &mut samples);
        let gpu_busy_ns = match self.timing {
            TimingMode::Off => None,
            _ => {
                let valid: Vec<u64> = passes
                    .iter()
                    .filter_map(|p| p.gpu.map(|s| s.duration_ns()))
                    .collect();
                (!valid.is_empty()).then(|| valid.iter().sum())
            }
        };
        let created = creations(&gpu.counters()).since(&before);
        let counters = Counters {
            dispatches: self.dispatches_per_step as u64,
            passes: self.passes_per_step as u64,
            submits: 1,
            syncs: 1,
            barriers: self.barriers_per_step,
            buffers_created: pending.created_while_submitting.buffers_created
                + created.buffers_created,
            bind_groups_created: pending.created_while_submitting.bind_groups_created
                + created.bind_groups_created,
            pipelines_created: pending.created_while_submitting.pipelines_created
                + created.pipelines_created,
            bytes_uploaded: pending.bytes_uploaded,
            bytes_downloaded: self.staging_size,
        };
        Ok(StepOutput {
            readbacks,
            wall_ns: (done - from).as_nanos() as u64,
            gpu_busy_ns,
            cpu,
            counters,
            dispatches: samples,
            passes,
        })
    }

    /// Turns raw ticks into spans, flagging zero, negative and out-of-order intervals.
    fn decode_timestamps(
        &mut self,
        graph: &Graph,
        ticks: &[u64],
        samples: &mut [DispatchSample],
    ) -> Vec<PassSample> {
        if self.timing == TimingMode::Off {
            return vec![PassSample::default(); graph.sections.len()];
        }
        if self.origin_ticks.is_none() {
            self.origin_ticks = ticks.iter().copied().filter(|&t| t != 0).min();
        }
        let sizes: Vec<usize> = graph.sections.iter().map(|s| s.dispatches.len()).collect();
        let clock = TickClock {
            origin: self.origin_ticks.unwrap_or(0),
            period_ns: self.period_ns,
        };
        decode_ticks(self.timing, &sizes, ticks, clock, samples)
    }
}

/// Converts ticks to nanoseconds since the run's first timestamp.
#[derive(Debug, Clone, Copy)]
struct TickClock {
    origin: u64,
    period_ns: f64,
}

impl TickClock {
    fn to_ns(self, ticks: u64) -> Option<u64> {
        (ticks >= self.origin).then(|| ((ticks - self.origin) as f64 * self.period_ns) as u64)
    }

    /// The span from `start` to `end`, or why it cannot be trusted.
    fn span(self, start: u64, end: u64) -> (Option<GpuSpan>, Option<TimestampIssue>) {
        if start == 0 || end == 0 {
            return (None, Some(TimestampIssue::Zero));
        }
        if end < start {
            return (None, Some(TimestampIssue::Negative));
        }
        match (self.to_ns(start), self.to_ns(end)) {
            (Some(s), Some(e)) => (
                Some(GpuSpan {
                    start_ns: s,
                    end_ns: e,
                }),
                None,
            ),
            _ => (None, Some(TimestampIssue::OutOfOrder)),
        }
    }
}

/// Decodes one step's ticks. `sizes` holds each pass's dispatch count; the tick layout
/// is the one [`encode_graph`] writes: two per pass in `pass` mode, n + 1 per pass in
/// `dispatch` mode. A pass starting before the previous valid pass ended is out of order.
fn decode_ticks(
    timing: TimingMode,
    sizes: &[usize],
    ticks: &[u64],
    clock: TickClock,
    samples: &mut [DispatchSample],
) -> Vec<PassSample> {
    let mut passes = vec![PassSample::default(); sizes.len()];
    let mut query = 0usize;
    let mut sample = 0usize;
    let mut previous_pass_end: Option<u64> = None;
    for (&n, pass) in sizes.iter().zip(passes.iter_mut()) {
        let (start, end) = match timing {
            TimingMode::Pass => (ticks[query], ticks[query + 1]),
            _ => (ticks[query], ticks[query + n]),
        };
        let (span, mut issue) = clock.span(start, end);
        if issue.is_none() && previous_pass_end.is_some_and(|prev| start < prev) {
            issue = Some(TimestampIssue::OutOfOrder);
        }
        if issue.is_none() {
            previous_pass_end = Some(end);
        }
        *pass = PassSample {
            gpu: if issue.is_none() { span } else { None },
            issue,
        };
        if timing == TimingMode::Dispatch {
            for i in 0..n {
                let (span, issue) = clock.span(ticks[query + i], ticks[query + i + 1]);
                samples[sample + i].gpu = span;
                samples[sample + i].issue = issue;
            }
            query += n + 1;
        } else {
            query += 2;
        }
        sample += n;
    }
    passes
}

/// Encodes every section of `graph` as one compute pass, writing timestamps as `timing`
/// asks and recording each dispatch's CPU encode time into `samples`.
fn encode_graph(
    gpu: &Gpu,
    encoder: &mut wgpu::CommandEncoder,
    graph: &Graph,
    timing: TimingMode,
    query_set: Option<&wgpu::QuerySet>,
    samples: &mut [DispatchSample],
) {
    let mut query = 0u32;
    let mut sample = 0usize;
    for section in &graph.sections {
        let timestamp_writes = match (timing, query_set) {
            (TimingMode::Pass, Some(qs)) => Some(wgpu::ComputePassTimestampWrites {
                query_set: qs,
                beginning_of_pass_write_index: Some(query),
                end_of_pass_write_index: Some(query + 1),
            }),
            _ => None,
        };
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(&section.name),
            timestamp_writes,
        });
        let inside = match (timing, query_set) {
            (TimingMode::Dispatch, Some(qs)) => Some(qs),
            _ => None,
        };
        if let Some(qs) = inside {
            pass.write_timestamp(qs, query);
            query += 1;
        }
        for d in &section.dispatches {
            let t0 = Instant::now();
            pass.set_pipeline(d.pipeline.raw());
            pass.set_bind_group(0, &d.bind_group.raw, &[]);
            pass.dispatch_workgroups(d.workgroups[0], d.workgroups[1], d.workgroups[2]);
            if let Some(qs) = inside {
                pass.write_timestamp(qs, query);
                query += 1;
            }
            if let Some(s) = samples.get_mut(sample) {
                s.cpu_encode_ns = t0.elapsed().as_nanos() as u64;
                s.cost = d.cost;
            }
            sample += 1;
        }
        if timing == TimingMode::Pass {
            query += 2;
        }
        drop(pass);
        AtomicCounters::add(&gpu.counters.passes, 1);
    }
    AtomicCounters::add(&gpu.counters.dispatches, graph.dispatch_count() as u64);
}

impl Gpu {
    /// Encodes `graph` untimed, submits it and waits (tests and tools).
    pub fn run_once(&self, graph: &Graph) -> Result<(), GpuError> {
        let mut encoder = self.device.create_command_encoder(&Default::default());
        encode_graph(self, &mut encoder, graph, TimingMode::Off, None, &mut []);
        self.queue.submit([encoder.finish()]);
        AtomicCounters::add(&self.counters.submits, 1);
        AtomicCounters::add(&self.counters.barriers, graph.barriers());
        self.wait_idle()
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
            name: section.name.clone(),
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
                op: d.op.clone(),
                label: d.label.clone(),
                layer: d.layer,
                pass: pass_index as u32,
                pipeline: d.pipeline.name().to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    const CLOCK: TickClock = TickClock {
        origin: 1000,
        period_ns: 1.0,
    };

    #[test]
    fn dispatch_ticks_give_spans_between_consecutive_timestamps() {
        let mut samples = vec![DispatchSample::default(); 3];
        // Pass 0: 2 dispatches (3 ticks); pass 1: 1 dispatch (2 ticks).
        let ticks = [1000, 1010, 1030, 1040, 1045];
        let passes = decode_ticks(TimingMode::Dispatch, &[2, 1], &ticks, CLOCK, &mut samples);
        assert_eq!(
            passes[0].gpu,
            Some(GpuSpan {
                start_ns: 0,
                end_ns: 30
            })
        );
        assert_eq!(
            passes[1].gpu,
            Some(GpuSpan {
                start_ns: 40,
                end_ns: 45
            })
        );
        assert_eq!(
            samples[0].gpu,
            Some(GpuSpan {
                start_ns: 0,
                end_ns: 10
            })
        );
        assert_eq!(
            samples[1].gpu,
            Some(GpuSpan {
                start_ns: 10,
                end_ns: 30
            })
        );
        assert!(samples.iter().all(|s| s.issue.is_none()));
    }

    #[test]
    fn zero_negative_and_out_of_order_are_flagged_not_timed() {
        let mut samples = vec![DispatchSample::default(); 3];
        // Dispatch 0 ends at 0 (never written), dispatch 1 runs backwards, and pass 1
        // starts before pass 0 ended.
        let ticks = [1000, 0, 1020, 1010, 1015];
        let passes = decode_ticks(TimingMode::Dispatch, &[2, 1], &ticks, CLOCK, &mut samples);
        assert_eq!(samples[0].issue, Some(TimestampIssue::Zero));
        assert_eq!(samples[1].issue, Some(TimestampIssue::Zero));
        assert_eq!(samples[0].gpu, None);
        assert_eq!(
            passes[0].gpu,
            Some(GpuSpan {
                start_ns: 0,
                end_ns: 20
            })
        );
        assert_eq!(passes[1].issue, Some(TimestampIssue::OutOfOrder));
        assert_eq!(passes[1].gpu, None);
        let mut one = vec![DispatchSample::default(); 1];
        decode_ticks(TimingMode::Dispatch, &[1], &[1050, 1040], CLOCK, &mut one);
        assert_eq!(one[0].issue, Some(TimestampIssue::Negative));
    }

    #[test]
    fn ticks_before_the_origin_are_out_of_order() {
        let mut samples = vec![DispatchSample::default(); 1];
        let passes = decode_ticks(TimingMode::Pass, &[1], &[500, 900], CLOCK, &mut samples);
        assert_eq!(passes[0].issue, Some(TimestampIssue::OutOfOrder));
    }

    #[test]
    fn period_scales_ticks_to_nanoseconds() {
        let clock = TickClock {
            origin: 100,
            period_ns: 2.5,
        };
        assert_eq!(clock.to_ns(140), Some(100));
    }
}
