//! Captures: record every GPU command a run issues, rebuild it on any adapter, replay it.
//!
//! The format is plain data in [`gpuscope_trace::capture`]; this module connects it to
//! wgpu:
//!
//! - [`CaptureRecorder`] ([`record`]): a decoder's graph is built once and re-encoded
//!   every step, so a capture is the graph (shaders, pipelines, buffers, bind groups,
//!   dispatches) recorded once, plus each step's uploads (caught by a tap in
//!   [`crate::StepRunner::submit`], off unless a capture is running) and measurements.
//!   With data, every bound buffer is read back before the first recorded step, and the
//!   outputs of chosen steps are recorded by a second, untimed run of those steps
//!   dispatch by dispatch ([`walk`]), never inside the timed run.
//! - [`rebuild()`]: the capture's resources created again on a [`crate::Gpu`], optionally
//!   with edited kernels ([`Substitution`], checked with naga before anything runs).
//! - [`replay_stream`]: the whole stream through a [`crate::StepRunner`], producing a
//!   [`gpuscope_trace::Profile`] with the same counters as the live run.
//! - [`compare_outputs`]: the recorded steps run again from the captured contents, each
//!   output compared with the recorded one.
//! - [`bench_commands`] ([`bench`]): each unique command timed alone.

pub mod bench;
mod error;
pub mod rebuild;
pub mod record;
pub mod reflect;
pub mod replay;
mod tap;
pub mod walk;

pub use bench::{bench_commands, BenchOptions};
pub use error::{RecordError, ReplayError};
pub use rebuild::{rebuild, Rebuilt};
pub use record::{CaptureRecorder, StepRecord};
pub use reflect::{reflect, ShaderInterface};
pub use replay::{compare_outputs, replay_stream, Substitution};
pub use tap::{StepTap, TappedStep};
