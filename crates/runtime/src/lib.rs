//! gpuscope-runtime: an instrumented wgpu runtime.
//!
//! Every dispatch goes through one place ([`StepRunner::step`] or [`Gpu::run_once`]) that
//! encodes it, counts it, and — when the device supports it — times it with GPU
//! timestamps. Every buffer, bind group and pipeline is created through [`Gpu`] and
//! counted, so a profile can prove that steady-state decoding creates nothing.
//!
//! The flow for a workload:
//!
//! 1. [`Gpu::new`] picks an adapter and a [`gpuscope_trace::TimingMode`] (per-dispatch
//!    timestamps, per-pass timestamps, or wall-clock), and says why.
//! 2. The workload creates buffers, pipelines (cached by shader, entry point and override
//!    constants) and bind groups once, and builds a [`Graph`] of [`Dispatch`] nodes.
//! 3. A [`StepRunner`] runs the graph once per token: uploads, one submit, one readback
//!    that also carries the timestamps. [`step_events`] turns its samples into trace events.
//!
//! Results are plain data from `gpuscope-trace`; no wgpu types leak into profiles.
//!
//! [`capture`] records a run's commands to a capture and rebuilds, replays and
//! benchmarks them on any adapter.

pub mod capture;
mod create;
mod device;
mod dispatch;
mod error;
mod graph_desc;
mod peak;
mod pool;
mod resources;
mod step;
pub mod testing;
pub mod validation;

pub use device::{list_adapters, parse_backend, Gpu, GpuOptions, TimingRequest};
pub use dispatch::{grid_2d, Cost, Dispatch, Graph, Section};
pub use error::GpuError;
pub use gpuscope_record::AUTO_SAMPLING_STRIDE;
pub use graph_desc::graph_desc;
pub use peak::{
    cache_flush_bytes, cache_flush_dispatch, measure_ceilings, read_only_dispatch, PeakOptions,
};
pub use resources::{BindGroup, BufferId, GpuBuffer, Pipeline, ShaderSource};
pub use step::{
    one_pass_per_step, passes_per_step, step_events, DispatchSample, PassSample, PendingStep,
    StepOutput, StepRunner, MAX_IN_FLIGHT,
};

/// Size of the per-token step buffer: `array<u32, 4>` = `[pos, n_ctx, 0, 0]`.
pub const STEP_BUFFER_BYTES: u64 = 16;

pub use wgpu;
