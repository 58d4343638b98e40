//! `rope`: rotary position embedding (GGUF "normal" mode, as llama.cpp's Llama, or NeoX
//! mode, as its Qwen, Phi-3 and Gemma) fused with the KV-cache append.
//!
//! Pair `i < rope_dims / 2` of every head — `(x[2i], x[2i+1])`, or with `neox`
//! `(x[i], x[i + rope_dims/2])` — turns by `pos · base^(-2i / rope_dims)`; dims
//! `>= rope_dims` are left alone. One dispatch rotates `q` in place, writes rotated `k`
//! into `k_cache` row `pos` and copies `v` into `v_cache` row `pos` (caches laid out
//! `[t][kv_head][d]`, a row being `n_kv_heads · head_dim` floats). `pos` comes from the
//! step buffer (`step[0]`). With `ring` the cache is a sliding window's ring of
//! `max_ctx` rows: position `pos` goes to row `pos % max_ctx`.
//!
//! # Precision
//!
//! CPU and GPU compute each angle the same way, in f32: `freq = base.powf(-(2i) / rope_dims)`
//! then `theta = pos · freq`. They still differ: GPU `pow` is allowed a few ulp of
//! relative error (Vulkan: `3 + 2·|y·log2 x|` ulp), which grows to an absolute angle
//! error of `pos · freq · ε_pow`; and GPU `sin`/`cos` are only specified near
//! `[-π, π]` (the kernel reduces the angle there first; Vulkan then allows 2⁻¹¹, real
//! drivers do ~1e-6). An output pair therefore matches the CPU to about
//! `|pair| · (pos · freq · ε_pow + ε_sincos)`: under 1e-4 · |pair| for `pos <= 100`
//! (what the tests check), growing linearly with `pos` for the low pairs.

mod batched;
mod cost;
mod cpu;
pub(crate) mod exec;
mod normed;

pub use batched::RopeBatched;
pub use normed::{RopeNormed, NORMED_SHADER};

use gpuscope_runtime::{grid_2d, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use crate::need;

pub static SHADER: ShaderSource = ShaderSource {
    name: "rope",
    wgsl: concat!(
        include_str!("bindings_separate.wgsl"),
        include_str!("kernel.wgsl"),
        include_str!("angle.wgsl"),
        include_str!("pair.wgsl")
    ),
};

/// The same kernel over one `qkv` buffer (q, k, v at element offsets).
pub static SHADER_QKV: ShaderSource = ShaderSource {
    name: "rope_qkv",
    wgsl: concat!(
        include_str!("bindings_qkv.wgsl"),
        include_str!("kernel.wgsl"),
        include_str!("angle.wgsl"),
        include_str!("pair.wgsl")
    ),
};

const WG: u32 = 256;

/// RoPE for one token's q and k, plus the KV-cache append.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rope {
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    /// Leading dims of each head that rotate (Llama: `head_dim`).
    pub rope_dims: u32,
    /// Frequency base (Llama 2: 10000; Llama 3: 500000).
    pub base: f32,
    /// Rows in the KV cache.
    pub max_ctx: u32,
    /// NeoX mode: pair `(i, i + rope_dims/2)` turns, not `(2i, 2i + 1)`.
    pub neox: bool,
    /// The cache is a ring: position `pos` goes to row `pos % max_ctx` (a sliding
    /// window's cache); otherwise a `pos >= max_ctx` writes nothing.
    pub ring: bool,
}

impl Rope {
    pub const OP: &'static str = "rope";

    /// Floats in one KV-cache row (one position, all kv heads).
    pub fn kv_row(&self) -> u64 {
        self.n_kv_heads as u64 * self.head_dim as u64
    }

    /// The override constants every rope kernel declares.
    pub(crate) fn constants(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("N_HEADS", f64::from(self.n_heads)),
            ("N_KV_HEADS", f64::from(self.n_kv_heads)),
            ("HEAD_DIM", f64::from(self.head_dim)),
            ("ROPE_DIMS", f64::from(self.rope_dims)),
            ("MAX_CTX", f64::from(self.max_ctx)),
            ("BASE", f64::from(self.base)),
            ("NEOX", f64::from(u8::from(self.neox))),
            ("RING", f64::from(u8::from(self.ring))),
        ]
    }

    /// [`Self::constants`] and the element offsets of q, k and v in one buffer.
    pub(crate) fn constants_at(&self, (q, k, v): (u32, u32, u32)) -> Vec<(&'static str, f64)> {
        let mut c = self.constants();
        c.extend([
            ("Q_OFF", f64::from(q)),
            ("K_OFF", f64::from(k)),
            ("V_OFF", f64::from(v)),
        ]);
        c
    }

    pub(crate) fn check(&self) -> Result<(), GpuError> {
        let ok = self.n_heads > 0
            && self.n_kv_heads > 0
            && self.head_dim.is_multiple_of(2)
            && self.rope_dims.is_multiple_of(2)
            && self.rope_dims > 0
            && self.rope_dims <= self.head_dim
            && self.max_ctx > 0;
        if ok {
            Ok(())
        } else {
            Err(GpuError::Invalid(format!(
                "{self:?}: needs heads > 0, an even head_dim, an even 0 < rope_dims <= head_dim and max_ctx > 0"
            )))
        }
    }

    /// Binds `step` (`[pos, ..]`), `q` (`n_heads · head_dim`, rotated in place), `k` and `v`
    /// (`n_kv_heads · head_dim`, read), `k_cache` and `v_cache` (`max_ctx` rows, row `pos`
    /// written; row `pos % max_ctx` with `ring`). A `pos >= max_ctx` without `ring` makes
    /// the kernel do nothing.
    #[allow(clippy::too_many_arguments)] // one per buffer the kernel binds
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        step: &GpuBuffer,
        q: &GpuBuffer,
        k: &GpuBuffer,
        v: &GpuBuffer,
        k_cache: &GpuBuffer,
        v_cache: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        self.check()?;
        let q_bytes = 4 * self.n_heads as u64 * self.head_dim as u64;
        let kv_bytes = 4 * self.kv_row();
        let cache_bytes = kv_bytes * self.max_ctx as u64;
        need(step, 16, "step", self)?;
        need(q, q_bytes, "q", self)?;
        need(k, kv_bytes, "k", self)?;
        need(v, kv_bytes, "v", self)?;
        need(k_cache, cache_bytes, "k_cache", self)?;
        need(v_cache, cache_bytes, "v_cache", self)?;
        let pipeline = gpu.pipeline(&SHADER, "main", &self.constants())?;
        let bind_group = gpu.bind_group(&pipeline, &[step, q, k, v, k_cache, v_cache])?;
        // One thread per q pair, per k pair and per v pair.
        let threads = (self.n_heads + 2 * self.n_kv_heads) * (self.head_dim / 2);
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            grid_2d(threads.div_ceil(WG)),
            self.cost(),
            &[step, q, k, v],
            &[q, k_cache, v_cache],
        ))
    }

    /// Like [`Self::dispatch`] with q, k and v in one buffer at element offsets
    /// `q_off`, `k_off`, `v_off` (what a fused q/k/v gemv writes). Same op name: it is
    /// the same kernel body.
    #[allow(clippy::too_many_arguments)]
    pub fn dispatch_qkv(
        &self,
        gpu: &Gpu,
        step: &GpuBuffer,
        qkv: &GpuBuffer,
        (q_off, k_off, v_off): (u32, u32, u32),
        k_cache: &GpuBuffer,
        v_cache: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        self.check()?;
        let q_len = self.n_heads as u64 * self.head_dim as u64;
        let kv_len = self.kv_row();
        let end = (q_off as u64 + q_len)
            .max(k_off as u64 + kv_len)
            .max(v_off as u64 + kv_len);
        need(step, 16, "step", self)?;
        need(qkv, 4 * end, "qkv", self)?;
        let cache_bytes = 4 * kv_len * self.max_ctx as u64;
        need(k_cache, cache_bytes, "k_cache", self)?;
        need(v_cache, cache_bytes, "v_cache", self)?;
        let pipeline = gpu.pipeline(
            &SHADER_QKV,
            "main",
            &self.constants_at((q_off, k_off, v_off)),
        )?;
        let bind_group = gpu.bind_group(&pipeline, &[step, qkv, k_cache, v_cache])?;
        let threads = (self.n_heads + 2 * self.n_kv_heads) * (self.head_dim / 2);
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            grid_2d(threads.div_ceil(WG)),
            self.cost(),
            &[step, qkv],
            &[qkv, k_cache, v_cache],
        ))
    }
}
