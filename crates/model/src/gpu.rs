//! The GPU decoder: weights uploaded once, one graph built once, one step per token.
//!
//! Per token: upload the 16-byte step buffer (and the input token when one is given),
//! one submit, one readback (the argmax token, optionally the logits, and timestamps).
//! The embedding reads its token id from the buffer argmax wrote on the previous step,
//! so greedy decoding never waits on the CPU to feed the next token.
//!
//! Prompts can instead go through a second, batched graph ([`GpuDecoder::enable_prefill`],
//! [`GpuDecoder::prefill`]; see `prefill.rs`) that shares these weights and KV cache.

use std::collections::BTreeMap;

use gpuscope_ops::attention::AttnVariant;
use gpuscope_ops::embedding::Embedding;
use gpuscope_ops::gemv::{Gemv, GemvBuffers, GemvEpilogue, GemvFused, WeightLayout};
use gpuscope_runtime::{
    Dispatch, Gpu, GpuBuffer, Graph, PendingStep, StepOutput, StepRunner, STEP_BUFFER_BYTES,
};
use gpuscope_trace::{MemoryKind, TimingMode};

use crate::config::LlamaConfig;
use crate::error::ModelError;
use crate::graph::AttnCost;
use crate::plan::{Fusion, KernelPlan};
use crate::weights::{ModelWeights, Tensor};

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

/// A weight matrix on the GPU, split in row chunks when larger than one binding.
pub(crate) struct GpuMatrix {
    pub(crate) chunks: Vec<(GpuBuffer, u32, u32)>, // (buffer, first row, rows)
    pub(crate) tensor_format: gpuscope_ops::WeightFormat,
    pub(crate) cols: u32,
    /// How the chunks hold the weights (every chunk alike).
    pub(crate) layout: WeightLayout,
}

/// Uploads `t` in the layout the plan gives a matrix of its format and size
/// ([`KernelPlan::layout_for`]); each row chunk is packed on its own (a chunk is a matrix
/// to its kernels).
fn upload_matrix(gpu: &Gpu, t: &Tensor, plan: &KernelPlan) -> Result<GpuMatrix, ModelError> {
    upload_matrix_as(gpu, t, plan.layout_for(t.format, t.rows, t.cols))
}

/// [`upload_matrix`] in `layout` where the format has it, else as GGUF bytes.
fn upload_matrix_as(gpu: &Gpu, t: &Tensor, layout: WeightLayout) -> Result<GpuMatrix, ModelError> {
    let layout = layout.for_format(t.format);
    let max_binding = gpu.limits().max_storage_buffer_binding_size;
    let row_bytes = t.row_bytes() as u64;
    let rows_per_chunk = (max_binding / row_bytes).min(t.rows as u64).max(1) as u32;
    let mut chunks = Vec::new();
    let mut first = 0u32;
    while first < t.rows {
        let rows = rows_per_chunk.min(t.rows - first);
        let bytes = &t.data
            [(first as u64 * row_bytes) as usize..((first + rows) as u64 * row_bytes) as usize];
        let label = if first == 0 && rows == t.rows {
            t.name.clone()
        } else {
            format!("{}[{}..{}]", t.name, first, first + rows)
        };
        let stored = match layout {
            WeightLayout::Gguf => std::borrow::Cow::Borrowed(bytes),
            _ => std::borrow::Cow::Owned(layout.pack(t.format, bytes)),
        };
        chunks.push((
            gpu.create_buffer_init_as(MemoryKind::Weights, &label, &stored)?,
            first,
            rows,
        ));
        first += rows;
    }
    Ok(GpuMatrix {
        chunks,
        tensor_format: t.format,
        cols: t.cols,
        layout,
    })
}

impl GpuMatrix {
    /// Rows of the whole matrix (every chunk).
    pub(crate) fn rows(&self) -> u32 {
        self.chunks.iter().map(|(_, _, rows)| rows).sum()
    }

    /// Each row chunk's buffer with the [`Gemv`] it is to its kernels (rows from
    /// `out_offset` = the chunk's first row).
    pub(crate) fn chunk_gemvs(&self) -> impl Iterator<Item = (&GpuBuffer, Gemv)> + '_ {
        self.chunks.iter().map(move |(buf, first, rows)| {
            (
                buf,
                Gemv {
                    rows: *rows,
                    cols: self.cols,
                    format: self.tensor_format,
                    out_offset: *first,
                    layout: self.layout,
                },
            )
        })
    }

    /// One [`GemvFused`] dispatch per row chunk: `norm` folds rms_norm (its eps) into the
    /// input, `epilogue` says where rows go. Buffers other than the weights in `io`
    /// (its `w` is replaced per chunk). `extra_passes` plants a slowdown (see
    /// [`crate::PlantedSlowdown`]), 0 for none.
    pub(crate) fn gemv_fused(
        &self,
        gpu: &Gpu,
        plan: &KernelPlan,
        norm: Option<f32>,
        epilogue: GemvEpilogue,
        io: GemvBuffers,
        extra_passes: u32,
    ) -> Result<Vec<Dispatch>, ModelError> {
        self.chunk_gemvs()
            .map(|(buf, gemv)| {
                let op = GemvFused {
                    gemv,
                    norm,
                    epilogue,
                };
                let variant =
                    plan.gemv_for(gpu, self.tensor_format, self.layout, self.rows(), self.cols);
                let tuning = op.fit_tuning(gemv.tuning_with(variant, plan.gemv_shape, gpu));
                let io = GemvBuffers { w: buf, ..io };
                Ok(op.dispatch_planted(gpu, tuning, &io, extra_passes)?)
            })
            .collect()
    }

    /// y = W·x, or y += W·x with `accumulate`, one dispatch per row chunk (`extra_passes`
    /// as in [`Self::gemv_fused`]).
    pub(crate) fn gemv(
        &self,
        gpu: &Gpu,
        plan: &KernelPlan,
        x: &GpuBuffer,
        y: &GpuBuffer,
        accumulate: bool,
        extra_passes: u32,
    ) -> Result<Vec<Dispatch>, ModelError> {
        let epilogue = if accumulate {
            GemvEpilogue::Accumulate
        } else {
            GemvEpilogue::Store
        };
        self.gemv_fused(
            gpu,
            plan,
            None,
            epilogue,
            GemvBuffers::new(x, x, y),
            extra_passes,
        )
    }

    /// Whether every row chunk starts on an even row and holds whole row pairs (what the
    /// rope epilogue needs).
    pub(crate) fn whole_pairs(&self) -> bool {
        self.chunks
            .iter()
            .all(|(_, first, rows)| first % 2 == 0 && rows % 2 == 0)
    }

    pub(crate) fn embedding(
        &self,
        gpu: &Gpu,
        token: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Vec<Dispatch>, ModelError> {
        self.chunks
            .iter()
            .map(|(buf, first, rows)| {
                let op = Embedding {
                    rows: *rows,
                    dim: self.cols,
                    format: self.tensor_format,
                    row_start: *first,
                };
                Ok(op.dispatch(gpu, buf, token, out)?)
            })
            .collect()
    }
}

/// Matrices that write one output vector at the given rows (q/k/v, gate/up): stacked
/// into one matrix — one dispatch — when they share a format, else uploaded apart, each
/// writing its rows through `out_offset` (quantized files often keep `attn_v` in a
/// different format from `attn_q`).
fn upload_stacked(
    gpu: &Gpu,
    name: &str,
    parts: &[(&Tensor, u32)],
    plan: &KernelPlan,
) -> Result<Vec<GpuMatrix>, ModelError> {
    let first = parts[0].0;
    if parts
        .iter()
        .all(|(t, _)| t.format == first.format && t.cols == first.cols)
    {
        return Ok(vec![upload_matrix(gpu, &concat_rows(name, parts), plan)?]);
    }
    parts
        .iter()
        .map(|(t, start)| {
            let mut m = upload_matrix(gpu, t, plan)?;
            for chunk in &mut m.chunks {
                chunk.1 += start;
            }
            Ok(m)
        })
        .collect()
}

/// Stacks matrices of one width and format into one, each part starting at the given row; rows
/// between parts (alignment padding) are zero blocks, which every format decodes to 0.
fn concat_rows(name: &str, parts: &[(&Tensor, u32)]) -> Tensor {
    let first = parts[0].0;
    let row_bytes = first.row_bytes();
    let rows = parts
        .iter()
        .map(|(t, start)| start + t.rows)
        .max()
        .unwrap_or(0);
    let mut data = vec![0u8; rows as usize * row_bytes];
    for (t, start) in parts {
        assert!(
            t.cols == first.cols && t.format == first.format,
            "concat_rows: parts differ in shape or format"
        );
        let at = *start as usize * row_bytes;
        data[at..at + t.data.len()].copy_from_slice(&t.data);
    }
    Tensor {
        name: name.to_string(),
        format: first.format,
        rows,
        cols: first.cols,
        data: data.into(),
    }
}

/// First row of `up` in the gate/up output: right after gate, rounded up so the `up`
/// view starts on the device's storage-offset alignment.
pub(crate) fn up_start_row(gpu: &Gpu, ffn_dim: u32) -> u32 {
    let align = gpu.limits().min_storage_buffer_offset_alignment.max(4);
    (ffn_dim * 4).next_multiple_of(align) / 4
}

/// Activations and caches of the decoder.
pub(crate) struct Activations {
    pub(crate) step: GpuBuffer,
    pub(crate) token: GpuBuffer,
    pub(crate) x: GpuBuffer,
    pub(crate) xn: GpuBuffer,
    /// q, k and v, written by one gemv over the concatenated matrices.
    pub(crate) qkv: GpuBuffer,
    /// The q part of `qkv` (attention reads it).
    pub(crate) q: GpuBuffer,
    pub(crate) attn: GpuBuffer,
    /// gate and up, written by one gemv; `up` starts at row `up_row` (aligned for binding).
    pub(crate) gate_up: GpuBuffer,
    pub(crate) gate: GpuBuffer,
    pub(crate) up: GpuBuffer,
    pub(crate) hidden: GpuBuffer,
    pub(crate) logits: GpuBuffer,
    pub(crate) k_cache: Vec<GpuBuffer>,
    pub(crate) v_cache: Vec<GpuBuffer>,
    /// A projection's output before the residual add, when that fusion is off.
    pub(crate) delta: Option<GpuBuffer>,
    /// Attention scores (`n_heads × max_ctx`), when attention is not fused.
    pub(crate) scores: Option<GpuBuffer>,
    /// Split-K attention's partials, with that variant.
    pub(crate) attn_scratch: Option<GpuBuffer>,
}

impl Activations {
    fn new(
        gpu: &Gpu,
        c: &LlamaConfig,
        max_ctx: u32,
        plan: &KernelPlan,
    ) -> Result<Activations, ModelError> {
        let f32s = |n: u32| n as u64 * 4;
        let buf =
            |label: &str, bytes: u64| gpu.create_buffer_as(MemoryKind::Activations, label, bytes);
        let kv_cache = |name: &str| {
            let bytes = f32s(c.kv_dim()) * max_ctx as u64;
            (0..c.n_layers)
                .map(|i| gpu.create_buffer_as(MemoryKind::KvCache, &format!("L{i}.{name}"), bytes))
                .collect::<Result<Vec<_>, _>>()
        };
        let qkv_rows = c.q_dim() + 2 * c.kv_dim();
        let up_row = up_start_row(gpu, c.ffn_dim);
        let qkv = buf("qkv", f32s(qkv_rows))?;
        let gate_up = buf("ffn_gate_up", f32s(up_row + c.ffn_dim))?;
        let attn = c.attention(max_ctx);
        let fused = |f| plan.fusions.has(f);
        let split = fused(Fusion::Attention)
            && plan
                .attention
                .unwrap_or_else(|| AttnVariant::for_adapter(gpu, &attn))
                == AttnVariant::Split;
        Ok(Activations {
            step: gpu.create_buffer_as(MemoryKind::Other, "step", STEP_BUFFER_BYTES)?,
            token: gpu.create_buffer_as(MemoryKind::Other, "token", 4)?,
            x: buf("x", f32s(c.dim))?,
            xn: buf("x_norm", f32s(c.dim))?,
            q: qkv.view("q", 0, f32s(c.q_dim()))?,
            qkv,
            attn: buf("attn_out", f32s(c.q_dim()))?,
            gate: gate_up.view("ffn_gate", 0, f32s(c.ffn_dim))?,
            up: gate_up.view("ffn_up", f32s(up_row), f32s(c.ffn_dim))?,
            gate_up,
            hidden: buf("ffn_hidden", f32s(c.ffn_dim))?,
            logits: buf("logits", f32s(c.vocab))?,
            k_cache: kv_cache("k_cache")?,
            v_cache: kv_cache("v_cache")?,
            delta: (!fused(Fusion::Residual))
                .then(|| buf("delta", f32s(c.dim)))
                .transpose()?,
            scores: (!fused(Fusion::Attention))
                .then(|| buf("attn_scores", f32s(c.n_heads) * max_ctx as u64))
                .transpose()?,
            attn_scratch: split
                .then(|| buf("attn_partials", attn.split_scratch_bytes()))
                .transpose()?,
        })
    }
}

pub struct GpuDecoder {
    pub(crate) config: LlamaConfig,
    pub(crate) options: DecoderOptions,
    pub(crate) plan: KernelPlan,
    pub(crate) graph: Graph,
    pub(crate) runner: StepRunner,
    pub(crate) acts: Activations,
    /// (section, dispatch, kind) of the attention dispatches, whose cost depends on the
    /// position.
    pub(crate) attention_dispatches: Vec<(usize, usize, AttnCost)>,
    /// The kernel choices as built, for profiles.
    pub(crate) settings: BTreeMap<String, String>,
    pub(crate) position: u32,
    /// The uploaded weights, kept for graphs built later ([`GpuDecoder::enable_prefill`]).
    pub(crate) weights: GpuWeights,
    /// The batched prompt-processing graph, when enabled.
    pub(crate) prefill: Option<crate::prefill::Prefill>,
    /// Prompts of up to this many tokens go through decode steps instead (adapters whose
    /// kernel plan is CPU-style; see [`GpuDecoder::enable_prefill`]).
    pub(crate) prefill_steps: Option<u32>,
    /// Positions of the steps submitted and not yet finished, oldest first.
    pub(crate) in_flight_positions: std::collections::VecDeque<u32>,
    /// Whether decode steps go into the recorder's profile ([`Self::set_recorded`]).
    pub(crate) recorded: bool,
}

/// Weight buffers of one layer.
pub(crate) struct GpuLayer {
    pub(crate) attn_norm: GpuBuffer,
    pub(crate) ffn_norm: GpuBuffer,
    pub(crate) wqkv: Vec<GpuMatrix>,
    pub(crate) wo: GpuMatrix,
    pub(crate) w_gate_up: Vec<GpuMatrix>,
    pub(crate) w_down: GpuMatrix,
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

/// Every weight buffer on the GPU: shared by the decode and prefill graphs (uploaded once).
pub(crate) struct GpuWeights {
    pub(crate) token_embd: GpuMatrix,
    pub(crate) output: GpuMatrix,
    pub(crate) output_norm: GpuBuffer,
    pub(crate) layers: Vec<GpuLayer>,
    /// First row of `up` in each stacked gate/up matrix ([`up_start_row`]).
    pub(crate) up_row: u32,
}

impl GpuWeights {
    /// Uploads every tensor once: q/k/v and gate/up stacked where they share a format.
    /// Matrices go up in the layout the plan gives them ([`KernelPlan::layout_for`]); the
    /// embedding table stays GGUF bytes (the embedding kernels read those).
    fn upload(
        gpu: &Gpu,
        weights: &ModelWeights,
        plan: &KernelPlan,
    ) -> Result<GpuWeights, ModelError> {
        let c = &weights.config;
        let up_row = up_start_row(gpu, c.ffn_dim);
        let e = &weights.token_embd;
        let token_embd = upload_matrix_as(gpu, e, WeightLayout::Gguf)?;
        let output = match &weights.output {
            Some(t) => upload_matrix(gpu, t, plan)?,
            // Tied, in another layout: the head gets its own copy of the table.
            None if plan
                .layout_for(e.format, e.rows, e.cols)
                .for_format(e.format)
                != WeightLayout::Gguf =>
            {
                let head = Tensor {
                    name: "output (token_embd repacked)".into(),
                    ..e.clone()
                };
                upload_matrix(gpu, &head, plan)?
            }
            // Tied: reuse the embedding table's buffers rather than uploading them twice.
            None => GpuMatrix {
                chunks: token_embd.chunks.clone(),
                tensor_format: token_embd.tensor_format,
                cols: token_embd.cols,
                layout: token_embd.layout,
            },
        };
        let norm = |name: &str, w: &[f32]| {
            gpu.create_buffer_init_as(MemoryKind::Weights, name, bytemuck::cast_slice(w))
        };
        let layers = weights
            .layers
            .iter()
            .enumerate()
            .map(|(i, layer)| {
                let l = |name: &str| format!("L{i}.{name}");
                Ok(GpuLayer {
                    attn_norm: norm(&l("attn_norm"), &layer.attn_norm)?,
                    ffn_norm: norm(&l("ffn_norm"), &layer.ffn_norm)?,
                    // One gemv for q, k and v, one for gate and up: fewer dispatches.
                    wqkv: upload_stacked(
                        gpu,
                        &l("attn_qkv"),
                        &[
                            (&layer.wq, 0),
                            (&layer.wk, c.q_dim()),
                            (&layer.wv, c.q_dim() + c.kv_dim()),
                        ],
                        plan,
                    )?,
                    wo: upload_matrix(gpu, &layer.wo, plan)?,
                    w_gate_up: upload_stacked(
                        gpu,
                        &l("ffn_gate_up"),
                        &[(&layer.w_gate, 0), (&layer.w_up, up_row)],
                        plan,
                    )?,
                    w_down: upload_matrix(gpu, &layer.w_down, plan)?,
                })
            })
            .collect::<Result<_, ModelError>>()?;
        Ok(GpuWeights {
            token_embd,
            output,
            output_norm: norm("output_norm", &weights.output_norm)?,
            layers,
            up_row,
        })
    }
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
        let acts = Activations::new(gpu, &c, options.max_ctx, &plan)?;
        let uploaded = GpuWeights::upload(gpu, weights, &plan)?;
        let built =
            crate::graph::build_decode(gpu, &c, options.max_ctx, &plan, &uploaded, &acts, planted)?;
        let runner = Self::make_runner(gpu, &built.graph, &acts, options.read_logits)?;
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

    pub(crate) fn make_runner(
        gpu: &Gpu,
        graph: &Graph,
        acts: &Activations,
        read_logits: bool,
    ) -> Result<StepRunner, ModelError> {
        let mut readbacks = vec![&acts.token];
        if read_logits {
            readbacks.push(&acts.logits);
        }
        Ok(StepRunner::new(gpu, graph, &readbacks)?)
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
        let c = &self.config;
        let op = c.attention(self.options.max_ctx);
        for &(s, d, kind) in &self.attention_dispatches {
            self.graph.sections[s].dispatches[d].cost = kind.at(&op, n_ctx);
        }
    }
}
