//! The [`Recorder`]: a program's device and queue, wrapped.
//!
//! Every method mirrors the wgpu call it stands for and forwards it unchanged; the
//! recorder only watches. It never fails a program's GPU work: misuse it cannot
//! attribute (a dispatch outside a step, an object it never saw) is counted, the work
//! still runs, and [`Recorder::finish`] reports it as an error instead of returning a
//! wrong profile.
//!
//! The wrapped calls live in one file per concern: `create` (shaders, pipelines,
//! buffers, bind groups), `queue` (uploads, copies, submits, polls), `steps` (a step's
//! life, from `begin_step` to its result) and `timestamps` (query slots, resolving,
//! reading ticks back). This module holds the state they share.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use gpuscope_trace::{Counters, CpuSpan, Instrumentation, TimingMode};

use crate::capture::state::{CaptureOptions, CaptureState};
use crate::error::RecorderError;
use crate::hazards::Hazards;
use crate::names::{Name, Names};
use crate::registry::Registry;
use crate::slots::Slot;
use crate::step::{DoneStep, StepRec, StepResult};
use crate::timing::{choose_timing, Timing, TimingRequest};

mod create;
mod queue;
mod steps;
mod timestamps;

/// How to record.
#[derive(Debug, Clone, Default)]
pub struct RecorderOptions {
    pub timing: TimingRequest,
    /// Timestamp queries per step to make room for up front (each slot is made on first
    /// use otherwise; a step that needs more than a slot holds grows it next time).
    pub timestamps_per_step: Option<u32>,
    /// Capture every step from the first one begun (with data read back just before
    /// it); [`Recorder::finish_into`] writes it.
    pub capture: Option<CaptureOptions>,
}

impl RecorderOptions {
    /// The finest timing the device allows, and a capture (with data) named `name` of
    /// every step: what `finish_into` needs to write a profile and a capture.
    pub fn with_capture(name: &str) -> RecorderOptions {
        RecorderOptions {
            capture: Some(CaptureOptions {
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
    pub(crate) capturing: Option<CaptureState>,
    /// Instrumented passes begun since the last submit (to tell uninstrumented command
    /// buffers apart).
    pub(crate) passes_since_submit: u64,
    /// The thread whose step is open.
    pub(crate) open_thread: Option<std::thread::ThreadId>,
    /// Results of steps begun with `begin_step_with`, until taken.
    pub(crate) results: HashMap<u32, StepResult>,
    /// A capture asked for in the options, started at the first step.
    pub(crate) pending_capture: Option<CaptureOptions>,
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
    ) -> Result<Recorder, RecorderError> {
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

    /// The stride a step of `dispatches` will be sampled with (auto fits it to the first
    /// step); `None` when dispatches are not sampled.
    pub fn sampling_stride_for(&self, dispatches: u32) -> Option<u32> {
        self.state().timing.stride_for(dispatches)
    }

    /// Switches the timing mode between steps (e.g. to measure what profiling costs).
    pub fn set_timing(&self, request: TimingRequest) -> Result<(), RecorderError> {
        let timing = choose_timing(request, self.shared.features, &self.shared.info)?;
        let mut st = self.state();
        if st.open {
            return Err(RecorderError::Step(
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
}
