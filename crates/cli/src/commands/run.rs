//! `gpuscope run MODEL.gguf`: generate text from a real model, printing it as it comes,
//! then load time and prompt-processing and generation speed; and `gpuscope profile
//! MODEL.gguf`, the synthetic report made from a real file's weights.
//!
//! Prompt processing on the GPU is batched: the prompt goes through
//! [`GpuDecoder::prefill`] in chunks of up to [`PREFILL_MAX_BATCH`] tokens (several-row
//! gemv kernels per weight format, one submit per chunk), and generation continues from
//! the KV cache. Two exceptions feed the prompt one token per decode step instead, and
//! the printed label says which was used: the CPU reference backend, and `--capture`,
//! whose recorder follows the decode graph's steps (a prefill runs a second graph that a
//! capture's stream cannot describe).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, Context};
use gpuscope_model::{
    load_gguf, profile_decode_captured, CpuDecoder, DecoderOptions, GpuDecoder, LoadedModel,
    ProfileOptions, Tokenizer,
};
use gpuscope_runtime::capture::{CaptureRecorder, StepRecord};
use gpuscope_runtime::{Gpu, GpuOptions, StepOutput, TimingRequest};
use gpuscope_trace::{TimingMode, WorkloadDesc};

use crate::args::{DeviceArgs, ProfileArgs, RunArgs, TimingArg};
use crate::exit::{Exit, PARTIAL_RUN};

/// Loads a model file and its tokenizer, printing what it is and any warnings.
fn load(path: &Path) -> Result<(LoadedModel, Tokenizer, f64), Exit> {
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

fn prompt_ids(tokenizer: &Tokenizer, prompt: &str, chat: bool) -> Result<Vec<u32>, Exit> {
    let text = if chat {
        tokenizer.chat_prompt(prompt).ok_or_else(|| {
            anyhow!(
                "--chat: the model's chat template is not ChatML, which is the one gpuscope knows"
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

/// One decoder behind both backends: feed a token (or continue from the last argmax).
enum Backend<'w> {
    Gpu(&'w Gpu, GpuDecoder),
    Cpu(CpuDecoder<'w>),
}

impl Backend<'_> {
    /// Decodes `token` at the next position; returns the greedy next token and, on the
    /// GPU, the step's measurements.
    fn step(
        &mut self,
        token: u32,
    ) -> Result<(u32, Option<StepOutput>), gpuscope_model::ModelError> {
        match self {
            Backend::Gpu(gpu, d) => {
                let s = d.step(gpu, Some(token))?;
                Ok((s.token, Some(s.output)))
            }
            Backend::Cpu(d) => Ok((d.step(token)?.token, None)),
        }
    }
}

/// `run --capture`: the recorder and every recorded step (position, token, output).
struct RunCapture {
    dir: std::path::PathBuf,
    recorder: CaptureRecorder,
    steps: Vec<(u32, u32, StepOutput)>,
    /// `--capture-tokens`: steps whose dispatch outputs are recorded too.
    output_steps: Option<std::ops::Range<u32>>,
}

impl RunCapture {
    fn start(
        args: &RunArgs,
        gpu: &Gpu,
        d: &GpuDecoder,
        model: &LoadedModel,
    ) -> Result<Option<RunCapture>, Exit> {
        let Some(dir) = &args.capture else {
            return Ok(None);
        };
        let c = &model.weights.config;
        let workload = WorkloadDesc {
            name: model.info.name.clone(),
            architecture: model.info.architecture.clone(),
            weights: model.info.formats.clone(),
            params: c.params(),
            weight_bytes: model.weights.weight_bytes(),
            layers: c.n_layers,
            graph_dispatches_per_token: d.graph().dispatch_count() as u32,
            graph_passes_per_token: d.graph().sections.len() as u32,
        };
        let mut recorder =
            CaptureRecorder::new(gpu, d.graph(), &super::profile::capture_name(dir), workload)
                .map_err(|e| anyhow::Error::new(e).context("starting the capture"))?;
        recorder
            .begin(gpu, args.capture_data)
            .map_err(|e| anyhow::Error::new(e).context("starting the capture"))?;
        Ok(Some(RunCapture {
            dir: dir.clone(),
            recorder,
            steps: Vec::new(),
            output_steps: args.capture_tokens.clone(),
        }))
    }

    fn finish(mut self, gpu: &Gpu) -> Result<(), Exit> {
        let records: Vec<StepRecord> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, (position, token_id, output))| StepRecord {
                index: i as u32,
                position: *position,
                token_id: *token_id,
                output,
            })
            .collect();
        let steps = records.len();
        let mut written = self.recorder.end(gpu, &records);
        if let (Ok(()), Some(r)) = (&written, self.output_steps.clone()) {
            if r.end as usize > steps {
                return Err(anyhow!(
                    "--capture-tokens {}..{}: the run recorded only {steps} steps",
                    r.start,
                    r.end
                )
                .into());
            }
            written = self
                .recorder
                .capture_outputs(gpu, r.start as usize..r.end as usize);
        }
        let written = written.and_then(|()| self.recorder.write(&self.dir));
        written.map_err(|e| {
            anyhow::Error::new(e)
                .context(format!("recording the capture to {}", self.dir.display()))
        })?;
        eprintln!(
            "gpuscope: capture of {} steps written to {}",
            records.len(),
            self.dir.display()
        );
        Ok(())
    }
}

/// `run` generates text, it does not profile: with `--timing auto` it takes no GPU
/// timestamps (they cost up to half the throughput on some drivers).
/// Largest prompt chunk one prefill call takes (buffers for this many rows are made at
/// setup; a shorter prompt gets buffers for its own length).
pub const PREFILL_MAX_BATCH: u32 = 256;

fn run_gpu_options(device: &DeviceArgs) -> GpuOptions {
    let mut options = device.gpu_options();
    if matches!(device.timing, TimingArg::Auto) {
        options.timing = TimingRequest::Exactly(TimingMode::Off);
    }
    options
}

pub fn run(args: &RunArgs) -> Result<(), Exit> {
    let (model, tokenizer, load_secs) = load(&args.model)?;
    let prompt = prompt_ids(&tokenizer, &args.prompt, args.chat)?;
    let max_ctx = prompt.len() as u32 + args.tokens;
    let gpu;
    let mut capture = None;
    let setup = Instant::now();
    let mut backend = if args.cpu {
        Backend::Cpu(CpuDecoder::new(&model.weights, max_ctx)?)
    } else {
        gpu = Gpu::new(&run_gpu_options(&args.device))?;
        let mut d = GpuDecoder::new(
            &gpu,
            &model.weights,
            DecoderOptions {
                max_ctx,
                read_logits: false,
            },
        )?;
        let a = gpu.adapter_desc();
        eprintln!("gpuscope: on {} ({})", a.name, a.backend);
        capture = RunCapture::start(args, &gpu, &d, &model)?;
        // With --capture the prompt stays one token per step (see the module doc).
        if capture.is_none() {
            d.enable_prefill(&gpu, (prompt.len() as u32).clamp(1, PREFILL_MAX_BATCH))?;
        }
        Backend::Gpu(&gpu, d)
    };
    let setup_secs = setup.elapsed().as_secs_f64();

    let pp_start = Instant::now();
    let mut next = 0;
    let batched_prompt = match &mut backend {
        Backend::Gpu(gpu, d) if d.prefill_max_batch() > 0 => {
            for chunk in prompt.chunks(d.prefill_max_batch() as usize) {
                next = d.prefill(gpu, chunk)?.token;
            }
            true
        }
        _ => {
            for (position, &t) in prompt.iter().enumerate() {
                let output;
                (next, output) = backend.step(t)?;
                if let (Some(c), Some(o)) = (&mut capture, output) {
                    c.steps.push((position as u32, next, o));
                }
            }
            false
        }
    };
    let pp_secs = pp_start.elapsed().as_secs_f64();

    let mut out = std::io::stdout().lock();
    let mut stream = tokenizer.stream();
    let tg_start = Instant::now();
    let mut generated = 0u32;
    let mut stop = None;
    // Prints `token` unless it ends the text; says whether to go on.
    let mut emit =
        |token: u32, generated: &mut u32, stop: &mut Option<&str>| -> Result<bool, Exit> {
            if tokenizer.is_end(token) && !args.ignore_eos {
                *stop = Some("end-of-sequence token");
                return Ok(false);
            }
            out.write_all(stream.push(token)?.as_bytes())?;
            out.flush()?;
            *generated += 1;
            Ok(*generated < args.tokens)
        };
    let partial = |e: gpuscope_model::ModelError, generated: u32| Exit {
        code: PARTIAL_RUN,
        error: anyhow::Error::new(e)
            .context(format!("generation stopped after {generated} tokens")),
    };
    if emit(next, &mut generated, &mut stop)? {
        match &mut backend {
            // Two steps in flight: the GPU feeds its own argmax to the next step, so
            // step N+1 is encoded while step N runs and N's token is printed.
            Backend::Gpu(gpu, d) => {
                let mut pending = std::collections::VecDeque::new();
                let mut submitted = 0u32;
                // The last token needs no decode step: its successor would not be printed.
                let steps = args.tokens - 1;
                loop {
                    while pending.len() < gpuscope_runtime::MAX_IN_FLIGHT && submitted < steps {
                        pending.push_back(d.submit(gpu, None).map_err(|e| partial(e, generated))?);
                        submitted += 1;
                    }
                    let Some(p) = pending.pop_front() else { break };
                    let position = d.position() - pending.len() as u32 - 1;
                    let step = d.finish(gpu, p).map_err(|e| partial(e, generated))?;
                    let token = step.token;
                    if let Some(c) = &mut capture {
                        c.steps.push((position, token, step.output));
                    }
                    if !emit(token, &mut generated, &mut stop)? {
                        break;
                    }
                }
                // Steps still in flight after an early stop (end of text) are finished
                // unprinted: a capture must see every step it saw submitted.
                while let Some(p) = pending.pop_front() {
                    let position = d.position() - pending.len() as u32 - 1;
                    let step = d.finish(gpu, p).map_err(|e| partial(e, generated))?;
                    if let Some(c) = &mut capture {
                        c.steps.push((position, step.token, step.output));
                    }
                }
            }
            Backend::Cpu(_) => loop {
                next = backend.step(next).map_err(|e| partial(e, generated))?.0;
                if !emit(next, &mut generated, &mut stop)? {
                    break;
                }
            },
        }
    }
    drop(emit);
    let mut out = std::io::stdout().lock();
    let tg_secs = tg_start.elapsed().as_secs_f64();
    writeln!(out)?;
    // Every submitted step is finished by now (in-flight steps drain before the loop ends).
    if let (Some(c), Backend::Gpu(gpu, _)) = (capture, &backend) {
        c.finish(gpu)?;
    }
    let rate = |n: usize, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
    let backend_name = if args.cpu { "CPU reference" } else { "GPU" };
    eprintln!(
        "gpuscope: load {:.2} s (file {:.2} s, {} setup {:.2} s)",
        load_secs + setup_secs,
        load_secs,
        backend_name,
        setup_secs
    );
    eprintln!(
        "gpuscope: prompt processing {} tokens in {:.2} s: {:.1} tok/s ({})",
        prompt.len(),
        pp_secs,
        rate(prompt.len(), pp_secs),
        if batched_prompt {
            format!("batched, {} tokens per submit at most", PREFILL_MAX_BATCH)
        } else if args.cpu {
            "one token per step".to_string()
        } else {
            "one token per step, each waited for: --capture records decode steps only".to_string()
        }
    );
    // Each generated token but the last cost one decode step (the first came from the
    // prompt's last step), so the rate counts the steps taken.
    let steps = generated.saturating_sub(1) as usize;
    eprintln!(
        "gpuscope: generation {} tokens in {:.2} s: {:.1} tok/s ({} decode steps, wall clock){}",
        generated,
        tg_secs,
        rate(steps, tg_secs),
        steps,
        stop.map(|s| format!("; stopped at the {s}"))
            .unwrap_or_default()
    );
    Ok(())
}

/// `gpuscope profile MODEL.gguf`: the profile report for a real model's weights.
pub fn profile_model(args: &ProfileArgs, path: &Path) -> Result<(), Exit> {
    if args.tokens == 0 {
        return Err(anyhow!("--tokens must be at least 1").into());
    }
    let (model, tokenizer, _) = load(path)?;
    let gpu = Gpu::new(&args.device.gpu_options())?;
    let prompt = match &args.prompt {
        Some(p) => prompt_ids(&tokenizer, p, false)?,
        None => vec![tokenizer.bos.unwrap_or(0)],
    };
    // With --prompt the recorded (generated) tokens continue from the prompt's KV cache;
    // without one they start from the BOS token at position 0.
    let fed = if args.prompt.is_some() {
        prompt.clone()
    } else {
        Vec::new()
    };
    eprintln!(
        "gpuscope: tg: decoding {} tokens after {} prompt tokens",
        args.tokens,
        fed.len()
    );
    let options = ProfileOptions {
        tokens: args.tokens,
        first_token: prompt[0],
        overhead: args.overhead,
        warmup: args.warmup,
        in_flight: args.in_flight as usize,
        prompt: fed,
    };
    if let Some(r) = &args.capture_tokens {
        if r.end > args.tokens {
            return Err(anyhow!(
                "--capture-tokens {}..{}: only {} tokens are decoded",
                r.start,
                r.end,
                args.tokens
            )
            .into());
        }
    }
    let captured = profile_decode_captured(
        &gpu,
        &model.weights,
        &options,
        super::profile::capture_request(args).as_ref(),
    )?;
    let capture_error = super::profile::write_capture(args.capture.as_deref(), captured.capture);
    let mut run = captured.run;
    let w = &mut run.profile.workload;
    w.name = format!(
        "{} ({})",
        model.info.name,
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    );
    w.architecture = model.info.architecture.clone();
    w.weights = model.info.formats.clone();
    if let Some(out) = &args.json {
        gpuscope_trace::io::save_profile(out, &run.profile)
            .with_context(|| format!("writing the profile to {}", out.display()))?;
        eprintln!("gpuscope: profile written to {}", out.display());
    }
    std::io::stdout().write_all(gpuscope_trace::render::render_text(&run.profile).as_bytes())?;
    if let (Some(e), None) = (capture_error, &run.error) {
        return Err(e.into());
    }
    if let Some(e) = run.error {
        return Err(Exit {
            code: PARTIAL_RUN,
            error: anyhow::Error::new(e).context(format!(
                "the run stopped after {} of {} tokens",
                run.profile.tokens.len(),
                args.tokens
            )),
        });
    }
    Ok(())
}
