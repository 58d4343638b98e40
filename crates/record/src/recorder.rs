//! The [`Recorder`]: a program's device and queue, wrapped.
//!
//! Every method mirrors the wgpu call it stands for and forwards it unchanged; the
//! recorder only watches. It never fails a program's GPU work: misuse it cannot
//! attribute (a dispatch outside a step, an object it never saw) is counted, the work
//! still runs, and [`Recorder::finish`] reports it as an error instead of returning a
//! wrong profile.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use gpuscope_trace::{Counters, CpuSpan, Instrumentation, MemoryKind, TimingMode};

use crate::error::RecordError;
use crate::hazards::Hazards;
use crate::names::{Name, Names};
use crate::registry::{pipeline_name, BindGroupRecord, BoundBuffer, PipelineRecord, Registry};
use crate::slots::{Slot, RESOLVE_ALIGN_QUERIES};
use crate::step::{DoneStep, StepId, StepRec, StepResult, UploadRec};
use crate::timing::{choose_timing, decode, TickClock, Timing, TimingRequest};

/// How to record.
#[derive(Debug, Clone, Default)]
pub struct RecorderOptions {
    pub timing: TimingRequest,
    /// Timestamp queries per step to make room for up front (each slot is made on first
    /// use otherwise; a step that needs more than a slot holds grows it next time).
    pub timestamps_per_step: Option<u32>,
    /// Capture every step from the first one begun (with data read back just before
    /// it); [`Recorder::finish_into`] writes it.
    pub capture: Option<crate::capture::CaptureOptions>,
}

impl RecorderOptions {
    /// The finest timing the device allows, and a capture (with data) named `name` of
    /// every step: what `finish_into` needs to write a profile and a capture.
    pub fn with_capture(name: &str) -> RecorderOptions {
        RecorderOptions {
            capture: Some(crate::capture::CaptureOptions {
                name: name.to_string(),
                with_data: true,
                outputs_of_last_steps: 1,
            }),
            ..Default::default()
        }
    }
}

/// Totals since the recorder was made, kept with atomics so reading them never locks.
#[derive(Default)]
pub(crate) struct Totals {
    pub(crate) v: [AtomicU64; 10],
}

impl Totals {
    pub(crate) fn add(&self, field: usize, n: u64) {
        self.v[field].fetch_add(n, Ordering::Relaxed);
    }
    fn snapshot(&self) -> Counters {
        Counters::from_values(std::array::from_fn(|i| self.v[i].load(Ordering::Relaxed)))
    }
}

/// Field indices of [`Counters::fields`].
pub(crate) mod field {
    pub const DISPATCHES: usize = 0;
    pub const PASSES: usize = 1;
    pub const SUBMITS: usize = 2;
    pub const SYNCS: usize = 3;
    pub const BARRIERS: usize = 4;
    pub const BUFFERS: usize = 5;
    pub const BIND_GROUPS: usize = 6;
    pub const PIPELINES: usize = 7;
    pub const UPLOADED: usize = 8;
    pub const DOWNLOADED: usize = 9;
}

pub(crate) fn bump(c: &mut gpuscope_trace::Counters, f: usize, n: u64) {
    match f {
        field::DISPATCHES => c.dispatches += n,
        field::PASSES => c.passes += n,
        field::SUBMITS => c.submits += n,
        field::SYNCS => c.syncs += n,
        field::BARRIERS => c.barriers += n,
        field::BUFFERS => c.buffers_created += n,
        field::BIND_GROUPS => c.bind_groups_created += n,
        field::PIPELINES => c.pipelines_created += n,
        field::UPLOADED => c.bytes_uploaded += n,
        _ => c.bytes_downloaded += n,
    }
}

pub(crate) struct State {
    pub(crate) registry: Registry,
    pub(crate) names: Names,
    pub(crate) timing: Timing,
    /// Steps begun and not yet done, in order; the last may be open.
    pub(crate) live: VecDeque<StepRec>,
    pub(crate) open: bool,
    pub(crate) done: VecDeque<DoneStep>,
    pub(crate) next_step: u32,
    pub(crate) slots: Vec<Slot>,
    pub(crate) slot_capacity: u32,
    pub(crate) hazards: Hazards,
    pub(crate) spans: Vec<CpuSpan>,
    pub(crate) threads: HashMap<std::thread::ThreadId, u32>,
    pub(crate) thread_names: Vec<String>,
    pub(crate) instrumentation: Instrumentation,
    pub(crate) misuse: Vec<String>,
    pub(crate) notes: Vec<String>,
    /// Counters before the first recorded step of the profile being made.
    pub(crate) setup: Option<Counters>,
    pub(crate) setup_wall_ns: Option<u64>,
    /// When the current profile's setup started (the recorder's creation, or the last
    /// `take_profile`).
    pub(crate) profile_start: Instant,
    pub(crate) recording: bool,
    pub(crate) origin_ticks: Option<u64>,
    pub(crate) last_completion: Option<Instant>,
    /// Creations and uploads between steps count in the step begun last.
    pub(crate) last_begun: Option<u32>,
    pub(crate) capturing: Option<crate::capture::CaptureState>,
    /// Instrumented passes begun since the last submit (to tell uninstrumented command
    /// buffers apart).
    pub(crate) passes_since_submit: u64,
    /// The thread whose step is open.
    pub(crate) open_thread: Option<std::thread::ThreadId>,
    /// Results of steps begun with `begin_step_with`, until taken.
    pub(crate) results: HashMap<u32, StepResult>,
    /// A capture asked for in the options, started at the first step.
    pub(crate) pending_capture: Option<crate::capture::CaptureOptions>,
    /// Outputs of how many last steps `finish_into` records.
    pub(crate) outputs_of_last_steps: u32,
}

pub(crate) struct Shared {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) features: wgpu::Features,
    pub(crate) limits: wgpu::Limits,
    pub(crate) period_ns: f64,
    pub(crate) origin: Instant,
    pub(crate) totals: Totals,
    pub(crate) state: Mutex<State>,
    /// Signalled when a step ends: another thread's `begin_step` waits for it.
    pub(crate) step_ended: std::sync::Condvar,
}

/// A program's wgpu device and queue, instrumented. Cloning shares the recorder.
///
/// See the crate documentation for a tour.
#[derive(Clone)]
pub struct Recorder {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("adapter", &self.shared.info.name)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Wraps a device and queue the program created, with whatever features it chose.
    /// The timing mode is the finest `options.timing` allows on those features; a mode
    /// asked for explicitly that the device cannot do is an error naming the feature.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        options: RecorderOptions,
    ) -> Result<Recorder, RecordError> {
        let info = device.adapter_info();
        let features = device.features();
        let timing = choose_timing(options.timing, features, &info)?;
        let mut notes = Vec::new();
        if timing.mode == TimingMode::Off
            && options.timing == TimingRequest::Auto
            && !features.contains(wgpu::Features::TIMESTAMP_QUERY)
        {
            notes.push(
                "the device was created without TIMESTAMP_QUERY: GPU times are unknown, \
                 per-step times are wall-clock"
                    .to_string(),
            );
        }
        let now = Instant::now();
        let state = State {
            registry: Registry::default(),
            names: Names::default(),
            timing,
            live: VecDeque::new(),
            open: false,
            done: VecDeque::new(),
            next_step: 0,
            slots: Vec::new(),
            slot_capacity: options.timestamps_per_step.unwrap_or(256),
            hazards: Hazards::default(),
            spans: Vec::new(),
            threads: HashMap::new(),
            thread_names: Vec::new(),
            instrumentation: Instrumentation::default(),
            misuse: Vec::new(),
            notes,
            setup: None,
            setup_wall_ns: None,
            profile_start: now,
            recording: true,
            origin_ticks: None,
            last_completion: None,
            last_begun: None,
            capturing: None,
            passes_since_submit: 0,
            open_thread: None,
            results: HashMap::new(),
            pending_capture: options.capture.clone(),
            outputs_of_last_steps: options
                .capture
                .as_ref()
                .map_or(0, |c| c.outputs_of_last_steps),
        };
        Ok(Recorder {
            shared: Arc::new(Shared {
                device: device.clone(),
                queue: queue.clone(),
                period_ns: queue.get_timestamp_period() as f64,
                info,
                features,
                limits: device.limits(),
                origin: now,
                totals: Totals::default(),
                state: Mutex::new(state),
                step_ended: std::sync::Condvar::new(),
            }),
        })
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep going.
        self.shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.shared.device
    }

    pub fn queue(&self) -> &wgpu::Queue {
        &self.shared.queue
    }

    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.shared.info
    }

    /// The timing mode in use.
    pub fn timing(&self) -> TimingMode {
        self.state().timing.mode
    }

    /// Why this timing mode, in words.
    pub fn timing_reason(&self) -> String {
        self.state().timing.reason.clone()
    }

    /// The dispatch sampling in use, when only some dispatches are timed.
    pub fn sampling(&self) -> Option<gpuscope_trace::Sampling> {
        self.state().timing.sampling.clone()
    }

    /// Switches the timing mode between steps (e.g. to measure what profiling costs).
    pub fn set_timing(&self, request: TimingRequest) -> Result<(), RecordError> {
        let timing = choose_timing(request, self.shared.features, &self.shared.info)?;
        let mut st = self.state();
        if st.open {
            return Err(RecordError::Step(
                "the timing mode cannot change while a step is open".into(),
            ));
        }
        st.timing = timing;
        Ok(())
    }

    /// Whether steps begun from now on go into the profile (warm-up steps do not).
    /// Their results stay available through [`Recorder::step_result`] either way.
    pub fn set_recording(&self, on: bool) {
        self.state().recording = on;
    }

    /// Every counter since the recorder was made.
    pub fn counters(&self) -> Counters {
        self.shared.totals.snapshot()
    }

    /// An interned name, for [`crate::DispatchInfo`] without a lookup per dispatch.
    pub fn name(&self, s: &str) -> Name {
        self.state().names.intern(s)
    }

    /// Adds a remark to the profile (how something was measured, what was missing).
    pub fn note(&self, text: impl Into<String>) {
        let text = text.into();
        let mut st = self.state();
        if !st.notes.contains(&text) {
            st.notes.push(text);
        }
    }

    /// Adds a CPU span the program measured itself (e.g. its own readback or sampling),
    /// on the calling thread, in the open step if there is one.
    pub fn record_span(&self, name: &str, start: Instant, end: Instant, detail: Option<&str>) {
        let mut st = self.state();
        let token = st.open.then(|| st.live.back().map(|s| s.id)).flatten();
        self.push_span(&mut st, name, start, end, token, detail);
    }

    pub(crate) fn ns_since_origin(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.shared.origin).as_nanos() as u64
    }

    pub(crate) fn push_span(
        &self,
        st: &mut State,
        name: &str,
        start: Instant,
        end: Instant,
        step: Option<u32>,
        detail: Option<&str>,
    ) {
        let thread = std::thread::current();
        let next = st.threads.len() as u32;
        let index = *st.threads.entry(thread.id()).or_insert(next);
        if index == next {
            st.thread_names.push(
                thread
                    .name()
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("thread {next}")),
            );
        }
        st.spans.push(CpuSpan {
            name: name.to_string(),
            thread: index,
            token: step,
            start_ns: self.ns_since_origin(start),
            end_ns: self.ns_since_origin(end),
            detail: detail.map(str::to_string),
        });
    }

    /// Counts `n` in total and in the step this work belongs to: the open one; for a
    /// creation between steps, the one begun last (so steady-state creation is seen).
    pub(crate) fn count(&self, st: &mut State, f: usize, n: u64) {
        self.shared.totals.add(f, n);
        let creation = matches!(f, field::BUFFERS | field::BIND_GROUPS | field::PIPELINES);
        let target = if st.open {
            st.live.back_mut()
        } else if creation {
            match st.last_begun {
                Some(id) => st.live.iter_mut().rev().find(|s| s.id == id),
                None => None,
            }
        } else {
            None
        };
        if let Some(s) = target {
            bump(&mut s.counters, f, n);
        }
    }

    // ---- creation -------------------------------------------------------------------

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

    // ---- queue -------------------------------------------------------------------------

    /// `queue.write_buffer`, counted as bytes uploaded (and kept while capturing).
    pub fn write_buffer(&self, buffer: &wgpu::Buffer, offset: u64, data: &[u8]) {
        let start = Instant::now();
        self.shared.queue.write_buffer(buffer, offset, data);
        let end = Instant::now();
        let mut st = self.state();
        self.count(&mut st, field::UPLOADED, data.len() as u64);
        let capturing = st.capturing.is_some();
        let id = if capturing {
            st.registry.buffer(buffer).map(|b| b.id)
        } else {
            None
        };
        if st.open {
            let s = st.live.back_mut().expect("an open step is live");
            s.cpu.upload_ns += (end - start).as_nanos() as u64;
            if let Some(buffer) = id {
                s.uploads.push(UploadRec {
                    buffer,
                    offset,
                    data: data.to_vec(),
                });
            }
            let step = s.id;
            self.push_span(&mut st, "upload", start, end, Some(step), None);
        }
    }

    /// `encoder.copy_buffer_to_buffer`; a copy into a mappable buffer counts as bytes
    /// downloaded (the program's readback).
    pub fn copy_buffer_to_buffer(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        source: &wgpu::Buffer,
        source_offset: u64,
        destination: &wgpu::Buffer,
        destination_offset: u64,
        size: u64,
    ) {
        encoder.copy_buffer_to_buffer(source, source_offset, destination, destination_offset, size);
        if destination.usage().contains(wgpu::BufferUsages::MAP_READ) {
            let mut st = self.state();
            self.count(&mut st, field::DOWNLOADED, size);
            let src = st.registry.buffer(source).map(|b| b.id);
            if let (true, Some(src)) = (st.open, src) {
                st.live
                    .back_mut()
                    .expect("an open step is live")
                    .readbacks
                    .push((src, source_offset, size));
            }
        }
    }

    /// `queue.submit`. Timestamps written since the last resolve are resolved in a
    /// command buffer appended to the same submission (no extra submit); a program that
    /// calls [`Recorder::resolve_timestamps`] on its own encoder first saves even that.
    pub fn submit<I: IntoIterator<Item = wgpu::CommandBuffer>>(
        &self,
        command_buffers: I,
    ) -> wgpu::SubmissionIndex {
        let mut buffers: Vec<wgpu::CommandBuffer> = command_buffers.into_iter().collect();
        let start = Instant::now();
        {
            let mut st = self.state();
            if st.open && has_unresolved(&st) {
                let mut encoder =
                    self.shared
                        .device
                        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                            label: Some("gpuscope.resolve"),
                        });
                self.resolve_open(&mut st, &mut encoder);
                buffers.push(encoder.finish());
            }
            let passes_since = std::mem::take(&mut st.passes_since_submit);
            if passes_since == 0 && !buffers.is_empty() {
                // Nothing instrumented was encoded since the last submit: whatever these
                // command buffers hold went past the recorder.
                st.instrumentation.uninstrumented_command_buffers += 1;
            }
        }
        let index = self.shared.queue.submit(buffers);
        let end = Instant::now();
        let mut st = self.state();
        self.count(&mut st, field::SUBMITS, 1);
        if st.open {
            let s = st.live.back_mut().expect("an open step is live");
            s.first_submit.get_or_insert(start);
            s.cpu.submit_ns += (end - start).as_nanos() as u64;
            let id = s.id;
            self.push_span(&mut st, "submit", start, end, Some(id), None);
        }
        index
    }

    /// `device.poll`. A blocking poll counts one sync, in the open step, else in the
    /// step ended last (a program polls after ending a step for its results), else in
    /// setup. A pipelined program that waits for an older step says which with
    /// [`Recorder::poll_for`]. Finished readbacks of timestamps are collected on the way.
    pub fn poll(&self, poll_type: wgpu::PollType) -> Result<wgpu::PollStatus, wgpu::PollError> {
        self.poll_attributed(poll_type, None)
    }

    /// [`Recorder::poll`], counting the wait in `step`.
    pub fn poll_for(
        &self,
        step: StepId,
        poll_type: wgpu::PollType,
    ) -> Result<wgpu::PollStatus, wgpu::PollError> {
        self.poll_attributed(poll_type, Some(step.0))
    }

    fn poll_attributed(
        &self,
        poll_type: wgpu::PollType,
        step: Option<u32>,
    ) -> Result<wgpu::PollStatus, wgpu::PollError> {
        let blocking = matches!(poll_type, wgpu::PollType::Wait { .. });
        let start = Instant::now();
        let status = self.shared.device.poll(poll_type);
        let end = Instant::now();
        let mut st = self.state();
        if blocking {
            self.shared.totals.add(field::SYNCS, 1);
            let target = match step {
                Some(id) => st.live.iter().position(|s| s.id == id),
                None if st.open => Some(st.live.len() - 1),
                None => st.live.iter().rposition(|s| s.ended.is_some()),
            };
            if let Some(i) = target {
                let s = &mut st.live[i];
                s.counters.syncs += 1;
                s.cpu.wait_ns += (end - start).as_nanos() as u64;
                let id = s.id;
                self.push_span(&mut st, "wait", start, end, Some(id), None);
            }
        }
        self.collect_ticks(&mut st, false);
        status
    }

    // ---- steps -------------------------------------------------------------------------

    /// Opens a step; the passes, dispatches, submits and uploads until
    /// [`Recorder::end_step`] belong to it. An empty name leaves the step unnamed. It
    /// goes into the profile unless recording is off ([`Recorder::set_recording`]).
    ///
    /// One step is open at a time: steps do not nest, and a step begun on another
    /// thread while one is open waits for it to end (GPU work of one queue is ordered
    /// anyway; this keeps each step's counters its own).
    pub fn begin_step(&self, name: &str) -> Result<StepId, RecordError> {
        self.begin(name, None)
    }

    /// [`Recorder::begin_step`] for a step that goes into the profile or not, whatever
    /// [`Recorder::set_recording`] says (warm-up steps, tool work), and whose result the
    /// caller will take with [`Recorder::step_result`] (it is kept until then).
    pub fn begin_step_with(&self, name: &str, recorded: bool) -> Result<StepId, RecordError> {
        self.begin(name, Some(recorded))
    }

    fn begin(&self, name: &str, recorded: Option<bool>) -> Result<StepId, RecordError> {
        let keep_result = recorded.is_some();
        let pending = self.state().pending_capture.take();
        if let Some(options) = pending {
            self.begin_capture(options)?;
        }
        let me = std::thread::current().id();
        let mut st = self.state();
        while st.open {
            if st.open_thread == Some(me) {
                let open = st.live.back().map(|s| s.id).unwrap_or(0);
                return Err(RecordError::Step(format!(
                    "begin_step(\"{name}\") while step {open} is open: end it first (steps do not nest)"
                )));
            }
            st = self
                .shared
                .step_ended
                .wait(st)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        self.collect_ticks(&mut st, false);
        self.finalize(&mut st, None)?;
        let recorded = recorded.unwrap_or(st.recording);
        if recorded && st.setup.is_none() {
            st.setup = Some(self.shared.totals.snapshot());
            st.setup_wall_ns = Some(st.profile_start.elapsed().as_nanos() as u64);
        }
        let id = st.next_step;
        st.next_step += 1;
        let mut rec = StepRec::new(id, (!name.is_empty()).then(|| name.to_string()), recorded);
        rec.keep_result = keep_result;
        st.live.push_back(rec);
        st.open = true;
        st.open_thread = Some(me);
        st.last_begun = Some(id);
        Ok(StepId(id))
    }

    /// Closes the open step for encoding. Its timestamps are resolved (with an extra
    /// submit only if the program encoded timed passes after its last submit) and read
    /// back asynchronously.
    pub fn end_step(&self) -> Result<StepId, RecordError> {
        let mut st = self.state();
        if !st.open {
            return Err(RecordError::Step("end_step() with no step open".into()));
        }
        if has_unresolved(&st) {
            let mut encoder =
                self.shared
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("gpuscope.resolve"),
                    });
            self.resolve_open(&mut st, &mut encoder);
            self.shared.queue.submit([encoder.finish()]);
        }
        st.open = false;
        st.open_thread = None;
        self.shared.step_ended.notify_all();
        let s = st.live.back_mut().expect("the open step is live");
        let end = Instant::now();
        s.ended = Some(end);
        let dispatches = s.dispatches.len() as u32;
        // Auto's sampling takes its stride from the first step with dispatches.
        st.timing.fit_to_step(dispatches, &self.shared.info.name);
        let s = st.live.back_mut().expect("the open step is live");
        let first_submit = s.first_submit.unwrap_or(end);
        s.cpu.encode_ns = (first_submit.saturating_duration_since(s.begin).as_nanos() as u64)
            .saturating_sub(s.cpu.upload_ns);
        let (id, begin) = (s.id, s.begin);
        if let Some(slot) = s.slot {
            let bytes = 8 * s.queries.max(1) as u64;
            let (tx, rx) = std::sync::mpsc::channel();
            st.slots[slot]
                .staging
                .slice(..bytes)
                .map_async(wgpu::MapMode::Read, move |r| {
                    let _ = tx.send(r);
                });
            st.live.back_mut().expect("live").mapped = Some(rx);
        }
        self.push_span(&mut st, "encode", begin, first_submit, Some(id), None);
        Ok(StepId(id))
    }

    /// Tells the recorder the program has the step's results (after its own readback):
    /// the step's wall time ends here. Optional; see the `step` module.
    pub fn step_finished(&self, step: StepId) {
        let mut st = self.state();
        if let Some(s) = st.live.iter_mut().find(|s| s.id == step.0) {
            s.finished = Some(Instant::now());
        }
    }

    /// Tags a step with the position it decoded and the token it produced (token
    /// decoders; the profile's per-token records carry them).
    pub fn set_step_token(&self, step: StepId, position: u32, token_id: u32) {
        let mut st = self.state();
        if let Some(s) = st.live.iter_mut().find(|s| s.id == step.0) {
            s.token = Some((position, token_id));
        } else if let Some(d) = st.done.iter_mut().find(|d| d.rec.id == step.0) {
            d.rec.token = Some((position, token_id));
        }
    }

    /// The measurements of an ended step, waiting for its timestamps if they are not in
    /// yet (a wait of the recorder's own, not counted as the program's sync). A step
    /// begun with [`Recorder::begin_step_with`] keeps its result until it is taken here,
    /// whatever else happens (another thread taking a profile); a step begun with
    /// [`Recorder::begin_step`] has it until the profile is taken.
    pub fn step_result(&self, step: StepId) -> Result<StepResult, RecordError> {
        let mut st = self.state();
        if st.live.iter().any(|s| s.id == step.0 && s.ended.is_none()) {
            return Err(RecordError::Step(format!(
                "step_result({}) while the step is still open",
                step.0
            )));
        }
        self.finalize(&mut st, Some(step.0))?;
        if let Some(r) = st.results.remove(&step.0) {
            return Ok(r);
        }
        st.done
            .iter()
            .find(|d| d.rec.id == step.0)
            .map(DoneStep::result)
            .ok_or_else(|| {
                RecordError::Step(format!("step {} is unknown or already taken", step.0))
            })
    }

    /// Makes room for `n` timestamps per step (setup-time; avoids growing a slot later).
    /// Slots too small for it are replaced when next taken ([`Self::take_queries`]), in
    /// place: live steps hold slot indices, so the list never shrinks or shifts (removing
    /// them here once let another thread's step unmap a slot it did not map).
    pub fn reserve_timestamps(&self, n: u32) {
        let mut st = self.state();
        if n > st.slot_capacity {
            st.slot_capacity = n;
        }
    }

    /// Resolves the open step's timestamps into `encoder` (call it just before
    /// `encoder.finish()` of the step's last command buffer): the submit then needs no
    /// command buffer of the recorder's own.
    pub fn resolve_timestamps(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut st = self.state();
        if st.open {
            self.resolve_open(&mut st, encoder);
        }
    }

    fn resolve_open(&self, st: &mut State, encoder: &mut wgpu::CommandEncoder) {
        let s = st.live.back_mut().expect("an open step is live");
        let (Some(slot), from, to) = (s.slot, s.resolved, s.queries) else {
            return;
        };
        if to <= from {
            return;
        }
        // The next resolve must start on a 256-byte boundary.
        s.resolved = to.next_multiple_of(RESOLVE_ALIGN_QUERIES);
        s.queries = s.resolved;
        let slot = &st.slots[slot];
        let end = to.min(slot.capacity);
        encoder.resolve_query_set(&slot.set, from..end, &slot.resolve, 8 * from as u64);
        encoder.copy_buffer_to_buffer(
            &slot.resolve,
            8 * from as u64,
            &slot.staging,
            8 * from as u64,
            8 * (end - from) as u64,
        );
    }

    /// Query indices for the open step: a slot taken on first use. `None` when the
    /// step has used its slot up (the interval goes untimed; a note says so).
    pub(crate) fn take_queries(&self, st: &mut State, n: u32) -> Option<(wgpu::QuerySet, u32)> {
        if !st.open {
            return None;
        }
        let slot = match st.live.back().and_then(|s| s.slot) {
            Some(slot) => slot,
            None => {
                let slot = match st
                    .slots
                    .iter()
                    .position(|s| !s.busy && s.capacity >= st.slot_capacity)
                {
                    Some(i) => i,
                    None => {
                        let capacity = st.slot_capacity;
                        let slot = Slot::new(&self.shared.device, &mut st.registry, capacity);
                        // A free slot too small for the current capacity is replaced where
                        // it stands (see reserve_timestamps); else the list grows.
                        match st.slots.iter().position(|s| !s.busy) {
                            Some(i) => {
                                st.slots[i] = slot;
                                i
                            }
                            None => {
                                st.slots.push(slot);
                                st.slots.len() - 1
                            }
                        }
                    }
                };
                st.slots[slot].busy = true;
                st.live.back_mut().expect("open").slot = Some(slot);
                slot
            }
        };
        let capacity = st.slots[slot].capacity;
        let s = st.live.back_mut().expect("open");
        if s.queries + n > capacity {
            // Grow next time: later slots are made big enough for this step.
            st.slot_capacity = st
                .slot_capacity
                .max(capacity * 2)
                .min(wgpu::QUERY_SET_MAX_QUERIES);
            let note = format!(
                "a step needed more than {capacity} timestamps: its later intervals were not timed \
                 (reserve_timestamps avoids this)"
            );
            if !st.notes.contains(&note) {
                st.notes.push(note);
            }
            return None;
        }
        let first = s.queries;
        s.queries += n;
        Some((st.slots[slot].set.clone(), first))
    }

    /// Reads the ticks of ended steps whose readback has arrived, freeing their slots.
    /// With `block`, waits for every ended step's ticks.
    pub(crate) fn collect_ticks(&self, st: &mut State, block: bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        for i in 0..st.live.len() {
            let Some(rx) = &st.live[i].mapped else {
                continue;
            };
            let result = if block {
                loop {
                    match rx.recv_timeout(Duration::from_millis(1)) {
                        Ok(r) => break Some(r),
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                            if Instant::now() < deadline =>
                        {
                            let _ = self.shared.device.poll(wgpu::PollType::Poll);
                        }
                        Err(_) => break Some(Err(wgpu::BufferAsyncError)),
                    }
                }
            } else {
                rx.try_recv().ok()
            };
            let Some(result) = result else { continue };
            let slot_index = st.live[i].slot.expect("a mapped step has a slot");
            let queries = st.live[i].queries as usize;
            let ticks = match result {
                Ok(()) => {
                    let slot = &st.slots[slot_index];
                    let ticks = match slot
                        .staging
                        .slice(..8 * queries.max(1) as u64)
                        .get_mapped_range()
                    {
                        Ok(range) => range
                            .chunks_exact(8)
                            .take(queries)
                            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                            .collect(),
                        Err(_) => Vec::new(),
                    };
                    slot.staging.unmap();
                    ticks
                }
                Err(_) => {
                    let note =
                        "a step's timestamps could not be read back: its GPU times are missing"
                            .to_string();
                    if !st.notes.contains(&note) {
                        st.notes.push(note);
                    }
                    Vec::new()
                }
            };
            st.slots[slot_index].busy = false;
            let s = &mut st.live[i];
            s.mapped = None;
            s.slot = None;
            if st.origin_ticks.is_none() {
                st.origin_ticks = ticks.iter().copied().filter(|&t| t != 0).min();
            }
            st.live[i].readback_ticks = Some(ticks);
        }
    }

    /// Decodes and closes, in order, the ended steps that can be: those finished by the
    /// program, and all up to `force_upto` (whose completion then is their end).
    pub(crate) fn finalize(
        &self,
        st: &mut State,
        force_upto: Option<u32>,
    ) -> Result<(), RecordError> {
        let forced = |id: u32| force_upto.is_some_and(|f| id <= f);
        if st.live.iter().any(|s| forced(s.id) && s.mapped.is_some()) {
            self.collect_ticks(st, true);
        }
        while let Some(front) = st.live.front() {
            let force = forced(front.id);
            // A step whose result the program takes waits for `step_finished` (its wall
            // time ends there); a plain step closes once it ended and its ticks are in.
            if front.ended.is_none() || (front.keep_result && front.finished.is_none() && !force) {
                break;
            }
            if front.mapped.is_some() {
                let block = force || front.keep_result;
                self.collect_ticks(st, block);
                if st.live.front().is_some_and(|f| f.mapped.is_some()) {
                    break;
                }
            }
            let rec = st.live.pop_front().expect("front exists");
            let done = self.close(st, rec);
            crate::capture::on_close(st, &done);
            if done.rec.keep_result {
                st.results.insert(done.rec.id, done.result());
            }
            // Only recorded steps wait for the profile; the others are done with.
            if done.rec.recorded {
                st.done.push_back(done);
            }
        }
        Ok(())
    }

    fn close(&self, st: &mut State, mut rec: StepRec) -> DoneStep {
        let completion = rec.finished.or(rec.ended).expect("an ended step");
        let from = match st.last_completion {
            Some(prev) if prev > rec.begin => prev,
            _ => rec.begin,
        };
        st.last_completion = Some(completion);
        let wall_ns = completion.saturating_duration_since(from).as_nanos() as u64;
        let ticks = rec.readback_ticks.take().unwrap_or_default();
        let clock = TickClock {
            origin: st.origin_ticks.unwrap_or(0),
            period_ns: self.shared.period_ns,
        };
        let passes: Vec<_> = rec
            .passes
            .iter()
            .map(|p| {
                (
                    p.queries,
                    p.first_dispatch as usize..(p.first_dispatch + p.dispatches) as usize,
                )
            })
            .collect();
        let dispatch_queries: Vec<_> = rec.dispatches.iter().map(|d| d.queries).collect();
        let (pass_times, dispatch_times) = if ticks.is_empty() {
            (
                vec![Default::default(); rec.passes.len()],
                vec![Default::default(); rec.dispatches.len()],
            )
        } else {
            decode(&ticks, clock, &passes, &dispatch_queries)
        };
        let valid: Vec<u64> = pass_times
            .iter()
            .filter_map(|t| t.gpu.map(|s| s.duration_ns()))
            .collect();
        let gpu_busy_ns = (!valid.is_empty()).then(|| valid.iter().sum());
        let (id, begin) = (rec.id, rec.begin);
        self.push_span(st, "step", begin, completion, Some(id), rec.name.as_deref());
        DoneStep {
            rec,
            wall_ns,
            gpu_busy_ns,
            pass_times,
            dispatch_times,
        }
    }
}

fn has_unresolved(st: &State) -> bool {
    st.open
        && st
            .live
            .back()
            .is_some_and(|s| s.slot.is_some() && s.queries > s.resolved)
}
