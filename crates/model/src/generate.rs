//! The generation loop, one type for every command that decodes: the prompt (batched
//! prefill, or one token per step where a capture must see each step), then decoding
//! with steps in flight, stopping where the caller says (end of text), at a requested
//! interrupt (a flag checked at every step boundary), or after the steps asked for.
//!
//! The caller sees every finished step through a callback while the next steps are
//! already on the GPU, so printing, detokenizing and end-of-text checks never stall it:
//! with `in_flight` steps queued, the callback of step N runs while steps N+1.. run.
//! Steps still in flight after a stop are finished too (their results are handed over
//! marked `after_stop`), so a recorder or capture that saw them submitted sees them end.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use gpuscope_runtime::{Gpu, PendingStep, StepOutput, MAX_IN_FLIGHT};
use gpuscope_trace::PromptOp;

use crate::decoder::{DecoderOptions, GpuDecoder, PendingPrefill};
use crate::error::ModelError;
use crate::weights::ModelWeights;

/// Steps per window of the warm-up's settling test.
pub const SETTLE_WINDOW: usize = 8;
/// How close two windows' medians must be for the step time to count as settled.
pub const SETTLE_TOLERANCE: f64 = 0.05;

/// Whether the last two windows of `walls` have medians within [`SETTLE_TOLERANCE`].
fn settled(walls: &[u64]) -> bool {
    let w = SETTLE_WINDOW;
    if walls.len() < 2 * w {
        return false;
    }
    let median = |v: &[u64]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v[v.len() / 2] as f64
    };
    let (prev, last) = (
        median(&walls[walls.len() - 2 * w..walls.len() - w]),
        median(&walls[walls.len() - w..]),
    );
    prev > 0.0 && (last - prev).abs() <= SETTLE_TOLERANCE * prev
}

/// How an automatic warm-up ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarmupDone {
    pub steps: u32,
    /// Whether the step time settled (else the time or step limit ended it).
    pub settled: bool,
    pub wall_ns: u64,
}

/// How the loop runs.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// Steps in flight (1 waits for each step before encoding the next; up to
    /// [`MAX_IN_FLIGHT`]).
    pub in_flight: usize,
    /// Most prompt rows per prefill submit; 0 feeds the prompt one token per decode step
    /// (what a capture of decode steps needs).
    pub prefill_batch: u32,
    /// Set (e.g. by a signal handler) to stop at the next step boundary.
    pub stop: Option<Arc<AtomicBool>>,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            in_flight: MAX_IN_FLIGHT,
            prefill_batch: 256,
            stop: None,
        }
    }
}

/// One finished decode step, as the callback sees it.
pub struct Step<'a> {
    /// 0-based index among this call's steps.
    pub index: u32,
    /// KV-cache position decoded.
    pub position: u32,
    /// The greedy token the step produced.
    pub token: u32,
    pub output: &'a StepOutput,
    /// The step was already in flight when the loop was told to stop.
    pub after_stop: bool,
}

/// What the callback wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// Why a decode loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// All the steps asked for ran.
    Completed,
    /// The callback said stop (end of text).
    Stopped,
    /// The stop flag was set.
    Interrupted,
}

/// A prompt fed through the decoder.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptDone {
    /// The greedy token after the prompt's last one.
    pub next: u32,
    pub tokens: u32,
    /// CPU wall time from the first token's upload to the last result.
    pub wall_ns: u64,
    /// How it was fed, for reports: "batched prefill, up to N tokens a batch" or
    /// "one token per step".
    pub method: String,
    /// Batched prefill's GPU time by op (largest first); empty through decode steps.
    pub ops: Vec<PromptOp>,
}

/// The decoder and the loop around it.
pub struct Generator<'g> {
    gpu: &'g Gpu,
    decoder: GpuDecoder,
    options: GenerateOptions,
    /// Decode steps [`Generator::prompt_ahead`] submitted behind the prompt (position,
    /// step), for the next [`Generator::decode`] to continue.
    queued: VecDeque<(u32, PendingStep)>,
}

impl<'g> Generator<'g> {
    /// Uploads `weights`, builds the decode graph (and the prefill graph when
    /// `options.prefill_batch > 0`, sized for `prompt_len` rows at most).
    pub fn new(
        gpu: &'g Gpu,
        weights: &ModelWeights,
        decoder: DecoderOptions,
        options: GenerateOptions,
        prompt_len: u32,
    ) -> Result<Generator<'g>, ModelError> {
        Self::from_decoder(
            gpu,
            GpuDecoder::new(gpu, weights, decoder)?,
            options,
            prompt_len,
        )
    }

    /// The loop around a decoder built elsewhere (a planted slowdown, a shared one);
    /// enables its prefill as [`Generator::new`] does.
    pub fn from_decoder(
        gpu: &'g Gpu,
        mut decoder: GpuDecoder,
        options: GenerateOptions,
        prompt_len: u32,
    ) -> Result<Generator<'g>, ModelError> {
        if options.prefill_batch > 0 && prompt_len > 0 {
            decoder.enable_prefill(gpu, prompt_len.clamp(1, options.prefill_batch))?;
        }
        Ok(Generator {
            gpu,
            decoder,
            options,
            queued: VecDeque::new(),
        })
    }

    pub fn decoder(&self) -> &GpuDecoder {
        &self.decoder
    }

    pub fn decoder_mut(&mut self) -> &mut GpuDecoder {
        self.finish_queued();
        &mut self.decoder
    }

    /// Waits for decode steps queued behind a prompt that no [`Generator::decode`]
    /// continued (the text ended at the prompt's token), so that whoever records steps
    /// sees each one end. Their errors are dropped: nothing was asked of them.
    fn finish_queued(&mut self) {
        while let Some((_, p)) = self.queued.pop_front() {
            let _ = self.decoder.finish(self.gpu, p);
        }
    }

    pub fn gpu(&self) -> &'g Gpu {
        self.gpu
    }

    /// Submits `n` decode steps continuing from the GPU's own last token, for the next
    /// [`Generator::decode`].
    fn queue_decode_steps(&mut self, n: u32) -> Result<(), ModelError> {
        for _ in 0..n {
            let position = self.decoder.position();
            let step = self.decoder.submit(self.gpu, None)?;
            self.queued.push_back((position, step));
        }
        Ok(())
    }

    /// Steps in flight at most.
    fn depth(&self) -> usize {
        self.options.in_flight.clamp(1, MAX_IN_FLIGHT)
    }

    fn stop_requested(&self) -> bool {
        self.options
            .stop
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Decodes `n` steps from position 0 without recording them (pipelines compile
    /// lazily on some drivers; GPU clocks ramp up), and with `n > 0` runs the batched
    /// prefill graph once on one token where it is built (its first submission pays the
    /// same one-time costs: on lavapipe a 32-token prompt took 1.5x as long the first
    /// time), then clears the position.
    pub fn warm_up(&mut self, n: u32, first_token: u32) -> Result<(), ModelError> {
        self.warm_up_until(first_token, |walls| walls.len() >= n as usize)
            .map(drop)
    }

    /// [`Generator::warm_up`] until the step time settles: the median of the last
    /// [`SETTLE_WINDOW`] steps within [`SETTLE_TOLERANCE`] of the median of the window
    /// before, or until `limit` of wall time or `max_steps` steps (the KV cache's size),
    /// as llama-bench and criterion warm up. Says how it ended.
    /// It decodes for at least `min` of wall time even when the steps settle sooner: a
    /// GPU's clocks can hold a steady but slow plateau before they ramp.
    pub fn warm_up_until_settled(
        &mut self,
        first_token: u32,
        min: std::time::Duration,
        limit: std::time::Duration,
        max_steps: u32,
    ) -> Result<WarmupDone, ModelError> {
        let start = std::time::Instant::now();
        let walls = self.warm_up_until(first_token, |walls| {
            let elapsed = start.elapsed();
            (settled(walls) && elapsed >= min)
                || elapsed >= limit
                || walls.len() >= max_steps as usize
        })?;
        Ok(WarmupDone {
            steps: walls.len() as u32,
            settled: settled(&walls),
            wall_ns: start.elapsed().as_nanos() as u64,
        })
    }

    /// Unrecorded decode steps from position 0 until `done` (given the walls so far)
    /// says stop, then the prefill graph once; returns the steps' walls.
    fn warm_up_until(
        &mut self,
        first_token: u32,
        mut done: impl FnMut(&[u64]) -> bool,
    ) -> Result<Vec<u64>, ModelError> {
        self.finish_queued();
        self.decoder.set_recorded(false);
        let mut walls = Vec::new();
        let mut result = Ok(());
        while !done(&walls) {
            let input = walls.is_empty().then_some(first_token);
            match self.decoder.step(self.gpu, input) {
                Ok(out) => walls.push(out.output.wall_ns),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() && !walls.is_empty() && self.decoder.prefill_graph().is_some() {
            self.decoder.reset();
            result = self.decoder.prefill(self.gpu, &[first_token]).map(drop);
        }
        self.decoder.set_recorded(true);
        self.decoder.reset();
        result.map(|()| walls)
    }

    /// Feeds `prompt` at the current position: through batched prefill when it is
    /// enabled, else one decode step per token (each handed to `each`, as `decode`
    /// does). The next token stays on the GPU, so [`Generator::decode`] with no input
    /// continues from it.
    pub fn prompt(
        &mut self,
        prompt: &[u32],
        each: impl FnMut(&Step) -> Result<(), ModelError>,
    ) -> Result<PromptDone, ModelError> {
        self.prompt_ahead(prompt, 0, each)
    }

    /// [`Generator::prompt`], and where the prompt goes through batched prefill, the
    /// first of the `decode_steps` that will follow (at most the steps in flight) are
    /// submitted behind its last batch before its token is read back, so the GPU goes
    /// from the prompt to them without waiting for the CPU: the pipeline the decode loop
    /// would fill at its first step is full already (H100, SmolLM2: that first step
    /// took 0.4-0.7 ms more than the next ones). The next [`Generator::decode`] (no
    /// first input) continues them.
    pub fn prompt_ahead(
        &mut self,
        prompt: &[u32],
        decode_steps: u32,
        mut each: impl FnMut(&Step) -> Result<(), ModelError>,
    ) -> Result<PromptDone, ModelError> {
        if prompt.is_empty() {
            return Err(ModelError::Config("the prompt has no tokens".into()));
        }
        self.finish_queued();
        let start = Instant::now();
        let batch = self.decoder.prefill_max_batch();
        let mut ops = Vec::new();
        let (next, method) = if batch > 0 {
            let mut next = 0;
            let chunks = prompt.len().div_ceil(batch as usize);
            for (i, chunk) in prompt.chunks(batch as usize).enumerate() {
                if self.stop_requested() {
                    return Err(ModelError::Interrupted);
                }
                let pending = self.decoder.prefill_submit(self.gpu, chunk)?;
                let ahead = if i + 1 == chunks {
                    self.queue_decode_steps(decode_steps.min(self.depth() as u32))
                } else {
                    Ok(())
                };
                // The prefill is waited for even when queuing failed, so that its
                // runner slot is free again.
                let batched = matches!(pending, PendingPrefill::Submitted(_));
                let step = self.decoder.prefill_finish(self.gpu, pending)?;
                if let Some(graph) = self.decoder.prefill_graph().filter(|_| batched) {
                    add_prompt_ops(&mut ops, graph, &step.output);
                }
                next = step.token;
                ahead?;
            }
            (next, self.decoder.prefill_method())
        } else {
            let mut next = 0;
            for (i, &t) in prompt.iter().enumerate() {
                if self.stop_requested() {
                    return Err(ModelError::Interrupted);
                }
                let position = self.decoder.position();
                let step = self.decoder.step(self.gpu, Some(t))?;
                next = step.token;
                each(&Step {
                    index: i as u32,
                    position,
                    token: next,
                    output: &step.output,
                    after_stop: false,
                })?;
            }
            (next, "one token per step".to_string())
        };
        ops.sort_by_key(|o: &PromptOp| std::cmp::Reverse(o.gpu_ns));
        Ok(PromptDone {
            next,
            tokens: prompt.len() as u32,
            wall_ns: start.elapsed().as_nanos() as u64,
            method,
            ops,
        })
    }

    /// Decodes up to `n` steps with up to `in_flight` of them on the GPU at once. The
    /// first step is fed `first_input` (none: it continues from the GPU's own last
    /// token); each later step feeds itself the previous step's argmax without a trip
    /// through the CPU. `each` sees every finished step in order.
    pub fn decode(
        &mut self,
        first_input: Option<u32>,
        n: u32,
        mut each: impl FnMut(&Step) -> Result<Flow, ModelError>,
    ) -> Result<Ended, ModelError> {
        let depth = self.depth();
        // Steps queued behind the prompt come first (they continue from its token).
        if !self.queued.is_empty() && first_input.is_some() {
            return Err(ModelError::Config(
                "decode was given a first token while steps queued behind the prompt continue from the prompt's own".into(),
            ));
        }
        let mut pending: VecDeque<(u32, u32, PendingStep)> = VecDeque::new();
        let mut submitted = 0u32;
        while let Some((position, p)) = self.queued.pop_front() {
            pending.push_back((submitted, position, p));
            submitted += 1;
        }
        let mut ended = Ended::Completed;
        let mut error = None;
        loop {
            while ended == Ended::Completed && pending.len() < depth && submitted < n {
                if self.stop_requested() {
                    ended = Ended::Interrupted;
                    break;
                }
                let position = self.decoder.position();
                let input = if submitted == 0 { first_input } else { None };
                match self.decoder.submit(self.gpu, input) {
                    Ok(p) => pending.push_back((submitted, position, p)),
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
                submitted += 1;
            }
            if error.is_some() {
                break;
            }
            let Some((index, position, p)) = pending.pop_front() else {
                break;
            };
            let step = match self.decoder.finish(self.gpu, p) {
                Ok(s) => s,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            };
            let after_stop = ended != Ended::Completed || index >= n;
            let flow = each(&Step {
                index,
                position,
                token: step.token,
                output: &step.output,
                after_stop,
            });
            match flow {
                Ok(Flow::Stop) if !after_stop => ended = Ended::Stopped,
                Ok(_) => {}
                Err(e) => {
                    error = Some(e);
                    ended = Ended::Stopped;
                }
            }
        }
        // Whatever stopped the loop, steps already submitted are finished: the GPU ran
        // them, and whoever records steps must see each one end.
        while let Some((index, position, p)) = pending.pop_front() {
            match self.decoder.finish(self.gpu, p) {
                Ok(step) => {
                    let _ = each(&Step {
                        index,
                        position,
                        token: step.token,
                        output: &step.output,
                        after_stop: true,
                    });
                }
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(ended),
        }
    }
}

impl Drop for Generator<'_> {
    fn drop(&mut self) {
        self.finish_queued();
    }
}

/// Adds one batched prefill submit's dispatches (`graph`'s, measured in `out`) to the
/// prompt's sums by op and label (less the layer). A span the recorder flagged is not
/// counted as timed.
fn add_prompt_ops(ops: &mut Vec<PromptOp>, graph: &gpuscope_runtime::Graph, out: &StepOutput) {
    let dispatches = graph.sections.iter().flat_map(|s| &s.dispatches);
    for (d, sample) in dispatches.zip(&out.dispatches) {
        let label = d.label.split_once('.').map_or("", |(_, name)| name);
        let i = match ops.iter().position(|o| o.op == d.op && o.label == label) {
            Some(i) => i,
            None => {
                ops.push(PromptOp {
                    op: d.op.clone(),
                    label: label.to_string(),
                    ..PromptOp::default()
                });
                ops.len() - 1
            }
        };
        let op = &mut ops[i];
        op.calls += 1;
        if let (Some(span), None) = (sample.gpu, sample.issue) {
            op.timed_calls += 1;
            op.gpu_ns += span.duration_ns();
        }
    }
}
