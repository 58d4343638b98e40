//! A text-generation session (`gpuscope run`): the prompt fed (batched where the plan
//! can), then tokens generated with steps in flight, each handed to the caller as it
//! comes; the capture owned from start to write; the speeds measured.
//!
//! The prompt's last batch has the first decode steps queued behind it, so the GPU goes
//! from the prompt to them without waiting for the prompt's token to be read back and
//! printed. With a capture the prompt goes one token per step: a capture's stream
//! records the decode graph's steps, and a prefill runs a second graph.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use gpuscope_runtime::Gpu;

use super::capture::{CaptureOutcome, CaptureTarget, CapturedStep, SessionCapture};
use super::profile::PREFILL_BATCH;
use super::Workload;
use crate::decoder::{DecoderOptions, GpuDecoder};
use crate::error::ModelError;
use crate::generate::{Ended, Flow, GenerateOptions, Generator, Step};
use crate::plan::KernelPlan;

/// Decode steps taken before the prompt and thrown away (the decode graph's first
/// submissions pay one-time driver costs that would otherwise land in the generation
/// rate). None with a capture, which records from a fresh decoder.
pub const WARMUP_STEPS: u32 = 2;

/// What to generate.
pub struct GenerationRequest<'a> {
    pub prompt: &'a [u32],
    /// Tokens to generate at most (the first comes from the prompt's last step).
    pub tokens: u32,
    pub plan: KernelPlan,
    pub capture: Option<CaptureTarget>,
    /// Set (by a signal handler) to stop at the next step.
    pub stop: Option<Arc<AtomicBool>>,
}

/// How generation went.
pub struct Generation {
    /// Building the decoder and its warm-up.
    pub setup_ns: u64,
    pub prompt_ns: u64,
    /// How the prompt was fed ("batched prefill, up to N tokens a batch", ...).
    pub method: String,
    /// Tokens the caller took.
    pub generated: u32,
    pub generation_ns: u64,
    /// The stop flag ended it; `during_prompt` when no token was generated.
    pub interrupted: Option<Interrupted>,
    /// A GPU error ended it part-way.
    pub error: Option<ModelError>,
    pub capture: CaptureOutcome,
}

/// Where the stop flag caught the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupted {
    DuringPrompt,
    DuringGeneration,
}

/// Generates text from `req.prompt`; `on_token` gets each token and says whether to go
/// on (it stops at the end of text, or on its own error).
pub fn generate(
    gpu: &Gpu,
    workload: &Workload,
    req: GenerationRequest,
    mut on_token: impl FnMut(u32) -> Flow,
) -> Result<Generation, ModelError> {
    let setup = Instant::now();
    let mut gen = build(gpu, workload, &req)?;
    let mut capture = req.capture.as_ref().map(|t| {
        let desc = workload.describe(
            gen.decoder().graph().dispatch_count() as u32,
            gpuscope_runtime::passes_per_step(gen.decoder().graph(), gpu.timing()) as u32,
            gen.decoder().settings().clone(),
        );
        SessionCapture::begin(gpu, gen.decoder(), desc, t)
    });
    let setup_ns = setup.elapsed().as_nanos() as u64;
    let mut keep = |s: &Step| {
        if let Some(c) = capture.as_mut() {
            c.push(CapturedStep {
                position: s.position,
                token_id: s.token,
                output: s.output.clone(),
            });
        }
    };
    let prompt_start = Instant::now();
    let done = gen.prompt_ahead(req.prompt, req.tokens.saturating_sub(1), |s| {
        keep(s);
        Ok(())
    });
    let prompt_ns = prompt_start.elapsed().as_nanos() as u64;
    let mut g = Generation {
        setup_ns,
        prompt_ns,
        method: String::new(),
        generated: 0,
        generation_ns: 0,
        interrupted: None,
        error: None,
        capture: CaptureOutcome::NotAsked,
    };
    match done {
        Ok(done) => {
            g.method = if req.capture.is_some() {
                "one token per step, each waited for: --capture records decode steps only".into()
            } else {
                done.method.clone()
            };
            decode(&mut gen, &req, done.next, &mut g, &mut keep, &mut on_token);
        }
        Err(ModelError::Interrupted) => g.interrupted = Some(Interrupted::DuringPrompt),
        Err(e) => return Err(e),
    }
    if let Some(c) = capture {
        let why = g.interrupted.map(|i| match i {
            Interrupted::DuringPrompt => "interrupted during the prompt".to_string(),
            Interrupted::DuringGeneration => {
                format!("interrupted after {} of {} tokens", g.generated, req.tokens)
            }
        });
        g.capture = c.finish(gpu, why.as_deref());
    }
    Ok(g)
}

/// The decoder (KV cache for the prompt and the tokens), warmed up unless capturing.
fn build<'g>(
    gpu: &'g Gpu,
    workload: &Workload,
    req: &GenerationRequest,
) -> Result<Generator<'g>, ModelError> {
    let max_ctx = (req.prompt.len() as u32).saturating_add(req.tokens);
    let decoder = GpuDecoder::with_plan(
        gpu,
        workload.weights,
        DecoderOptions {
            max_ctx,
            read_logits: false,
        },
        req.plan,
    )?;
    let mut gen = Generator::from_decoder(
        gpu,
        decoder,
        GenerateOptions {
            prefill_batch: if req.capture.is_some() {
                0
            } else {
                PREFILL_BATCH
            },
            stop: req.stop.clone(),
            ..Default::default()
        },
        req.prompt.len() as u32,
    )?;
    if req.capture.is_none() {
        if let Some(&first) = req.prompt.first() {
            gen.warm_up(WARMUP_STEPS, first)?;
        }
    }
    Ok(gen)
}

/// Hands `first` (the prompt's token) to the caller, then decodes on from the GPU's own
/// argmax while the caller takes each token; the last token needs no step (its successor
/// would not be taken).
fn decode(
    gen: &mut Generator,
    req: &GenerationRequest,
    first: u32,
    g: &mut Generation,
    keep: &mut impl FnMut(&Step),
    on_token: &mut impl FnMut(u32) -> Flow,
) {
    let start = Instant::now();
    let mut take = |token: u32, generated: &mut u32| {
        let flow = on_token(token);
        if flow == Flow::Continue {
            *generated += 1;
        }
        if *generated >= req.tokens {
            Flow::Stop
        } else {
            flow
        }
    };
    if take(first, &mut g.generated) == Flow::Continue {
        let generated = &mut g.generated;
        let ended = gen.decode(None, req.tokens - 1, |s| {
            keep(s);
            if s.after_stop {
                return Ok(Flow::Stop);
            }
            Ok(take(s.token, generated))
        });
        match ended {
            Ok(Ended::Interrupted) => g.interrupted = Some(Interrupted::DuringGeneration),
            Ok(_) => {}
            Err(e) => g.error = Some(e),
        }
    }
    g.generation_ns = start.elapsed().as_nanos() as u64;
}
