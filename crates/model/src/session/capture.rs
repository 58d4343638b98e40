//! A session's capture, from start to write: the recorder begun before the first
//! recorded step, the steps handed to it, the outputs of the chosen steps decoded again,
//! marked incomplete when the run stopped early, and written into its directory.

use std::ops::Range;
use std::path::PathBuf;

use gpuscope_runtime::capture::{CaptureRecordError, CaptureRecorder, StepRecord};
use gpuscope_runtime::{Gpu, StepOutput};
use gpuscope_trace::capture::OnExisting;
use gpuscope_trace::WorkloadDesc;

use crate::decoder::GpuDecoder;

/// Where and what to capture (`--capture DIR [--capture-data] [--capture-tokens A..B]
/// [--force]`).
#[derive(Debug, Clone)]
pub struct CaptureTarget {
    pub dir: PathBuf,
    /// Replace an existing capture there (`--force`).
    pub replace: bool,
    /// Record every buffer's contents before the first recorded step.
    pub data: bool,
    /// Recorded steps whose dispatch outputs are recorded too (needs `data`), decoded
    /// again dispatch by dispatch after the timed run.
    pub output_steps: Option<Range<u32>>,
}

impl CaptureTarget {
    /// The capture's name: its directory's (the prefix of its candle-style views).
    pub fn name(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| !n.is_empty() && n != "." && n != "..")
            .unwrap_or_else(|| "capture".into())
    }

    fn on_existing(&self) -> OnExisting {
        if self.replace {
            OnExisting::Replace
        } else {
            OnExisting::Refuse
        }
    }
}

/// What became of a session's capture.
#[derive(Debug)]
pub enum CaptureOutcome {
    /// None was asked for.
    NotAsked,
    /// Written to `dir`, with this many steps.
    Written { dir: PathBuf, steps: usize },
    /// Recording or writing it failed (the run itself may have succeeded).
    Failed {
        dir: PathBuf,
        error: CaptureRecordError,
    },
}

/// One recorded step, as the capture's stream holds it.
#[derive(Debug, Clone)]
pub struct CapturedStep {
    pub position: u32,
    pub token_id: u32,
    pub output: StepOutput,
}

/// A capture in progress.
pub(crate) struct SessionCapture {
    target: CaptureTarget,
    recorder: Result<CaptureRecorder, CaptureRecordError>,
    steps: Vec<CapturedStep>,
}

impl SessionCapture {
    /// Begins recording `decoder`'s graph (its buffers' contents too with `data`).
    pub(crate) fn begin(
        gpu: &Gpu,
        decoder: &GpuDecoder,
        workload: WorkloadDesc,
        target: &CaptureTarget,
    ) -> SessionCapture {
        let recorder = CaptureRecorder::new(gpu, decoder.graph(), &target.name(), workload)
            .and_then(|mut r| r.begin(gpu, target.data).map(|()| r));
        SessionCapture {
            target: target.clone(),
            recorder,
            steps: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, step: CapturedStep) {
        self.steps.push(step);
    }

    /// Ends the stream, decodes the chosen steps again for their outputs, marks the
    /// capture incomplete when `incomplete` says why, and writes it.
    pub(crate) fn finish(self, gpu: &Gpu, incomplete: Option<&str>) -> CaptureOutcome {
        let SessionCapture {
            target,
            recorder,
            steps,
        } = self;
        let written = recorder.and_then(|mut r| write(&mut r, gpu, &target, &steps, incomplete));
        let dir = target.dir;
        match written {
            Ok(()) => CaptureOutcome::Written {
                dir,
                steps: steps.len(),
            },
            Err(error) => CaptureOutcome::Failed { dir, error },
        }
    }
}

fn write(
    recorder: &mut CaptureRecorder,
    gpu: &Gpu,
    target: &CaptureTarget,
    steps: &[CapturedStep],
    incomplete: Option<&str>,
) -> Result<(), CaptureRecordError> {
    let records: Vec<StepRecord> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| StepRecord {
            index: i as u32,
            position: s.position,
            token_id: s.token_id,
            output: &s.output,
        })
        .collect();
    recorder.end(gpu, &records)?;
    if let Some(r) = &target.output_steps {
        if r.end as usize > records.len() {
            return Err(CaptureRecordError::Invalid(format!(
                "--capture-tokens {}..{}: the run recorded only {} steps",
                r.start,
                r.end,
                records.len()
            )));
        }
        recorder.capture_outputs(gpu, r.start as usize..r.end as usize)?;
    }
    if let Some(why) = incomplete {
        recorder.mark_incomplete(why)?;
    }
    recorder.write(&target.dir, target.on_existing())
}
