//! `gpuscope profile [MODEL.gguf]`: arguments to a [`gpuscope_model::session`] profile
//! run (a synthetic model of a preset, or a file's weights), then the profile written and
//! its report printed.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::Instant;

use anyhow::anyhow;
use gpuscope_model::session::Workload;
use gpuscope_model::{synthetic_weights, CaptureTarget, ProfileOptions, ProfileRun};
use gpuscope_report::analysis::sampled::SAMPLES_WANTED;
use gpuscope_runtime::Gpu;

use super::common;
use crate::args::ProfileArgs;
use crate::exit::{Exit, PARTIAL_RUN};
use crate::interrupt::{Caught, Interrupt};

pub fn run(args: &ProfileArgs) -> Result<(), Exit> {
    if let Some(r) = &args.capture_tokens {
        let decoded = args.tokens.unwrap_or(DEFAULT_TOKENS);
        if r.end > decoded {
            return Err(anyhow!(
                "--capture-tokens {}..{}: only {decoded} tokens are decoded (set --tokens)",
                r.start,
                r.end,
            )
            .into());
        }
    }
    let capture = common::capture_target(
        args.capture.as_deref(),
        args.force,
        args.capture_data,
        args.capture_tokens.clone(),
    )?;
    match &args.model {
        Some(path) => profile_file(args, path, capture),
        None => profile_synthetic(args, capture),
    }
}

/// A synthetic model of `--preset` in `--weights`.
fn profile_synthetic(args: &ProfileArgs, capture: Option<CaptureTarget>) -> Result<(), Exit> {
    let (preset, format) = common::synthetic_shape(&args.preset, &args.weights)?;
    let config = preset.config();
    if args.first_token >= config.vocab {
        return Err(anyhow!(
            "--first-token {} is outside the vocabulary ({})",
            args.first_token,
            config.vocab
        )
        .into());
    }
    let gpu = Gpu::new(&args.device.gpu_options())?;
    let tokens = tokens_to_decode(args, &gpu, config.n_layers);
    eprintln!(
        "gpuscope: {} weights of {} ({} params), seed {} ...",
        format.name(),
        preset.name(),
        config.params(),
        args.seed
    );
    let made = Instant::now();
    let weights = synthetic_weights(&config, format, args.seed, preset.name());
    eprintln!(
        "gpuscope: weights made in {:.2} s; decoding {tokens} tokens",
        made.elapsed().as_secs_f64(),
    );
    let prompt = synthetic_prompt(args.prompt_tokens.unwrap_or(0), config.vocab);
    let options = options(args, &gpu, capture, prompt, args.first_token, tokens)?;
    profile(args, &gpu, &Workload::synthetic(&weights), options)
}

/// A GGUF file's model; with `--prompt` the recorded tokens continue from the prompt's
/// KV cache, without one they start from the BOS token at position 0.
fn profile_file(
    args: &ProfileArgs,
    path: &Path,
    capture: Option<CaptureTarget>,
) -> Result<(), Exit> {
    let (model, tokenizer, _) = common::load(path)?;
    let gpu = Gpu::new(&args.device.gpu_options())?;
    let tokens = tokens_to_decode(args, &gpu, model.weights.config.n_layers);
    let prompt = match &args.prompt {
        Some(p) => common::prompt_ids(&tokenizer, p, false)?,
        None => vec![tokenizer.bos.unwrap_or(0)],
    };
    common::warn_past_context(&model, prompt.len(), tokens);
    let first = prompt[0];
    let fed = if args.prompt.is_some() {
        prompt
    } else {
        Vec::new()
    };
    eprintln!(
        "gpuscope: tg: decoding {tokens} tokens after {} prompt tokens",
        fed.len()
    );
    let options = options(args, &gpu, capture, fed, first, tokens)?;
    profile(args, &gpu, &Workload::file(&model, path), options)
}

/// Tokens decoded without `--tokens`, unless timing is sampled.
const DEFAULT_TOKENS: u32 = 32;

/// A bound on the decode graph's dispatches per layer (5 in a Llama layer, with the
/// fusions on; the architectures' extra norms add some), plus the head's.
const DISPATCHES_PER_LAYER_BOUND: u32 = 6;

/// `--tokens`, else [`DEFAULT_TOKENS`]; with sampled timing, enough tokens for every
/// dispatch site to be sampled [`SAMPLES_WANTED`] times after a stride's worth of tokens
/// the steady-state detection may leave out (the estimate is a median per site: 32
/// tokens at a stride of 82, the 8B default on an H100, sampled a third of the sites
/// once and left the rest imputed).
fn tokens_to_decode(args: &ProfileArgs, gpu: &Gpu, layers: u32) -> u32 {
    if let Some(n) = args.tokens {
        return n;
    }
    let dispatches = layers
        .saturating_mul(DISPATCHES_PER_LAYER_BOUND)
        .saturating_add(8);
    match gpu.sampling_stride_for(dispatches) {
        Some(stride) => DEFAULT_TOKENS.max(stride.saturating_mul(SAMPLES_WANTED as u32 + 1)),
        None => DEFAULT_TOKENS,
    }
}

fn options(
    args: &ProfileArgs,
    gpu: &Gpu,
    capture: Option<CaptureTarget>,
    prompt: Vec<u32>,
    first_token: u32,
    tokens: u32,
) -> Result<ProfileOptions, Exit> {
    Ok(ProfileOptions {
        tokens,
        first_token,
        overhead: args.overhead,
        warmup: args.warmup,
        in_flight: args.in_flight as usize,
        prompt,
        plan: Some(args.kernels.plan(gpu)?),
        planted_slowdown: args.plant_slowdown.clone(),
        capture,
        ceilings: common::ceilings_of(gpu),
        ..Default::default()
    })
}

/// Runs the session with an interrupt handler installed (the run stops at the next
/// token and keeps what it measured), progress and the `--fault` hook beside it; then
/// writes what was measured and prints the report, and exits as the run ended: 4 after
/// a GPU fault, 128 + the signal after an interrupt, 1 when the capture could not be
/// written.
fn profile(
    args: &ProfileArgs,
    gpu: &Gpu,
    workload: &Workload,
    mut options: ProfileOptions,
) -> Result<(), Exit> {
    let interrupt = Interrupt::install()?;
    let measured = Arc::new(AtomicU32::new(0));
    options.stop = Some(interrupt.flag());
    options.progress = Some(measured.clone());
    let asked = options.tokens;
    let run = crate::watch::decoding(gpu, asked, &measured, &interrupt, args.fault, || {
        gpuscope_model::profile(gpu, workload, &options)
    })?;
    finish(args, run, interrupt.caught(), asked)
}

fn finish(
    args: &ProfileArgs,
    run: ProfileRun,
    caught: Option<Caught>,
    asked: u32,
) -> Result<(), Exit> {
    let ProfileRun {
        profile,
        error,
        capture,
    } = run;
    let capture_error = common::capture_result(capture);
    // Whatever happened, what was measured is written and shown before the error.
    save_and_print(args, &profile)?;
    let measured = format!("after {} of {} tokens", profile.tokens.len(), asked);
    let capture_error = match capture_error {
        // The run's own end is the error; the capture's is said on its own line.
        Some(c) if error.is_some() || caught.is_some() => {
            eprintln!(
                "gpuscope: no capture written: {}",
                crate::exit::one_line(&c)
            );
            None
        }
        other => other,
    };
    if let Some(e) = error {
        return Err(Exit {
            code: PARTIAL_RUN,
            error: anyhow::Error::new(e).context(format!("the run stopped {measured}")),
        });
    }
    if let Some(caught) = caught {
        return Err(caught.exit(&format!(
            "stopped {measured}; what was measured is written and shown"
        )));
    }
    match capture_error {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Writes `--json` / `--compact` / `--trace`, and prints the report.
fn save_and_print(args: &ProfileArgs, profile: &gpuscope_trace::Profile) -> Result<(), Exit> {
    if let Some(path) = &args.json {
        gpuscope_trace::io::save_profile(path, profile)?;
        eprintln!("gpuscope: profile written to {}", path.display());
    }
    if let Some(path) = &args.compact {
        gpuscope_trace::compact::save(path, profile)?;
        eprintln!("gpuscope: compact profile written to {}", path.display());
    }
    if let Some(path) = &args.trace {
        super::report::write_trace(path, profile, None)?;
    }
    std::io::stdout().write_all(gpuscope_report::render::render_text(profile).as_bytes())?;
    Ok(())
}

/// `n` prompt token ids spread over the vocabulary (never 0, which some tokenizers keep
/// for padding), the same for every run.
fn synthetic_prompt(n: u32, vocab: u32) -> Vec<u32> {
    (0..n)
        .map(|i| 1 + (u64::from(i) * 7919 % u64::from(vocab - 1)) as u32)
        .collect()
}
