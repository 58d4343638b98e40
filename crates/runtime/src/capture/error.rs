//! Errors of recording and replaying captures.

use std::path::PathBuf;

use gpuscope_trace::capture::CaptureError;

use crate::error::GpuError;

/// Recording a capture of a decoder run failed ([`super::CaptureRecorder`]).
#[derive(Debug, thiserror::Error)]
pub enum CaptureRecordError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("shader `{shader}` cannot be reflected for the capture: {message}")]
    Reflect { shader: String, message: String },
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// An edited kernel that does not fit the recorded commands; nothing was run.
    #[error("--substitute {shader}={}: {message}; nothing was run", file.display())]
    Substitute {
        shader: String,
        file: PathBuf,
        message: String,
    },
    #[error("{0}")]
    Invalid(String),
}
