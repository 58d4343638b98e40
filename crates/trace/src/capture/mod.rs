//! Captures: every GPU command a run issued, as plain data that replays anywhere.
//!
//! A capture is a directory (the candle `wgpu_debug` workflow, taken further):
//!
//! | file | holds |
//! |---|---|
//! | `manifest.json` | format version, tool, adapter (features, limits), workload, the list of every other file with its length and hash |
//! | `commands.json` | shaders, override-constant sets, bind group layouts, pipelines, buffers, bind groups |
//! | `stream.json` | the dispatch graphs, the buffers read back per step, and the ordered steps: uploads, the graph run, measurements |
//! | `data.json` | (with `--capture-data`) each buffer's contents before the first step, the outputs of each dispatch of the chosen steps |
//! | `shaders/<name>.wgsl` | WGSL sources, as built (edit a copy and pass it to `replay --substitute`) |
//! | `blobs/*.bin` | binary data: uploads, buffer contents, outputs |
//! | `<name>_measurements.json`, `<name>_shaders.json`, `<name>_used_consts.json`, `<name>_used_pipelines.json` | the four views candle's `wgpu_debug` users know ([`views`]); derived, never read back |
//!
//! Binary data lives in blob files, referenced by a [`BlobSlice`] (file, start, length);
//! the manifest holds each file's length and FNV-1a hash ([`blob`]), so a truncated or
//! altered file is named when read. Reading ([`read_capture`]) checks the version first,
//! then every file's presence, length and hash (large data blobs: length at load, hash
//! when their bytes are read), then every cross-reference ([`validate`]).
//!
//! # Format changelog
//!
//! - 1.0: first version.
//! - 1.1: `manifest.json` `incomplete` (optional): the run was stopped (an interrupt, a
//!   GPU fault) and the capture holds the steps completed before it, with why.
//!
//! A reader accepts any capture with the same major version (newer minors may add
//! fields, which older readers ignore) and refuses another major with a message naming
//! both versions.

pub mod bench;
pub mod blob;
pub mod budget;
pub mod error;
pub mod model;
pub mod packed;
pub mod read;
pub mod source;
pub mod target;
pub mod validate;
pub mod views;
pub mod write;

pub use bench::{CommandBench, Comparison, Mismatch, PerCommandReport, TimingClock};
pub use blob::{fnv1a64, BlobSlice, FileEntry};
pub use budget::{check_budget, OverBudget, ReplayLimits, ReplayMemory};
pub use error::CaptureError;
pub use model::*;
pub use read::{read_capture, read_capture_from};
pub use source::{CaptureSource, DirSource, MemSource};
pub use target::{check_target, OnExisting};
pub use write::CaptureWriter;

use crate::FormatVersion;

/// The capture format this build writes.
pub const CAPTURE_FORMAT: FormatVersion = FormatVersion { major: 1, minor: 1 };

/// File names inside a capture directory.
pub mod files {
    pub const MANIFEST: &str = "manifest.json";
    pub const COMMANDS: &str = "commands.json";
    pub const STREAM: &str = "stream.json";
    pub const DATA: &str = "data.json";
}
