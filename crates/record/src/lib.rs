//! gpuscope-record: profile any wgpu program with a few changed lines.
//!
//! A [`Recorder`] wraps the `wgpu::Device` and `wgpu::Queue` a program made itself. The
//! program creates its shaders, pipelines, buffers and bind groups through the recorder
//! (the calls mirror wgpu's and return plain wgpu objects), opens compute passes through
//! it, and groups its work in steps. The recorder forwards every call unchanged and
//! watches: per-dispatch GPU times from timestamps (as the device allows: per dispatch,
//! sampled, per pass, or wall-clock only — said in the profile), counters (dispatches,
//! passes, submits, syncs, barriers inferred from the bindings' declared access,
//! resources created, bytes moved), CPU spans, GPU memory by kind. At the end it hands
//! back a [`gpuscope_trace::Profile`], the data `gpuscope report` prints, and, when
//! asked, a capture that `gpuscope inspect` and `gpuscope replay` read.
//!
//! gpuscope's own decoder goes through this same API (its runtime builds on it).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let instance = wgpu::Instance::default();
//! # let adapter = pollster::block_on(instance.request_adapter(&Default::default()))?;
//! // The program's own device, with the features it wants (timestamps if it wants GPU times).
//! let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
//!     required_features: gpuscope_record::features_for(Default::default()) & adapter.features(),
//!     ..Default::default()
//! }))?;
//! let rec = gpuscope_record::Recorder::new(&device, &queue, Default::default())?;
//!
//! // Creation goes through the recorder: it learns shaders, constants and bindings.
//! let module = rec.create_shader_module(wgpu::ShaderModuleDescriptor {
//!     label: Some("double"),
//!     source: wgpu::ShaderSource::Wgsl(
//!         "@group(0) @binding(0) var<storage, read_write> v: array<f32>;
//!          @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
//!              if (g.x < arrayLength(&v)) { v[g.x] = 2.0 * v[g.x]; } }".into(),
//!     ),
//! });
//! let pipeline = rec.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
//!     label: Some("double"), layout: None, module: &module, entry_point: Some("main"),
//!     compilation_options: Default::default(), cache: None,
//! });
//! let buffer = rec.create_buffer(&wgpu::BufferDescriptor {
//!     label: Some("v"), size: 4096, usage: wgpu::BufferUsages::STORAGE, mapped_at_creation: false,
//! });
//! let bind_group = rec.create_bind_group(&wgpu::BindGroupDescriptor {
//!     label: None, layout: &pipeline.get_bind_group_layout(0),
//!     entries: &[wgpu::BindGroupEntry { binding: 0, resource: buffer.as_entire_binding() }],
//! });
//!
//! for i in 0..10 {
//!     rec.begin_step(&format!("step {i}"))?;
//!     let mut encoder = device.create_command_encoder(&Default::default());
//!     {
//!         let mut pass = rec.begin_compute_pass(&mut encoder, &Default::default());
//!         pass.set_pipeline(&pipeline);
//!         pass.set_bind_group(0, &bind_group, &[]);
//!         pass.describe("double", "v *= 2", None, gpuscope_record::Cost { bytes: 8192, flops: 1024 });
//!         pass.dispatch_workgroups(16, 1, 1);
//!     }
//!     rec.submit([encoder.finish()]);
//!     rec.poll(wgpu::PollType::wait_indefinitely())?;
//!     rec.end_step()?;
//! }
//! let profile = rec.finish()?;
//! print!("{}", gpuscope_report::render::render_text(&profile));
//! # Ok(()) }
//! ```
//!
//! Modules: [`recorder`] (the device and queue wrapped, steps), [`pass`] (the
//! instrumented compute pass), [`timing`] (which timestamps a device allows and how
//! ticks become spans), `hazards` (barrier inference), [`capture`] (writing what was
//! recorded as a capture), [`reflect`](mod@reflect) (shader interfaces with naga).
//!
//! Versions: this crate builds on wgpu 30 (the workspace's `wgpu`); each gpuscope
//! release names the one wgpu version it supports, as wgpu-profiler does. Its public
//! types come from wgpu and `gpuscope-trace` only.

pub mod capture;
mod error;
mod hazards;
mod names;
pub mod pass;
mod profile;
pub mod recorder;
pub mod reflect;
mod registry;
mod slots;
mod step;
pub mod timing;
pub mod walk;

pub use capture::{Capture, CaptureOptions};
pub use error::RecorderError;
pub use names::Name;
pub use pass::{DispatchInfo, RecordingPass};
pub use recorder::{Recorder, RecorderOptions};
pub use reflect::{reflect, ShaderInterface};
pub use step::{Cost, DispatchSample, PassSample, StepId, StepResult};
pub use timing::{choose_timing, features_for, Timing, TimingRequest, AUTO_SAMPLING_STRIDE};

pub use gpuscope_trace::{MemoryKind, Profile, TimingMode};
pub use wgpu;

/// Bind groups per pipeline the recorder tracks (wgpu's default `max_bind_groups`).
pub const MAX_BIND_GROUPS: usize = 4;
