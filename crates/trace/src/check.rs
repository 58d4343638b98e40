//! The result of `gpuscope check`: every dispatch of every checked token, each output
//! compared with the reference twice — **local** (the reference op run on the tested
//! path's own inputs) and **chained** (each path fed its own previous outputs).
//!
//! Plain data, written as JSON by `check --json`; `gpuscope_report::analysis::divergence` finds
//! the first divergent dispatch and the error growth per layer, `gpuscope_report::render::check`
//! prints them.
//!
//! Format changelog (`CHECK_FORMAT`):
//! - 1.0: first version.

use serde::{Deserialize, Serialize};

use crate::compare::{TensorError, Thresholds};
use crate::FormatVersion;

pub const CHECK_FORMAT: FormatVersion = FormatVersion { major: 1, minor: 0 };

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    pub format: FormatVersion,
    pub tool: String,
    /// The path under test (an adapter description).
    pub subject: String,
    /// What it is compared with: `cpu`, an adapter, `serial`.
    pub reference: String,
    /// The reference's arithmetic: `f32` or `f64` (a GPU reference is `f32`).
    pub precision: String,
    /// The model (file name or preset and weight format).
    pub model: String,
    /// The token fed at each checked step.
    pub tokens: Vec<u32>,
    pub thresholds: Thresholds,
    /// Every checked dispatch, in the order they ran.
    pub dispatches: Vec<DispatchCheck>,
    /// `--break-at`: the run stopped after this dispatch (its `seq`).
    #[serde(default)]
    pub stopped_at: Option<u64>,
    /// Things the user should know that are not errors (e.g. a planted fault).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One dispatch of one token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchCheck {
    /// Position in the whole run (`--break-at N` counts these).
    pub seq: u64,
    /// Step (token) index.
    pub token: u32,
    /// Index within the step's graph.
    pub index: u32,
    pub layer: Option<u32>,
    /// Section (pass) name: `embed`, `L3`, `head`.
    pub section: String,
    pub op: String,
    pub label: String,
    pub shader: String,
    pub outputs: Vec<OutputCheck>,
    /// Validation messages attributed to this dispatch (`--validate`).
    #[serde(default)]
    pub validation: Vec<String>,
    /// Whether the kernel rounds its activations to int8 (its local limits:
    /// [`crate::compare::Thresholds::local_for_dispatch`]).
    #[serde(default)]
    pub int8_activations: bool,
}

/// One written binding of a dispatch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputCheck {
    pub binding: u32,
    /// The bound buffer's (or view's) label.
    pub buffer: String,
    /// Local error: `None` when the reference cannot run the op on the tested inputs.
    pub local: Option<TensorError>,
    pub chained: TensorError,
}
