//! What several commands share: loading a model file and its prompt, naming a synthetic
//! shape, the capture options, the ceilings of the adapter in use. Commands share these
//! through here, never through each other.

use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, Context};
use gpuscope_model::{load_gguf, CaptureOutcome, CaptureTarget, LoadedModel, Preset, Tokenizer};
use gpuscope_ops::WeightFormat;
use gpuscope_runtime::{Gpu, GpuOptions, TimingRequest};
use gpuscope_trace::capture::check_target;
use gpuscope_trace::TimingMode;

use crate::args::{on_existing, DeviceArgs, TimingArg};
use crate::exit::Exit;

/// Loads a model file and its tokenizer, printing what it is and any warnings; returns
/// the seconds it took.
pub(crate) fn load(path: &Path) -> Result<(LoadedModel, Tokenizer, f64), Exit> {
    let start = Instant::now();
    let model = load_gguf(path).with_context(|| format!("loading {}", path.display()))?;
    let tokenizer = Tokenizer::from_gguf(&model.gguf.file.metadata)
        .with_context(|| format!("the tokenizer of {}", path.display()))?;
    let secs = start.elapsed().as_secs_f64();
    let (i, c) = (&model.info, &model.weights.config);
    eprintln!(
        "gpuscope: {} ({}, {} layers, {:.0}M params, {}; {:.1} MB), mapped and read in {:.2} s",
        i.name,
        i.architecture,
        c.n_layers,
        c.params() as f64 / 1e6,
        i.formats,
        i.file_bytes as f64 / 1e6,
        secs
    );
    for w in &i.warnings {
        eprintln!("gpuscope: warning: {w}");
    }
    Ok((model, tokenizer, secs))
}

/// The prompt's token ids (in the model's chat template with `chat`).
pub(crate) fn prompt_ids(
    tokenizer: &Tokenizer,
    prompt: &str,
    chat: bool,
) -> Result<Vec<u32>, Exit> {
    let text = if chat {
        tokenizer.chat_prompt(prompt).ok_or_else(|| {
            anyhow!(
                "--chat: the model's chat template is none gpuscope knows (ChatML, Gemma, Llama 3, Phi-3, [INST])"
            )
        })?
    } else {
        prompt.to_string()
    };
    let ids = tokenizer.encode_prompt(&text)?;
    if ids.is_empty() {
        return Err(anyhow!(
            "the prompt is empty (and the model adds no BOS token): give --prompt some text"
        )
        .into());
    }
    Ok(ids)
}

/// Says on stderr when the prompt and the tokens to generate go past the context the
/// model was trained for (`<arch>.context_length`): the run proceeds, as llama.cpp's
/// would with a larger `-c`, but positions past it are outside what the model learned,
/// and a long prompt takes long to feed.
pub(crate) fn warn_past_context(model: &LoadedModel, prompt: usize, tokens: u32) {
    let trained = model.info.context_length;
    let total = (prompt as u64).saturating_add(u64::from(tokens));
    if total > u64::from(trained) {
        eprintln!(
            "gpuscope: warning: the prompt ({prompt} tokens) and {tokens} more make {total} positions, past the {trained} this model was trained for; its output past position {trained} is not what it learned"
        );
    }
}

/// The preset named `name`, or an error listing the known ones.
pub(crate) fn preset(name: &str) -> anyhow::Result<Preset> {
    Preset::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
        anyhow!(
            "unknown preset `{name}`: expected one of {}",
            names.join(", ")
        )
    })
}

/// `--preset` and `--weights` of a synthetic model.
pub(crate) fn synthetic_shape(
    preset_name: &str,
    weights: &str,
) -> Result<(Preset, WeightFormat), Exit> {
    let p = preset(preset_name)?;
    let format: WeightFormat = weights
        .parse()
        .map_err(|e| anyhow!("--weights {weights}: {e}"))?;
    Ok((p, format))
}

/// `--capture DIR` with its options, checked before the run (an existing capture needs
/// `--force`; a directory of the user's is never written among).
pub(crate) fn capture_target(
    dir: Option<&Path>,
    force: bool,
    data: bool,
    output_steps: Option<std::ops::Range<u32>>,
) -> Result<Option<CaptureTarget>, Exit> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    check_target(dir, on_existing(force)).context("--capture")?;
    Ok(Some(CaptureTarget {
        dir: dir.to_path_buf(),
        replace: force,
        data,
        output_steps,
    }))
}

/// Says what became of a capture; returns its error to report after the run's output.
pub(crate) fn capture_result(outcome: CaptureOutcome) -> Option<anyhow::Error> {
    match outcome {
        CaptureOutcome::NotAsked => None,
        CaptureOutcome::Written { dir, steps } => {
            eprintln!(
                "gpuscope: capture of {steps} steps written to {}",
                dir.display()
            );
            None
        }
        CaptureOutcome::Failed { dir, error } => Some(
            anyhow::Error::new(error)
                .context(format!("recording the capture to {}", dir.display())),
        ),
    }
}

/// This adapter's measured ceilings from the cache, to embed in a profile; or says on
/// stderr that there are none and what to run.
pub(crate) fn ceilings_of(gpu: &Gpu) -> Option<gpuscope_trace::Ceilings> {
    match super::ceilings::cached(&gpu.adapter_desc(), true) {
        Some((c, path)) => {
            eprintln!("gpuscope: using the measured ceilings in {path}");
            Some(c)
        }
        None => {
            eprintln!(
                "gpuscope: no measured ceilings for this adapter: run `gpuscope peak` once for rooflines and floors"
            );
            None
        }
    }
}

/// Device options for commands that generate or time rather than profile (`run`,
/// `bench`): with `--timing auto` no GPU timestamps (they cost up to half the
/// throughput on some drivers).
pub(crate) fn untimed_gpu_options(device: &DeviceArgs) -> GpuOptions {
    let mut options = device.gpu_options();
    if matches!(device.timing, TimingArg::Auto) {
        options.timing = TimingRequest::Exactly(TimingMode::Off);
    }
    options
}
