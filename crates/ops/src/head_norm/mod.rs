//! `head_norm`: an RMS norm over each query head and each key head, in place in the
//! q/k/v buffer, before rope (Qwen3's and Gemma 3's `attn_q_norm` / `attn_k_norm`):
//! `x / sqrt(mean(x²) + eps) * w` over `head_dim` floats, the q weight for the `n_heads`
//! heads at `q_off`, the k weight for the `n_kv_heads` heads at `k_off`.
//!
//! One 64-thread workgroup per head, each thread holding up to 8 elements (so
//! `head_dim <= 512`).

mod batched;
mod cost;
mod cpu;
pub(crate) mod exec;

pub use batched::{batched_shader, HeadNormBatched};

use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

pub static SHADER: ShaderSource = ShaderSource {
    name: "head_norm",
    wgsl: concat!(include_str!("kernel.wgsl"), include_str!("head.wgsl")),
};

/// The largest head the kernel normalizes (64 threads × 8 elements).
pub const MAX_HEAD_DIM: u32 = 512;

/// RMS norms of every q and k head, in place.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadNorm {
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    /// Element offsets of q and k in the buffer.
    pub q_off: u32,
    pub k_off: u32,
    pub eps: f32,
}

impl HeadNorm {
    pub const OP: &'static str = "head_norm";

    /// The kernel's override constants.
    fn constants(&self) -> [(&'static str, f64); 6] {
        [
            ("N_HEADS", f64::from(self.n_heads)),
            ("N_KV_HEADS", f64::from(self.n_kv_heads)),
            ("HEAD_DIM", f64::from(self.head_dim)),
            ("Q_OFF", f64::from(self.q_off)),
            ("K_OFF", f64::from(self.k_off)),
            ("EPS", f64::from(self.eps)),
        ]
    }

    fn check(&self) -> Result<(), GpuError> {
        if self.n_heads == 0
            || self.n_kv_heads == 0
            || self.head_dim == 0
            || self.head_dim > MAX_HEAD_DIM
        {
            return Err(GpuError::Invalid(format!(
                "{self:?}: needs heads > 0 and 0 < head_dim <= {MAX_HEAD_DIM}"
            )));
        }
        Ok(())
    }

    /// Elements of the buffer the op reads and writes: up to the end of the k heads.
    pub fn extent(&self) -> u64 {
        let q_end = u64::from(self.q_off) + u64::from(self.n_heads) * u64::from(self.head_dim);
        let k_end = u64::from(self.k_off) + u64::from(self.n_kv_heads) * u64::from(self.head_dim);
        q_end.max(k_end)
    }

    /// Normalizes the heads of `qkv` in place with `q_weight` and `k_weight` (`head_dim`
    /// f32 each).
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        qkv: &GpuBuffer,
        q_weight: &GpuBuffer,
        k_weight: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        self.check()?;
        for (buf, bytes, role) in [
            (qkv, 4 * self.extent(), "qkv"),
            (q_weight, 4 * u64::from(self.head_dim), "q_weight"),
            (k_weight, 4 * u64::from(self.head_dim), "k_weight"),
        ] {
            if buf.size() < bytes {
                return Err(GpuError::Invalid(format!(
                    "{self:?}: buffer \"{}\" ({role}) has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )));
            }
        }
        let pipeline = gpu.pipeline(&SHADER, "main", &self.constants())?;
        let bind_group = gpu.bind_group(&pipeline, &[qkv, q_weight, k_weight])?;
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            [self.n_heads + self.n_kv_heads, 1, 1],
            self.cost(),
            &[qkv, q_weight, k_weight],
            &[qkv],
        ))
    }
}
