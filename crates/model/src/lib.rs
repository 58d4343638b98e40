//! gpuscope-model: the workload gpuscope profiles — decoding Llama, Gemma 3, Qwen2/2.5,
//! Qwen3, Mistral and Phi-3 models.
//!
//! - [`config`]: model shapes and the presets (`smollm2-135m`, `llama-1b`, `llama-8b`,
//!   `gemma3-270m`, `qwen2.5-0.5b`, `qwen3-0.6b`, `mistral-7b`, `phi3-mini`, tiny ones);
//!   [`arch`]: what each architecture adds to Llama, as data.
//! - [`gguf`]: the GGUF reader (memory-mapped, hostile-input proof); [`load`]: its Llama
//!   mapping to weights; [`tokenizer`]: the file's tokenizer; [`test_model`]: the real
//!   model the tests fetch.
//! - [`synthetic`]: seeded random weights of a preset's shape, in any weight format;
//!   [`synth`] saves them as a GGUF file other engines load.
//! - [`decoder`]: the GPU decoder (one graph, one submit and one readback per token),
//!   built from its weights on the GPU (`gpu_weights`), its activations
//!   (`activations`), the decode graph (`decode_graph`) and, for prompts, the prefill
//!   graph (`prefill_graph`); [`plan`]: its kernel variants and fusions, per adapter and
//!   overridable.
//! - [`cpu`]: the CPU reference decoder, built from the ops' oracles.
//! - [`mod@generate`]: the generation loop (prompt, steps in flight, end of text,
//!   interrupts) that `run`, `profile`, `check` and `bench` share.
//! - [`check`]: every dispatch of the GPU graph compared with a reference path
//!   (`gpuscope check`).
//! - [`session`]: one run from options to a finished result: a profile (the workload
//!   described, the capture written, the ceilings embedded) or generated text.
//! - [`bench`](mod@bench): llama-bench's pp / tg / pg tests, timed on the wall clock.

mod activations;
pub mod arch;
pub mod bench;
pub mod check;
pub mod config;
pub mod cpu;
mod decode_graph;
pub mod decoder;
pub mod error;
pub mod generate;
pub mod gguf;
mod gpu_weights;
pub mod load;
pub mod plan;
mod planted;
mod prefill_graph;
pub mod presets;
pub mod session;
pub mod synth;
pub mod synthetic;
pub mod test_model;
pub mod tokenizer;
pub mod weights;

pub use arch::{Activation, ArchFeatures, Architecture};
pub use bench::{bench_decoder, run_bench_test, BenchTest};
pub use config::LlamaConfig;
pub use cpu::CpuDecoder;
pub use decoder::{DecoderOptions, GpuDecoder, PendingPrefill};
pub use error::ModelError;
pub use generate::{Ended, Flow, GenerateOptions, Generator, PromptDone, Step};
pub use load::{load_gguf, load_model, LoadError, LoadedModel, ModelInfo};
pub use plan::{Fusion, Fusions, GemvTuning, KernelPlan, LARGE_GEMV_WEIGHTS};
pub use planted::PlantedSlowdown;
pub use presets::Preset;
pub use session::{
    generate, profile, profile_decode, CaptureOutcome, CaptureTarget, Generation,
    GenerationRequest, ProfileOptions, ProfileRun, Warmup, Workload, PREFILL_BATCH,
};
pub use synthetic::synthetic_weights;
pub use tokenizer::{ChatFormat, Tokenizer, TokenizerError};
pub use weights::{ModelWeights, Tensor};
