//! A step's life: begun (one open at a time), ended (its timestamps resolved and read
//! back asynchronously), finished by the program, then closed in order (ticks decoded,
//! wall time fixed) and its result kept until taken.

use std::time::Instant;

use super::{Recorder, State};
use crate::error::RecorderError;
use crate::step::{DoneStep, StepId, StepRec, StepResult, StepToken};
use crate::timing::{decode, TickClock};

impl Recorder {
    /// Opens a step; the passes, dispatches, submits and uploads until
    /// [`Recorder::end_step`] belong to it. An empty name leaves the step unnamed. It
    /// goes into the profile unless recording is off ([`Recorder::set_recording`]).
    ///
    /// One step is open at a time: steps do not nest, and a step begun on another
    /// thread while one is open waits for it to end (GPU work of one queue is ordered
    /// anyway; this keeps each step's counters its own).
    pub fn begin_step(&self, name: &str) -> Result<StepId, RecorderError> {
        self.begin(name, None)
    }

    /// [`Recorder::begin_step`] for a step that goes into the profile or not, whatever
    /// [`Recorder::set_recording`] says (warm-up steps, tool work), and whose result the
    /// caller will take with [`Recorder::step_result`] (it is kept until then).
    pub fn begin_step_with(&self, name: &str, recorded: bool) -> Result<StepId, RecorderError> {
        self.begin(name, Some(recorded))
    }

    fn begin(&self, name: &str, recorded: Option<bool>) -> Result<StepId, RecorderError> {
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
                return Err(RecorderError::Step(format!(
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
    pub fn end_step(&self) -> Result<StepId, RecorderError> {
        let mut st = self.state();
        if !st.open {
            return Err(RecorderError::Step("end_step() with no step open".into()));
        }
        if st.has_unresolved() {
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
        let token = StepToken { position, token_id };
        let mut st = self.state();
        if let Some(s) = st.live.iter_mut().find(|s| s.id == step.0) {
            s.token = Some(token);
        } else if let Some(d) = st.done.iter_mut().find(|d| d.rec.id == step.0) {
            d.rec.token = Some(token);
        }
    }

    /// The measurements of an ended step, waiting for its timestamps if they are not in
    /// yet (a wait of the recorder's own, not counted as the program's sync). A step
    /// begun with [`Recorder::begin_step_with`] keeps its result until it is taken here,
    /// whatever else happens (another thread taking a profile); a step begun with
    /// [`Recorder::begin_step`] has it until the profile is taken.
    pub fn step_result(&self, step: StepId) -> Result<StepResult, RecorderError> {
        let mut st = self.state();
        if st.live.iter().any(|s| s.id == step.0 && s.ended.is_none()) {
            return Err(RecorderError::Step(format!(
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
                RecorderError::Step(format!("step {} is unknown or already taken", step.0))
            })
    }

    /// Decodes and closes, in order, the ended steps that can be: those finished by the
    /// program, and all up to `force_upto` (whose completion then is their end).
    pub(crate) fn finalize(
        &self,
        st: &mut State,
        force_upto: Option<u32>,
    ) -> Result<(), RecorderError> {
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
            if let Some(capture) = st.capturing.as_mut() {
                capture.record_step(&st.names, &done);
            }
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
