//! gpuscope-trace: the trace model — what a run records, and its files.
//!
//! Plain data, no GPU dependency: a [`Profile`] made on one machine (by gpuscope's own
//! runtime, a program using `gpuscope-record`, or the Vulkan layer) is read anywhere.
//! Analyses and renderers live one layer up, in `gpuscope-report`.
//!
//! - [`profile`]: the data a run records (tokens, dispatch and pass events, counters,
//!   CPU spans, buffers), with [`graph`] (the token graph's bindings) and
//!   [`ceilings`] (what `gpuscope peak` measured).
//! - [`io`]: reading and writing versioned profile files, JSON or [`compact`] (told
//!   apart by content), checked by [`consistency`]; [`atomic`] writes files whole.
//! - [`capture`]: captures (every GPU command of a run): the format, its reader,
//!   writer, views and the replay budget.
//! - [`check`]: the result of `gpuscope check` (every dispatch compared with a
//!   reference), with [`compare`] (the error measures and their limits).
//! - [`opstest`]: results of `gpuscope ops test | perf`; [`bench`](mod@bench): benchmark results
//!   with llama-bench's field names; [`tensors`]: tensor traces (`.npy` files).
//! - [`recording`]: what the Vulkan layer records inside a program it did not build
//!   (`gpuscope attach`), and the profile made from it.
//! - [`stats`]: the order statistics every layer shares (median, percentiles).
//! - [`version`]: the format-version check every versioned file goes through.
//!
//! ```
//! use gpuscope_trace::io;
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
//! assert_eq!(profile.workload.name, "demo");
//! assert!(profile.tokens.is_empty());
//! # Ok::<(), io::ProfileIoError>(())
//! ```

pub mod atomic;
pub mod bench;
pub mod capture;
pub mod ceilings;
pub mod check;
pub mod compact;
pub mod compare;
pub mod consistency;
pub mod counters;
#[cfg(feature = "fixtures")]
pub mod fixtures;
pub mod graph;
pub mod io;
pub mod name;
pub mod opstest;
pub mod profile;
pub mod recording;
pub mod stats;
pub mod tensors;
pub mod version;

pub use ceilings::{Ceilings, CeilingsIdentity, Measured};
pub use counters::Counters;
pub use graph::{Binding, GraphBuffer, GraphDesc, GraphDispatch};
pub use name::Name;
pub use profile::*;

use serde::{Deserialize, Serialize};

/// A `{major, minor}` format version carried by every file gpuscope writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormatVersion {
    pub major: u32,
    pub minor: u32,
}

/// The profile format this build writes (what a default [`Profile`] carries).
impl Default for FormatVersion {
    fn default() -> Self {
        profile::PROFILE_FORMAT
    }
}

impl std::fmt::Display for FormatVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}
