//! `gpuscope check`: run the same tokens on the GPU and on a reference path and compare
//! every dispatch's output, to find the first dispatch that goes wrong.
//!
//! - The tested path is the [`GpuDecoder`](crate::GpuDecoder)'s decode graph, run step by step with each
//!   dispatch's written bindings read back (`path`, built on the capture walker); with
//!   `serial`, a submit and a wait after every dispatch.
//! - The reference ([`Against`]) is the CPU (each dispatch's executor from
//!   [`gpuscope_ops::exec`], in f32 or f64), another adapter or backend (a second decoder
//!   there), or the same GPU run serially (a second decoder on the same device).
//! - For each output two errors ([`gpuscope_trace::check`]): **local**, the reference op
//!   run on the tested path's own inputs (a mirror of the GPU's buffers kept on the host,
//!   `host`), and **chained**, the reference fed its own previous outputs.
//! - Both paths decode the same tokens: the prompt's, then the tested GPU's greedy choice.
//!   So an argmax near tie on one side does not derail the rest of the comparison.
//! - The reference starts from the tested GPU's buffer contents read back before the first
//!   step (the same weight bytes, so the same dequantized weights).
//! - Options: tensor traces (`.npy` + `index.json`, `trace`), a breakpoint that writes
//!   one dispatch's tensors and a one-dispatch capture for `gpuscope replay`, and planted
//!   faults ([`Fault`]) that prove the comparison finds what it should.

mod host;
pub mod kernels;
mod path;
mod run;
pub mod select;
mod trace;

use std::path::PathBuf;

use gpuscope_ops::exec::ExecError;
use gpuscope_runtime::capture::CaptureRecordError;
use gpuscope_runtime::{GpuError, GpuOptions};
use gpuscope_trace::check::CheckReport;
use gpuscope_trace::compare::Thresholds;

pub use run::check;
pub use select::{BreakAt, Filter};

use crate::error::ModelError;

/// What the tested GPU is compared with.
#[derive(Debug, Clone)]
pub enum Against {
    /// The CPU executors of every dispatch.
    Cpu,
    /// Another adapter or backend (a second device).
    Gpu(GpuOptions),
    /// The same device, a submit and a wait after every dispatch.
    Serial,
}

/// The CPU reference's arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    F32,
    F64,
}

/// A planted fault, to prove the checks find it (tests and `--inject-fault`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// After dispatch `seq` runs, one element of its first output is changed on the GPU
    /// (before anything reads it): a kernel that writes a wrong value.
    CorruptOutput { seq: u64 },
}

#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Description of the model for the report (file name, or preset and format).
    pub model: String,
    /// Tokens fed first, one per step; after them the tested GPU's greedy choice.
    pub prompt: Vec<u32>,
    /// Steps (tokens) to check.
    pub tokens: u32,
    /// KV-cache rows of the decoders.
    pub max_ctx: u32,
    pub against: Against,
    pub precision: Precision,
    pub thresholds: Thresholds,
    /// Run the tested path serially (a submit and a wait after every dispatch).
    pub serial: bool,
    /// The device was opened with validation ([`gpuscope_runtime::validation`]): run
    /// serially and attach each validation message to the dispatch it followed.
    pub validate: bool,
    /// Write the selected dispatches' tensors here.
    pub trace_dir: Option<PathBuf>,
    /// Which dispatches to trace (all when `None`).
    pub filter: Option<Filter>,
    /// Stop after this dispatch; writes its tensors and a one-dispatch capture into
    /// `trace_dir`.
    pub break_at: Option<BreakAt>,
    pub fault: Option<Fault>,
    /// The tested GPU's kernel variants and fusions (`None`: the adapter's plan,
    /// [`crate::KernelPlan::for_adapter`]).
    pub plan: Option<crate::KernelPlan>,
}

impl CheckOptions {
    /// `tokens` steps of `model` from `prompt`, a KV cache of as many rows, against the
    /// CPU in f32 with the default limits and the adapter's plan; nothing traced, no
    /// breakpoint, no fault, not serial. Set the rest as fields.
    pub fn new(model: impl Into<String>, prompt: Vec<u32>, tokens: u32) -> CheckOptions {
        CheckOptions {
            model: model.into(),
            prompt,
            tokens,
            max_ctx: tokens,
            against: Against::Cpu,
            precision: Precision::F32,
            thresholds: Thresholds::default(),
            serial: false,
            validate: false,
            trace_dir: None,
            filter: None,
            break_at: None,
            fault: None,
            plan: None,
        }
    }
}

/// A finished check.
pub struct CheckRun {
    pub report: CheckReport,
    /// Where the tensors (and the breakpoint's capture) went.
    pub trace_dir: Option<PathBuf>,
    pub capture_dir: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error("CPU reference: {0}")]
    Exec(#[from] ExecError),
    #[error("writing the breakpoint's capture: {0}")]
    Capture(#[from] CaptureRecordError),
    #[error("{what} {path}: {message}")]
    Io {
        what: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("the GPU failed at dispatch {label} (token {token}, seq {seq}): {source}")]
    AtDispatch {
        token: u32,
        seq: u64,
        label: String,
        source: GpuError,
    },
}
