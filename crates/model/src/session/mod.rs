//! One run session: everything between a command's options and a finished result.
//!
//! `profile`, `run`, `check` and `bench` each start from a [`Workload`] (the weights and
//! what they are: a synthetic preset or a GGUF file's description), and a session
//! returns what nobody has to patch afterwards:
//!
//! - [`profile`]: a decode run recorded into a finished [`gpuscope_trace::Profile`]:
//!   the workload described from the model, the kernel plan's settings, the warm-up,
//!   the prompt, the timing-off comparison, the ceilings embedded, and the capture
//!   ([`CaptureTarget`]) owned from its start to its directory ([`CaptureOutcome`]);
//! - [`generate`]: text generation, each token handed to the caller as it comes, with
//!   the same capture and the speeds measured.
//!
//! Signals and progress stay with the caller: it passes a stop flag and reads the
//! progress counter.

mod capture;
mod profile;
mod text;

pub use capture::{CaptureOutcome, CaptureTarget, CapturedStep};
pub use profile::{
    profile, profile_decode, ProfileOptions, ProfileRun, Warmup, AUTO_WARMUP_LIMIT,
    AUTO_WARMUP_MAX_STEPS, PREFILL_BATCH,
};
pub use text::{generate, Generation, GenerationRequest, Interrupted, WARMUP_STEPS};

use gpuscope_trace::WorkloadDesc;

use crate::load::LoadedModel;
use crate::weights::ModelWeights;

/// The model a session decodes: its weights, and what they are as profiles name it.
pub struct Workload<'w> {
    pub weights: &'w ModelWeights,
    /// `smollm2-135m (synthetic, seed 1)`, or a file's `general.name (file name)`.
    pub name: String,
    pub architecture: String,
    /// The weight formats, e.g. `q4_1 ×210, f32 ×61, q8_0 ×1`.
    pub formats: String,
}

impl<'w> Workload<'w> {
    /// Synthetic weights (their name says the preset and seed).
    pub fn synthetic(weights: &'w ModelWeights) -> Workload<'w> {
        Workload {
            weights,
            name: weights.name.clone(),
            architecture: "llama".into(),
            formats: weights.format_summary(),
        }
    }

    /// A GGUF file's model, named by its `general.name` and file name.
    pub fn file(model: &'w LoadedModel, path: &std::path::Path) -> Workload<'w> {
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Workload {
            weights: &model.weights,
            name: format!("{} ({file})", model.info.name),
            architecture: model.info.architecture.clone(),
            formats: model.info.formats.clone(),
        }
    }

    /// The profile's workload description, with the graph's shape and the settings.
    pub(crate) fn describe(
        &self,
        dispatches: u32,
        passes: u32,
        settings: std::collections::BTreeMap<String, String>,
    ) -> WorkloadDesc {
        let c = &self.weights.config;
        WorkloadDesc {
            name: self.name.clone(),
            architecture: self.architecture.clone(),
            weights: self.formats.clone(),
            params: c.params(),
            weight_bytes: self.weights.weight_bytes(),
            layers: c.n_layers,
            graph_dispatches_per_token: dispatches,
            graph_passes_per_token: passes,
            settings,
        }
    }
}
