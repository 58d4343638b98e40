//! A profile run: the decoder built, warmed up, the prompt fed, N tokens decoded and
//! recorded, the profile finished (see [`super`]).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use gpuscope_runtime::{Gpu, TimingRequest};
use gpuscope_trace::ceilings::Ceilings;
use gpuscope_trace::stats::median;
use gpuscope_trace::{Counters, Overhead, Profile, PromptRecord, TimingMode, PROFILE_FORMAT};

use super::capture::{CaptureOutcome, CaptureTarget, CapturedStep, SessionCapture};
use super::Workload;
use crate::decoder::{DecoderOptions, GpuDecoder};
use crate::error::ModelError;
use crate::generate::{Ended, Flow, GenerateOptions, Generator, SETTLE_TOLERANCE, SETTLE_WINDOW};
use crate::plan::KernelPlan;
use crate::weights::ModelWeights;

#[derive(Debug, Clone, Default)]
pub struct ProfileOptions {
    /// Tokens to decode.
    pub tokens: u32,
    /// The token fed at position 0; the GPU's own argmax feeds the rest.
    pub first_token: u32,
    /// Also decode the same tokens with timing off and report the difference.
    pub overhead: bool,
    /// Tokens decoded (and thrown away) before the recorded ones: pipelines compile
    /// lazily on some drivers and GPU clocks ramp up over the first tokens.
    pub warmup: Warmup,
    /// Tokens in flight at once: 1 waits for each token before encoding the next; 2
    /// encodes token N+1 while the GPU runs token N.
    pub in_flight: usize,
    /// Prompt tokens fed (through batched prefill, timed as prompt processing) before
    /// the recorded tokens, which then continue from the prompt's KV cache and last
    /// argmax. Empty: the recorded run starts from `first_token` at position 0.
    pub prompt: Vec<u32>,
    /// Set (e.g. by a signal handler) to stop at the next token: the profile keeps the
    /// tokens measured and says it is incomplete.
    pub stop: Option<Arc<AtomicBool>>,
    /// Counts the recorded tokens as they finish (progress shown by another thread).
    pub progress: Option<Arc<AtomicU32>>,
    /// Test-only extra GPU work in one gemv of every layer (recorded in the profile's
    /// `workload.settings`); `None` for a normal run.
    pub planted_slowdown: Option<crate::PlantedSlowdown>,
    /// Kernel variants and fusions; `None`: the adapter's ([`KernelPlan::for_adapter`]).
    pub plan: Option<KernelPlan>,
    /// Record every GPU command of the recorded tokens, and write it there.
    pub capture: Option<CaptureTarget>,
    /// The measured ceilings of this adapter (`gpuscope peak`), embedded in the profile.
    pub ceilings: Option<Ceilings>,
}

/// How many tokens the warm-up decodes before the recorded ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warmup {
    /// Exactly this many.
    Steps(u32),
    /// Until the step time settles ([`crate::generate::SETTLE_WINDOW`] steps' medians
    /// within [`crate::generate::SETTLE_TOLERANCE`]), for at most [`AUTO_WARMUP_LIMIT`]
    /// and [`AUTO_WARMUP_MAX_STEPS`] steps: H100 runs showed 13 to 45 slow tokens that a
    /// fixed warm-up of 8 left in the recorded run.
    Auto,
}

impl Default for Warmup {
    fn default() -> Self {
        Warmup::Steps(0)
    }
}

impl std::str::FromStr for Warmup {
    type Err = String;
    /// `auto` or a number of tokens.
    fn from_str(s: &str) -> Result<Warmup, String> {
        match s.trim() {
            "auto" => Ok(Warmup::Auto),
            n => n
                .parse()
                .map(Warmup::Steps)
                .map_err(|_| format!("`{s}`: expected auto or a number of tokens")),
        }
    }
}

/// The longest automatic warm-up, in wall time.
pub const AUTO_WARMUP_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);
/// The shortest automatic warm-up on a GPU (not on a CPU adapter, whose clocks do not
/// ramp with the load): on an H100 at 8B, after the weights' upload, 37 steps held a
/// steady 6.7 ms for about 0.25 s before the clocks ramped to 2.4 ms steps, so a
/// warm-up that stopped when two windows first agreed left 16 slow tokens in the run.
pub const AUTO_WARMUP_MIN_GPU: std::time::Duration = std::time::Duration::from_millis(750);
/// The most steps an automatic warm-up decodes (the KV cache is sized for them).
pub const AUTO_WARMUP_MAX_STEPS: u32 = 256;

/// Most prompt rows one prefill submit takes (the prefill graph's buffers are sized so),
/// for `run`, `profile --prompt` and `bench`: llama-bench's default micro-batch. H100,
/// pp512 with the coopmat gemm: 512 against 256 rows a submit took SmolLM2 from 39-43k to
/// 56-60k tok/s and Llama-8B from 5.1k to 6.5k (at 256 rows the small matrices' gemms
/// fill a quarter of the GPU's SMs).
pub const PREFILL_BATCH: u32 = 512;

impl ProfileOptions {
    /// The input of the first recorded token: `first_token`, or none after a prompt
    /// (the GPU's argmax of the prompt's last token feeds it).
    fn first_input(&self) -> Option<u32> {
        self.prompt.is_empty().then_some(self.first_token)
    }

    fn generate_options(&self) -> GenerateOptions {
        GenerateOptions {
            in_flight: self.in_flight,
            prefill_batch: PREFILL_BATCH,
            stop: self.stop.clone(),
        }
    }
}

/// A finished profile; when the run stopped early, why (the profile holds everything
/// measured before and says so in `incomplete`); and what became of the capture.
pub struct ProfileRun {
    pub profile: Profile,
    pub error: Option<ModelError>,
    pub capture: CaptureOutcome,
}

/// Median wall time of the tokens after the first (the first pays one-time warm-up).
fn steady_median_wall(walls: &[u64]) -> Option<u64> {
    median(walls.iter().skip(usize::from(walls.len() > 1)).copied())
}

/// Profiles `weights` (a synthetic model): [`profile`] with [`Workload::synthetic`].
pub fn profile_decode(
    gpu: &Gpu,
    weights: &ModelWeights,
    opts: &ProfileOptions,
) -> Result<ProfileRun, ModelError> {
    profile(gpu, &Workload::synthetic(weights), opts)
}

/// The decoder and loop of a run, built: what setup cost, and the workload as built.
struct Built<'g> {
    gen: Generator<'g>,
    setup: Counters,
    setup_wall_ns: u64,
    workload: gpuscope_trace::WorkloadDesc,
    /// The KV cache's size: the prompt, the tokens and the warm-up fit.
    max_ctx: u32,
}

/// Decodes `opts.tokens` tokens of `workload` on `gpu` and records them: the finished
/// profile and capture (see [`super`]).
///
/// The profile is the recorder's (`gpuscope_record::Recorder::take_profile`): the
/// decoder's steps go through the same public instrumentation API as any program's.
/// The session adds what only the model knows: the workload, setup counters and time,
/// the warm-up, the prompt, the timing-off comparison, the ceilings.
pub fn profile(
    gpu: &Gpu,
    workload: &Workload,
    opts: &ProfileOptions,
) -> Result<ProfileRun, ModelError> {
    let rec = gpu.recorder();
    rec.restart_profile();
    let mut built = build(gpu, workload, opts)?;
    let (warmed, mut error) = match warm_up(&mut built.gen, opts, built.max_ctx) {
        Ok(w) => (Some(w), None),
        Err(e) => (None, Some(e)),
    };
    let prompt = if error.is_none() {
        feed_prompt(&mut built.gen, &opts.prompt).unwrap_or_else(|e| {
            error = Some(e);
            None
        })
    } else {
        None
    };
    // Warm-up and prompt steps are not the profile's: it starts with the first token.
    // The setup's CPU spans are (the report says where setup time went).
    let setup_spans = rec.take_setup_spans();
    rec.restart_profile();
    let mut capture = match (&opts.capture, &error) {
        (Some(t), None) => Some(SessionCapture::begin(
            gpu,
            built.gen.decoder(),
            built.workload.clone(),
            t,
        )),
        _ => None,
    };
    let mut interrupted = false;
    if error.is_none() {
        match record_tokens(&mut built.gen, opts, capture.as_mut()) {
            Ok(i) => interrupted = i,
            Err(e) => error = Some(e),
        }
    }
    let mut profile = rec.take_profile().map_err(|e| ModelError::Gpu(e.into()))?;
    profile.cpu_spans.splice(0..0, setup_spans);
    describe(&mut profile, &built, opts, prompt, warmed);
    if opts.overhead && error.is_none() && !interrupted {
        if let Err(e) = add_overhead(gpu, &mut built.gen, opts, &mut profile) {
            error = Some(e);
        }
    }
    profile.incomplete = incomplete(&profile, opts, interrupted, error.as_ref());
    let capture = match capture {
        Some(c) => c.finish(gpu, profile.incomplete.as_deref()),
        None => CaptureOutcome::NotAsked,
    };
    Ok(ProfileRun {
        profile,
        error,
        capture,
    })
}

/// The decoder (with the KV cache the run needs) and its loop; what setup cost.
fn build<'g>(
    gpu: &'g Gpu,
    workload: &Workload,
    opts: &ProfileOptions,
) -> Result<Built<'g>, ModelError> {
    let setup_start = Instant::now();
    let before = gpu.counters();
    let warmup_steps = match opts.warmup {
        Warmup::Steps(n) => n,
        Warmup::Auto => AUTO_WARMUP_MAX_STEPS,
    };
    let max_ctx = (opts.prompt.len() as u32)
        .saturating_add(opts.tokens)
        .max(warmup_steps)
        .max(1);
    let decoder = GpuDecoder::with_planted_slowdown(
        gpu,
        workload.weights,
        DecoderOptions {
            max_ctx,
            read_logits: false,
        },
        opts.plan.unwrap_or_else(|| KernelPlan::for_adapter(gpu)),
        opts.planted_slowdown.as_ref(),
    )?;
    let gen = Generator::from_decoder(
        gpu,
        decoder,
        opts.generate_options(),
        opts.prompt.len() as u32,
    )?;
    let graph = gen.decoder().graph();
    // The kernel choices as built, and a planted slowdown when there is one.
    let settings = gen
        .decoder()
        .settings()
        .clone()
        .into_iter()
        .chain(
            opts.planted_slowdown
                .iter()
                .map(|p| (crate::PlantedSlowdown::SETTING.to_string(), p.to_string())),
        )
        .collect();
    let workload = workload.describe(
        graph.dispatch_count() as u32,
        gpuscope_runtime::passes_per_step(graph, gpu.timing()) as u32,
        settings,
    );
    Ok(Built {
        setup: gpu.counters().since(&before),
        setup_wall_ns: setup_start.elapsed().as_nanos() as u64,
        gen,
        workload,
        max_ctx,
    })
}

/// Feeds the prompt (batched where the plan can), timed as prompt processing.
fn feed_prompt(gen: &mut Generator, prompt: &[u32]) -> Result<Option<PromptRecord>, ModelError> {
    if prompt.is_empty() {
        return Ok(None);
    }
    let done = gen.prompt(prompt, |_| Ok(()))?;
    Ok(Some(PromptRecord {
        tokens: done.tokens,
        wall_ns: done.wall_ns,
        method: done.method,
        ops: done.ops,
    }))
}

/// Decodes the recorded tokens, each handed to the capture; whether a stop cut it short.
fn record_tokens(
    gen: &mut Generator,
    opts: &ProfileOptions,
    mut capture: Option<&mut SessionCapture>,
) -> Result<bool, ModelError> {
    let ended = gen.decode(opts.first_input(), opts.tokens, |s| {
        if let Some(c) = capture.as_deref_mut() {
            c.push(CapturedStep {
                position: s.position,
                token_id: s.token,
                output: s.output.clone(),
            });
        }
        if let Some(p) = &opts.progress {
            p.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Flow::Continue)
    })?;
    Ok(ended == Ended::Interrupted)
}

/// Everything the recorder cannot know, written into its profile.
fn describe(
    profile: &mut Profile,
    built: &Built,
    opts: &ProfileOptions,
    prompt: Option<PromptRecord>,
    warmed: Option<(u32, Option<String>)>,
) {
    profile.format = PROFILE_FORMAT;
    profile.tool = format!("gpuscope {}", env!("CARGO_PKG_VERSION"));
    profile.workload = built.workload.clone();
    profile.setup = built.setup;
    profile.setup_wall_ns = built.setup_wall_ns;
    profile.prompt = prompt;
    profile.graph = Some(gpuscope_runtime::graph_desc(built.gen.decoder().graph()));
    let (steps, note) = warmed.unwrap_or((0, None));
    profile.warmup_tokens = Some(steps);
    profile.notes.extend(note);
    profile.ceilings = opts
        .ceilings
        .clone()
        .filter(|c| c.identity.same_device(&profile.adapter));
}

/// The same tokens again with timing off: what the timing mode costs.
fn add_overhead(
    gpu: &Gpu,
    gen: &mut Generator,
    opts: &ProfileOptions,
    profile: &mut Profile,
) -> Result<(), ModelError> {
    if profile.timing.mode == TimingMode::Off {
        return Ok(());
    }
    let walls: Vec<u64> = profile.tokens.iter().map(|t| t.wall_ns).collect();
    let off_walls = measure_untimed(gpu, gen, opts)?;
    // The rates here skip only each run's first token; the report compares the steady
    // tokens of both (off_wall_ns).
    let rate = |ns: Option<u64>| ns.map(|n| 1e9 / n as f64).unwrap_or(0.0);
    profile.overhead = Some(Overhead {
        mode: profile.timing.mode,
        tok_per_s_profiled: rate(steady_median_wall(&walls)),
        tok_per_s_off: rate(steady_median_wall(&off_walls)),
        off_wall_ns: off_walls,
    });
    Ok(())
}

/// Why the run stopped before doing all it was asked to, if it did.
fn incomplete(
    profile: &Profile,
    opts: &ProfileOptions,
    interrupted: bool,
    error: Option<&ModelError>,
) -> Option<String> {
    let done = profile.tokens.len();
    if interrupted {
        return Some(format!(
            "interrupted after {done} of {} tokens",
            opts.tokens
        ));
    }
    error.map(|e| format!("stopped after {done} of {} tokens: {e}", opts.tokens))
}

/// The warm-up `opts` asks for; returns the steps decoded and, for `auto`, a note that
/// says how it ended.
fn warm_up(
    gen: &mut Generator,
    opts: &ProfileOptions,
    max_ctx: u32,
) -> Result<(u32, Option<String>), ModelError> {
    if let Warmup::Steps(n) = opts.warmup {
        return gen.warm_up(n, opts.first_token).map(|()| (n, None));
    }
    let max_steps = max_ctx.min(AUTO_WARMUP_MAX_STEPS);
    let min = if gen.gpu().adapter_info().device_type == gpuscope_runtime::wgpu::DeviceType::Cpu {
        std::time::Duration::ZERO
    } else {
        AUTO_WARMUP_MIN_GPU
    };
    let d = gen.warm_up_until_settled(opts.first_token, min, AUTO_WARMUP_LIMIT, max_steps)?;
    let how = if d.settled {
        let at_least = if min.is_zero() {
            String::new()
        } else {
            format!(", decoding at least {:.2} s on a GPU", min.as_secs_f64())
        };
        format!(
            "until the step time settled (two {SETTLE_WINDOW}-step medians within {:.0}%{at_least})",
            SETTLE_TOLERANCE * 100.0
        )
    } else {
        let limit = if d.steps >= max_steps {
            format!("its {max_steps}-step limit")
        } else {
            format!("its {} s limit", AUTO_WARMUP_LIMIT.as_secs())
        };
        format!("stopped at {limit} before the step time settled: the first recorded tokens may still be slow (the steady-state analysis finds where they settle)")
    };
    let note = format!(
        "warm-up: auto, {} steps in {:.2} s, {how}",
        d.steps,
        d.wall_ns as f64 / 1e9
    );
    Ok((d.steps, Some(note)))
}

/// Decodes the same tokens again with timing off (not recorded), after the same
/// warm-up; returns each token's wall time.
fn measure_untimed(
    gpu: &Gpu,
    gen: &mut Generator,
    opts: &ProfileOptions,
) -> Result<Vec<u64>, ModelError> {
    let restore: TimingRequest = gpu.timing_request();
    gpu.set_timing(TimingRequest::Exactly(TimingMode::Off))?;
    let result = (|| {
        gen.decoder_mut().set_recorded(false);
        gen.decoder_mut().reset();
        if !opts.prompt.is_empty() {
            gen.prompt(&opts.prompt, |_| Ok(()))?;
        }
        let mut walls = Vec::new();
        gen.decode(opts.first_input(), opts.tokens, |s| {
            if !s.after_stop {
                walls.push(s.output.wall_ns);
            }
            Ok(Flow::Continue)
        })?;
        Ok(walls)
    })();
    gen.decoder_mut().set_recorded(true);
    gpu.set_timing(restore)?;
    result
}
