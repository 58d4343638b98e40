//! Captures: record every GPU command a run issues, rebuild it on any adapter, replay it.
//!
//! The format is plain data in [`gpuscope_trace::capture`]; this module connects it to
//! wgpu:
//!
//! - [`CaptureRecorder`] ([`record`]): a decoder run's capture, made by the recorder
//!   ([`gpuscope_record::Recorder::begin_capture`]) as any program's is: the steps'
//!   graphs (deduplicated), uploads and measurements; with data, every buffer read back
//!   before the first recorded step, and the outputs of chosen steps recorded by a
//!   second, untimed run of those steps dispatch by dispatch, never inside the timed run.
//! - [`rebuild()`]: the capture's resources created again on a [`crate::Gpu`], optionally
//!   with edited kernels ([`Substitution`], checked with naga before anything runs:
//!   [`substitute`]).
//! - [`replay_stream`]: the whole stream through a [`crate::StepRunner`], producing a
//!   [`gpuscope_trace::Profile`] with the same counters as the live run.
//! - [`compare_outputs`]: the recorded steps run again from the captured contents, each
//!   output compared with the recorded one.
//! - [`bench_commands`] ([`bench`](mod@bench)): each unique command timed alone.

pub mod bench;
mod error;
pub mod progress;
pub mod rebuild;
pub mod record;
pub mod replay;
pub mod substitute;
pub mod walk;

pub use bench::{bench_commands, BenchOptions};
pub use error::{CaptureRecordError, ReplayError};
pub use gpuscope_record::reflect::{self, reflect, ShaderInterface};
pub use progress::ReplayProgress;
pub use rebuild::{rebuild, Rebuilt};
pub use record::{CaptureRecorder, StepRecord};
pub use replay::{compare_outputs, replay_limits, replay_stream};
pub use substitute::{check_substitution, Substitution};
