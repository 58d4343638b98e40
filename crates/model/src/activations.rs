//! The decoder's activations and KV cache: one token's vectors, each a buffer (or a
//! view of one) the decode graph's dispatches bind; the prefill graph writes its head
//! into them too.

use gpuscope_ops::argmax::{Argmax, Partials};
use gpuscope_ops::attention::AttnVariant;
use gpuscope_runtime::{Gpu, GpuBuffer, Graph, StepRunner, STEP_BUFFER_BYTES};
use gpuscope_trace::MemoryKind;

use crate::config::LlamaConfig;
use crate::error::ModelError;
use crate::gpu_weights::up_start_row;
use crate::plan::{Fusion, KernelPlan};

/// The most partials the folded down projection writes ([`Fusion::Down`]): every
/// workgroup of the next q/k/v gemv adds them all as it loads x, so the FFN's blocks of
/// 32 must be few (SmolLM2: 1536 / 32 = 48).
pub(crate) const MAX_FFN_PARTIALS: u32 = 64;

/// Activations and caches of the decoder.
pub(crate) struct Activations {
    pub(crate) step: GpuBuffer,
    pub(crate) token: GpuBuffer,
    /// The residual stream.
    pub(crate) x: GpuBuffer,
    /// The residual stream's second buffer, where post norms fold into the next gemv
    /// ([`Fusion::PostNorm`]): each such gemv reads one and writes the other.
    pub(crate) x_alt: Option<GpuBuffer>,
    /// Each head's partial output projection (`n_heads × dim`), where attention takes the
    /// output projection ([`Fusion::AttnOutput`]).
    pub(crate) attn_partials: Option<GpuBuffer>,
    /// The down projection's partials (`ffn_dim / 32 × dim`), where gate/up's kernel takes
    /// the down projection ([`Fusion::Down`]).
    pub(crate) ffn_partials: Option<GpuBuffer>,
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
    /// The split argmax's partial values and indices, for a vocabulary it splits.
    pub(crate) argmax_parts: Option<(GpuBuffer, GpuBuffer)>,
}

/// Bytes of split-K attention's partials for every layer: the most any layer's op needs.
/// A windowed layer's op (its ring's rows) can need more than the whole context's: the
/// split's chunk is a power of two of the context, so 512 rows split 8 ways, 516 only 5
/// (Gemma 3 270M's 512-row window under a 516-token context).
fn split_scratch_bytes(c: &LlamaConfig, max_ctx: u32) -> u64 {
    (0..c.n_layers)
        .map(|i| c.attention_at(i, max_ctx).split_scratch_bytes())
        .max()
        .unwrap_or(0)
}

impl Activations {
    pub(crate) fn new(
        gpu: &Gpu,
        c: &LlamaConfig,
        max_ctx: u32,
        plan: &KernelPlan,
    ) -> Result<Activations, ModelError> {
        let f32s = |n: u32| n as u64 * 4;
        let buf =
            |label: &str, bytes: u64| gpu.create_buffer_as(MemoryKind::Activations, label, bytes);
        // A windowed layer's cache is a ring of its window's rows.
        let kv_cache = |name: &str| {
            (0..c.n_layers)
                .map(|i| {
                    let bytes = f32s(c.kv_dim()) * u64::from(c.kv_rows_at(i, max_ctx));
                    gpu.create_buffer_as(MemoryKind::KvCache, &format!("L{i}.{name}"), bytes)
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let qkv_rows = c.q_dim() + 2 * c.kv_dim();
        let up_row = up_start_row(gpu, c.ffn_dim);
        let qkv = buf("qkv", f32s(qkv_rows))?;
        let gate_up = buf("ffn_gate_up", f32s(up_row + c.ffn_dim))?;
        let attn = c.attention(max_ctx);
        let fused = |f| plan.fusions.has(f);
        let (variant, _) = plan
            .attention_choice(gpu, &attn)
            .map_err(ModelError::Kernel)?;
        let split = variant == Some(AttnVariant::Split);
        // Where the graph may take the output projection into attention (it checks the
        // rest: `decode_graph.rs`, `attention_output`).
        let attn_output = fused(Fusion::AttnOutput)
            && variant == Some(AttnVariant::Groups)
            && !c.arch.post_norms
            && c.dim <= 1024;
        // Where the graph may take the down projection into gate/up (it checks the rest:
        // `decode_graph.rs`, `ffn_down_op`).
        let ffn_partials = (fused(Fusion::Down)
            && !c.arch.post_norms
            && c.arch.activation == crate::arch::Activation::Silu
            && c.ffn_dim.is_multiple_of(32)
            && c.ffn_dim / 32 <= MAX_FFN_PARTIALS)
            .then(|| buf("ffn_partials", f32s(c.ffn_dim / 32 * c.dim)))
            .transpose()?;
        let argmax = Argmax { n: c.vocab };
        let argmax_parts = if argmax.splits() {
            let bytes = f32s(argmax.partials());
            Some((buf("argmax_values", bytes)?, buf("argmax_indices", bytes)?))
        } else {
            None
        };
        Ok(Activations {
            step: gpu.create_buffer_as(MemoryKind::Other, "step", STEP_BUFFER_BYTES)?,
            token: gpu.create_buffer_as(MemoryKind::Other, "token", 4)?,
            x: buf("x", f32s(c.dim))?,
            x_alt: (c.arch.post_norms && fused(Fusion::PostNorm)
                || attn_output
                || ffn_partials.is_some())
            .then(|| buf("x_alt", f32s(c.dim)))
            .transpose()?,
            attn_partials: attn_output
                .then(|| buf("attn_partials", f32s(c.n_heads * c.dim)))
                .transpose()?,
            ffn_partials,
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
            delta: (!fused(Fusion::Residual) || c.arch.post_norms)
                .then(|| buf("delta", f32s(c.dim)))
                .transpose()?,
            scores: variant
                .is_none()
                .then(|| buf("attn_scores", f32s(c.n_heads) * max_ctx as u64))
                .transpose()?,
            attn_scratch: split
                .then(|| buf("attn_partials", split_scratch_bytes(c, max_ctx)))
                .transpose()?,
            argmax_parts,
        })
    }

    /// The split argmax's partials, where the vocabulary is split.
    pub(crate) fn argmax_partials(&self) -> Option<Partials<'_>> {
        self.argmax_parts
            .as_ref()
            .map(|(values, indices)| Partials { values, indices })
    }

    /// A step runner for `graph`, which writes the next token (and the logits) here: it
    /// reads back the token, and the logits with `read_logits`.
    pub(crate) fn runner(
        &self,
        gpu: &Gpu,
        graph: &Graph,
        read_logits: bool,
    ) -> Result<StepRunner, ModelError> {
        let mut readbacks = vec![&self.token];
        if read_logits {
            readbacks.push(&self.logits);
        }
        Ok(StepRunner::new(gpu, graph, &readbacks)?)
    }
}
