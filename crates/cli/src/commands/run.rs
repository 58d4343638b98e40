//! `gpuscope run MODEL.gguf`: generate text from a real model, printing it as it comes,
//! then load time and prompt-processing and generation speed; and `gpuscope profile
//! MODEL.gguf`, the synthetic report made from a real file's weights.
//!
//! Prompt processing on the GPU is batched: the prompt goes through
//! [`GpuDecoder::prefill`] in chunks of up to [`PREFILL_BATCH`] tokens (several-row
//! gemv kernels per weight format, one submit per chunk), and generation continues from
//! the KV cache. Three exceptions feed the prompt one token per decode step instead, and
//! the printed label says which was used: adapters that are CPUs (their kernel plan's
//! gemv has no batched form; see [`GpuDecoder::prefill_method`]), the CPU reference
//! backend, and `--capture`,
//! whose recorder follows the decode graph's steps (a prefill runs a second graph that a
//! capture's stream cannot describe).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, Context};
use gpuscope_model::{
    load_gguf, profile_decode_captured, CpuDecoder, DecoderOptions, Ended, Flow, GenerateOptions,
    Generator, GpuDecoder, LoadedModel, ModelError, ProfileOptions, Tokenizer, PREFILL_BATCH,
};
use gpuscope_runtime::capture::{CaptureRecorder, StepRecord};
use gpuscope_runtime::{Gpu, GpuOptions, StepOutput, TimingRequest};
use gpuscope_trace::capture::check_target;
use gpuscope_trace::stats::percentile_f64;
use gpuscope_trace::{TimingMode, WorkloadDesc};

use crate::args::{on_existing, DeviceArgs, ProfileArgs, RunArgs, TimingArg};
use crate::exit::{Exit, PARTIAL_RUN};
use crate::interrupt::Interrupt;

/// Loads a model file and its tokenizer, printing what it is and any warnings.
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

pub(crate) fn prompt_ids(
    tokenizer: &Tokenizer,
    prompt: &str,
    chat: bool,
) -> Result<Vec<u32>, Exit> {
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

/// `run --capture`: the recorder and every recorded step (position, token, output).
struct RunCapture {
    dir: std::path::PathBuf,
    force: bool,
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
            graph_passes_per_token: gpuscope_runtime::passes_per_step(d.graph(), gpu.timing())
                as u32,
            settings: d.settings().clone(),
        };
        let mut recorder =
            CaptureRecorder::new(gpu, d.graph(), &super::profile::capture_name(dir), workload)
                .map_err(|e| anyhow::Error::new(e).context("starting the capture"))?;
        recorder
            .begin(gpu, args.capture_data)
            .map_err(|e| anyhow::Error::new(e).context("starting the capture"))?;
        Ok(Some(RunCapture {
            dir: dir.clone(),
            force: args.force,
            recorder,
            steps: Vec::new(),
            output_steps: args.capture_tokens.clone(),
        }))
    }

    /// Ends and writes the capture; `incomplete` says why the run stopped early.
    fn finish(mut self, gpu: &Gpu, incomplete: Option<&str>) -> Result<(), Exit> {
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
        if let (Ok(()), Some(why)) = (&written, incomplete) {
            written = self.recorder.mark_incomplete(why);
        }
        let written =
            written.and_then(|()| self.recorder.write(&self.dir, on_existing(self.force)));
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
pub(crate) fn run_gpu_options(device: &DeviceArgs) -> GpuOptions {
    let mut options = device.gpu_options();
    if matches!(device.timing, TimingArg::Auto) {
        options.timing = TimingRequest::Exactly(TimingMode::Off);
    }
    options
}

/// Decode steps `run` takes before the prompt (see [`run`]).
const RUN_WARMUP_STEPS: u32 = 2;

pub fn run(args: &RunArgs) -> Result<(), Exit> {
    if let Some(dir) = &args.capture {
        check_target(dir, on_existing(args.force)).context("--capture")?;
    }
    let (model, tokenizer, load_secs) = load(&args.model)?;
    let prompt = prompt_ids(&tokenizer, &args.prompt, args.chat)?;
    warn_past_context(&model, prompt.len(), args.tokens);
    if args.cpu {
        return run_cpu(args, &model, &tokenizer, &prompt, load_secs);
    }
    let max_ctx = (prompt.len() as u32).saturating_add(args.tokens);
    let interrupt = Interrupt::install()?;
    let setup = Instant::now();
    let gpu = Gpu::new(&run_gpu_options(&args.device))?;
    // With --capture the prompt goes one token per step (see the module doc).
    let prefill_batch = if args.capture.is_some() {
        0
    } else {
        PREFILL_BATCH
    };
    let plan = args.kernels.plan(&gpu)?;
    let decoder = GpuDecoder::with_plan(
        &gpu,
        &model.weights,
        DecoderOptions {
            max_ctx,
            read_logits: false,
        },
        plan,
    )?;
    let mut gen = Generator::from_decoder(
        &gpu,
        decoder,
        GenerateOptions {
            prefill_batch,
            stop: Some(interrupt.flag()),
            ..Default::default()
        },
        prompt.len() as u32,
    )?;
    // Decode steps before the prompt, the position then cleared (as `profile`'s warm-up):
    // the decode graph's first submissions pay one-time driver costs that would otherwise
    // land in the generation rate. Not with --capture, which records from a fresh decoder.
    if args.capture.is_none() {
        gen.warm_up(RUN_WARMUP_STEPS, prompt[0])?;
    }
    let a = gpu.adapter_desc();
    eprintln!("gpuscope: on {} ({})", a.name, a.backend);
    let mut capture = RunCapture::start(args, &gpu, gen.decoder(), &model)?;
    let setup_secs = setup.elapsed().as_secs_f64();

    let pp_start = Instant::now();
    // The first decode steps go behind the prompt's last batch (the loop below continues
    // them), so the GPU does not wait for the prompt's token to be read back and printed.
    let done = gen.prompt_ahead(&prompt, args.tokens.saturating_sub(1), |s| {
        if let Some(c) = &mut capture {
            c.steps.push((s.position, s.token, s.output.clone()));
        }
        Ok(())
    });
    let pp_secs = pp_start.elapsed().as_secs_f64();
    let done = match (done, interrupt.caught()) {
        (Ok(done), _) => done,
        (Err(ModelError::Interrupted), Some(caught)) => {
            let why = format!("interrupted by {} during the prompt", caught.name());
            if let Some(c) = capture {
                c.finish(&gpu, Some(&why))?;
            }
            return Err(caught.exit("stopped during the prompt, before any token was generated"));
        }
        (Err(e), _) => return Err(e.into()),
    };

    let mut out = std::io::stdout().lock();
    let mut stream = tokenizer.stream();
    let tg_start = Instant::now();
    let mut intervals = TokenIntervals::new(tg_start);
    let mut generated = 0u32;
    let mut stop = None;
    let mut io_error = None;
    let mut interrupted = None;
    // Prints `token` unless it ends the text; says whether to go on.
    let mut emit =
        |token: u32, generated: &mut u32, stop: &mut Option<&str>| -> Result<Flow, Exit> {
            if tokenizer.is_end(token) && !args.ignore_eos {
                *stop = Some("end-of-sequence token");
                return Ok(Flow::Stop);
            }
            out.write_all(stream.push(token)?.as_bytes())?;
            out.flush()?;
            *generated += 1;
            intervals.tick();
            Ok(if *generated < args.tokens {
                Flow::Continue
            } else {
                Flow::Stop
            })
        };
    if emit(done.next, &mut generated, &mut stop)? == Flow::Continue {
        // The last token needs no decode step: its successor would not be printed. The
        // GPU feeds its own argmax to each next step, so the loop keeps steps in flight
        // while this closure prints.
        let steps = args.tokens - 1;
        let result = gen.decode(None, steps, |s| {
            if let Some(c) = &mut capture {
                c.steps.push((s.position, s.token, s.output.clone()));
            }
            if s.after_stop {
                return Ok(Flow::Stop);
            }
            match emit(s.token, &mut generated, &mut stop) {
                Ok(flow) => Ok(flow),
                Err(e) => {
                    io_error = Some(e);
                    Ok(Flow::Stop)
                }
            }
        });
        match result {
            Ok(Ended::Interrupted) => interrupted = interrupt.caught(),
            Ok(_) => {}
            Err(e) => {
                return Err(Exit {
                    code: PARTIAL_RUN,
                    error: anyhow::Error::new(e)
                        .context(format!("generation stopped after {generated} tokens")),
                })
            }
        }
    }
    if let Some(e) = io_error {
        return Err(e);
    }
    let mut out = std::io::stdout().lock();
    let tg_secs = tg_start.elapsed().as_secs_f64();
    writeln!(out)?;
    // Every submitted step is finished by now (in-flight steps drain before the loop ends).
    let why = interrupted.map(|c| {
        format!(
            "interrupted by {} after {generated} of {} tokens",
            c.name(),
            args.tokens
        )
    });
    if let Some(c) = capture {
        c.finish(&gpu, why.as_deref())?;
    }
    // How the decoder fed it (batched, or decode steps on CPU adapters' kernel plan).
    let method = if prefill_batch > 0 {
        done.method.clone()
    } else {
        "one token per step, each waited for: --capture records decode steps only".to_string()
    };
    print_speeds(
        load_secs,
        setup_secs,
        "GPU",
        prompt.len(),
        pp_secs,
        &method,
        generated,
        tg_secs,
        &intervals,
        stop,
    );
    match interrupted {
        Some(caught) => Err(caught.exit(&format!(
            "stopped after {generated} of {} tokens",
            args.tokens
        ))),
        None => Ok(()),
    }
}

/// `run --cpu`: the CPU reference, one token per step.
fn run_cpu(
    args: &RunArgs,
    model: &LoadedModel,
    tokenizer: &Tokenizer,
    prompt: &[u32],
    load_secs: f64,
) -> Result<(), Exit> {
    let interrupt = Interrupt::install()?;
    let setup = Instant::now();
    let mut d = CpuDecoder::new(
        &model.weights,
        (prompt.len() as u32).saturating_add(args.tokens),
    )?;
    let setup_secs = setup.elapsed().as_secs_f64();
    let pp_start = Instant::now();
    let mut next = 0;
    for &t in prompt {
        if let Some(caught) = interrupt.caught() {
            return Err(caught.exit("stopped during the prompt, before any token was generated"));
        }
        next = d.step(t)?.token;
    }
    let pp_secs = pp_start.elapsed().as_secs_f64();
    let mut out = std::io::stdout().lock();
    let mut stream = tokenizer.stream();
    let tg_start = Instant::now();
    let mut intervals = TokenIntervals::new(tg_start);
    let mut generated = 0u32;
    let mut stop = None;
    loop {
        if tokenizer.is_end(next) && !args.ignore_eos {
            stop = Some("end-of-sequence token");
            break;
        }
        out.write_all(stream.push(next)?.as_bytes())?;
        out.flush()?;
        generated += 1;
        intervals.tick();
        if generated >= args.tokens || interrupt.caught().is_some() {
            break;
        }
        next = d
            .step(next)
            .map_err(|e| Exit {
                code: PARTIAL_RUN,
                error: anyhow::Error::new(e)
                    .context(format!("generation stopped after {generated} tokens")),
            })?
            .token;
    }
    writeln!(out)?;
    let tg_secs = tg_start.elapsed().as_secs_f64();
    print_speeds(
        load_secs,
        setup_secs,
        "CPU reference",
        prompt.len(),
        pp_secs,
        "one token per step",
        generated,
        tg_secs,
        &intervals,
        stop,
    );
    match interrupt.caught() {
        Some(caught) => Err(caught.exit(&format!(
            "stopped after {generated} of {} tokens",
            args.tokens
        ))),
        None => Ok(()),
    }
}

#[allow(clippy::too_many_arguments)]
fn print_speeds(
    load_secs: f64,
    setup_secs: f64,
    backend: &str,
    prompt_tokens: usize,
    pp_secs: f64,
    method: &str,
    generated: u32,
    tg_secs: f64,
    intervals: &TokenIntervals,
    stop: Option<&str>,
) {
    let rate = |n: usize, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
    eprintln!(
        "gpuscope: load {:.2} s (file {:.2} s, {backend} setup {:.2} s)",
        load_secs + setup_secs,
        load_secs,
        setup_secs
    );
    eprintln!(
        "gpuscope: prompt processing {prompt_tokens} tokens in {pp_secs:.2} s: {:.1} tok/s ({method})",
        rate(prompt_tokens, pp_secs),
    );
    // Each generated token but the first cost one decode step (the first came from the
    // prompt's last step), so the rate counts the steps taken.
    let steps = generated.saturating_sub(1) as usize;
    eprintln!(
        "gpuscope: generation {generated} tokens in {tg_secs:.2} s: {:.1} tok/s ({steps} decode steps, wall clock){}",
        rate(steps, tg_secs),
        stop.map(|s| format!("; stopped at the {s}")).unwrap_or_default()
    );
    if let Some(line) = intervals.summary() {
        eprintln!("gpuscope: {line}");
    }
}

/// When each generated token was printed: the wall-clock rate above counts every pause
/// (a GPU still raising its clocks, the process descheduled), the median interval
/// between tokens does not, so it is the figure to set beside `profile`'s steady rate
/// (its median token), and the longest interval says where a slow run lost its time.
struct TokenIntervals {
    last: Instant,
    /// Seconds from each token to the next (the first measured from generation's start).
    secs: Vec<f64>,
}

impl TokenIntervals {
    fn new(start: Instant) -> Self {
        TokenIntervals {
            last: start,
            secs: Vec::new(),
        }
    }

    fn tick(&mut self) {
        let now = Instant::now();
        self.secs.push((now - self.last).as_secs_f64());
        self.last = now;
    }

    /// `token interval median 0.80 ms (1250.0 tok/s), p90 0.84 ms, max 41.20 ms (before
    /// token 37)` over the decode steps' tokens (the first token, from the prompt, is
    /// left out); `None` with fewer than two of them.
    fn summary(&self) -> Option<String> {
        let steps = self.secs.get(1..)?;
        if steps.len() < 2 {
            return None;
        }
        let (max_at, max) = steps
            .iter()
            .copied()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        let mut sorted = steps.to_vec();
        let median = percentile_f64(&mut sorted, 50.0)?;
        let p90 = percentile_f64(&mut sorted, 90.0)?;
        Some(format!(
            "token interval median {:.3} ms ({:.1} tok/s), p90 {:.3} ms, max {:.3} ms (before token {}), {} intervals",
            median * 1e3,
            if median > 0.0 { 1.0 / median } else { 0.0 },
            p90 * 1e3,
            max * 1e3,
            max_at + 2,
            steps.len()
        ))
    }
}

/// `gpuscope profile MODEL.gguf`: the profile report for a real model's weights.
pub fn profile_model(args: &ProfileArgs, path: &Path) -> Result<(), Exit> {
    if args.tokens == 0 {
        return Err(anyhow!("--tokens must be at least 1").into());
    }
    super::profile::check_outputs(args)?;
    let (model, tokenizer, _) = load(path)?;
    let gpu = Gpu::new(&args.device.gpu_options())?;
    let plan = args.kernels.plan(&gpu)?;
    let prompt = match &args.prompt {
        Some(p) => prompt_ids(&tokenizer, p, false)?,
        None => vec![tokenizer.bos.unwrap_or(0)],
    };
    warn_past_context(&model, prompt.len(), args.tokens);
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
        plan: Some(plan),
        planted_slowdown: args.plant_slowdown.clone(),
        ..Default::default()
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
    let (mut captured, caught) = super::profile::decode(args, &gpu, options, |options| {
        profile_decode_captured(
            &gpu,
            &model.weights,
            options,
            super::profile::capture_request(args).as_ref(),
        )
    })?;
    let w = &mut captured.run.profile.workload;
    w.name = format!(
        "{} ({})",
        model.info.name,
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    );
    w.architecture = model.info.architecture.clone();
    w.weights = model.info.formats.clone();
    super::profile::finish(args, (captured, caught))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intervals(ms: &[f64]) -> TokenIntervals {
        TokenIntervals {
            last: Instant::now(),
            secs: ms.iter().map(|m| m / 1e3).collect(),
        }
    }

    #[test]
    fn token_intervals_leave_out_the_first_token_and_name_the_longest() {
        // Token 1 came from the prompt (50 ms after generation began: not a decode step);
        // the 9 ms pause came before token 4.
        let line = intervals(&[50.0, 1.0, 2.0, 9.0, 1.0, 2.0])
            .summary()
            .unwrap();
        assert!(line.contains("median 2.000 ms (500.0 tok/s)"), "{line}");
        assert!(line.contains("max 9.000 ms (before token 4)"), "{line}");
        assert!(line.ends_with("5 intervals"), "{line}");
        assert_eq!(intervals(&[50.0, 1.0]).summary(), None);
    }
}
