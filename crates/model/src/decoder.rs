//! The GPU decoder: weights uploaded once (`gpu_weights`), one graph built once
//! (`decode_graph`), one step per token.
//!
//! Per token: upload the 16-byte step buffer (and the input token when one is given),
//! one submit, one readback (the argmax token, optionally the logits, and timestamps).
//! The embedding reads its token id from the buffer argmax wrote on the previous step,
//! so greedy decoding never waits on the CPU to feed the next token.
//!
//! Prompts can instead go through a second, batched graph ([`GpuDecoder::enable_prefill`],
//! [`GpuDecoder::prefill`]; built by `prefill_graph`) that shares these weights
//! and KV cache.

use std::collections::BTreeMap;

use gpuscope_ops::gemv::GemvVariant;
use gpuscope_runtime::{Gpu, GpuBuffer, Graph, PendingStep, StepOutput, StepRunner};
use gpuscope_trace::TimingMode;

use crate::activations::Activations;
use crate::config::LlamaConfig;
use crate::decode_graph::{build_decode, AttentionSite};
use crate::error::ModelError;
use crate::gpu_weights::GpuWeights;
use crate::plan::KernelPlan;
use crate::prefill_graph::{check_chunk, layers_run_wide, Prefill, Shared};
use crate::weights::ModelWeights;

/// Decoder options.
#[derive(Debug, Clone)]
pub struct DecoderOptions {
    /// KV-cache capacity in tokens.
    pub max_ctx: u32,
    /// Read the logits back every step (tests and correctness checks; costs bandwidth).
    pub read_logits: bool,
}

/// What one GPU step produced.
pub struct GpuStep {
    /// The greedy next token.
    pub token: u32,
    pub logits: Option<Vec<f32>>,
    pub output: StepOutput,
}

/// The GPU decoder: the uploaded weights, the decode graph and its runner, and the
/// prefill graph once enabled.
pub struct GpuDecoder {
    pub(crate) config: LlamaConfig,
    pub(crate) options: DecoderOptions,
    pub(crate) plan: KernelPlan,
    pub(crate) graph: Graph,
    pub(crate) runner: StepRunner,
    pub(crate) acts: Activations,
    /// The attention dispatches, whose cost depends on the position.
    pub(crate) attention_dispatches: Vec<AttentionSite>,
    /// The kernel choices as built, for profiles.
    pub(crate) settings: BTreeMap<String, String>,
    pub(crate) position: u32,
    /// The uploaded weights, kept for graphs built later ([`GpuDecoder::enable_prefill`]).
    pub(crate) weights: GpuWeights,
    /// The batched prompt-processing graph, when enabled.
    pub(crate) prefill: Option<Prefill>,
    /// Prompts of up to this many tokens go through decode steps instead (adapters whose
    /// kernel plan is CPU-style; see [`GpuDecoder::enable_prefill`]).
    pub(crate) prefill_steps: Option<u32>,
    /// Positions of the steps submitted and not yet finished, oldest first.
    pub(crate) in_flight_positions: std::collections::VecDeque<u32>,
    /// Whether decode steps go into the recorder's profile ([`Self::set_recorded`]).
    pub(crate) recorded: bool,
}

/// Refuses a KV cache (one buffer per layer for K and one for V, each bound whole by
/// attention) over the device's limits before anything is created, naming the token
/// count, which is what sizes it.
fn check_kv_cache(gpu: &Gpu, positions: u32, bytes_per_position: u64) -> Result<(), ModelError> {
    let l = gpu.limits();
    let (limit, limit_name) = if l.max_buffer_size < l.max_storage_buffer_binding_size {
        (l.max_buffer_size, "max_buffer_size")
    } else {
        (
            l.max_storage_buffer_binding_size,
            "max_storage_buffer_binding_size",
        )
    };
    let bytes = bytes_per_position * u64::from(positions);
    if bytes > limit {
        return Err(ModelError::KvCacheTooLarge {
            positions,
            bytes,
            limit,
            limit_name,
            fits: limit / bytes_per_position.max(1),
        });
    }
    Ok(())
}

impl GpuDecoder {
    /// Uploads `weights` and builds the per-token graph with the adapter's kernel plan
    /// ([`KernelPlan::for_adapter`]). All resources are created here.
    pub fn new(
        gpu: &Gpu,
        weights: &ModelWeights,
        options: DecoderOptions,
    ) -> Result<GpuDecoder, ModelError> {
        Self::with_plan(gpu, weights, options, KernelPlan::for_adapter(gpu))
    }

    /// Like [`Self::new`] with the given kernel variants and fusions.
    pub fn with_plan(
        gpu: &Gpu,
        weights: &ModelWeights,
        options: DecoderOptions,
        plan: KernelPlan,
    ) -> Result<GpuDecoder, ModelError> {
        Self::with_planted_slowdown(gpu, weights, options, plan, None)
    }

    /// [`GpuDecoder::with_plan`] with extra GPU work planted in one gemv of every layer
    /// (for tests of the regression gate; `None` is `with_plan`).
    pub fn with_planted_slowdown(
        gpu: &Gpu,
        weights: &ModelWeights,
        options: DecoderOptions,
        plan: KernelPlan,
        planted: Option<&crate::PlantedSlowdown>,
    ) -> Result<GpuDecoder, ModelError> {
        let _span = tracing::info_span!("gpu_decoder_new").entered();
        let c = weights.config.clone();
        c.validate().map_err(ModelError::Config)?;
        plan.check(gpu).map_err(ModelError::Kernel)?;
        // The KV cache is sized from the token count: say so before any allocation.
        check_kv_cache(gpu, options.max_ctx, c.kv_dim() as u64 * 4)?;
        // The setup's phases as CPU spans (outside any step: the profile's setup), so the
        // report and trace say where a long setup went.
        let phase = |name: &str, start: std::time::Instant| {
            gpu.recorder()
                .record_span(name, start, std::time::Instant::now(), None)
        };
        let t = std::time::Instant::now();
        let acts = Activations::new(gpu, &c, options.max_ctx, &plan)?;
        phase("setup: activations and KV cache", t);
        let t = std::time::Instant::now();
        let uploaded = GpuWeights::upload(gpu, weights, &plan)?;
        phase("setup: weights (repack and upload)", t);
        let t = std::time::Instant::now();
        let built = build_decode(gpu, &c, options.max_ctx, &plan, &uploaded, &acts, planted)?;
        let runner = acts.runner(gpu, &built.graph, options.read_logits)?;
        phase("setup: decode graph (pipelines, bind groups)", t);
        Ok(GpuDecoder {
            config: c,
            options,
            plan,
            graph: built.graph,
            runner,
            acts,
            attention_dispatches: built.attention,
            settings: built.settings,
            position: 0,
            weights: uploaded,
            prefill: None,
            prefill_steps: None,
            in_flight_positions: Default::default(),
            recorded: true,
        })
    }

    /// The kernel variants and fusions the graph was built with, resolved (what
    /// profiles record in [`gpuscope_trace::WorkloadDesc::settings`]).
    pub fn settings(&self) -> &BTreeMap<String, String> {
        &self.settings
    }

    /// The plan the decoder was built with.
    pub fn plan(&self) -> &KernelPlan {
        &self.plan
    }

    /// Switches the device's timing mode (between steps; the recorder times every step
    /// of the device the same way).
    pub fn set_timing(&mut self, gpu: &Gpu, timing: TimingMode) -> Result<(), ModelError> {
        gpu.set_timing(gpuscope_runtime::TimingRequest::Exactly(timing))?;
        Ok(())
    }

    /// Whether decode steps from now on go into the recorder's profile (warm-up steps
    /// do not). Prefill steps never do: the profile's tokens are decoded ones.
    pub fn set_recorded(&mut self, recorded: bool) {
        self.recorded = recorded;
        self.runner.set_recorded(recorded);
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    pub fn position(&self) -> u32 {
        self.position
    }

    /// Clears the KV cache position (the cache contents are overwritten as it refills).
    pub fn reset(&mut self) {
        self.position = 0;
        self.in_flight_positions.clear();
    }

    /// Decodes one token at the next position and waits for it. `input` feeds a given
    /// token (the first one, a prompt token, a forced token); `None` continues from the
    /// GPU's own argmax.
    pub fn step(&mut self, gpu: &Gpu, input: Option<u32>) -> Result<GpuStep, ModelError> {
        let pending = self.submit(gpu, input)?;
        self.finish(gpu, pending)
    }

    /// Submits one token without waiting for it; up to
    /// [`gpuscope_runtime::MAX_IN_FLIGHT`] tokens may be in flight. Finish them in order.
    pub fn submit(&mut self, gpu: &Gpu, input: Option<u32>) -> Result<PendingStep, ModelError> {
        if self.position >= self.options.max_ctx {
            return Err(ModelError::ContextFull {
                max_ctx: self.options.max_ctx,
            });
        }
        if let Some(t) = input {
            if t >= self.config.vocab {
                return Err(ModelError::Config(format!(
                    "token {t} is outside the vocabulary ({})",
                    self.config.vocab
                )));
            }
        }
        let n_ctx = self.position + 1;
        self.update_attention_costs(n_ctx);
        let step: [u32; 4] = [self.position, n_ctx, 0, 0];
        let token_bytes;
        let mut uploads: Vec<(&GpuBuffer, u64, &[u8])> =
            vec![(&self.acts.step, 0, bytemuck::cast_slice(&step))];
        if let Some(t) = input {
            token_bytes = t.to_le_bytes();
            uploads.push((&self.acts.token, 0, &token_bytes));
        }
        let pending = self.runner.submit(gpu, &self.graph, &uploads)?;
        self.in_flight_positions.push_back(self.position);
        self.position += 1;
        Ok(pending)
    }

    /// Waits for a submitted token and reads its results.
    pub fn finish(&mut self, gpu: &Gpu, pending: PendingStep) -> Result<GpuStep, ModelError> {
        let position = self.in_flight_positions.pop_front();
        let output = self
            .runner
            .finish_tagged(gpu, &self.graph, pending, |readbacks| {
                let token = u32::from_le_bytes(readbacks[0][..4].try_into().ok()?);
                position.map(|p| (p, token))
            })?;
        let token = u32::from_le_bytes(output.readbacks[0][..4].try_into().unwrap());
        let logits = self.options.read_logits.then(|| {
            bytemuck::pod_collect_to_vec::<u8, f32>(&output.readbacks[1])
                [..self.config.vocab as usize]
                .to_vec()
        });
        Ok(GpuStep {
            token,
            logits,
            output,
        })
    }

    /// Attention's bytes and FLOPs grow with the context; keep the declared costs exact.
    fn update_attention_costs(&mut self, n_ctx: u32) {
        for site in &self.attention_dispatches {
            // A window's ring holds at most its rows.
            self.graph.sections[site.section].dispatches[site.dispatch].cost =
                site.kind.at(&site.op, n_ctx.min(site.op.max_ctx));
        }
    }
}

/// A prefill submitted and not yet waited for ([`GpuDecoder::prefill_submit`]).
pub enum PendingPrefill {
    /// On the GPU: [`GpuDecoder::prefill_finish`] waits for it.
    Submitted(gpuscope_runtime::PendingStep),
    /// Fed through decode steps, already finished.
    Done(GpuStep),
}

/// The prefill graph, or the error that says it was never built. (A function of the
/// field, not of the decoder, so the decoder's other fields stay free to borrow.)
fn enabled(prefill: &mut Option<Prefill>) -> Result<&mut Prefill, ModelError> {
    prefill.as_mut().ok_or_else(|| {
        ModelError::Config("prefill is not enabled (GpuDecoder::enable_prefill)".into())
    })
}

/// Prompt processing: the batched graph where the plan has one, else decode steps.
impl GpuDecoder {
    /// Builds the batched prompt-processing graph for prompts chunks of up to `max_batch`
    /// tokens (setup time: buffers, pipelines and bind groups are created here, none per
    /// call). Calling it again rebuilds it for the new size.
    ///
    /// With the CPU-style gemv variant (`rows`: lavapipe and other CPU adapters) the
    /// graph multiplies through the wide rows frame's batched form
    /// ([`gpuscope_ops::gemv::GemvBatched::dispatch_wide`]) where every quantized matrix
    /// of the layers runs it; where not, no graph is built: the lanes frame's batched
    /// gemv is slow there (measured: BENCHMARKS.md, "2026-11-23 — lavapipe").
    /// [`Self::prefill`] then runs the decode graph once per token, and
    /// [`Self::prefill_method`] says so.
    pub fn enable_prefill(&mut self, gpu: &Gpu, max_batch: u32) -> Result<(), ModelError> {
        let _span = tracing::info_span!("gpu_prefill_new").entered();
        if max_batch == 0 {
            return Err(ModelError::Config("prefill max_batch must be > 0".into()));
        }
        self.prefill = None;
        self.prefill_steps = None;
        if self.plan.gemv == GemvVariant::Rows && !layers_run_wide(&self.weights, gpu, max_batch) {
            self.prefill_steps = Some(max_batch);
            return Ok(());
        }
        let shared = Shared {
            c: &self.config,
            plan: &self.plan,
            w: &self.weights,
            a: &self.acts,
        };
        let prefill = Prefill::build(
            gpu,
            shared,
            self.options.max_ctx,
            self.options.read_logits,
            max_batch,
        )?;
        self.settings
            .insert("prefill".into(), prefill.setting.clone());
        self.prefill = Some(prefill);
        Ok(())
    }

    /// The largest prompt chunk [`Self::prefill`] takes (0 when not enabled).
    pub fn prefill_max_batch(&self) -> u32 {
        self.prefill
            .as_ref()
            .map(|p| p.max_batch)
            .or(self.prefill_steps)
            .unwrap_or(0)
    }

    /// How [`Self::prefill`] processes a prompt, for reports.
    pub fn prefill_method(&self) -> String {
        match (&self.prefill, self.prefill_steps) {
            (Some(p), _) => match self.ring_window() {
                Some(w) => format!(
                    "batched prefill, up to {} tokens a batch, below position {w}; later prompt tokens one decode step each (a batch would wrap the sliding window's ring cache)",
                    p.max_batch
                ),
                None => format!("batched prefill, up to {} tokens a batch", p.max_batch),
            },
            (None, Some(_)) => format!(
                "one decode step per token, up to {} in flight (gemv variant {}: the batched kernels have no CPU-style form)",
                gpuscope_runtime::MAX_IN_FLIGHT,
                self.plan.gemv.name()
            ),
            (None, None) => "prefill not enabled".into(),
        }
    }

    /// The sliding window, where some layer keeps its cache as a ring of that many rows
    /// (the window is narrower than the context): the batched graph serves positions
    /// below it only ([`crate::prefill_graph`]).
    fn ring_window(&self) -> Option<u32> {
        let (c, max_ctx) = (&self.config, self.options.max_ctx);
        (0..c.n_layers).find_map(|l| c.window_at(l, max_ctx))
    }

    /// The prefill graph, when enabled.
    pub fn prefill_graph(&self) -> Option<&Graph> {
        self.prefill.as_ref().map(|p| &p.graph)
    }

    /// Processes `tokens` (at most [`Self::prefill_max_batch`]) at positions
    /// `position..position + len` in one submit and waits for it: fills their KV-cache
    /// rows, advances the position and returns the greedy next token after the last one
    /// (with its logits when `read_logits`). The token is also left in the GPU token
    /// buffer, so `submit(gpu, None)` continues from it.
    pub fn prefill(&mut self, gpu: &Gpu, tokens: &[u32]) -> Result<GpuStep, ModelError> {
        let pending = self.prefill_submit(gpu, tokens)?;
        self.prefill_finish(gpu, pending)
    }

    /// [`Self::prefill`]'s first half: the submit, the position advanced. Decode steps
    /// submitted before [`Self::prefill_finish`] run behind it on the GPU, continuing
    /// from the token it leaves in the token buffer. (Through decode steps, where the
    /// plan has no prefill graph, the whole prefill happens here.)
    pub fn prefill_submit(
        &mut self,
        gpu: &Gpu,
        tokens: &[u32],
    ) -> Result<PendingPrefill, ModelError> {
        if let Some(max_batch) = self.prefill_steps {
            return self
                .prefill_by_steps(gpu, tokens, max_batch)
                .map(PendingPrefill::Done);
        }
        let end = u64::from(self.position) + tokens.len() as u64;
        if let Some(w) = self.ring_window().filter(|&w| end > u64::from(w)) {
            return self
                .prefill_past_window(gpu, tokens, w)
                .map(PendingPrefill::Done);
        }
        let (max_ctx, vocab) = (self.options.max_ctx, self.config.vocab);
        let pending =
            enabled(&mut self.prefill)?.submit(gpu, self.position, tokens, max_ctx, vocab)?;
        self.position += tokens.len() as u32;
        Ok(PendingPrefill::Submitted(pending))
    }

    /// [`Self::prefill`]'s second half: waits for the submit and reads its token back.
    pub fn prefill_finish(
        &mut self,
        gpu: &Gpu,
        pending: PendingPrefill,
    ) -> Result<GpuStep, ModelError> {
        let pending = match pending {
            PendingPrefill::Done(step) => return Ok(step),
            PendingPrefill::Submitted(pending) => pending,
        };
        let vocab = self.config.vocab;
        let output = enabled(&mut self.prefill)?.finish(gpu, pending)?;
        let token = u32::from_le_bytes(output.readbacks[0][..4].try_into().unwrap());
        let logits = self.options.read_logits.then(|| {
            bytemuck::pod_collect_to_vec::<u8, f32>(&output.readbacks[1])[..vocab as usize].to_vec()
        });
        Ok(GpuStep {
            token,
            logits,
            output,
        })
    }

    /// A prompt chunk that reaches position `window`: the part below it batched, the
    /// rest a decode step per token (a batch past it would wrap the ring cache of the
    /// windowed layers). Checked whole before anything runs.
    fn prefill_past_window(
        &mut self,
        gpu: &Gpu,
        tokens: &[u32],
        window: u32,
    ) -> Result<GpuStep, ModelError> {
        let max_batch = self.prefill_max_batch();
        self.check_chunk(tokens, max_batch)?;
        let below = window.saturating_sub(self.position) as usize;
        if below > 0 {
            let (max_ctx, vocab) = (self.options.max_ctx, self.config.vocab);
            let pending = enabled(&mut self.prefill)?.submit(
                gpu,
                self.position,
                &tokens[..below],
                max_ctx,
                vocab,
            )?;
            self.position += below as u32;
            self.prefill_finish(gpu, PendingPrefill::Submitted(pending))?;
        }
        self.prefill_by_steps(gpu, &tokens[below..], max_batch)
    }

    /// [`check_chunk`] for a chunk from the decoder's position.
    fn check_chunk(&self, tokens: &[u32], max_batch: u32) -> Result<(), ModelError> {
        let (max_ctx, vocab) = (self.options.max_ctx, self.config.vocab);
        check_chunk(tokens, max_batch, self.position, max_ctx, vocab)
    }

    /// [`Self::prefill`] through the decode graph: each token one step, up to
    /// [`gpuscope_runtime::MAX_IN_FLIGHT`] in flight, the last one's result returned.
    fn prefill_by_steps(
        &mut self,
        gpu: &Gpu,
        tokens: &[u32],
        max_batch: u32,
    ) -> Result<GpuStep, ModelError> {
        self.check_chunk(tokens, max_batch)?;
        // Prompt steps are not decoded tokens: kept out of the profile like the batched
        // prefill's (see `enable_prefill`).
        self.runner.set_recorded(false);
        let result = self.prefill_steps_unrecorded(gpu, tokens);
        self.runner.set_recorded(self.recorded);
        result
    }

    fn prefill_steps_unrecorded(
        &mut self,
        gpu: &Gpu,
        tokens: &[u32],
    ) -> Result<GpuStep, ModelError> {
        let mut pending = std::collections::VecDeque::new();
        let mut last = None;
        for &t in tokens {
            if pending.len() == gpuscope_runtime::MAX_IN_FLIGHT {
                last = Some(self.finish(gpu, pending.pop_front().unwrap())?);
            }
            pending.push_back(self.submit(gpu, Some(t))?);
        }
        while let Some(p) = pending.pop_front() {
            last = Some(self.finish(gpu, p)?);
        }
        Ok(last.expect("at least one token"))
    }
}
