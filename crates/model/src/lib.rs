//! gpuscope-model: the workload gpuscope profiles — Llama-family decoding.
//!
//! - [`config`]: model shapes and the presets (`smollm2-135m`, `llama-1b`, `llama-8b`).
//! - [`synthetic`]: seeded random weights of a preset's shape, in any weight format.
//! - [`gpu`]: the GPU decoder (one graph, one submit and one readback per token).
//! - [`cpu`]: the CPU reference decoder, built from the ops' oracles.
//! - [`profile`]: a decode run recorded into a [`gpuscope_trace::Profile`].

pub mod config;
pub mod cpu;
pub mod error;
pub mod gpu;
pub mod profile;
pub mod synthetic;
pub mod weights;

pub use config::{LlamaConfig, Preset};
pub use cpu::CpuDecoder;
pub use error::ModelError;
pub use gpu::{DecoderOptions, GpuDecoder};
pub use profile::{profile_decode, ProfileOptions, ProfileRun};
pub use synthetic::synthetic_weights;
pub use weights::{ModelWeights, Tensor};
