//! gpuscope-report: what a profile says, and the reports that say it.
//!
//! Pure functions over the trace model ([`gpuscope_trace`]), no GPU dependency: a
//! profile made anywhere — by gpuscope's own runtime, a program using
//! `gpuscope-record`, or the Vulkan layer — is analysed and rendered the same way.
//!
//! - [`analysis`]: one module per question (steady state, token statistics, per-op and
//!   per-layer breakdowns, roofline, timeline, memory, checklist, bottleneck, diff of two
//!   profiles, the regression gate); formulas in `docs/analysis.md`.
//! - [`render`]: reports from analysis results (rendering is kept apart from
//!   computing): text, Markdown, a self-contained HTML page, Perfetto traces, and the
//!   other commands' outputs (`check`, `bench`, `inspect`, `replay`, `peak`).
//! - [`inspect`]: what a capture holds and where its recorded time went.
//! - [`sweep`]: `bench --sweep` results with their roofline columns; [`tuning`]: the
//!   per-adapter kernel choice a sweep saves.
//! - [`cache`]: the on-disk cache of measured ceilings (and tuning) per adapter and
//!   driver.
//!
//! ```
//! use gpuscope_report::{analysis, render};
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
//! let a = analysis::analyze(&profile);
//! assert_eq!(a.bottleneck.verdict, analysis::Verdict::NoTokens);
//! let report = render::render_text(&profile);
//! assert!(report.contains("Bottleneck: no tokens decoded"));
//! # Ok::<(), io::ProfileIoError>(())
//! ```

pub mod analysis;
pub mod cache;
pub mod inspect;
pub mod render;
pub mod sweep;
pub mod tuning;
