//! Recording a capture of a decoder run: the recorder's capture
//! ([`gpuscope_record::Recorder::begin_capture`]), with the steps of a [`Graph`] run by
//! a [`crate::StepRunner`]. The decoder's capture is made exactly as any program's.
//!
//! Usage (what `gpuscope profile --capture` does):
//!
//! 1. [`CaptureRecorder::new`] after the graph is built (and after warm-up steps, which
//!    are not recorded);
//! 2. [`CaptureRecorder::begin`] just before the first recorded step: with data, every
//!    buffer is read back now (its contents before the recorded steps, outside the
//!    timed run);
//! 3. the timed steps run as usual;
//! 4. [`CaptureRecorder::end`] with each step's record, in order;
//! 5. optionally [`CaptureRecorder::capture_outputs`]: the chosen steps run again from
//!    the captured contents, dispatch by dispatch with a readback after each — a second,
//!    untimed run (the kernels are deterministic, so the outputs are the timed run's);
//!    it overwrites the buffers' contents;
//! 6. [`CaptureRecorder::write`].

use std::ops::Range;
use std::path::Path;

use gpuscope_record::{Capture, CaptureOptions};
use gpuscope_trace::capture::OnExisting;
use gpuscope_trace::WorkloadDesc;

use crate::capture::error::CaptureRecordError;
use crate::device::Gpu;
use crate::dispatch::Graph;
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
    workload: WorkloadDesc,
    capture: Option<Capture>,
}

fn recorder_error(e: gpuscope_record::RecorderError) -> CaptureRecordError {
    CaptureRecordError::Invalid(e.to_string())
}

impl CaptureRecorder {
    /// Prepares a capture named `name` of steps of `graph` (the recorder learns the
    /// graph's commands from the steps themselves).
    pub fn new(
        _gpu: &Gpu,
        _graph: &Graph,
        name: &str,
        workload: WorkloadDesc,
    ) -> Result<CaptureRecorder, CaptureRecordError> {
        Ok(CaptureRecorder {
            name: name.to_string(),
            workload,
            capture: None,
        })
    }

    /// Just before the first recorded step: starts the recorder's capture, reading every
    /// buffer back first when `with_data`.
    pub fn begin(&mut self, gpu: &Gpu, with_data: bool) -> Result<(), CaptureRecordError> {
        gpu.recorder()
            .begin_capture(CaptureOptions {
                name: self.name.clone(),
                with_data,
                outputs_of_last_steps: 0,
            })
            .map_err(recorder_error)
    }

    /// After the last recorded step: ends the capture; `steps` are the steps the
    /// caller recorded, which the capture must have seen.
    pub fn end(&mut self, gpu: &Gpu, steps: &[StepRecord]) -> Result<(), CaptureRecordError> {
        let capture = gpu
            .recorder()
            .end_capture(self.workload.clone())
            .map_err(recorder_error)?;
        if capture.steps() != steps.len() {
            return Err(CaptureRecordError::Invalid(format!(
                "the capture saw {} recorded steps but {} were recorded; every step between begin and end must be recorded",
                capture.steps(),
                steps.len()
            )));
        }
        self.capture = Some(capture);
        Ok(())
    }

    fn capture_mut(&mut self) -> Result<&mut Capture, CaptureRecordError> {
        self.capture
            .as_mut()
            .ok_or_else(|| CaptureRecordError::Invalid("the capture was not ended".into()))
    }

    /// Records the outputs of every dispatch of steps `range` (indices into the recorded
    /// steps) by running steps `0..range.end` again from the captured contents, the
    /// chosen ones dispatch by dispatch. Needs [`CaptureRecorder::begin`] with data.
    /// Leaves the buffers holding that run's results.
    pub fn capture_outputs(
        &mut self,
        _gpu: &Gpu,
        range: Range<usize>,
    ) -> Result<(), CaptureRecordError> {
        self.capture_mut()?
            .capture_outputs(range)
            .map_err(recorder_error)
    }

    /// Writes the capture directory (atomically); an existing capture at `dir` is
    /// replaced only with [`OnExisting::Replace`].
    pub fn write(&self, dir: &Path, on_existing: OnExisting) -> Result<(), CaptureRecordError> {
        self.capture
            .as_ref()
            .ok_or_else(|| CaptureRecordError::Invalid("the capture was not ended".into()))?
            .write(dir, on_existing)
            .map_err(recorder_error)
    }

    /// Marks the ended capture as holding only the steps completed before the run was
    /// stopped (see [`gpuscope_record::Capture::mark_incomplete`]).
    pub fn mark_incomplete(&mut self, why: &str) -> Result<(), CaptureRecordError> {
        self.capture_mut()?.mark_incomplete(why);
        Ok(())
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Steps recorded.
    pub fn steps(&self) -> usize {
        self.capture.as_ref().map_or(0, Capture::steps)
    }
}
