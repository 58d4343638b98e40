//! The step tap: while a capture is being recorded, each [`crate::StepRunner::submit`]
//! leaves a copy of its uploads and readback list here. Off, it costs one relaxed
//! atomic load per step.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::device::Gpu;
use crate::resources::GpuBuffer;

/// One submitted step as the tap saw it.
#[derive(Debug, Clone)]
pub struct TappedStep {
    /// (buffer or view, offset from the *underlying buffer's* start, bytes).
    pub uploads: Vec<(GpuBuffer, u64, Vec<u8>)>,
    pub readbacks: Vec<GpuBuffer>,
}

#[derive(Default)]
pub struct StepTap {
    on: AtomicBool,
    steps: Mutex<Vec<TappedStep>>,
}

impl StepTap {
    pub(crate) fn record(
        &self,
        uploads: &[(&GpuBuffer, u64, &[u8])],
        readbacks: &[(GpuBuffer, u64)],
    ) {
        if !self.on.load(Ordering::Relaxed) {
            return;
        }
        let step = TappedStep {
            uploads: uploads
                .iter()
                .map(|(b, off, data)| ((*b).clone(), b.offset() + off, data.to_vec()))
                .collect(),
            readbacks: readbacks.iter().map(|(b, _)| b.clone()).collect(),
        };
        self.steps.lock().unwrap().push(step);
    }
}

impl Gpu {
    /// Starts recording every step's uploads (for a capture).
    pub fn start_step_tap(&self) {
        self.tap.steps.lock().unwrap().clear();
        self.tap.on.store(true, Ordering::Relaxed);
    }

    /// Stops recording and returns the steps seen since [`Gpu::start_step_tap`].
    pub fn stop_step_tap(&self) -> Vec<TappedStep> {
        self.tap.on.store(false, Ordering::Relaxed);
        std::mem::take(&mut *self.tap.steps.lock().unwrap())
    }
}
