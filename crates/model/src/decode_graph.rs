//! The per-token decode graph, built from uploaded weights and a [`KernelPlan`].
//!
//! One section (compute pass) per layer, plus `embed` and `head`. With every fusion a
//! layer is 5 dispatches: rms_norm+q/k/v gemv+rope+KV store, attention, output projection
//! (+ residual), rms_norm+gate/up gemv+silu_mul, down projection (+ residual); 4 where
//! attention takes the output projection and gate/up its residual add (`attn_output`,
//! small models: [`Builder::attention_output`]); with none
//! it is 13 (norm, q/k/v, rope, scores, softmax, values, projection, add, norm, gate/up,
//! silu_mul, down, add). A fusion whose precondition a layer does not meet (q/k/v or
//! gate/up split over formats or row chunks; for rope in the q/k/v epilogue, an
//! architecture's biases, NeoX rope or sliding-window ring) falls back to the unfused ops
//! there, and the settings say so.
//!
//! What an architecture adds is a few more dispatches in the layer: the q/k/v bias
//! (`add`), the q and k head norms (`head_norm`, with rope and the KV store in the same
//! kernel when rope is fused: `head_norm+rope`), the post norms (`rms_norm` of the
//! projection's output with the residual add in the same kernel, `rms_norm+add`, when
//! the residual is fused; with the `post_norm` fusion, in the next gemv's input where
//! that gemv runs the dp4a frame: `rms_norm+add+rms_norm+gemv_q5_0+gelu_mul`, the
//! residual stream then alternating between two buffers); GeGLU goes into the gate/up
//! epilogue as silu does (`+gelu_mul`).
//! Per layer, its rope (base, mode, ring) and its attention over its own KV cache (a
//! window's ring of rows).

use std::collections::BTreeMap;

use gpuscope_ops::add::Add;
use gpuscope_ops::argmax::Argmax;
use gpuscope_ops::attention::{AttnFused, AttnOutput, AttnVariant};
use gpuscope_ops::gelu_mul::GeluMul;
use gpuscope_ops::gemv::{
    GemvBuffers, GemvEpilogue, GemvFused, GemvTuning, GemvVariant, Partials, PostNorm,
};
use gpuscope_ops::head_norm::HeadNorm;
use gpuscope_ops::rms_norm::RmsNorm;
use gpuscope_ops::rope::RopeNormed;
use gpuscope_ops::silu_mul::SiluMul;
use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, Graph, Section};

use crate::activations::Activations;
use crate::arch::Activation;
use crate::config::LlamaConfig;
use crate::error::ModelError;
use crate::gpu_weights::{Folded, GpuLayer, GpuMatrix, GpuWeights};
use crate::plan::{Fusion, KernelPlan};
use crate::PlantedSlowdown;

/// A dispatch whose declared cost depends on the context length, and how.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AttnCost {
    Fused,
    /// Attention with the output projection (`attention+gemv`): its own cost.
    WithOutput(AttnOutput),
    Split,
    Combine,
    Scores,
    Softmax,
    Values,
}

/// A dispatch whose cost grows with the context: where it is in the graph, how, and
/// its layer's attention (over that layer's cache rows).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttentionSite {
    pub section: usize,
    pub dispatch: usize,
    pub kind: AttnCost,
    pub op: AttnFused,
}

/// The built graph and what the decoder needs to keep from building it.
pub(crate) struct DecodeGraph {
    pub graph: Graph,
    /// The dispatches whose cost grows with the context.
    pub attention: Vec<AttentionSite>,
    /// The resolved choices, for profiles.
    pub settings: BTreeMap<String, String>,
}

impl AttnCost {
    pub(crate) fn at(self, op: &AttnFused, n_ctx: u32) -> Cost {
        match self {
            AttnCost::Fused => op.cost_at(n_ctx),
            AttnCost::WithOutput(fused) => fused.cost_at(n_ctx),
            AttnCost::Split => op.cost_split_at(n_ctx),
            AttnCost::Combine => op.cost_combine_at(n_ctx),
            AttnCost::Scores => op.parts().0.cost_at(n_ctx),
            AttnCost::Softmax => op.parts().1.cost_at(n_ctx),
            AttnCost::Values => op.parts().2.cost_at(n_ctx),
        }
    }
}

/// Builds the decode graph (`planted`: a test-only slowdown in one gemv of every layer).
pub(crate) fn build_decode(
    gpu: &Gpu,
    c: &LlamaConfig,
    max_ctx: u32,
    plan: &KernelPlan,
    w: &GpuWeights,
    a: &Activations,
    planted: Option<&PlantedSlowdown>,
) -> Result<DecodeGraph, ModelError> {
    let attn = c.attention(max_ctx);
    let (attention_variant, attention_skipped) = plan
        .attention_choice(gpu, &attn)
        .map_err(ModelError::Kernel)?;
    let mut b = Builder {
        gpu,
        c,
        plan,
        a,
        planted,
        max_ctx,
        attention_variant,
        rms: RmsNorm {
            n: c.dim,
            eps: c.rms_eps,
        },
        skipped: BTreeMap::new(),
        residual_alt: false,
        pending_post: None,
        pending_partials: None,
        down_ops: Vec::new(),
    };
    b.down_ops = b.plan_down(w);
    if let Some(why) = attention_skipped {
        b.skipped.insert("attention", why);
    }
    let embed = w
        .token_embd
        .embedding(gpu, &a.token, &a.x, c.embed_scale())?
        .into_iter()
        .map(|d| d.labelled("token_embd", None))
        .collect();
    let mut sections = vec![Section::new("embed", None, embed)];
    let mut attention = Vec::new();
    for (i, layer) in w.layers.iter().enumerate() {
        let mut l = Layer {
            index: i as u32,
            dispatches: Vec::new(),
            attention: Vec::new(),
        };
        b.attention_block(&mut l, layer, i)?;
        let next_qkv = w.layers.get(i + 1).map(|n| &n.wqkv[..]);
        b.ffn_block(&mut l, layer, w.up_row, next_qkv)?;
        for (dispatch, kind) in l.attention {
            attention.push(AttentionSite {
                section: sections.len(),
                dispatch,
                kind,
                op: c.attention_at(i as u32, max_ctx),
            });
        }
        sections.push(Section::new(
            format!("L{}", l.index),
            Some(l.index),
            l.dispatches,
        ));
    }
    sections.push(b.head(w)?);
    let gemv_detail = gemv_detail(gpu, plan);
    let mut settings = crate::plan::settings(plan, &gemv_detail, attention_variant, &b.skipped);
    let widened: Vec<String> = w
        .layers
        .iter()
        .enumerate()
        .flat_map(|(i, l)| {
            let stacks = [("attn_qkv", &l.wqkv), ("ffn_gate_up", &l.w_gate_up)];
            stacks
                .into_iter()
                .filter(|(_, parts)| parts.iter().any(|m| m.widened))
                .map(move |(name, _)| format!("L{i}.{name}"))
        })
        .collect();
    if !widened.is_empty() {
        settings.insert(
            "weights.widened".into(),
            format!(
                "{} ({} matrices): parts in q4_0 / q5_0 / q8_0 stacked as one q8_0 matrix, every weight unchanged",
                widened.join(", "),
                widened.len()
            ),
        );
    }
    Ok(DecodeGraph {
        graph: Graph { sections },
        attention,
        settings,
    })
}

/// The head after its norm: logits = W_out·input (the norm folded in with `norm`: its
/// eps and weight) into `logits`, then the argmax into `token`, where the next step's
/// embedding reads it. Shared by the decode and prefill graphs.
pub(crate) fn output_and_argmax(
    gpu: &Gpu,
    plan: &KernelPlan,
    w: &GpuWeights,
    a: &Activations,
    input: &GpuBuffer,
    norm: Option<(f32, &GpuBuffer)>,
    vocab: u32,
) -> Result<Vec<Dispatch>, ModelError> {
    let io = GemvBuffers {
        norm_weight: norm.map(|(_, nw)| nw),
        ..GemvBuffers::new(input, input, &a.logits)
    };
    let mut ds: Vec<Dispatch> = w
        .output
        .gemv_fused(
            gpu,
            plan,
            Folded {
                norm: norm.map(|(eps, _)| eps),
                post_norm: None,
                partials: 0,
            },
            GemvEpilogue::Store,
            io,
            0,
        )?
        .into_iter()
        .map(|d| d.labelled("output", None))
        .collect();
    let argmax = Argmax { n: vocab }.dispatches(gpu, &a.logits, a.argmax_partials(), &a.token)?;
    ds.extend(argmax.into_iter().map(|d| d.labelled("argmax", None)));
    Ok(ds)
}

/// How the gemv variant spreads rows, in words (the tuning rule, which varies by shape).
fn gemv_detail(gpu: &Gpu, plan: &KernelPlan) -> String {
    use gpuscope_ops::gemv::{GemvVariant, ROWS_WORKGROUP_SIZE, WORKGROUP_SIZE};
    if let Some((lanes, rows)) = plan.gemv_shape {
        return format!(
            "fixed {lanes} lanes per row (at most {}), {rows} rows per lane",
            plan.gemv.max_threads_per_row(gpu)
        );
    }
    match plan.gemv {
        GemvVariant::Blocks => format!(
            "{WORKGROUP_SIZE}-thread workgroups, a block per lane step, lanes per row by shape (4-{}, {} reduction), 1-2 rows per lane",
            plan.gemv.max_threads_per_row(gpu),
            if plan.gemv.subgroup_reduce(gpu) { "subgroup" } else { "shared-memory" }
        ),
        GemvVariant::Dp4a => format!(
            "x quantized to int8 per 32-block in workgroup memory, integer dot products, a block per lane step, {}-thread workgroups ({} from {} columns), lanes per row by shape (4-{}), 1-2 rows per lane; q4_0/q4_1/q8_0/q5_0/q5_1 only, other formats run `{}`",
            gpuscope_ops::gemv::WORKGROUP_SIZE,
            gpuscope_ops::gemv::DP4A_WIDE_WORKGROUP,
            gpuscope_ops::gemv::DP4A_WIDE_COLS,
            plan.gemv.max_threads_per_row(gpu),
            plan.gemv_fallback(gpu).name()
        ),
        GemvVariant::Rows => format!(
            "{} rows per lane, {ROWS_WORKGROUP_SIZE} lanes per workgroup",
            gpuscope_ops::gemv::MAX_ROWS_PER_THREAD
        ),
        GemvVariant::Subgroup => format!(
            "{WORKGROUP_SIZE}-thread workgroups, lanes per row by shape up to {} (subgroup), 1-2 rows per lane",
            gpu.adapter_info().subgroup_min_size
        ),
        GemvVariant::Shared => {
            format!("{WORKGROUP_SIZE}-thread workgroups, lanes per row by shape (16-128), 1-4 rows per lane")
        }
    }
}

/// What building every layer reads, and the fusions it had to skip.
struct Builder<'a> {
    gpu: &'a Gpu,
    c: &'a LlamaConfig,
    plan: &'a KernelPlan,
    a: &'a Activations,
    planted: Option<&'a PlantedSlowdown>,
    max_ctx: u32,
    /// The fused attention kernel, or `None` for scores, softmax and values.
    attention_variant: Option<AttnVariant>,
    rms: RmsNorm,
    /// Fusions the plan asks for that some layer cannot take, with why (the settings
    /// say so).
    skipped: BTreeMap<&'static str, String>,
    /// Whether the residual stream is in `a.x_alt` now (a folded post norm's gemv wrote it
    /// there), not `a.x`.
    residual_alt: bool,
    /// A post norm folded into the next gemv: its weight (its input is in `a.delta`).
    pending_post: Option<&'a GpuBuffer>,
    /// Partials for the next gemv's input and how many: the attention's output
    /// projection per head ([`Fusion::AttnOutput`]) or the down projection's per block
    /// column ([`Fusion::Down`]).
    pending_partials: Option<(&'a GpuBuffer, u32)>,
    /// Per layer, the gate/up op with the down projection folded in and its tuning
    /// ([`Builder::plan_down`]); taken as the layer is built.
    down_ops: Vec<Option<(GemvFused, GemvTuning)>>,
}

/// What a gemv after an rms_norm reads ([`Builder::take_input`]).
#[derive(Clone, Copy)]
struct GemvInput<'b> {
    x: &'b GpuBuffer,
    norm_weight: Option<&'b GpuBuffer>,
    folded: Folded,
    post: Option<PostNorm<'b>>,
    partials: Option<Partials<'b>>,
}

impl<'b> GemvInput<'b> {
    /// The input of one of the matrices that read it: the one that `takes_fold` runs the
    /// folded post norm (and writes the new residual); the others, run after it, read
    /// that residual with their own norm folded in.
    fn for_part(&self, takes_fold: bool) -> GemvInput<'b> {
        match self.post {
            Some(p) if !takes_fold => GemvInput {
                x: p.x_out,
                post: None,
                folded: Folded {
                    post_norm: None,
                    ..self.folded
                },
                ..*self
            },
            _ => *self,
        }
    }

    fn buffers(&self, y: &'b GpuBuffer) -> GemvBuffers<'b> {
        GemvBuffers {
            norm_weight: self.norm_weight,
            post: self.post,
            partials: self.partials,
            ..GemvBuffers::new(self.x, self.x, y)
        }
    }
}

/// One layer's dispatches as they are built.
struct Layer {
    index: u32,
    dispatches: Vec<Dispatch>,
    /// (dispatch index, kind) of its context-dependent dispatches.
    attention: Vec<(usize, AttnCost)>,
}

impl Layer {
    fn push(&mut self, name: &str, list: Vec<Dispatch>) {
        let label = format!("L{}.{name}", self.index);
        self.dispatches.extend(
            list.into_iter()
                .map(|d| d.labelled(label.clone(), Some(self.index))),
        );
    }

    fn push_attention(&mut self, name: &str, d: Dispatch, kind: AttnCost) {
        self.attention.push((self.dispatches.len(), kind));
        self.push(name, vec![d]);
    }
}

impl<'a> Builder<'a> {
    fn fused(&self, f: Fusion) -> bool {
        self.plan.fusions.has(f)
    }

    /// The planted slowdown's extra passes for the gemv called `name` (0: none).
    fn extra(&self, name: &str) -> u32 {
        PlantedSlowdown::passes_for(self.planted, name)
    }

    /// The residual stream's buffer now.
    fn residual(&self) -> &'a GpuBuffer {
        match (&self.a.x_alt, self.residual_alt) {
            (Some(alt), true) => alt,
            _ => &self.a.x,
        }
    }

    /// What the gemvs after an rms_norm read: the residual stream and the norm weight (the
    /// norm folded in), or the normed vector; with a post norm or the attention's partials
    /// pending, also their buffers, the new residual stream going to the other buffer
    /// (from then on the residual).
    /// Call once per norm, for all of the matrices that read it.
    fn take_input(&mut self, norm_weight: &'a GpuBuffer) -> GemvInput<'a> {
        let a = self.a;
        if !self.fused(Fusion::Norm) {
            return GemvInput {
                x: &a.xn,
                norm_weight: None,
                folded: Folded::default(),
                post: None,
                partials: None,
            };
        }
        let x = self.residual();
        let mut folded = Folded {
            norm: Some(self.c.rms_eps),
            post_norm: None,
            partials: 0,
        };
        let partials = self.pending_partials.take().map(|(parts, count)| {
            self.residual_alt = !self.residual_alt;
            folded.partials = count;
            Partials {
                parts,
                x_out: self.residual(),
            }
        });
        let post = self.pending_post.take().map(|weight| {
            self.residual_alt = !self.residual_alt;
            folded.post_norm = Some(self.c.rms_eps);
            PostNorm {
                d: a.delta.as_ref().expect("allocated with post norms"),
                weight,
                x_out: self.residual(),
            }
        });
        GemvInput {
            x,
            norm_weight: Some(norm_weight),
            folded,
            post,
            partials,
        }
    }

    /// Whether a post norm folds into the gemvs of `next` (one of them in the dp4a
    /// frame, which takes it: [`Self::fold_order`]; the fusions on and the second
    /// residual buffer there); else why not, once, in the settings.
    fn post_folds_into(&mut self, next: Option<&[GpuMatrix]>) -> bool {
        let wanted = [Fusion::PostNorm, Fusion::Norm, Fusion::Residual]
            .into_iter()
            .all(|f| self.fused(f))
            && self.a.x_alt.is_some();
        let Some(next) = next.filter(|_| wanted) else {
            return false;
        };
        if next.iter().any(|m| m.runs_dp4a(self.gpu, self.plan)) {
            return true;
        }
        self.skipped.entry("post_norm").or_insert_with(|| {
            "the gemv after a post norm does not run the dp4a frame (the fold is its kernel's)"
                .to_string()
        });
        false
    }

    /// The matrices reading one norm's input in the order they run, each with whether it
    /// takes the folded post norm (`folding`): the first in the dp4a frame goes first and
    /// takes it, writing the new residual that the others then read (Gemma 3's q/k/v in
    /// two formats: q and k in q5_0 on dp4a, a small v in q8_0 on the float frame).
    fn fold_order<'m>(&self, parts: &'m [GpuMatrix], folding: bool) -> Vec<(&'m GpuMatrix, bool)> {
        let first = parts
            .iter()
            .position(|m| folding && m.runs_dp4a(self.gpu, self.plan));
        let mut order: Vec<(&GpuMatrix, bool)> = parts.iter().map(|m| (m, false)).collect();
        if let Some(i) = first {
            let (m, _) = order.remove(i);
            order.insert(0, (m, true));
        }
        order
    }

    /// The rope of layer `li` fused into the q/k/v gemv where every part holds whole
    /// row pairs and the architecture adds nothing between the gemv and rope; else why
    /// not (`Err`, the settings' reason).
    fn rope_fusion(&self, layer: &GpuLayer, li: u32) -> Result<(), String> {
        let a = &self.c.arch;
        if !layer.wqkv.iter().all(GpuMatrix::whole_pairs) {
            return Err(format!(
                "layer {li}: q/k/v row chunks do not hold whole row pairs"
            ));
        }
        let why = if a.rope_neox {
            "NeoX rope (the epilogue rotates adjacent rows)"
        } else if layer.extra.qkv_bias.is_some() {
            "q/k/v biases come between the gemv and rope"
        } else if layer.extra.q_norm.is_some() {
            "q/k head norms come between the gemv and rope"
        } else if self.c.window_at(li, self.max_ctx).is_some() {
            "sliding-window layers keep a ring cache (the epilogue stores rows linearly)"
        } else {
            return Ok(());
        };
        Err(format!("{} ({why})", a.architecture.name()))
    }

    /// rms_norm, q/k/v (with rope and the KV store, fused or not; biases and head norms
    /// where the architecture has them), attention and the output projection with its
    /// residual add (and post norm).
    fn attention_block(
        &mut self,
        l: &mut Layer,
        layer: &'a GpuLayer,
        i: usize,
    ) -> Result<(), ModelError> {
        let (gpu, c, a, li) = (self.gpu, self.c, self.a, l.index);
        let (kc, vc) = (&a.k_cache[i], &a.v_cache[i]);
        let rope = c.rope_at(li, self.max_ctx);
        if !self.fused(Fusion::Norm) {
            l.push(
                "attn_norm",
                vec![self
                    .rms
                    .dispatch(gpu, self.residual(), &layer.attn_norm, &a.xn)?],
            );
        }
        let input = self.take_input(&layer.attn_norm);
        let rope_fused = self.fused(Fusion::Rope)
            && match self.rope_fusion(layer, li) {
                Ok(()) => true,
                // Rope then goes with the head norms (`rope_after_gemv`): fused still.
                Err(_) if self.rope_with_norms(layer).is_some() => false,
                Err(why) => {
                    self.skipped.entry("rope").or_insert(why);
                    false
                }
            };
        let mut qkv = Vec::new();
        for (part, takes_fold) in self.fold_order(&layer.wqkv, input.post.is_some()) {
            let input = input.for_part(takes_fold);
            let mut io = input.buffers(&a.qkv);
            let epilogue = if rope_fused {
                io.kv = Some((&a.step, kc, vc));
                GemvEpilogue::RopeKv(rope)
            } else {
                GemvEpilogue::Store
            };
            qkv.extend(part.gemv_fused(
                gpu,
                self.plan,
                input.folded,
                epilogue,
                io,
                self.extra("attn_qkv"),
            )?);
        }
        l.push("attn_qkv", qkv);
        if !rope_fused {
            self.rope_after_gemv(l, layer, i)?;
        }
        if self.attention_output(l, layer, i)? {
            return Ok(());
        }
        self.attention(l, kc, vc)?;
        let post = layer.extra.post_attn_norm.as_ref();
        let next = Some(&layer.w_gate_up[..]);
        self.residual_gemv(l, "attn_output", &layer.wo, &a.attn, post, next)
    }

    /// Rope and the KV store after the q/k/v gemv, with what comes between them: the
    /// biases, then the q and k head norms. With rope fused and head norms and no biases
    /// (Qwen3, Gemma 3), norms and rope are one kernel (`head_norm+rope`).
    fn rope_after_gemv(&self, l: &mut Layer, layer: &GpuLayer, i: usize) -> Result<(), ModelError> {
        let (gpu, c, a) = (self.gpu, self.c, self.a);
        let (kc, vc) = (&a.k_cache[i], &a.v_cache[i]);
        let rope = c.rope_at(l.index, self.max_ctx);
        let offsets = (0, c.q_dim(), c.q_dim() + c.kv_dim());
        if let Some((qn, kn)) = self.rope_with_norms(layer) {
            let op = RopeNormed {
                rope,
                eps: c.rms_eps,
                offsets,
            };
            let d = op.dispatch(gpu, &a.step, &a.qkv, kc, vc, qn, kn)?;
            l.push("attn_qk_norm", vec![d]);
            return Ok(());
        }
        self.qkv_extras(l, layer)?;
        l.push(
            "rope",
            vec![rope.dispatch_qkv(gpu, &a.step, &a.qkv, offsets, kc, vc)?],
        );
        Ok(())
    }

    /// The q and k norm weights where rope goes into the head norms' kernel: rope fused,
    /// head norms and no biases (Qwen3, Gemma 3).
    fn rope_with_norms<'l>(&self, layer: &'l GpuLayer) -> Option<(&'l GpuBuffer, &'l GpuBuffer)> {
        let e = &layer.extra;
        match (&e.qkv_bias, &e.q_norm, &e.k_norm) {
            (None, Some(qn), Some(kn)) if self.fused(Fusion::Rope) => Some((qn, kn)),
            _ => None,
        }
    }

    /// What comes between the q/k/v gemv and rope: the biases, then the q and k head
    /// norms, in place in the q/k/v buffer.
    fn qkv_extras(&self, l: &mut Layer, layer: &GpuLayer) -> Result<(), ModelError> {
        let (gpu, c, a) = (self.gpu, self.c, self.a);
        let e = &layer.extra;
        if let Some(bias) = &e.qkv_bias {
            let add = Add {
                n: c.q_dim() + 2 * c.kv_dim(),
            };
            l.push("attn_qkv_bias", vec![add.dispatch(gpu, &a.qkv, bias)?]);
        }
        if let (Some(qn), Some(kn)) = (&e.q_norm, &e.k_norm) {
            let op = HeadNorm {
                n_heads: c.n_heads,
                n_kv_heads: c.n_kv_heads,
                head_dim: c.head_dim,
                q_off: 0,
                k_off: c.q_dim(),
                eps: c.rms_eps,
            };
            l.push("attn_qk_norm", vec![op.dispatch(gpu, &a.qkv, qn, kn)?]);
        }
        Ok(())
    }

    /// rms_norm, gate/up with the activation (silu_mul fused into the gemv where gate and
    /// up are one matrix and the activation is silu), and the down projection with its
    /// residual add (and post norm).
    /// `next_qkv`: the next layer's q/k/v matrices, where a post norm may fold.
    fn ffn_block(
        &mut self,
        l: &mut Layer,
        layer: &'a GpuLayer,
        up_row: u32,
        next_qkv: Option<&[GpuMatrix]>,
    ) -> Result<(), ModelError> {
        let (gpu, c, a, li) = (self.gpu, self.c, self.a, l.index);
        if !self.fused(Fusion::Norm) {
            l.push(
                "ffn_norm",
                vec![self
                    .rms
                    .dispatch(gpu, self.residual(), &layer.ffn_norm, &a.xn)?],
            );
        }
        let input = self.take_input(&layer.ffn_norm);
        if self.ffn_down(l, layer, &input)? {
            return Ok(());
        }
        let stacked = match layer.w_gate_up.as_slice() {
            [m] if m.chunks.len() == 1 => Some(m),
            _ => None,
        };
        match stacked {
            Some(m) if self.fused(Fusion::Silu) => {
                let io = input.buffers(&a.hidden);
                let (n, up_row) = (c.ffn_dim, up_row);
                let epilogue = match c.arch.activation {
                    Activation::Silu => GemvEpilogue::SiluMul { n, up_row },
                    Activation::GeluTanh => GemvEpilogue::GeluMul { n, up_row },
                };
                l.push(
                    "ffn_gate_up",
                    m.gemv_fused(
                        gpu,
                        self.plan,
                        input.folded,
                        epilogue,
                        io,
                        self.extra("ffn_gate_up"),
                    )?,
                );
            }
            _ => {
                if self.fused(Fusion::Silu) {
                    let why = format!(
                        "layer {li}: gate and up are not one matrix (formats differ or row chunks)"
                    );
                    self.skipped.entry("silu").or_insert(why);
                }
                self.gate_up_unfused(l, layer, &input)?;
            }
        }
        let post = layer.extra.post_ffn_norm.as_ref();
        self.residual_gemv(l, "ffn_down", &layer.w_down, &a.hidden, post, next_qkv)
    }

    /// gate/up, silu·mul and the down projection in one dispatch ([`Fusion::Down`], as
    /// [`Self::plan_down`] chose for this layer), its sum left for the next layer's
    /// q/k/v gemv. Whether it did.
    fn ffn_down(
        &mut self,
        l: &mut Layer,
        layer: &'a GpuLayer,
        input: &GemvInput<'a>,
    ) -> Result<bool, ModelError> {
        let Some((planned, tuning)) = self
            .down_ops
            .get_mut(l.index as usize)
            .and_then(Option::take)
        else {
            return Ok(false);
        };
        // What this layer's input folds in (the attention's partials, where attention
        // took the output projection) is known only now.
        let op = GemvFused {
            norm: input.folded.norm,
            post_norm: input.folded.post_norm,
            partials: input.folded.partials,
            ..planned
        };
        let parts = self
            .a
            .ffn_partials
            .as_ref()
            .expect("planned with the partials");
        let io = GemvBuffers {
            w: &layer.w_gate_up[0].chunks[0].buffer,
            down: Some(&layer.w_down.chunks[0].buffer),
            ..input.buffers(parts)
        };
        let extra = self.extra("ffn_gate_up");
        l.push(
            "ffn_gate_up_down",
            vec![op.dispatch_planted(self.gpu, tuning, &io, extra)?],
        );
        self.pending_partials = Some((parts, op.down_partials()));
        Ok(true)
    }

    /// Which layers take the down projection into gate/up ([`Fusion::Down`]) and each
    /// one's op and tuning: every layer but the last (the output head adds no partials)
    /// that can. Where some layer cannot, the settings say why (once).
    fn plan_down(&mut self, w: &'a GpuWeights) -> Vec<Option<(GemvFused, GemvTuning)>> {
        let mut ops = vec![None; w.layers.len()];
        if !self.fused(Fusion::Down) {
            return ops;
        }
        for (i, pair) in w.layers.windows(2).enumerate() {
            match self.ffn_down_op(&pair[0], i as u32, w.up_row, &pair[1].wqkv) {
                Ok(op) => ops[i] = Some(op),
                Err(why) => {
                    self.skipped.entry("down").or_insert(why);
                }
            }
        }
        ops
    }

    /// The op and tuning of layer `li`'s gate/up with the down projection folded in, or
    /// why the layer keeps them apart.
    fn ffn_down_op(
        &self,
        layer: &GpuLayer,
        li: u32,
        up_row: u32,
        next_qkv: &[GpuMatrix],
    ) -> Result<(GemvFused, GemvTuning), String> {
        let needs = [Fusion::Norm, Fusion::Residual, Fusion::Silu];
        if let Some(f) = needs.into_iter().find(|f| !self.fused(*f)) {
            return Err(format!("needs the `{}` fusion", f.name()));
        }
        if self.a.ffn_partials.is_none() {
            return Err(format!(
                "{} (post norms or gelu), or an FFN width not in at most 64 blocks of 32",
                self.c.arch.architecture.name()
            ));
        }
        let single = |ms| one_dp4a_matrix(ms, self.gpu, self.plan);
        if single(next_qkv).is_none() {
            return Err(format!(
                "layer {}: q/k/v is not one matrix on the dp4a gemv (which adds the partials)",
                li + 1
            ));
        }
        let Some(gate_up) = single(&layer.w_gate_up) else {
            return Err(format!(
                "layer {li}: gate/up is not one matrix on the dp4a gemv"
            ));
        };
        let down = &layer.w_down;
        let [chunk] = down.chunks.as_slice() else {
            return Err(format!(
                "layer {li}: the down projection is split in row chunks"
            ));
        };
        if (down.tensor_format, down.layout) != (gate_up.tensor_format, gate_up.layout) {
            return Err(format!(
                "layer {li}: down is {} and gate/up {} (one format in one kernel)",
                down.tensor_format.name(),
                gate_up.tensor_format.name()
            ));
        }
        let gemv = gate_up.chunk_gemvs().next().expect("one chunk").1;
        let op = GemvFused {
            gemv,
            norm: Some(self.c.rms_eps),
            post_norm: None,
            partials: 0,
            epilogue: GemvEpilogue::SiluDown {
                n: self.c.ffn_dim,
                up_row,
                dim: chunk.rows,
            },
        };
        let tuning =
            op.fit_tuning(gemv.tuning_with(GemvVariant::Dp4a, self.plan.gemv_shape, self.gpu));
        op.down_supported(self.gpu, tuning)
            .map_err(|why| format!("layer {li}: {why}"))?;
        Ok((op, tuning))
    }

    /// gate/up into their buffer, then the activation (`silu_mul` or `gelu_mul`).
    fn gate_up_unfused(
        &self,
        l: &mut Layer,
        layer: &GpuLayer,
        input: &GemvInput,
    ) -> Result<(), ModelError> {
        let (gpu, c, a) = (self.gpu, self.c, self.a);
        let mut gu = Vec::new();
        for (part, takes_fold) in self.fold_order(&layer.w_gate_up, input.post.is_some()) {
            let input = input.for_part(takes_fold);
            gu.extend(part.gemv_fused(
                gpu,
                self.plan,
                input.folded,
                GemvEpilogue::Store,
                input.buffers(&a.gate_up),
                self.extra("ffn_gate_up"),
            )?);
        }
        l.push("ffn_gate_up", gu);
        let act = match c.arch.activation {
            Activation::Silu => (
                "ffn_silu_mul",
                SiluMul { n: c.ffn_dim }.dispatch(gpu, &a.gate, &a.up, &a.hidden)?,
            ),
            Activation::GeluTanh => (
                "ffn_gelu_mul",
                GeluMul { n: c.ffn_dim }.dispatch(gpu, &a.gate, &a.up, &a.hidden)?,
            ),
        };
        l.push(act.0, vec![act.1]);
        Ok(())
    }

    /// The `head` section: the output norm (unless folded into the output gemv), the
    /// logits and the argmax.
    fn head(&mut self, w: &'a GpuWeights) -> Result<Section, ModelError> {
        let (gpu, a) = (self.gpu, self.a);
        let mut head = Vec::new();
        if !self.fused(Fusion::Norm) {
            head.push(
                self.rms
                    .dispatch(gpu, self.residual(), &w.output_norm, &a.xn)?
                    .labelled("output_norm", None),
            );
        }
        // No post norm folds into the head (the last layer's is a dispatch of its own).
        let input = self.take_input(&w.output_norm);
        head.extend(output_and_argmax(
            gpu,
            self.plan,
            w,
            a,
            input.x,
            input.folded.norm.zip(input.norm_weight),
            self.c.vocab,
        )?);
        Ok(Section::new("head", None, head))
    }

    /// Attention over layer `l`'s cache: fused (one dispatch, or two for `split`) or
    /// scores, softmax, values.
    fn attention(&self, l: &mut Layer, kc: &GpuBuffer, vc: &GpuBuffer) -> Result<(), ModelError> {
        let (gpu, a) = (self.gpu, self.a);
        let op = self.c.attention_at(l.index, self.max_ctx);
        let Some(variant) = self.attention_variant else {
            let scores = a.scores.as_ref().expect("allocated");
            let (scores_op, softmax, values_op) = op.parts();
            let d = scores_op.dispatch(gpu, &a.step, &a.q, kc, scores)?;
            l.push_attention("attn_scores", d, AttnCost::Scores);
            let d = softmax.dispatch(gpu, &a.step, scores)?;
            l.push_attention("attn_softmax", d, AttnCost::Softmax);
            let d = values_op.dispatch(gpu, &a.step, scores, vc, &a.attn)?;
            l.push_attention("attn_values", d, AttnCost::Values);
            return Ok(());
        };
        let ds = op.dispatch_variant(
            gpu,
            variant,
            [&a.step, &a.q, kc, vc, &a.attn],
            a.attn_scratch.as_ref(),
        )?;
        let kinds: &[AttnCost] = if ds.len() == 2 {
            &[AttnCost::Split, AttnCost::Combine]
        } else {
            &[AttnCost::Fused]
        };
        for (d, kind) in ds.into_iter().zip(kinds) {
            l.push_attention("attention", d, *kind);
        }
        Ok(())
    }

    /// Attention with the output projection ([`Fusion::AttnOutput`]): one dispatch writes
    /// each head's partial, the next gemv (this layer's gate/up) adds them to the residual
    /// stream. Whether it did; where the plan asks for it and this layer cannot take it,
    /// the settings say why (once).
    fn attention_output(
        &mut self,
        l: &mut Layer,
        layer: &'a GpuLayer,
        i: usize,
    ) -> Result<bool, ModelError> {
        if !self.fused(Fusion::AttnOutput) {
            return Ok(false);
        }
        let op = match self.attention_output_op(layer, l.index) {
            Ok(op) => op,
            Err(why) => {
                self.skipped.entry("attn_output").or_insert(why);
                return Ok(false);
            }
        };
        let (gpu, a) = (self.gpu, self.a);
        let parts = a.attn_partials.as_ref().expect("checked");
        let w = &layer.wo.chunks[0].buffer;
        let d = op.dispatch(gpu, w, &a.step, &a.q, &a.k_cache[i], &a.v_cache[i], parts)?;
        l.push_attention("attention_output", d, AttnCost::WithOutput(op));
        self.pending_partials = Some((parts, op.attn.n_heads));
        Ok(true)
    }

    /// The `attention+gemv` op of layer `li`, or why the layer keeps attention and the
    /// output projection apart.
    fn attention_output_op(&self, layer: &GpuLayer, li: u32) -> Result<AttnOutput, String> {
        let needs = [Fusion::Norm, Fusion::Residual, Fusion::Silu];
        if let Some(f) = needs.into_iter().find(|f| !self.fused(*f)) {
            return Err(format!("needs the `{}` fusion", f.name()));
        }
        if self.attention_variant != Some(AttnVariant::Groups) {
            return Err(
                "the `groups` attention kernel does not run (contexts over 512 take `split`)"
                    .into(),
            );
        }
        let (Some(_), Some(_)) = (&self.a.attn_partials, &self.a.x_alt) else {
            return Err(format!(
                "dim {} is more than one workgroup's rows, or the model has post norms",
                self.c.dim
            ));
        };
        if one_dp4a_matrix(&layer.w_gate_up, self.gpu, self.plan).is_none() {
            return Err(format!(
                "layer {li}: gate/up is not one matrix on the dp4a gemv (which adds the partials)"
            ));
        }
        let [chunk] = layer.wo.chunks.as_slice() else {
            return Err(format!(
                "layer {li}: the output projection is split in row chunks"
            ));
        };
        let op = AttnOutput {
            attn: self.c.attention_at(li, self.max_ctx),
            o: gpuscope_ops::gemv::Gemv {
                rows: chunk.rows,
                cols: layer.wo.cols,
                format: layer.wo.tensor_format,
                out_offset: 0,
                layout: layer.wo.layout,
            },
        };
        op.supported(self.gpu)
            .map_err(|why| format!("layer {li}: {why}"))?;
        Ok(op)
    }

    /// x += W·input: the residual add in the gemv's epilogue, or a gemv into `delta` and
    /// an `add` dispatch; with a post norm (Gemma 3), x += rms_norm(W·input)·w: folded
    /// into the gemvs of `next` (the matrices that read the residual next) where they can
    /// take it ([`Self::post_folds_into`]), else the add in the norm's kernel
    /// (`rms_norm+add`), or unfused a norm into `xn` and an `add`.
    fn residual_gemv(
        &mut self,
        l: &mut Layer,
        name: &str,
        m: &GpuMatrix,
        input: &GpuBuffer,
        post_norm: Option<&'a GpuBuffer>,
        next: Option<&[GpuMatrix]>,
    ) -> Result<(), ModelError> {
        let (gpu, a) = (self.gpu, self.a);
        let x = self.residual();
        let fused = self.fused(Fusion::Residual);
        if fused && post_norm.is_none() {
            let ds = m.gemv(gpu, self.plan, input, x, true, self.extra(name))?;
            l.push(name, ds);
            return Ok(());
        }
        let delta = a.delta.as_ref().expect("allocated");
        let ds = m.gemv(gpu, self.plan, input, delta, false, self.extra(name))?;
        l.push(name, ds);
        let add = Add { n: self.c.dim };
        let Some(w) = post_norm else {
            l.push(&format!("{name}_add"), vec![add.dispatch(gpu, x, delta)?]);
            return Ok(());
        };
        let post = if name == "attn_output" {
            "post_attention_norm"
        } else {
            "post_ffw_norm"
        };
        if fused && self.post_folds_into(next) {
            self.pending_post = Some(w);
            return Ok(());
        }
        if fused {
            l.push(post, vec![self.rms.dispatch_add(gpu, delta, w, x)?]);
            return Ok(());
        }
        l.push(post, vec![self.rms.dispatch(gpu, delta, w, &a.xn)?]);
        l.push(&format!("{name}_add"), vec![add.dispatch(gpu, x, &a.xn)?]);
        Ok(())
    }
}

/// The matrix of `ms` where it is one matrix of one row chunk on the dp4a gemv (what
/// adds partials to its input).
fn one_dp4a_matrix<'m>(ms: &'m [GpuMatrix], gpu: &Gpu, plan: &KernelPlan) -> Option<&'m GpuMatrix> {
    match ms {
        [m] if m.chunks.len() == 1 && m.runs_dp4a(gpu, plan) => Some(m),
        _ => None,
    }
}
