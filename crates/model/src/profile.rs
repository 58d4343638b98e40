//! Profiling a decode run: the decoder built, N tokens decoded, every step recorded.

use std::time::Instant;

use gpuscope_runtime::capture::{CaptureRecorder, RecordError, StepRecord};
use gpuscope_runtime::{step_events, Gpu, StepOutput, MAX_IN_FLIGHT};
use gpuscope_trace::{
    Overhead, Profile, PromptRecord, TimingInfo, TimingMode, TokenRecord, WorkloadDesc,
    PROFILE_FORMAT,
};

use crate::error::ModelError;
use crate::gpu::{DecoderOptions, GpuDecoder, GpuStep};
use crate::weights::ModelWeights;

#[derive(Debug, Clone)]
pub struct ProfileOptions {
    /// Tokens to decode.
    pub tokens: u32,
    /// The token fed at position 0; the GPU's own argmax feeds the rest.
    pub first_token: u32,
    /// Also decode the same tokens with timing off and report the difference.
    pub overhead: bool,
    /// Tokens decoded (and thrown away) before the recorded ones: pipelines compile
    /// lazily on some drivers and GPU clocks ramp up over the first tokens.
    pub warmup: u32,
    /// Tokens in flight at once: 1 waits for each token before encoding the next; 2
    /// encodes token N+1 while the GPU runs token N.
    pub in_flight: usize,
    /// Prompt tokens fed (one per step, timed as prompt processing) before the recorded
    /// tokens, which then continue from the prompt's KV cache and last argmax. Empty:
    /// the recorded run starts from `first_token` at position 0.
    pub prompt: Vec<u32>,
}

/// Most prompt rows one prefill submit takes (the prefill graph's buffers are sized so).
const PREFILL_BATCH: u32 = 256;

impl ProfileOptions {
    /// The input of the first recorded token: `first_token`, or none after a prompt
    /// (the GPU's argmax of the prompt's last token feeds it).
    fn first_input(&self) -> Option<u32> {
        self.prompt.is_empty().then_some(self.first_token)
    }

    /// Rows per prefill submit for this prompt.
    fn prefill_batch(&self) -> u32 {
        (self.prompt.len() as u32).clamp(1, PREFILL_BATCH)
    }

    /// Feeds the prompt through batched prefill (`prefill_batch` rows per submit, the
    /// decoder's prefill enabled at setup); returns the wall time.
    fn feed_prompt(&self, gpu: &Gpu, decoder: &mut GpuDecoder) -> Result<u64, ModelError> {
        let start = Instant::now();
        for chunk in self.prompt.chunks(self.prefill_batch() as usize) {
            decoder.prefill(gpu, chunk)?;
        }
        Ok(start.elapsed().as_nanos() as u64)
    }
}

/// A profile and, when the run stopped early, why. The profile holds everything measured
/// before the error.
pub struct ProfileRun {
    pub profile: Profile,
    pub error: Option<ModelError>,
}

fn median(mut v: Vec<u64>) -> Option<u64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// Median wall time of the tokens after the first (the first pays one-time warm-up).
fn steady_median_wall(tokens: &[TokenRecord]) -> Option<u64> {
    let walls: Vec<u64> = tokens
        .iter()
        .skip(usize::from(tokens.len() > 1))
        .map(|t| t.wall_ns)
        .collect();
    median(walls)
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
    pub capture: Option<Result<CaptureRecorder, RecordError>>,
}

/// Builds the GPU decoder for `weights`, decodes `opts.tokens` tokens and records them.
pub fn profile_decode(
    gpu: &Gpu,
    weights: &ModelWeights,
    opts: &ProfileOptions,
) -> Result<ProfileRun, ModelError> {
    profile_decode_captured(gpu, weights, opts, None).map(|c| c.run)
}

/// [`profile_decode`], also recording a capture of the recorded tokens (not of the
/// warm-up or `--overhead` ones).
pub fn profile_decode_captured(
    gpu: &Gpu,
    weights: &ModelWeights,
    opts: &ProfileOptions,
    capture: Option<&CaptureRequest>,
) -> Result<CapturedRun, ModelError> {
    let setup_start = Instant::now();
    let before_setup = gpu.counters();
    let max_ctx = (opts.prompt.len() as u32 + opts.tokens)
        .max(opts.warmup)
        .max(1);
    let mut decoder = GpuDecoder::new(
        gpu,
        weights,
        DecoderOptions {
            max_ctx,
            read_logits: false,
        },
    )?;
    if !opts.prompt.is_empty() {
        decoder.enable_prefill(gpu, opts.prefill_batch())?;
    }
    let setup = gpu.counters().since(&before_setup);
    let setup_wall_ns = setup_start.elapsed().as_nanos() as u64;
    let graph = decoder.graph();
    let c = &weights.config;
    let mut profile = Profile {
        format: PROFILE_FORMAT,
        tool: format!("gpuscope {}", env!("CARGO_PKG_VERSION")),
        adapter: gpu.adapter_desc(),
        timing: TimingInfo {
            mode: gpu.timing(),
            reason: gpu.timing_reason().to_string(),
            timestamp_period_ns: gpu.queue().get_timestamp_period() as f64,
        },
        workload: WorkloadDesc {
            name: weights.name.clone(),
            architecture: "llama".into(),
            weights: weights.format_summary(),
            params: c.params(),
            weight_bytes: weights.weight_bytes(),
            layers: c.n_layers,
            graph_dispatches_per_token: graph.dispatch_count() as u32,
            graph_passes_per_token: graph.sections.len() as u32,
        },
        setup,
        setup_wall_ns,
        tokens: Vec::new(),
        dispatches: Vec::new(),
        passes: Vec::new(),
        overhead: None,
        prompt: None,
    };
    // Steps are recorded first and turned into events after the loop, so building
    // strings for thousands of events does not land inside the measured tokens.
    let mut outputs = Vec::with_capacity(opts.tokens as usize);
    let mut error = None;
    for i in 0..opts.warmup {
        if let Err(e) = decoder.step(gpu, (i == 0).then_some(opts.first_token)) {
            error = Some(e);
            break;
        }
    }
    decoder.reset();
    if error.is_none() && !opts.prompt.is_empty() {
        match opts.feed_prompt(gpu, &mut decoder) {
            Ok(wall_ns) => {
                profile.prompt = Some(PromptRecord {
                    tokens: opts.prompt.len() as u32,
                    wall_ns,
                    method: format!(
                        "batched prefill, up to {} tokens per submit",
                        opts.prefill_batch()
                    ),
                })
            }
            Err(e) => error = Some(e),
        }
    }
    let mut recorder = match capture {
        Some(req) if error.is_none() => Some(
            CaptureRecorder::new(gpu, decoder.graph(), &req.name, profile.workload.clone())
                .and_then(|mut r| r.begin(gpu, req.data).map(|()| r)),
        ),
        _ => None,
    };
    if error.is_none() {
        if let Err(e) = decode_recorded(gpu, &mut decoder, opts, &mut profile, &mut outputs) {
            error = Some(e);
        }
    }
    if let Some(Ok(rec)) = &mut recorder {
        let steps: Vec<StepRecord> = profile
            .tokens
            .iter()
            .zip(&outputs)
            .map(|(t, output)| StepRecord {
                index: t.index,
                position: t.position,
                token_id: t.token_id,
                output,
            })
            .collect();
        if let Err(e) = rec.end(gpu, &steps) {
            recorder = Some(Err(e));
        }
    }
    for (i, out) in outputs.iter().enumerate() {
        let (d, p) = step_events(decoder.graph(), i as u32, out);
        profile.dispatches.extend(d);
        profile.passes.extend(p);
    }
    if opts.overhead && error.is_none() && profile.timing.mode != TimingMode::Off {
        match measure_untimed(gpu, &mut decoder, opts) {
            Ok(off_wall) => {
                let rate = |ns: Option<u64>| ns.map(|n| 1e9 / n as f64).unwrap_or(0.0);
                profile.overhead = Some(Overhead {
                    mode: profile.timing.mode,
                    tok_per_s_profiled: rate(steady_median_wall(&profile.tokens)),
                    tok_per_s_off: rate(off_wall),
                });
            }
            Err(e) => error = Some(e),
        }
    }
    // After everything timed: the chosen tokens decoded again, dispatch by dispatch.
    if let (Some(Ok(rec)), Some(range)) =
        (&mut recorder, capture.and_then(|c| c.output_tokens.clone()))
    {
        if let Err(e) = rec.capture_outputs(gpu, range.start as usize..range.end as usize) {
            recorder = Some(Err(e));
        }
    }
    Ok(CapturedRun {
        run: ProfileRun { profile, error },
        capture: recorder,
    })
}

/// Decodes `opts.tokens` tokens with up to `opts.in_flight` in flight, calling `record`
/// with each finished token's index, position and step, in order.
fn decode_tokens(
    gpu: &Gpu,
    decoder: &mut GpuDecoder,
    opts: &ProfileOptions,
    mut record: impl FnMut(u32, u32, GpuStep),
) -> Result<(), ModelError> {
    let depth = opts.in_flight.clamp(1, MAX_IN_FLIGHT);
    let mut pending = std::collections::VecDeque::new();
    for i in 0..opts.tokens {
        let position = decoder.position();
        pending.push_back((
            i,
            position,
            decoder.submit(gpu, if i == 0 { opts.first_input() } else { None })?,
        ));
        if pending.len() >= depth {
            let (index, position, p) = pending.pop_front().unwrap();
            record(index, position, decoder.finish(gpu, p)?);
        }
    }
    while let Some((index, position, p)) = pending.pop_front() {
        record(index, position, decoder.finish(gpu, p)?);
    }
    Ok(())
}

/// The recorded run: every token's record into `profile`, its samples into `outputs`.
fn decode_recorded(
    gpu: &Gpu,
    decoder: &mut GpuDecoder,
    opts: &ProfileOptions,
    profile: &mut Profile,
    outputs: &mut Vec<StepOutput>,
) -> Result<(), ModelError> {
    decode_tokens(gpu, decoder, opts, |index, position, step| {
        profile.tokens.push(TokenRecord {
            index,
            position,
            token_id: step.token,
            wall_ns: step.output.wall_ns,
            gpu_busy_ns: step.output.gpu_busy_ns,
            counters: step.output.counters,
            cpu: step.output.cpu,
        });
        outputs.push(step.output);
    })
}

/// Decodes the same number of tokens again with timing off; returns the steady median wall.
fn measure_untimed(
    gpu: &Gpu,
    decoder: &mut GpuDecoder,
    opts: &ProfileOptions,
) -> Result<Option<u64>, ModelError> {
    let mode = gpu.timing();
    decoder.set_timing(gpu, TimingMode::Off)?;
    decoder.reset();
    opts.feed_prompt(gpu, decoder)?;
    let mut walls = Vec::new();
    decode_tokens(gpu, decoder, opts, |index, _, step| {
        if index > 0 || opts.tokens == 1 {
            walls.push(step.output.wall_ns);
        }
    })?;
    decoder.set_timing(gpu, mode)?;
    Ok(median(walls))
}
