//! Results of replaying a capture: per-command benchmarks and output comparisons, as
//! plain data (the runtime measures, `gpuscope-report`'s `render::capture` prints).

use serde::{Deserialize, Serialize};

use crate::profile::AdapterDesc;

/// What timed the per-command benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimingClock {
    /// GPU timestamps at the start and end of a pass holding only the command.
    GpuTimestamps,
    /// CPU wall time around a submit and a wait (the adapter has no timestamps):
    /// includes submit and sync overhead.
    WallClockWithSync,
}

/// `replay --per-command`: each unique command timed in isolation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerCommandReport {
    pub capture: String,
    pub adapter: AdapterDesc,
    pub clock: TimingClock,
    /// Dispatches in the stream (the counts below sum to this).
    pub stream_dispatches: u64,
    /// Sum of `total_ns` over the commands.
    pub total_ns: u64,
    /// The stopping rule, e.g. "median moved < 2% over the last batch, at least 16
    /// samples, at most 256".
    pub method: String,
    /// Slowest (by `total_ns`) first.
    pub commands: Vec<CommandBench>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandBench {
    pub pipeline: String,
    pub op: String,
    /// The first label that ran it.
    pub label: String,
    pub bind_group: usize,
    pub workgroups: [u32; 3],
    /// Times it ran in the stream.
    pub count: u64,
    /// Valid samples taken (after warm-up); `rejected` zero or negative spans left out.
    pub samples: u32,
    pub rejected: u32,
    pub median_ns: u64,
    pub p10_ns: u64,
    pub p90_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Whether the median settled before the sample cap.
    pub stable: bool,
    /// `median_ns × count`.
    pub total_ns: u64,
    /// `total_ns` as a percentage of the report's total.
    pub share_percent: f64,
}

/// Replaying with captured data: each captured output compared with the recorded one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// `None` for an exact (bitwise) comparison; else the tolerance on f32 words:
    /// `|a - b| <= tol * max(1, |b|)`.
    pub tolerance: Option<f32>,
    pub steps: Vec<usize>,
    /// Outputs compared (one per read-write binding per dispatch).
    pub outputs_compared: u64,
    pub outputs_mismatched: u64,
    /// The first output that differs, in stream order.
    pub first_mismatch: Option<Mismatch>,
    /// Shaders replaced (`--substitute`).
    pub substituted: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    pub step: usize,
    /// Index of the dispatch within its step.
    pub dispatch: usize,
    pub label: String,
    pub pipeline: String,
    pub binding: u32,
    pub buffer_label: String,
    /// Index of the first differing 4-byte word.
    pub first_word: u64,
    pub words_differing: u64,
    /// The first differing word, as recorded and as replayed (f32 and hex).
    pub expected: u32,
    pub found: u32,
    pub max_abs_diff: f64,
}
