//! Turning recorded steps into a [`Profile`]: the same plain data `gpuscope profile`
//! writes, so reports, diffs and exports read a program's profile like gpuscope's own.

use std::collections::HashMap;
use std::time::Instant;

use gpuscope_trace::{
    AdapterDesc, BufferRecord, CpuSpan, DispatchEvent, PassEvent, Profile, TimingInfo, TokenRecord,
    PROFILE_FORMAT,
};

use crate::error::RecorderError;
use crate::recorder::{Recorder, State};
use crate::registry::Registry;
use crate::step::DoneStep;

impl Recorder {
    /// The profile of the steps recorded since the last one was taken (waiting for
    /// their timestamps), leaving the recorder ready to record the next. Misuse the
    /// recorder could not attribute, or a step still open, is an error rather than a
    /// wrong profile.
    pub fn take_profile(&self) -> Result<Profile, RecorderError> {
        let mut st = self.state();
        if st.open {
            let id = st.live.back().map(|s| s.id).unwrap_or(0);
            return Err(RecorderError::Step(format!(
                "step {id} is still open: call end_step before taking the profile"
            )));
        }
        self.finalize(&mut st, Some(u32::MAX))?;
        if !st.misuse.is_empty() {
            return Err(RecorderError::Misuse(format!(
                "the profile would be wrong: {}",
                st.misuse.join("; ")
            )));
        }
        let profile = self.assemble(&mut st);
        st.setup = None;
        st.setup_wall_ns = None;
        st.profile_start = Instant::now();
        Ok(profile)
    }

    /// Removes and returns the CPU spans outside any step so far (the setup's: creations,
    /// uploads, phases a program recorded), for a program that restarts its profile after
    /// a warm-up but wants its setup in the profile it takes.
    pub fn take_setup_spans(&self) -> Vec<CpuSpan> {
        let mut st = self.state();
        let (setup, rest) = std::mem::take(&mut st.spans)
            .into_iter()
            .partition(|s| s.token.is_none());
        st.spans = rest;
        setup
    }

    /// Forgets the steps recorded so far (and the CPU spans, instrumentation counts and
    /// misuse seen with them): the next profile starts now. For a program that profiles
    /// several runs on one device.
    pub fn restart_profile(&self) {
        let mut st = self.state();
        for s in st.live.iter_mut() {
            s.recorded = false;
        }
        st.done.retain(|d| !d.rec.recorded);
        st.spans.clear();
        st.instrumentation = Default::default();
        st.misuse.clear();
        st.setup = None;
        st.setup_wall_ns = None;
        st.profile_start = Instant::now();
    }

    /// Ends recording: the profile of everything recorded (see
    /// [`Recorder::take_profile`]).
    pub fn finish(self) -> Result<Profile, RecorderError> {
        self.take_profile()
    }

    /// Ends recording and writes what was recorded into `dir`: `profile.json` (read by
    /// `gpuscope report`, `diff`...) and, when a capture was being made, `capture/`
    /// (read by `gpuscope inspect` and `replay`). Returns the profile.
    pub fn finish_into(self, dir: &std::path::Path) -> Result<Profile, RecorderError> {
        let io =
            |what: &str, e: &dyn std::fmt::Display| RecorderError::Capture(format!("{what}: {e}"));
        std::fs::create_dir_all(dir).map_err(|e| io(&format!("creating {}", dir.display()), &e))?;
        let (capturing, last) = {
            let st = self.state();
            (st.capturing.is_some(), st.outputs_of_last_steps as usize)
        };
        if capturing {
            let mut capture = self.end_capture(Default::default())?;
            let n = capture.steps();
            if last > 0 && n > 0 {
                capture.capture_outputs(n.saturating_sub(last)..n)?;
            }
            // The program writes here run after run: an older capture is replaced.
            capture.write(
                &dir.join("capture"),
                gpuscope_trace::capture::OnExisting::Replace,
            )?;
        }
        let profile = self.take_profile()?;
        let path = dir.join("profile.json");
        gpuscope_trace::io::save_profile(&path, &profile)
            .map_err(|e| io("writing the profile", &e))?;
        Ok(profile)
    }

    /// Plain-data description of the adapter and device.
    pub fn adapter_desc(&self) -> AdapterDesc {
        let info = &self.shared.info;
        AdapterDesc {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
            features: self
                .shared
                .features
                .iter_names()
                .map(|(n, _)| n.to_string())
                .collect(),
            max_storage_buffer_binding_size: self.shared.limits.max_storage_buffer_binding_size,
            max_buffer_size: self.shared.limits.max_buffer_size,
        }
    }

    fn assemble(&self, st: &mut State) -> Profile {
        let done: Vec<_> = std::mem::take(&mut st.done).into_iter().collect();
        let tokens = TokenIndex::of(&done);
        let events = events(st, &done);
        let cpu_spans = tokens.cpu_spans(std::mem::take(&mut st.spans));
        let buffers = tokens.buffers(&st.registry);
        let timing = &st.timing;
        Profile {
            format: PROFILE_FORMAT,
            tool: format!("gpuscope-record {}", env!("CARGO_PKG_VERSION")),
            adapter: self.adapter_desc(),
            timing: TimingInfo {
                mode: timing.mode,
                reason: timing.reason.clone(),
                timestamp_period_ns: self.shared.period_ns,
                sampling: timing.sampling.clone(),
            },
            workload: Default::default(),
            setup: st.setup.unwrap_or_else(|| self.counters()),
            setup_wall_ns: st.setup_wall_ns.unwrap_or(0),
            tokens: events.tokens,
            dispatches: events.dispatches,
            passes: events.passes,
            overhead: None,
            prompt: None,
            commit: None,
            incomplete: None,
            threads: st.thread_names.clone(),
            gpu_tracks: Vec::new(),
            cpu_spans,
            buffers,
            instrumentation: Some(std::mem::take(&mut st.instrumentation)),
            notes: st.notes.clone(),
            // `gpuscope report` falls back to the reading machine's cached ceilings of
            // the same adapter; the program's graph is not known ahead of its steps.
            ceilings: None,
            graph: None,
            warmup_tokens: None,
        }
    }
}

/// The profile's per-token records and events.
struct Events {
    tokens: Vec<TokenRecord>,
    dispatches: Vec<DispatchEvent>,
    passes: Vec<PassEvent>,
}

/// The closed steps as the profile's tokens, in order, with their passes and dispatches.
fn events(st: &State, done: &[DoneStep]) -> Events {
    let mut tokens = Vec::with_capacity(done.len());
    let n_dispatches = done.iter().map(|d| d.rec.dispatches.len()).sum();
    let mut dispatches = Vec::with_capacity(n_dispatches);
    let mut passes = Vec::new();
    let mut op_names: HashMap<u32, String> = HashMap::new();
    for (k, d) in done.iter().enumerate() {
        let k = k as u32;
        let (position, token_id) = match d.rec.token {
            Some(t) => (t.position, t.token_id),
            None => (k, 0),
        };
        tokens.push(TokenRecord {
            index: k,
            position,
            token_id,
            wall_ns: d.wall_ns,
            gpu_busy_ns: d.gpu_busy_ns,
            counters: d.rec.counters,
            cpu: d.rec.cpu,
            name: d.rec.name.clone(),
            other_counters: Default::default(),
            gpu_track: 0,
        });
        for (j, (p, t)) in d.rec.passes.iter().zip(&d.pass_times).enumerate() {
            passes.push(PassEvent {
                token: k,
                index: j as u32,
                name: st.names.get(p.name).to_string().into(),
                layer: p.layer,
                dispatches: p.dispatches,
                gpu: t.gpu,
                timestamp_issue: t.issue,
            });
        }
        for (i, (r, t)) in d.rec.dispatches.iter().zip(&d.dispatch_times).enumerate() {
            let name = |n: crate::Name, cache: &mut HashMap<u32, String>| {
                cache
                    .entry(n.0)
                    .or_insert_with(|| st.names.get(n).to_string())
                    .clone()
            };
            dispatches.push(DispatchEvent {
                token: k,
                index: i as u32,
                op: name(r.op, &mut op_names).into(),
                label: name(r.label, &mut op_names).into(),
                layer: r.layer,
                pass: r.pass,
                pipeline: st
                    .registry
                    .pipelines
                    .get(r.pipeline as usize)
                    .map(|p| p.name.clone())
                    .unwrap_or_else(|| "unknown".into())
                    .into(),
                workgroups: r.workgroups,
                bytes: r.cost.bytes,
                flops: r.cost.flops,
                cpu_encode_ns: r.cpu_encode_ns,
                gpu: t.gpu,
                timestamp_issue: t.issue,
            });
        }
    }
    Events {
        tokens,
        dispatches,
        passes,
    }
}

/// Step ids to token indices: the profile numbers its tokens from 0.
struct TokenIndex {
    token_of: HashMap<u32, u32>,
    first_recorded: Option<u32>,
}

impl TokenIndex {
    fn of(done: &[DoneStep]) -> TokenIndex {
        TokenIndex {
            token_of: done
                .iter()
                .enumerate()
                .map(|(k, d)| (d.rec.id, k as u32))
                .collect(),
            first_recorded: done.first().map(|d| d.rec.id),
        }
    }

    fn token(&self, step: Option<u32>) -> Option<u32> {
        step.and_then(|id| self.token_of.get(&id).copied())
    }

    /// The spans outside steps, and those of recorded steps with their token index.
    fn cpu_spans(&self, spans: Vec<CpuSpan>) -> Vec<CpuSpan> {
        spans
            .into_iter()
            .filter_map(|mut s| match s.token {
                None => Some(s),
                Some(id) => self.token_of.get(&id).map(|&k| {
                    s.token = Some(k);
                    s
                }),
            })
            .collect()
    }

    /// Every buffer with the tokens it was made and dropped in. A buffer made during an
    /// unrecorded step (a warm-up) counts as setup.
    fn buffers(&self, registry: &Registry) -> Vec<BufferRecord> {
        registry
            .buffers
            .iter()
            .map(|b| BufferRecord {
                label: b.label.clone(),
                kind: b.kind,
                bytes: b.raw.size(),
                created_token: self.token(b.created_step).filter(|_| {
                    self.first_recorded
                        .is_some_and(|f| b.created_step >= Some(f))
                }),
                dropped_token: self.token(b.dropped_step),
            })
            .collect()
    }
}
