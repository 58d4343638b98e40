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
//! - [`capture`]: captures (every GPU command of a run), their reader, views and
//!   inspection.
//!
//! ```
//! use gpuscope_trace::{analysis, io, render};
//!
//! // A profile as `gpuscope profile` writes it (here: a run that decoded nothing).
//! let json = r#"{
//!   "format": {"major": 1, "minor": 0}, "tool": "gpuscope 0.1.0",
//!   "adapter": {"name": "llvmpipe", "backend": "Vulkan", "device_type": "Cpu",
//!               "driver": "llvmpipe", "driver_info": "Mesa 22.3.6", "features": [],
//!               "max_storage_buffer_binding_size": 134217728, "max_buffer_size": 2147483648},
//!   "timing": {"mode": "off", "reason": "requested", "timestamp_period_ns": 1.0},
//!   "workload": {"name": "demo", "architecture": "llama", "weights": "q4_1", "params": 0,
//!                "weight_bytes": 0, "layers": 0, "graph_dispatches_per_token": 0,
//!                "graph_passes_per_token": 0},
//!   "setup": {"dispatches": 0, "passes": 0, "submits": 0, "syncs": 0, "barriers": 0,
//!             "buffers_created": 0, "bind_groups_created": 0, "pipelines_created": 0,
//!             "bytes_uploaded": 0, "bytes_downloaded": 0},
//!   "setup_wall_ns": 0, "tokens": [], "dispatches": [], "passes": [], "overhead": null
//! }"#;
//! let profile = io::profile_from_json(json)?;
//! let a = analysis::analyze(&profile);
//! assert_eq!(a.bottleneck.verdict, analysis::Verdict::NoTokens);
//! let report = render::render_text(&profile);
//! assert!(report.contains("Bottleneck: no tokens decoded"));
//! # Ok::<(), io::ProfileIoError>(())
//! ```

pub mod analysis;
pub mod capture;
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
