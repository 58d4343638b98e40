//! [`AttnFused`] (`attention`): scores, softmax and values for one query in one
//! dispatch, what the decoder uses. The two-op form ([`super::AttnScores`] + softmax +
//! [`super::AttnValues`]) stays as the oracle's structure and for comparisons.

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::{AttnScores, AttnValues};
use crate::softmax::Softmax;

pub static FUSED_SHADER: ShaderSource = ShaderSource {
    name: "attention",
    wgsl: include_str!("fused.wgsl"),
};

/// Threads per workgroup in `fused.wgsl`; `head_dim` must divide it.
const WG: u32 = 256;

/// `softmax(q·Kᵀ/sqrt(head_dim))·V` for one query, all heads, grouped-query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnFused {
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    pub max_ctx: u32,
}

impl AttnFused {
    pub const OP: &'static str = "attention";

    fn parts(&self) -> (AttnScores, Softmax, AttnValues) {
        let (n_heads, n_kv_heads, head_dim, max_ctx) =
            (self.n_heads, self.n_kv_heads, self.head_dim, self.max_ctx);
        (
            AttnScores {
                n_heads,
                n_kv_heads,
                head_dim,
                max_ctx,
            },
            Softmax {
                rows: n_heads,
                row_stride: max_ctx,
            },
            AttnValues {
                n_heads,
                n_kv_heads,
                head_dim,
                max_ctx,
            },
        )
    }

    /// The oracle: the three unfused ops in sequence.
    pub fn cpu(&self, n_ctx: u32, q: &[f32], k_cache: &[f32], v_cache: &[f32], out: &mut [f32]) {
        let (scores_op, softmax, values) = self.parts();
        let mut scores = vec![0f32; (self.n_heads * self.max_ctx) as usize];
        scores_op.cpu(n_ctx, q, k_cache, &mut scores);
        softmax.cpu(n_ctx, &mut scores);
        values.cpu(n_ctx, &scores, v_cache, out);
    }

    /// At `n_ctx` rows: q, the K and V rows of every kv head, and the output, each once;
    /// a multiply-add per element of each dot product and of the weighted sum.
    pub fn cost_at(&self, n_ctx: u32) -> Cost {
        let (h, kv, hd, n) = (
            self.n_heads as u64,
            self.n_kv_heads as u64,
            self.head_dim as u64,
            n_ctx as u64,
        );
        Cost {
            bytes: 4 + 4 * (h * hd + 2 * n * kv * hd + h * hd),
            flops: 4 * h * n * hd,
        }
    }

    /// `cost_at(1)`: the decoder replaces it per token (see the module docs of attention).
    pub fn cost(&self) -> Cost {
        self.cost_at(1)
    }

    pub fn dispatch(
        &self,
        gpu: &Gpu,
        step: &GpuBuffer,
        q: &GpuBuffer,
        k_cache: &GpuBuffer,
        v_cache: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        let invalid = |what: String| GpuError::Invalid(format!("{self:?}: {what}"));
        if self.n_kv_heads == 0 || self.n_heads % self.n_kv_heads != 0 {
            return Err(invalid("n_heads must be a multiple of n_kv_heads".into()));
        }
        if self.head_dim == 0
            || self.head_dim > WG
            || WG % self.head_dim != 0
            || self.head_dim % 4 != 0
        {
            return Err(invalid(format!(
                "head_dim must divide {WG} and be a multiple of 4"
            )));
        }
        let q_bytes = 4 * (self.n_heads * self.head_dim) as u64;
        let cache_bytes = 4 * (self.n_kv_heads * self.head_dim) as u64 * self.max_ctx as u64;
        for (buf, bytes, role) in [
            (step, 16, "step"),
            (q, q_bytes, "q"),
            (k_cache, cache_bytes, "k_cache"),
            (v_cache, cache_bytes, "v_cache"),
            (out, q_bytes, "out"),
        ] {
            if buf.size() < bytes {
                return Err(invalid(format!(
                    "buffer \"{}\" ({role}) has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )));
            }
        }
        let pipeline = gpu.pipeline(
            &FUSED_SHADER,
            "main",
            &[
                ("N_HEADS", self.n_heads as f64),
                ("N_KV_HEADS", self.n_kv_heads as f64),
                ("HEAD_DIM", self.head_dim as f64),
                ("MAX_CTX", self.max_ctx as f64),
                ("SCALE", 1.0 / (self.head_dim as f64).sqrt()),
            ],
        )?;
        let bind_group = gpu.bind_group(&pipeline, &[step, q, k_cache, v_cache, out])?;
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            [self.n_heads, 1, 1],
            self.cost(),
            &[step, q, k_cache, v_cache],
            &[out],
        ))
    }
}
