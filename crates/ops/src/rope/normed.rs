//! `head_norm+rope`: the q and k head norms, rope and the KV-cache append in one
//! dispatch ([`RopeNormed`]): what [`HeadNorm`] then [`Rope::dispatch_qkv`] do in two, for
//! the architectures whose q/k norms come between the q/k/v gemv and rope (Qwen3,
//! Gemma 3), where rope cannot go into the gemv's epilogue.

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::Rope;
use crate::head_norm::{HeadNorm, MAX_HEAD_DIM};
use crate::Real;

pub static NORMED_SHADER: ShaderSource = ShaderSource {
    name: "head_norm+rope",
    wgsl: concat!(
        include_str!("normed.wgsl"),
        include_str!("angle.wgsl"),
        include_str!("pair.wgsl")
    ),
};

/// Head norms (eps `eps`, the q weight on q heads, the k weight on k heads), then `rope`,
/// over q, k and v at element offsets of one buffer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RopeNormed {
    pub rope: Rope,
    pub eps: f32,
    /// Element offsets of q, k and v in the buffer.
    pub offsets: (u32, u32, u32),
}

impl RopeNormed {
    pub const OP: &'static str = "head_norm+rope";

    /// The head norms' part.
    pub fn norm(&self) -> HeadNorm {
        HeadNorm {
            n_heads: self.rope.n_heads,
            n_kv_heads: self.rope.n_kv_heads,
            head_dim: self.rope.head_dim,
            q_off: self.offsets.0,
            k_off: self.offsets.1,
            eps: self.eps,
        }
    }

    /// Elements of the buffer the op reads: to the end of q, k or v.
    pub fn extent(&self) -> u64 {
        let (q, k, v) = self.offsets;
        let (qn, kvn) = (
            u64::from(self.rope.n_heads * self.rope.head_dim),
            self.rope.kv_row(),
        );
        (u64::from(q) + qn)
            .max(u64::from(k) + kvn)
            .max(u64::from(v) + kvn)
    }

    /// Binds `step` (`[pos, ..]`), `qkv` (q and k normed and q rotated in place; k and v
    /// read), `k_cache` and `v_cache` (row `pos`, or `pos % max_ctx` with a ring, written),
    /// `q_weight` and `k_weight` (`head_dim` f32 each).
    #[allow(clippy::too_many_arguments)] // one per buffer the kernel binds
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        step: &GpuBuffer,
        qkv: &GpuBuffer,
        k_cache: &GpuBuffer,
        v_cache: &GpuBuffer,
        q_weight: &GpuBuffer,
        k_weight: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        let r = &self.rope;
        r.check()?;
        if r.head_dim > MAX_HEAD_DIM {
            return Err(GpuError::Invalid(format!(
                "{self:?}: head_dim {} is over {MAX_HEAD_DIM}",
                r.head_dim
            )));
        }
        let cache_bytes = 4 * r.kv_row() * u64::from(r.max_ctx);
        let hd_bytes = 4 * u64::from(r.head_dim);
        for (buf, bytes, role) in [
            (step, 16, "step"),
            (qkv, 4 * self.extent(), "qkv"),
            (k_cache, cache_bytes, "k_cache"),
            (v_cache, cache_bytes, "v_cache"),
            (q_weight, hd_bytes, "q_weight"),
            (k_weight, hd_bytes, "k_weight"),
        ] {
            crate::need(buf, bytes, role, r)?;
        }
        let mut constants = r.constants_at(self.offsets);
        constants.push(("EPS", f64::from(self.eps)));
        let pipeline = gpu.pipeline(&NORMED_SHADER, "main", &constants)?;
        let bind_group = gpu.bind_group(
            &pipeline,
            &[step, qkv, k_cache, v_cache, q_weight, k_weight],
        )?;
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            // One workgroup per q, k and v head.
            [r.n_heads + 2 * r.n_kv_heads, 1, 1],
            self.cost(),
            &[step, qkv, q_weight, k_weight],
            &[qkv, k_cache, v_cache],
        ))
    }

    /// The head norms' and rope's costs: the same bytes and FLOPs, less the q and k
    /// written by the norm and read again by rope.
    pub fn cost(&self) -> Cost {
        let (norm, rope) = (self.norm().cost(), self.rope.cost());
        let between = 2
            * 4
            * u64::from(self.rope.n_heads + self.rope.n_kv_heads)
            * u64::from(self.rope.head_dim);
        Cost {
            bytes: (norm.bytes + rope.bytes).saturating_sub(between),
            flops: norm.flops + rope.flops,
        }
    }

    /// [`HeadNorm::cpu`] then [`Rope::cpu`] on q, k and v of `qkv`. Panics if
    /// `pos >= max_ctx` without a ring (as rope does).
    pub fn cpu<T: Real>(
        &self,
        pos: u32,
        qkv: &mut [T],
        q_weight: &[T],
        k_weight: &[T],
        k_cache: &mut [T],
        v_cache: &mut [T],
    ) {
        self.norm().cpu(qkv, q_weight, k_weight);
        let (q_off, k_off, v_off) = (
            self.offsets.0 as usize,
            self.offsets.1 as usize,
            self.offsets.2 as usize,
        );
        let qn = (self.rope.n_heads * self.rope.head_dim) as usize;
        let kvn = self.rope.kv_row() as usize;
        let (k, v) = (qkv[k_off..][..kvn].to_vec(), qkv[v_off..][..kvn].to_vec());
        self.rope
            .cpu(pos, &mut qkv[q_off..][..qn], &k, &v, k_cache, v_cache);
    }
}
