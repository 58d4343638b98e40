//! Attention for one query over the KV cache, grouped-query heads
//! (`kv_head = h / (n_heads / n_kv_heads)`), as two ops with `softmax` between them:
//!
//! - [`AttnScores`] (`attn_scores`): `scores[h·max_ctx + t] = dot(q[h], k_cache[t][kv_head]) / sqrt(head_dim)`;
//! - [`AttnValues`] (`attn_values`): `out[h·head_dim + d] = Σ_t probs[h·max_ctx + t] · v_cache[t][kv_head][d]`;
//!
//! both for `t < n_ctx = step[1]`. Caches are laid out `[t][kv_head][d]`; score rows are
//! `max_ctx` long and only their first `n_ctx` entries are written.
//!
//! # Cost
//!
//! The work grows with `n_ctx`, which changes every token while a [`Dispatch`] is built
//! once. So `dispatch` records [`AttnScores::cost_at`]`(1)` (also what `cost()` returns),
//! and the decoder, which knows each token's `n_ctx`, replaces it with `cost_at(n_ctx)`.
//!
//! # Limits
//!
//! `n_heads / n_kv_heads <= 8` (a workgroup keeps one accumulator per head of the group);
//! `head_dim` a multiple of 4 (scores) or 8 (values), since the caches are read as vec4.

mod batched;
mod cost;
mod cpu;
pub(crate) mod exec;
mod fused;
pub(crate) mod output;

pub use batched::{coopmat_shader, coopmat_shaders, rounds_to_f16, AttnBatched};
pub use output::AttnOutput;

pub use fused::{
    fused_sg_shader, groups_shader, groups_shaders, AttnFused, AttnVariant, COMBINE_SHADER,
    FUSED_SHADER, SPLIT_CHUNK, SUBGROUP_SHADER, SUBGROUP_WIDE_SHADER,
};

use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use crate::need;

pub static SCORES_SHADER: ShaderSource = ShaderSource {
    name: "attn_scores",
    wgsl: include_str!("scores.wgsl"),
};

pub static VALUES_SHADER: ShaderSource = ShaderSource {
    name: "attn_values",
    wgsl: include_str!("values.wgsl"),
};

/// Largest `n_heads / n_kv_heads`: `MAX_GROUP` in both kernels.
pub const MAX_GROUP: u32 = 8;

/// Threads of the scores workgroup.
const SCORE_WG: u32 = 256;
/// Workgroups the scores grid is capped at, over all kv heads. Enough to fill a large
/// GPU (an H100 has 132 SMs, each holding up to 8 such 256-thread workgroups) while a
/// short context does not launch thousands of idle ones for a long cache.
const SCORE_WORKGROUPS: u32 = 1024;
/// Floats of a head each values workgroup owns (`4 · LANES` there).
const VALUE_FLOATS: u32 = 8;

/// `q · kᵀ / sqrt(head_dim)` for one query against the first `n_ctx` cache rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnScores {
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    pub max_ctx: u32,
}

/// `probs · v` for one query over the first `n_ctx` cache rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnValues {
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    pub max_ctx: u32,
}

fn check(
    what: &dyn std::fmt::Debug,
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    head_dim_multiple: u32,
    max_ctx: u32,
) -> Result<(), GpuError> {
    let ok = n_kv_heads > 0
        && n_heads.is_multiple_of(n_kv_heads)
        && n_heads / n_kv_heads >= 1
        && n_heads / n_kv_heads <= MAX_GROUP
        && head_dim > 0
        && head_dim.is_multiple_of(head_dim_multiple)
        && max_ctx > 0;
    if ok {
        Ok(())
    } else {
        Err(GpuError::Invalid(format!(
            "{what:?}: needs n_heads a multiple of n_kv_heads with at most {MAX_GROUP} heads per kv head, \
             head_dim a multiple of {head_dim_multiple}, and max_ctx > 0"
        )))
    }
}

fn constants(
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_ctx: u32,
) -> [(&'static str, f64); 4] {
    [
        ("N_HEADS", n_heads as f64),
        ("N_KV_HEADS", n_kv_heads as f64),
        ("HEAD_DIM", head_dim as f64),
        ("MAX_CTX", max_ctx as f64),
    ]
}

impl AttnScores {
    pub const OP: &'static str = "attn_scores";

    /// Threads sharing one cache row in the kernel: enough that each loads about four
    /// vec4 of it (4 for head_dim 64, 8 for 128), at most 8; a power of two. Loads with
    /// nothing behind them are masked, so fewer lanes means fewer wasted loads: SmolLM2's
    /// scores over 8192 rows (head_dim 64) took 7.7 us with 8 lanes, 5.5 us with 4 (H200).
    fn score_lanes(&self) -> u32 {
        (self.head_dim / 16).clamp(1, 8).next_power_of_two()
    }

    /// `1 / sqrt(head_dim)` in f32, the same value on CPU and GPU.
    pub fn scale(&self) -> f32 {
        1.0 / (self.head_dim as f32).sqrt()
    }

    /// Binds `step` (`[.., n_ctx, ..]`), `q` (`n_heads · head_dim`), `k_cache`
    /// (`max_ctx` rows) and `scores` (`n_heads · max_ctx`, written for `t < n_ctx`).
    /// Records `cost_at(1)`: see the module docs.
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        step: &GpuBuffer,
        q: &GpuBuffer,
        k_cache: &GpuBuffer,
        scores: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        check(
            self,
            self.n_heads,
            self.n_kv_heads,
            self.head_dim,
            4,
            self.max_ctx,
        )?;
        let (heads, kv, hd, ctx) = (
            self.n_heads as u64,
            self.n_kv_heads as u64,
            self.head_dim as u64,
            self.max_ctx as u64,
        );
        need(step, 16, "step", self)?;
        need(q, 4 * heads * hd, "q", self)?;
        need(k_cache, 4 * ctx * kv * hd, "k_cache", self)?;
        need(scores, 4 * heads * ctx, "scores", self)?;
        let lanes = self.score_lanes();
        let mut consts =
            constants(self.n_heads, self.n_kv_heads, self.head_dim, self.max_ctx).to_vec();
        consts.push(("SCALE", self.scale() as f64));
        consts.push(("LANES", lanes as f64));
        let pipeline = gpu.pipeline(&SCORES_SHADER, "main", &consts)?;
        let bind_group = gpu.bind_group(&pipeline, &[step, q, k_cache, scores])?;
        // x: blocks of cache rows (the kernel strides over the rest), y: kv heads.
        let blocks = self
            .max_ctx
            .div_ceil(SCORE_WG / lanes)
            .min((SCORE_WORKGROUPS / self.n_kv_heads).max(1));
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            [blocks, self.n_kv_heads, 1],
            self.cost(),
            &[step, q, k_cache],
            &[scores],
        ))
    }
}

impl AttnValues {
    pub const OP: &'static str = "attn_values";

    /// Binds `step` (`[.., n_ctx, ..]`), `probs` (`n_heads · max_ctx`), `v_cache`
    /// (`max_ctx` rows) and `out` (`n_heads · head_dim`, written).
    /// Records `cost_at(1)`: see the module docs.
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        step: &GpuBuffer,
        probs: &GpuBuffer,
        v_cache: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        check(
            self,
            self.n_heads,
            self.n_kv_heads,
            self.head_dim,
            VALUE_FLOATS,
            self.max_ctx,
        )?;
        let (heads, kv, hd, ctx) = (
            self.n_heads as u64,
            self.n_kv_heads as u64,
            self.head_dim as u64,
            self.max_ctx as u64,
        );
        need(step, 16, "step", self)?;
        need(probs, 4 * heads * ctx, "probs", self)?;
        need(v_cache, 4 * ctx * kv * hd, "v_cache", self)?;
        need(out, 4 * heads * hd, "out", self)?;
        let consts = constants(self.n_heads, self.n_kv_heads, self.head_dim, self.max_ctx);
        let pipeline = gpu.pipeline(&VALUES_SHADER, "main", &consts)?;
        let bind_group = gpu.bind_group(&pipeline, &[step, probs, v_cache, out])?;
        // x: 8-float slices of a head, y: kv heads.
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            [self.head_dim / VALUE_FLOATS, self.n_kv_heads, 1],
            self.cost(),
            &[step, probs, v_cache],
            &[out],
        ))
    }
}
