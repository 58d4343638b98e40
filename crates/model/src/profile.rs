//! Profiling a decode run: the decoder built, N tokens decoded, every step recorded.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use gpuscope_runtime::capture::{CaptureRecordError, CaptureRecorder, StepRecord};
use gpuscope_runtime::{Gpu, StepOutput, TimingRequest};
use gpuscope_trace::{Overhead, Profile, PromptRecord, TimingMode, WorkloadDesc, PROFILE_FORMAT};

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

/// A profile and, when the run stopped early, why. The profile holds everything measured
/// before the error (and says so in `incomplete`).
pub struct ProfileRun {
    pub profile: Profile,
    pub error: Option<ModelError>,
}

fn median(mut v: Vec<u64>) -> Option<u64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// Median wall time of the tokens after the first (the first pays one-time warm-up).
fn steady_median_wall(walls: &[u64]) -> Option<u64> {
    median(
        walls
            .iter()
            .skip(usize::from(walls.len() > 1))
            .copied()
            .collect(),
    )
}

/// What `--capture` asks for.
#[derive(Debug, Clone)]
pub struct CaptureRequest {
    /// The capture's name (prefix of its candle-style views).
    pub name: String,
    /// Record every buffer's contents before the first recorded token.
    pub data: bool,
    /// Recorded tokens whose dispatch outputs are recorded too (needs `data`). They are
    /// decoded again, dispatch by dispatch, after the timed run.
    pub output_tokens: Option<std::ops::Range<u32>>,
}

/// A profile run and, when asked for, its capture (or why recording it failed).
pub struct CapturedRun {
    pub run: ProfileRun,
    pub capture: Option<Result<CaptureRecorder, CaptureRecordError>>,
}

/// Builds the GPU decoder for `weights`, decodes `opts.tokens` tokens and records them.
pub fn profile_decode(
    gpu: &Gpu,
    weights: &ModelWeights,
    opts: &ProfileOptions,
) -> Result<ProfileRun, ModelError> {
    profile_decode_captured(gpu, weights, opts, None).map(|c| c.run)
}

/// The decoded tokens of one recorded run: (index, position, token id, output).
type Recorded = Vec<(u32, u32, u32, StepOutput)>;

/// [`profile_decode`], also recording a capture of the recorded tokens (not of the
/// warm-up or `--overhead` ones).
///
/// The profile is the recorder's (`gpuscope_record::Recorder::take_profile`): the
/// decoder's steps go through the same public instrumentation API as any program's.
/// This adds what only the model knows: the workload, setup counters and time, the
/// prompt, the timing-off comparison.
pub fn profile_decode_captured(
    gpu: &Gpu,
    weights: &ModelWeights,
    opts: &ProfileOptions,
    capture: Option<&CaptureRequest>,
) -> Result<CapturedRun, ModelError> {
    let rec = gpu.recorder();
    rec.restart_profile();
    let setup_start = Instant::now();
    let before_setup = gpu.counters();
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
        weights,
        DecoderOptions {
            max_ctx,
            read_logits: false,
        },
        opts.plan.unwrap_or_else(|| KernelPlan::for_adapter(gpu)),
        opts.planted_slowdown.as_ref(),
    )?;
    let mut gen = Generator::from_decoder(
        gpu,
        decoder,
        opts.generate_options(),
        opts.prompt.len() as u32,
    )?;
    let setup = gpu.counters().since(&before_setup);
    let setup_wall_ns = setup_start.elapsed().as_nanos() as u64;
    let graph = gen.decoder().graph();
    let c = &weights.config;
    let workload = WorkloadDesc {
        name: weights.name.clone(),
        architecture: "llama".into(),
        weights: weights.format_summary(),
        params: c.params(),
        weight_bytes: weights.weight_bytes(),
        layers: c.n_layers,
        graph_dispatches_per_token: graph.dispatch_count() as u32,
        graph_passes_per_token: gpuscope_runtime::passes_per_step(graph, gpu.timing()) as u32,
        // The kernel choices as built, and a planted slowdown when there is one.
        settings: gen
            .decoder()
            .settings()
            .clone()
            .into_iter()
            .chain(
                opts.planted_slowdown
                    .iter()
                    .map(|p| (crate::PlantedSlowdown::SETTING.to_string(), p.to_string())),
            )
            .collect(),
    };
    let mut error = None;
    let (mut warmed, mut warmup_note) = (0, None);
    match warm_up(&mut gen, opts, max_ctx) {
        Ok((steps, note)) => (warmed, warmup_note) = (steps, note),
        Err(e) => error = Some(e),
    }
    let mut prompt = None;
    if error.is_none() && !opts.prompt.is_empty() {
        match gen.prompt(&opts.prompt, |_| Ok(())) {
            Ok(done) => {
                prompt = Some(PromptRecord {
                    tokens: done.tokens,
                    wall_ns: done.wall_ns,
                    method: done.method,
                })
            }
            Err(e) => error = Some(e),
        }
    }
    // Warm-up and prompt steps are not the profile's: it starts with the first token.
    rec.restart_profile();
    let mut recorder = match capture {
        Some(req) if error.is_none() => Some(
            CaptureRecorder::new(gpu, gen.decoder().graph(), &req.name, workload.clone())
                .and_then(|mut r| r.begin(gpu, req.data).map(|()| r)),
        ),
        _ => None,
    };
    let mut recorded: Recorded = Vec::with_capacity(opts.tokens as usize);
    let mut interrupted = false;
    if error.is_none() {
        let ended = gen.decode(opts.first_input(), opts.tokens, |s| {
            recorded.push((s.index, s.position, s.token, s.output.clone()));
            if let Some(p) = &opts.progress {
                p.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Flow::Continue)
        });
        match ended {
            Ok(Ended::Interrupted) => interrupted = true,
            Ok(_) => {}
            Err(e) => error = Some(e),
        }
    }
    let mut profile = match rec.take_profile() {
        Ok(p) => p,
        Err(e) => {
            return Err(ModelError::Gpu(e.into()));
        }
    };
    profile.format = PROFILE_FORMAT;
    profile.tool = format!("gpuscope {}", env!("CARGO_PKG_VERSION"));
    profile.workload = workload;
    profile.setup = setup;
    profile.setup_wall_ns = setup_wall_ns;
    profile.prompt = prompt;
    profile.graph = Some(gpuscope_runtime::graph_desc(gen.decoder().graph()));
    profile.warmup_tokens = Some(warmed);
    profile.notes.extend(warmup_note);
    if let Some(Ok(r)) = &mut recorder {
        let steps: Vec<StepRecord> = recorded
            .iter()
            .map(|(index, position, token_id, output)| StepRecord {
                index: *index,
                position: *position,
                token_id: *token_id,
                output,
            })
            .collect();
        if let Err(e) = r.end(gpu, &steps) {
            recorder = Some(Err(e));
        }
    }
    if opts.overhead && error.is_none() && !interrupted && profile.timing.mode != TimingMode::Off {
        let walls: Vec<u64> = profile.tokens.iter().map(|t| t.wall_ns).collect();
        match measure_untimed(gpu, &mut gen, opts) {
            Ok(off_walls) => {
                // The rates here skip only each run's first token; the report compares
                // the steady tokens of both (off_wall_ns).
                let rate = |ns: Option<u64>| ns.map(|n| 1e9 / n as f64).unwrap_or(0.0);
                profile.overhead = Some(Overhead {
                    mode: profile.timing.mode,
                    tok_per_s_profiled: rate(steady_median_wall(&walls)),
                    tok_per_s_off: rate(steady_median_wall(&off_walls)),
                    off_wall_ns: off_walls,
                });
            }
            Err(e) => error = Some(e),
        }
    }
    if interrupted {
        profile.incomplete = Some(format!(
            "interrupted after {} of {} tokens",
            profile.tokens.len(),
            opts.tokens
        ));
    } else if let Some(e) = &error {
        profile.incomplete = Some(format!(
            "stopped after {} of {} tokens: {e}",
            profile.tokens.len(),
            opts.tokens
        ));
    }
    // After everything timed: the chosen tokens decoded again, dispatch by dispatch.
    if let (Some(Ok(r)), Some(range)) =
        (&mut recorder, capture.and_then(|c| c.output_tokens.clone()))
    {
        if let Err(e) = r.capture_outputs(gpu, range.start as usize..range.end as usize) {
            recorder = Some(Err(e));
        }
    }
    Ok(CapturedRun {
        run: ProfileRun { profile, error },
        capture: recorder,
    })
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
    let d = gen.warm_up_until_settled(opts.first_token, AUTO_WARMUP_LIMIT, max_steps)?;
    let how = if d.settled {
        format!(
            "until the step time settled (two {SETTLE_WINDOW}-step medians within {:.0}%)",
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
