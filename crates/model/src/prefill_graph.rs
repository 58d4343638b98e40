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

use gpuscope_ops::attention::{AttnBatched, AttnVariant};
use gpuscope_ops::embedding::{Embedding, EmbeddingBatched};
use gpuscope_ops::gemv::{GemmKind, GemvVariant, QuantizeX};
use gpuscope_ops::rms_norm::{RmsNorm, RmsNormBatched};
use gpuscope_ops::rope::RopeBatched;
use gpuscope_ops::silu_mul::SiluMulBatched;
use gpuscope_runtime::{
    Dispatch, Gpu, GpuBuffer, Graph, PendingStep, Section, StepOutput, StepRunner,
};

use crate::activations::Activations;
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
    attention: AttnBatched,
    /// (section, dispatch) of the attention dispatches (cost depends on the positions).
    attention_dispatches: Vec<DispatchSite>,
    /// How the graph multiplies, in words (the decoder's `prefill` setting).
    pub(crate) gemm_setting: &'static str,
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

/// Where a dispatch is in a graph.
#[derive(Debug, Clone, Copy)]
struct DispatchSite {
    section: usize,
    dispatch: usize,
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
        let bufs = PrefillBuffers::new(gpu, c, plan, max_batch)?;
        let gemm = match (plan.prefill, &bufs.xq) {
            _ if plan.gemv == GemvVariant::Rows => PromptGemm::Rows,
            (Some(GemmKind::Dp4a), Some(xq)) => PromptGemm::Dp4a(xq),
            (Some(GemmKind::Coopmat), _) => PromptGemm::Coopmat,
            _ => PromptGemm::Batched,
        };
        let attention = AttnBatched {
            attn: c.attention(max_ctx),
            max_batch,
            q_stride: bufs.qkv_stride,
            out_stride: c.q_dim(),
        };
        let b = GraphBuilder {
            gpu,
            c,
            max_ctx,
            a,
            bufs: &bufs,
            gemm,
            m: max_batch,
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
            });
            sections.push(built.section);
        }
        sections.push(b.head(plan, w)?);
        let graph = Graph { sections };
        let mut runner = a.runner(gpu, &graph, read_logits)?;
        // Prompt steps are timed apart (the profile's `prompt`), not as decoded tokens.
        runner.set_recorded(false);
        Ok(Prefill {
            max_batch,
            graph,
            runner,
            params: bufs.params,
            tokens: bufs.tokens,
            attention,
            attention_dispatches,
            gemm_setting: gemm.setting(),
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
        let n = tokens.len();
        if n == 0 || n > self.max_batch as usize {
            return Err(ModelError::Config(format!(
                "prefill takes 1 to {} tokens, got {n}",
                self.max_batch
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
        let n = n as u32;
        let cost = self.attention.cost_at(pos0, n);
        for site in &self.attention_dispatches {
            self.graph.sections[site.section].dispatches[site.dispatch].cost = cost;
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

/// The prefill graph's own activations, `max_batch` rows each, and the row strides of
/// the fused outputs.
struct PrefillBuffers {
    params: GpuBuffer,
    tokens: GpuBuffer,
    x: GpuBuffer,
    xn: GpuBuffer,
    qkv: GpuBuffer,
    attn: GpuBuffer,
    gate_up: GpuBuffer,
    hidden: GpuBuffer,
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
    fn new(
        gpu: &Gpu,
        c: &LlamaConfig,
        plan: &KernelPlan,
        m: u32,
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
            qkv: buf("prefill.qkv", f32s(qkv_stride))?,
            attn: buf("prefill.attn_out", f32s(c.q_dim()))?,
            gate_up: buf("prefill.ffn_gate_up", f32s(gu_stride))?,
            hidden: buf("prefill.ffn_hidden", f32s(c.ffn_dim))?,
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
            PromptGemm::Dp4a(_) => "dp4a gemm (64x64 tiles, x quantized to int8 blocks once per input) for q4_0/q4_1/q8_0 matrices, the batched gemv (8 rows per weight pass) for the rest",
            PromptGemm::Coopmat => "coopmat gemm (64x64 tiles of f16 on cooperative matrices: tensor cores) for q4_0/q4_1/q8_0 matrices, the batched gemv (8 rows per weight pass) for the rest",
            PromptGemm::Batched => "batched gemv (8 rows per weight pass)",
            PromptGemm::Rows => "wide rows frame, batched (one lane per 8 weight rows, 8 prompt rows per weight pass)",
        }
    }
}

/// Y[b] (+)= W·X[b] for every row chunk of `w`, Y rows `y_stride` apart, through
/// `gemm` where it has a form for the matrix's format (else the batched gemv).
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
    accumulate: bool,
) -> Result<Vec<Dispatch>, ModelError> {
    w.batched_ops(max_batch, y_stride)
        .map(|(buf, op)| {
            Ok(match gemm.kind() {
                _ if matches!(gemm, PromptGemm::Rows) && op.runs_wide(gpu) => {
                    op.dispatch_wide(gpu, buf, x, y, params, accumulate)?
                }
                Some(kind) if op.runs_gemm(kind, gpu) => {
                    let input = match gemm {
                        PromptGemm::Dp4a(xq) => xq,
                        _ => x,
                    };
                    op.dispatch_gemm(kind, gpu, buf, input, y, params, accumulate)?
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
    rms: RmsNormBatched,
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
        accumulate: bool,
    ) -> Result<Vec<Dispatch>, ModelError> {
        let (gpu, m, params) = (self.gpu, self.m, &self.bufs.params);
        let mut out = Vec::new();
        if let PromptGemm::Dp4a(xq) = self.gemm {
            if parts.iter().any(|p| p.uses_gemm(GemmKind::Dp4a, gpu, m)) {
                let quantize = QuantizeX {
                    cols: parts[0].cols,
                    max_batch: m,
                };
                out.push(quantize.dispatch(gpu, x, xq, params)?);
            }
        }
        for part in parts {
            out.extend(chunk_products(
                part, gpu, x, self.gemm, y, params, m, y_stride, accumulate,
            )?);
        }
        Ok(out)
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
                Ok(EmbeddingBatched {
                    emb,
                    max_batch: self.m,
                }
                .dispatch(self.gpu, &chunk.buffer, &bufs.tokens, &bufs.x, &bufs.params)?
                .labelled("token_embd", None))
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        Ok(Section::new("embed", None, embed))
    }

    /// Layer `i`: the decode graph's layer with batched kernels, none fused.
    fn layer(&self, i: usize, layer: &GpuLayer) -> Result<BuiltLayer, ModelError> {
        let (gpu, c, a, bufs, params) = (self.gpu, self.c, self.a, self.bufs, &self.bufs.params);
        let li = i as u32;
        let l = |name: &str| format!("L{li}.{name}");
        let mut ds: Vec<Dispatch> = Vec::new();
        let push = |ds: &mut Vec<Dispatch>, name: &str, list: Vec<Dispatch>| {
            ds.extend(list.into_iter().map(|d| d.labelled(l(name), Some(li))));
        };
        let (x, xn, qkv) = (&bufs.x, &bufs.xn, &bufs.qkv);
        push(
            &mut ds,
            "attn_norm",
            vec![self.rms.dispatch(gpu, x, &layer.attn_norm, xn, params)?],
        );
        let qkv_parts: Vec<&GpuMatrix> = layer.wqkv.iter().collect();
        push(
            &mut ds,
            "attn_qkv",
            self.products(&qkv_parts, xn, qkv, bufs.qkv_stride, false)?,
        );
        let rope = RopeBatched {
            rope: c.rope(self.max_ctx),
            max_batch: self.m,
            qkv_stride: bufs.qkv_stride,
            offsets: (0, c.q_dim(), c.q_dim() + c.kv_dim()),
        };
        let (kc, vc) = (&a.k_cache[i], &a.v_cache[i]);
        push(
            &mut ds,
            "rope",
            vec![rope.dispatch(gpu, params, qkv, kc, vc)?],
        );
        let attention = ds.len();
        push(
            &mut ds,
            "attention",
            vec![self.attention.dispatch_variant(
                gpu,
                self.attention_variant,
                [params, qkv, kc, vc, &bufs.attn],
            )?],
        );
        push(
            &mut ds,
            "attn_output",
            self.products(&[&layer.wo], &bufs.attn, x, c.dim, true)?,
        );
        push(
            &mut ds,
            "ffn_norm",
            vec![self.rms.dispatch(gpu, x, &layer.ffn_norm, xn, params)?],
        );
        let gu_parts: Vec<&GpuMatrix> = layer.w_gate_up.iter().collect();
        push(
            &mut ds,
            "ffn_gate_up",
            self.products(&gu_parts, xn, &bufs.gate_up, bufs.gu_stride, false)?,
        );
        let silu = SiluMulBatched {
            n: c.ffn_dim,
            max_batch: self.m,
            in_stride: bufs.gu_stride,
            up_offset: bufs.up_row,
        };
        push(
            &mut ds,
            "ffn_silu_mul",
            vec![silu.dispatch(gpu, &bufs.gate_up, &bufs.hidden, params)?],
        );
        push(
            &mut ds,
            "ffn_down",
            self.products(&[&layer.w_down], &bufs.hidden, x, c.dim, true)?,
        );
        Ok(BuiltLayer {
            section: Section::new(format!("L{li}"), Some(li), ds),
            attention,
        })
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
