//! gpuscope-trace: the trace model and its analysis.
//!
//! Plain data and pure functions, no GPU dependency: a [`Profile`] made on one machine is
//! read, analysed and rendered on any other.
//!
//! - [`profile`]: the data a run records (tokens, dispatch and pass events, counters).
//! - [`analysis`]: one module per question (token statistics, per-op and per-layer
//!   breakdowns, bottleneck).
//! - [`render`]: text reports from analysis results (rendering is kept apart from
//!   computing).
//! - [`io`]: reading and writing versioned profile files.

pub mod analysis;
pub mod counters;
pub mod io;
pub mod profile;
pub mod render;

pub use counters::Counters;
pub use profile::*;

use serde::{Deserialize, Serialize};

/// A `{major, minor}` format version carried by every file gpuscope writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormatVersion {
    pub major: u32,
    pub minor: u32,
}

impl std::fmt::Display for FormatVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}
