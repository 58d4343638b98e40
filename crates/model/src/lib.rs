//! gpuscope-model: the workload gpuscope profiles — Llama-family decoding.
//!
//! - [`config`]: model shapes and the presets (`smollm2-135m`, `llama-1b`, `llama-8b`).
//! - [`gguf`]: the GGUF reader (memory-mapped, hostile-input proof); [`load`]: its Llama
//!   mapping to weights; [`tokenizer`]: the file's tokenizer; [`test_model`]: the real
//!   model the tests fetch.
//! - [`synthetic`]: seeded random weights of a preset's shape, in any weight format.
//! - [`gpu`]: the GPU decoder (one graph, one submit and one readback per token).
//! - [`cpu`]: the CPU reference decoder, built from the ops' oracles.
//! - [`profile`]: a decode run recorded into a [`gpuscope_trace::Profile`].

pub mod config;
pub mod cpu;
pub mod error;
pub mod gguf;
pub mod gpu;
pub mod load;
mod prefill;
pub mod profile;
pub mod synthetic;
pub mod test_model;
pub mod tokenizer;
pub mod weights;

pub use config::{LlamaConfig, Preset};
pub use cpu::CpuDecoder;
pub use error::ModelError;
pub use gpu::{DecoderOptions, GpuDecoder};
pub use load::{load_gguf, load_model, LoadError, LoadedModel, ModelInfo};
pub use profile::{
    profile_decode, profile_decode_captured, CaptureRequest, CapturedRun, ProfileOptions,
    ProfileRun,
};
pub use synthetic::synthetic_weights;
pub use tokenizer::{Tokenizer, TokenizerError};
pub use weights::{ModelWeights, Tensor};
