//! The prefill graph: a prompt's tokens in one batched pass; decoding then continues
//! from the KV cache with [`GpuDecoder::submit`](crate::GpuDecoder::submit).
//!
//! Decisions:
//! - A second [`Graph`] built once, by
//!   [`GpuDecoder::enable_prefill`](crate::GpuDecoder::enable_prefill), for at most
//!   `max_batch` rows: its own activations (`max_batch` rows of x, x_norm, qkv, attention
//!   output, gate/up and hidden), the decode graph's weight buffers and KV cache (nothing
//!   uploaded twice), and its own [`StepRunner`]. A call uploads only the token ids and a
//!   16-byte params buffer `[pos0, n_rows, 0, 0]`; kernels skip rows past `n_rows`, so
//!   nothing is created per call.
//! - Same sections as the decode graph (`embed`, `L0`.., `head`), with batched kernels:
//!   gemv over chunks of 8 rows per weight pass, rms_norm per row, rope at positions
//!   `pos0 + b` writing cache rows, causal attention (row b sees cache rows
//!   `0..=pos0 + b`), silu_mul per row, embedding from the token-id buffer.
//! - What an architecture adds comes as in the decode graph, in batched form: the q/k/v
//!   bias (`add` with one row for every row), the q/k head norms, each layer's own rope
//!   base and KV cache, post norms (the projection into `delta`, its norm, then `add`),
//!   GeGLU (`gelu_mul`), embeddings times √dim.
//! - A sliding-window layer's cache is a ring of `window` rows. A batch that wraps it
//!   would overwrite positions its own earlier rows attend to, so the graph serves
//!   positions below the window only; the decoder takes later prompt tokens a decode
//!   step each ([`GpuDecoder::prefill_submit`](crate::GpuDecoder::prefill_submit)).
//! - The head runs on the last row only: a batched rms_norm in "last row" mode writes it
//!   into the decode graph's `x_norm`, then the decode graph's own output gemv and argmax
//!   dispatches (rebuilt here, same pipelines) write `logits` and `token`. So after a
//!   prefill the GPU token buffer holds the greedy next token and `submit(gpu, None)`
//!   continues from it, exactly as after a step.
//! - Opt-in rather than built with the decoder: decode-only users (profiles, captures)
//!   pay no extra pipelines or memory.
//! - Captures: the capture tap records what a runner uploads, but a capture's stream has
//!   one graph; prefill steps are not meant to be recorded into it (`run --capture`
//!   keeps the token-by-token prompt).

use gpuscope_ops::add::AddBatched;
use gpuscope_ops::attention::{AttnBatched, AttnVariant};
use gpuscope_ops::embedding::{Embedding, EmbeddingBatched};
use gpuscope_ops::gelu_mul::GeluMulBatched;
use gpuscope_ops::gemv::{GemmKind, GemmOut, GemvBatched, GemvVariant, QuantizeX};
use gpuscope_ops::head_norm::{HeadNorm, HeadNormBatched};
use gpuscope_ops::rms_norm::{RmsNorm, RmsNormBatched};
use gpuscope_ops::rope::RopeBatched;
use gpuscope_ops::silu_mul::SiluMulBatched;
use gpuscope_runtime::{
    Dispatch, Gpu, GpuBuffer, Graph, PendingStep, Section, StepOutput, StepRunner,
};

use crate::activations::Activations;
use crate::arch::Activation;
use crate::config::LlamaConfig;
use crate::decode_graph::output_and_argmax;
use crate::error::ModelError;
use crate::gpu_weights::{up_start_row, GpuLayer, GpuMatrix, GpuWeights};
use crate::plan::KernelPlan;

/// The prefill graph and its buffers.
pub(crate) struct Prefill {
    pub(crate) max_batch: u32,
    pub(crate) graph: Graph,
    pub(crate) runner: StepRunner,
    params: GpuBuffer,
    tokens: GpuBuffer,
    /// The attention dispatches, whose cost depends on the positions.
    attention_dispatches: Vec<DispatchSite>,
    /// How the graph multiplies, in words (the decoder's `prefill` setting).
    /// The gemm and the attention kernel, in words (the decoder's `prefill` setting).
    pub(crate) setting: String,
}

/// The decoder's parts the prefill graph is built on.
#[derive(Clone, Copy)]
pub(crate) struct Shared<'a> {
    pub(crate) c: &'a LlamaConfig,
    pub(crate) plan: &'a KernelPlan,
    /// The weights, read as the decode graph reads them.
    pub(crate) w: &'a GpuWeights,
    /// The decode graph's activations: the KV cache, and the head's buffers.
    pub(crate) a: &'a Activations,
}

/// Where an attention dispatch is in a graph, and its layer's op (over that layer's
/// cache rows).
#[derive(Debug, Clone, Copy)]
struct DispatchSite {
    section: usize,
    dispatch: usize,
    op: AttnBatched,
}

/// Whether every quantized matrix of the layers has the wide rows frame's batched form
/// on `gpu` ([`gpuscope_ops::gemv::GemvBatched::runs_wide`]): where the CPU-style gemv
/// variant (`rows`) is planned and they do not, no prefill graph is built (the lanes
/// frame's batched gemv is slow there).
pub(crate) fn layers_run_wide(w: &GpuWeights, gpu: &Gpu, max_batch: u32) -> bool {
    w.layers.iter().all(|layer| {
        layer
            .wqkv
            .iter()
            .chain([&layer.wo, &layer.w_down])
            .chain(&layer.w_gate_up)
            .all(|m| m.batched_ops(max_batch, 0).all(|(_, op)| op.runs_wide(gpu)))
    })
}

impl Prefill {
    /// Builds the graph for prompt chunks of up to `max_batch` tokens over the decoder's
    /// `shared` parts, for its KV cache of `max_ctx` positions, reading the logits back
    /// with `read_logits` (setup time: buffers, pipelines and bind groups are created
    /// here, none per call).
    pub(crate) fn build(
        gpu: &Gpu,
        shared: Shared<'_>,
        max_ctx: u32,
        read_logits: bool,
        max_batch: u32,
    ) -> Result<Prefill, ModelError> {
        let Shared { c, plan, w, a } = shared;
        let qkv_parts = qkv_k_parts(gpu, plan, w, max_batch);
        let silu_in_gemm = silu_in_gemm(gpu, c, plan, w, max_batch);
        let bufs = PrefillBuffers::new(gpu, c, plan, max_batch, (qkv_parts, silu_in_gemm))?;
        let gemm = match (plan.prefill, &bufs.xq) {
            _ if plan.gemv == GemvVariant::Rows => PromptGemm::Rows,
            (Some(GemmKind::Dp4a), Some(xq)) => PromptGemm::Dp4a(xq),
            (Some(GemmKind::Coopmat), _) => PromptGemm::Coopmat,
            _ => PromptGemm::Batched,
        };
        let mut attention = AttnBatched {
            attn: c.attention(max_ctx),
            max_batch,
            q_stride: bufs.qkv_stride,
            out_stride: c.q_dim(),
            coopmat: false,
        };
        // The prompt's attention on tensor cores where its gemm runs on them and the
        // shape allows (coopmat.wgsl: heads of 16..128 dims); else batched.wgsl.
        attention.coopmat =
            plan.prefill == Some(GemmKind::Coopmat) && attention.coopmat_supported(gpu).is_ok();
        let mut setting = gemm.setting().to_string();
        if qkv_parts > 1 {
            setting += &format!("; q/k/v's product summed in {qkv_parts} parts of K (more workgroups), which rope adds");
        }
        if silu_in_gemm {
            setting += "; silu(gate) · up written by the gate/up gemm (no silu_mul dispatch)";
        }
        if attention.coopmat {
            setting += "; attention on cooperative matrices (64 prompt rows a workgroup, one pass over the keys)";
        }
        let b = GraphBuilder {
            gpu,
            c,
            max_ctx,
            a,
            bufs: &bufs,
            gemm,
            m: max_batch,
            qkv_parts,
            rms: RmsNormBatched {
                norm: RmsNorm {
                    n: c.dim,
                    eps: c.rms_eps,
                },
                max_batch,
                last_only: false,
            },
            attention,
            // The decode graph's variant for this context; its batched form (`subgroup`
            // has one of its own, every other variant takes the fused kernel's).
            attention_variant: plan
                .attention
                .unwrap_or_else(|| AttnVariant::for_adapter(gpu, &attention.attn)),
        };
        let mut sections = vec![b.embed(w)?];
        let mut attention_dispatches = Vec::new();
        for (i, layer) in w.layers.iter().enumerate() {
            let built = b.layer(i, layer)?;
            attention_dispatches.push(DispatchSite {
                section: sections.len(),
                dispatch: built.attention,
                op: b.attention_at(i as u32),
            });
            sections.push(built.section);
        }
        sections.push(b.head(plan, w)?);
        let graph = Graph { sections };
        let mut runner = a.runner(gpu, &graph, read_logits)?;
        // Prompt steps are timed apart (the profile's `prompt`), not as decoded tokens.
        runner.set_recorded(false);
        // A prompt is one long step that nothing hides its encoding behind.
        runner.submit_in_chunks(&graph);
        Ok(Prefill {
            max_batch,
            graph,
            runner,
            params: bufs.params,
            tokens: bufs.tokens,
            attention_dispatches,
            setting,
        })
    }

    /// Submits `tokens` at positions `pos0..pos0 + len`: checks them against the batch,
    /// the context (`max_ctx`) and the vocabulary, declares attention's cost for those
    /// positions, uploads the params and token ids.
    pub(crate) fn submit(
        &mut self,
        gpu: &Gpu,
        pos0: u32,
        tokens: &[u32],
        max_ctx: u32,
        vocab: u32,
    ) -> Result<PendingStep, ModelError> {
        check_chunk(tokens, self.max_batch, pos0, max_ctx, vocab)?;
        let n = tokens.len() as u32;
        for site in &self.attention_dispatches {
            self.graph.sections[site.section].dispatches[site.dispatch].cost =
                site.op.cost_at(pos0, n);
        }
        let params: [u32; 4] = [pos0, n, 0, 0];
        let uploads: Vec<(&GpuBuffer, u64, &[u8])> = vec![
            (&self.params, 0, bytemuck::cast_slice(&params)),
            (&self.tokens, 0, bytemuck::cast_slice(tokens)),
        ];
        Ok(self.runner.submit(gpu, &self.graph, &uploads)?)
    }

    /// Waits for a submit and reads its results back.
    pub(crate) fn finish(
        &mut self,
        gpu: &Gpu,
        pending: PendingStep,
    ) -> Result<StepOutput, ModelError> {
        Ok(self.runner.finish(gpu, &self.graph, pending)?)
    }
}

/// The checks a prompt chunk passes before any of it runs, batched or a step per token:
/// 1 to `max_batch` tokens, at positions `pos0..` within `max_ctx`, ids within `vocab`.
pub(crate) fn check_chunk(
    tokens: &[u32],
    max_batch: u32,
    pos0: u32,
    max_ctx: u32,
    vocab: u32,
) -> Result<(), ModelError> {
    let n = tokens.len();
    if n == 0 || n > max_batch as usize {
        return Err(ModelError::Config(format!(
            "prefill takes 1 to {max_batch} tokens, got {n}"
        )));
    }
    if u64::from(pos0) + n as u64 > u64::from(max_ctx) {
        return Err(ModelError::ContextFull { max_ctx });
    }
    if let Some(t) = tokens.iter().find(|&&t| t >= vocab) {
        return Err(ModelError::Config(format!(
            "token {t} is outside the vocabulary ({vocab})"
        )));
    }
    Ok(())
}

/// The prefill graph's own activations, `max_batch` rows each, and the row strides of
/// the fused outputs.
struct PrefillBuffers {
    params: GpuBuffer,
    tokens: GpuBuffer,
    x: GpuBuffer,
    xn: GpuBuffer,
    qkv: GpuBuffer,
    attn: GpuBuffer,
    /// Gate/up's products before the activation; none where the gate/up gemm writes the
    /// activation itself ([`silu_in_gemm`]).
    gate_up: Option<GpuBuffer>,
    hidden: GpuBuffer,
    /// A projection's output before its post norm (architectures with post norms).
    delta: Option<GpuBuffer>,
    /// x quantized for the dp4a gemm, sized for the widest input (the FFN's hidden).
    xq: Option<GpuBuffer>,
    /// Floats per row of `qkv`.
    qkv_stride: u32,
    /// First float of `up` in a row of `gate_up` ([`up_start_row`]).
    up_row: u32,
    /// Floats per row of `gate_up`.
    gu_stride: u32,
}

impl PrefillBuffers {
    /// `qkv_parts`: copies of q/k/v the q/k/v gemm writes ([`qkv_k_parts`]);
    /// `silu_in_gemm`: no gate/up buffer ([`silu_in_gemm`]).
    fn new(
        gpu: &Gpu,
        c: &LlamaConfig,
        plan: &KernelPlan,
        m: u32,
        (qkv_parts, silu_in_gemm): (u32, bool),
    ) -> Result<PrefillBuffers, ModelError> {
        let f32s = |n: u32| u64::from(n) * 4 * u64::from(m);
        let buf = |label: &str, bytes: u64| gpu.create_buffer(label, bytes);
        let qkv_stride = c.q_dim() + 2 * c.kv_dim();
        let up_row = up_start_row(gpu, c.ffn_dim);
        let gu_stride = up_row + c.ffn_dim;
        Ok(PrefillBuffers {
            params: buf("prefill.params", 16)?,
            tokens: buf("prefill.tokens", 4 * u64::from(m))?,
            x: buf("prefill.x", f32s(c.dim))?,
            xn: buf("prefill.x_norm", f32s(c.dim))?,
            qkv: buf("prefill.qkv", u64::from(qkv_parts) * f32s(qkv_stride))?,
            attn: buf("prefill.attn_out", f32s(c.q_dim()))?,
            gate_up: (!silu_in_gemm)
                .then(|| buf("prefill.ffn_gate_up", f32s(gu_stride)))
                .transpose()?,
            hidden: buf("prefill.ffn_hidden", f32s(c.ffn_dim))?,
            delta: c
                .arch
                .post_norms
                .then(|| buf("prefill.delta", f32s(c.dim)))
                .transpose()?,
            xq: if plan.prefill == Some(GemmKind::Dp4a) {
                let widest = c.dim.max(c.q_dim()).max(c.ffn_dim);
                let bytes = QuantizeX {
                    cols: widest,
                    max_batch: m,
                }
                .buffer_bytes();
                Some(buf("prefill.x_q8", bytes.max(16))?)
            } else {
                None
            },
            qkv_stride,
            up_row,
            gu_stride,
        })
    }
}

/// Parts of K the q/k/v product sums apart (rope adds them): 2 where the coopmat gemm
/// takes 128-wide tiles of every layer's q/k/v (one matrix, one chunk, columns in whole
/// 128-column halves) and nothing but rope reads q/k/v (no bias, no head norms); else 1.
/// Llama-8B's 6144 rows make 48 × 4 tiles of 128: one workgroup per SM (the kernel's 178
/// registers a thread), a second wave less than half full on an H200's 132 SMs. In two
/// parts: 6.76 -> 5.58 ms over the 8B prompt's 32 layers; four parts were slower, and so
/// were the 4096-row output and down projections in two (BENCHMARKS.md, run 48).
fn qkv_k_parts(gpu: &Gpu, plan: &KernelPlan, w: &GpuWeights, max_batch: u32) -> u32 {
    const PARTS: u32 = 2;
    let splits = |layer: &GpuLayer| {
        let Some(op) = coopmat_op(gpu, &layer.wqkv, max_batch) else {
            return false;
        };
        layer.extra.qkv_bias.is_none()
            && layer.extra.q_norm.is_none()
            && layer.extra.k_norm.is_none()
            && op.gemm_tile(GemmKind::Coopmat, gpu) == gpuscope_ops::gemv::COOPMAT_TILES[1]
            && op.gemv.cols.is_multiple_of(64 * PARTS)
    };
    if every_layer(plan, w, splits) {
        PARTS
    } else {
        1
    }
}

/// Whether the gate/up gemm writes silu(gate) · up itself ([`GemmOut::SiluMul`]): where
/// the coopmat gemm multiplies every layer's gate/up matrix (one matrix, one chunk, up rows
/// from the prefill's `up_row`) and the activation is SiLU. Llama-8B's 32 silu_mul
/// dispatches took 1.09 ms of a 49.6 ms prompt on an H200 (BENCHMARKS.md, run 48).
fn silu_in_gemm(
    gpu: &Gpu,
    c: &LlamaConfig,
    plan: &KernelPlan,
    w: &GpuWeights,
    max_batch: u32,
) -> bool {
    let up_row = up_start_row(gpu, c.ffn_dim);
    let fuses = |layer: &GpuLayer| {
        coopmat_op(gpu, &layer.w_gate_up, max_batch)
            .is_some_and(|op| op.gemv.rows == up_row + c.ffn_dim)
    };
    c.arch.activation == Activation::Silu && every_layer(plan, w, fuses)
}

/// Whether the prompt's gemm is coopmat and `holds` for every layer (of at least one).
fn every_layer(plan: &KernelPlan, w: &GpuWeights, holds: impl Fn(&GpuLayer) -> bool) -> bool {
    plan.prefill == Some(GemmKind::Coopmat)
        && plan.gemv != GemvVariant::Rows
        && !w.layers.is_empty()
        && w.layers.iter().all(holds)
}

/// The batched op of `parts` where they are one matrix in one chunk that the coopmat gemm
/// multiplies on `gpu`.
fn coopmat_op(gpu: &Gpu, parts: &[GpuMatrix], max_batch: u32) -> Option<GemvBatched> {
    let [m] = parts else {
        return None;
    };
    let mut ops = m.batched_ops(max_batch, 0);
    match (ops.next(), ops.next()) {
        (Some((_, op)), None) if op.runs_gemm(GemmKind::Coopmat, gpu) => Some(op),
        _ => None,
    }
}

/// The gemm a prefill graph multiplies through, with what it reads besides x.
#[derive(Clone, Copy)]
enum PromptGemm<'a> {
    /// The batched gemv only.
    Batched,
    /// dp4a, reading x quantized into this buffer (by one [`QuantizeX`] per input).
    Dp4a(&'a GpuBuffer),
    /// coopmat, reading x as it is.
    Coopmat,
    /// The wide rows frame's batched form where it runs (CPU adapters), else the batched
    /// gemv.
    Rows,
}

impl PromptGemm<'_> {
    fn kind(self) -> Option<GemmKind> {
        match self {
            PromptGemm::Batched | PromptGemm::Rows => None,
            PromptGemm::Dp4a(_) => Some(GemmKind::Dp4a),
            PromptGemm::Coopmat => Some(GemmKind::Coopmat),
        }
    }

    /// In words, for the decoder's settings.
    fn setting(self) -> &'static str {
        match self {
            PromptGemm::Dp4a(_) => "dp4a gemm (64x64 tiles, x quantized to int8 blocks once per input) for q4_0/q4_1/q8_0/q5_0/q5_1/q4_K/q5_K matrices, the batched gemv (8 rows per weight pass) for the rest",
            PromptGemm::Coopmat => {
                use gpuscope_ops::gemv::{COOPMAT_TILES, COOPMAT_WIDE_ROWS};
                static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
                    let [small, wide] = COOPMAT_TILES;
                    format!("coopmat gemm (f16 tiles on cooperative matrices: tensor cores; {small}x{small}, {wide}x{wide} for matrices of {COOPMAT_WIDE_ROWS} rows and more where the device has the workgroup memory) for q4_0/q4_1/q8_0/q5_0/q5_1/q4_K/q5_K matrices, the batched gemv (8 rows per weight pass) for the rest")
                });
                &TEXT
            }
            PromptGemm::Batched => "batched gemv (8 rows per weight pass)",
            PromptGemm::Rows => "wide rows frame, batched (one lane per 8 weight rows, 8 prompt rows per weight pass)",
        }
    }
}

/// Y[b] (+)= W·X[b] for every row chunk of `w`, Y rows `y_stride` apart, through
/// `gemm` where it has a form for the matrix's format (else the batched gemv); `out`
/// in K parts only where the coopmat gemm multiplies every chunk ([`qkv_k_parts`]).
#[allow(clippy::too_many_arguments)]
fn chunk_products(
    w: &GpuMatrix,
    gpu: &Gpu,
    x: &GpuBuffer,
    gemm: PromptGemm<'_>,
    y: &GpuBuffer,
    params: &GpuBuffer,
    max_batch: u32,
    y_stride: u32,
    out: GemmOut,
) -> Result<Vec<Dispatch>, ModelError> {
    let accumulate = out == GemmOut::Accumulate;
    w.batched_ops(max_batch, y_stride)
        .map(|(buf, op)| {
            Ok(match gemm.kind() {
                Some(kind) if op.runs_gemm(kind, gpu) => {
                    let input = match gemm {
                        PromptGemm::Dp4a(xq) => xq,
                        _ => x,
                    };
                    op.dispatch_gemm(kind, gpu, buf, input, y, params, out)?
                }
                _ if out.parts() > 1 => {
                    return Err(ModelError::Config(format!(
                        "{out:?}: a product in parts of K without the coopmat gemm"
                    )))
                }
                _ if matches!(gemm, PromptGemm::Rows) && op.runs_wide(gpu) => {
                    op.dispatch_wide(gpu, buf, x, y, params, accumulate)?
                }
                _ => op.dispatch(gpu, buf, x, y, params, accumulate)?,
            })
        })
        .collect()
}

/// One layer's section, and the index of its attention dispatch in it.
struct BuiltLayer {
    section: Section,
    attention: usize,
}

/// A layer's dispatches as they are built, each labelled `L{index}.{name}`.
struct LayerDispatches {
    index: u32,
    ds: Vec<Dispatch>,
}

impl LayerDispatches {
    fn push(&mut self, name: &str, list: Vec<Dispatch>) {
        let (li, label) = (self.index, format!("L{}.{name}", self.index));
        self.ds.extend(
            list.into_iter()
                .map(|d| d.labelled(label.clone(), Some(li))),
        );
    }

    fn push_one(&mut self, (name, d): (&str, Dispatch)) {
        self.push(name, vec![d]);
    }
}

/// What building every section of the prefill graph reads.
struct GraphBuilder<'a> {
    gpu: &'a Gpu,
    c: &'a LlamaConfig,
    max_ctx: u32,
    /// The decoder's activations: KV cache, and the head's input and outputs.
    a: &'a Activations,
    bufs: &'a PrefillBuffers,
    gemm: PromptGemm<'a>,
    /// Rows per batch.
    m: u32,
    /// Parts of K the q/k/v product is summed in ([`qkv_k_parts`]).
    qkv_parts: u32,
    rms: RmsNormBatched,
    /// Attention over a full-context cache; [`Self::attention_at`] gives each layer's.
    attention: AttnBatched,
    attention_variant: AttnVariant,
}

impl GraphBuilder<'_> {
    /// The batched products of one input `x`: the parts' dispatches, preceded by the
    /// input's quantization where the dp4a gemm multiplies some part.
    fn products(
        &self,
        parts: &[&GpuMatrix],
        x: &GpuBuffer,
        y: &GpuBuffer,
        y_stride: u32,
        out: GemmOut,
    ) -> Result<Vec<Dispatch>, ModelError> {
        let (gpu, m, params) = (self.gpu, self.m, &self.bufs.params);
        let mut list = Vec::new();
        if let PromptGemm::Dp4a(xq) = self.gemm {
            if parts.iter().any(|p| p.uses_gemm(GemmKind::Dp4a, gpu, m)) {
                let quantize = QuantizeX {
                    cols: parts[0].cols,
                    max_batch: m,
                };
                list.push(quantize.dispatch(gpu, x, xq, params)?);
            }
        }
        for part in parts {
            list.extend(chunk_products(
                part, gpu, x, self.gemm, y, params, m, y_stride, out,
            )?);
        }
        Ok(list)
    }

    /// What the q/k/v product does with `qkv`: parts of K ([`qkv_k_parts`]) or a store.
    fn qkv_out(&self) -> GemmOut {
        match self.qkv_parts {
            1 => GemmOut::Store,
            n => GemmOut::Parts(n),
        }
    }

    /// The `embed` section: each token's row of the table, from the token-id buffer.
    fn embed(&self, w: &GpuWeights) -> Result<Section, ModelError> {
        let bufs = self.bufs;
        let embed = w
            .token_embd
            .chunks
            .iter()
            .map(|chunk| {
                let emb = Embedding {
                    rows: chunk.rows,
                    dim: w.token_embd.cols,
                    format: w.token_embd.tensor_format,
                    row_start: chunk.first_row,
                };
                let op = EmbeddingBatched {
                    emb,
                    max_batch: self.m,
                };
                let scale = self.c.embed_scale().unwrap_or(1.0);
                Ok(op
                    .dispatch_scaled(
                        self.gpu,
                        &chunk.buffer,
                        &bufs.tokens,
                        &bufs.x,
                        &bufs.params,
                        scale,
                    )?
                    .labelled("token_embd", None))
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        Ok(Section::new("embed", None, embed))
    }

    /// Layer `li`'s attention over its own cache (a window's ring on windowed layers).
    fn attention_at(&self, li: u32) -> AttnBatched {
        AttnBatched {
            attn: self.c.attention_at(li, self.max_ctx),
            ..self.attention
        }
    }

    /// Layer `i`: the decode graph's layer with batched kernels, none fused.
    fn layer(&self, i: usize, layer: &GpuLayer) -> Result<BuiltLayer, ModelError> {
        let (gpu, c, a, bufs, params) = (self.gpu, self.c, self.a, self.bufs, &self.bufs.params);
        let mut l = LayerDispatches {
            index: i as u32,
            ds: Vec::new(),
        };
        let (x, xn, qkv) = (&bufs.x, &bufs.xn, &bufs.qkv);
        l.push(
            "attn_norm",
            vec![self.rms.dispatch(gpu, x, &layer.attn_norm, xn, params)?],
        );
        let qkv_parts: Vec<&GpuMatrix> = layer.wqkv.iter().collect();
        l.push(
            "attn_qkv",
            self.products(&qkv_parts, xn, qkv, bufs.qkv_stride, self.qkv_out())?,
        );
        self.qkv_extras(&mut l, layer)?;
        let rope = RopeBatched {
            rope: c.rope_at(l.index, self.max_ctx),
            max_batch: self.m,
            qkv_stride: bufs.qkv_stride,
            offsets: (0, c.q_dim(), c.q_dim() + c.kv_dim()),
            qkv_parts: self.qkv_parts,
        };
        let (kc, vc) = (&a.k_cache[i], &a.v_cache[i]);
        l.push("rope", vec![rope.dispatch(gpu, params, qkv, kc, vc)?]);
        let attention = l.ds.len();
        l.push(
            "attention",
            vec![self.attention_at(l.index).dispatch_variant(
                gpu,
                self.attention_variant,
                [params, qkv, kc, vc, &bufs.attn],
            )?],
        );
        let post = layer.extra.post_attn_norm.as_ref();
        self.residual_products(&mut l, "attn_output", &layer.wo, &bufs.attn, post)?;
        l.push(
            "ffn_norm",
            vec![self.rms.dispatch(gpu, x, &layer.ffn_norm, xn, params)?],
        );
        let gu_parts: Vec<&GpuMatrix> = layer.w_gate_up.iter().collect();
        match &bufs.gate_up {
            Some(gu) => {
                l.push(
                    "ffn_gate_up",
                    self.products(&gu_parts, xn, gu, bufs.gu_stride, GemmOut::Store)?,
                );
                l.push_one(self.activation(gu)?);
            }
            None => {
                let silu = GemmOut::SiluMul {
                    ffn: c.ffn_dim,
                    up_row: bufs.up_row,
                };
                l.push(
                    "ffn_gate_up_silu",
                    self.products(&gu_parts, xn, &bufs.hidden, c.ffn_dim, silu)?,
                );
            }
        }
        let post = layer.extra.post_ffn_norm.as_ref();
        self.residual_products(&mut l, "ffn_down", &layer.w_down, &bufs.hidden, post)?;
        Ok(BuiltLayer {
            section: Section::new(format!("L{}", l.index), Some(l.index), l.ds),
            attention,
        })
    }

    /// What comes between the q/k/v products and rope, as in the decode graph: the
    /// biases (one row added to every row), then the q and k head norms.
    fn qkv_extras(&self, l: &mut LayerDispatches, layer: &GpuLayer) -> Result<(), ModelError> {
        let (gpu, c, bufs) = (self.gpu, self.c, self.bufs);
        let e = &layer.extra;
        if let Some(bias) = &e.qkv_bias {
            let add = AddBatched {
                n: c.q_dim() + 2 * c.kv_dim(),
                max_batch: self.m,
                acc_stride: bufs.qkv_stride,
                x_stride: 0,
            };
            l.push(
                "attn_qkv_bias",
                vec![add.dispatch(gpu, &bufs.qkv, bias, &bufs.params)?],
            );
        }
        if let (Some(qn), Some(kn)) = (&e.q_norm, &e.k_norm) {
            let op = HeadNormBatched {
                norm: HeadNorm {
                    n_heads: c.n_heads,
                    n_kv_heads: c.n_kv_heads,
                    head_dim: c.head_dim,
                    q_off: 0,
                    k_off: c.q_dim(),
                    eps: c.rms_eps,
                },
                max_batch: self.m,
                row_stride: bufs.qkv_stride,
            };
            l.push(
                "attn_qk_norm",
                vec![op.dispatch(gpu, &bufs.qkv, qn, kn, &bufs.params)?],
            );
        }
        Ok(())
    }

    /// The FFN's gated activation over the gate/up rows `gu`: `silu_mul` or `gelu_mul`.
    fn activation(&self, gu: &GpuBuffer) -> Result<(&'static str, Dispatch), ModelError> {
        let (gpu, bufs) = (self.gpu, self.bufs);
        let (n, max_batch) = (self.c.ffn_dim, self.m);
        let (in_stride, up_offset) = (bufs.gu_stride, bufs.up_row);
        let (hidden, params) = (&bufs.hidden, &bufs.params);
        Ok(match self.c.arch.activation {
            Activation::Silu => (
                "ffn_silu_mul",
                SiluMulBatched {
                    n,
                    max_batch,
                    in_stride,
                    up_offset,
                }
                .dispatch(gpu, gu, hidden, params)?,
            ),
            Activation::GeluTanh => (
                "ffn_gelu_mul",
                GeluMulBatched {
                    n,
                    max_batch,
                    in_stride,
                    up_offset,
                }
                .dispatch(gpu, gu, hidden, params)?,
            ),
        })
    }

    /// x += W·input, accumulated by the products; with a post norm (Gemma 3), the
    /// products into `delta`, its norm into `x_norm`, then `x += x_norm`, as the decode
    /// graph does.
    fn residual_products(
        &self,
        l: &mut LayerDispatches,
        name: &str,
        m: &GpuMatrix,
        input: &GpuBuffer,
        post_norm: Option<&GpuBuffer>,
    ) -> Result<(), ModelError> {
        let (gpu, bufs, dim) = (self.gpu, self.bufs, self.c.dim);
        let Some(w) = post_norm else {
            l.push(
                name,
                self.products(&[m], input, &bufs.x, dim, GemmOut::Accumulate)?,
            );
            return Ok(());
        };
        let delta = bufs.delta.as_ref().ok_or_else(|| {
            ModelError::Config("a post norm without the prefill's delta buffer".into())
        })?;
        l.push(
            name,
            self.products(&[m], input, delta, dim, GemmOut::Store)?,
        );
        let post = if name == "attn_output" {
            "post_attention_norm"
        } else {
            "post_ffw_norm"
        };
        let norm = self.rms.dispatch(gpu, delta, w, &bufs.xn, &bufs.params)?;
        l.push(post, vec![norm]);
        let add = AddBatched {
            n: dim,
            max_batch: self.m,
            acc_stride: dim,
            x_stride: dim,
        };
        l.push(
            &format!("{name}_add"),
            vec![add.dispatch(gpu, &bufs.x, &bufs.xn, &bufs.params)?],
        );
        Ok(())
    }

    /// The `head` section on the last row only, into the decode graph's buffers.
    fn head(&self, plan: &KernelPlan, w: &GpuWeights) -> Result<Section, ModelError> {
        let (gpu, a) = (self.gpu, self.a);
        let last = RmsNormBatched {
            last_only: true,
            ..self.rms
        };
        let mut head = vec![last
            .dispatch(gpu, &self.bufs.x, &w.output_norm, &a.xn, &self.bufs.params)?
            .labelled("output_norm", None)];
        head.extend(output_and_argmax(
            gpu,
            plan,
            w,
            a,
            &a.xn,
            None,
            self.c.vocab,
        )?);
        Ok(Section::new("head", None, head))
    }
}
