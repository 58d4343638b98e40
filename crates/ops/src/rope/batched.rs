//! Batched rope + KV-cache append for prompt processing: row `b < params[1]` of the
//! `max_batch × qkv_stride` q/k/v matrix is at position `params[0] + b`; q is rotated in
//! place, rotated k and v go to cache row `params[0] + b` (with `ring`, row
//! `(params[0] + b) % max_ctx`). A copy of `kernel.wgsl`'s math (`batched.wgsl`), since
//! the single-token kernel reads its position from the step buffer.
//!
//! A ring's rows are written as they come: a batch that wraps around the ring overwrites
//! positions its own earlier rows still attend to, so batched attention over a ring is
//! right only for batches within the ring's first pass (the prefill graph's windowed
//! layers keep to that).

use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::Rope;

pub static BATCHED_SHADER: ShaderSource = ShaderSource {
    name: "rope_qkv_batched",
    wgsl: concat!(
        include_str!("batched_constants.wgsl"),
        include_str!("batched.wgsl"),
        include_str!("angle.wgsl"),
        include_str!("pair.wgsl")
    ),
};

/// The same op over vec4s (two neighbouring pairs a thread), where
/// [`RopeBatched::takes_vec4`].
pub static BATCHED_VEC4_SHADER: ShaderSource = ShaderSource {
    name: "rope_qkv_batched.vec4",
    wgsl: concat!(
        include_str!("batched_constants.wgsl"),
        include_str!("batched_vec4.wgsl"),
        include_str!("angle.wgsl")
    ),
};

const WG: u32 = 256;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RopeBatched {
    pub rope: Rope,
    pub max_batch: u32,
    /// f32 elements per row of qkv.
    pub qkv_stride: u32,
    /// Element offsets of q, k and v within a row.
    pub offsets: (u32, u32, u32),
    /// Copies of qkv (`max_batch × qkv_stride` floats each) whose sum is q/k/v: the parts
    /// of a gemm that summed K in parts (`GemmOut::Parts`); 1 for one matrix. The rotated
    /// q sum is written to the first.
    pub qkv_parts: u32,
}

impl RopeBatched {
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        params: &GpuBuffer,
        qkv: &GpuBuffer,
        k_cache: &GpuBuffer,
        v_cache: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        let r = &self.rope;
        let invalid = |what: String| GpuError::Invalid(format!("{self:?}: {what}"));
        if !r.head_dim.is_multiple_of(2)
            || r.rope_dims > r.head_dim
            || !r.rope_dims.is_multiple_of(2)
            || self.max_batch == 0
            || self.max_batch > 65535
            || self.qkv_parts == 0
        {
            return Err(invalid("bad shape".into()));
        }
        let m = u64::from(self.max_batch);
        let cache_bytes = 4 * r.kv_row() * u64::from(r.max_ctx);
        for (buf, bytes, role) in [
            (params, 16, "params"),
            (
                qkv,
                4 * u64::from(self.qkv_parts) * m * u64::from(self.qkv_stride),
                "qkv",
            ),
            (k_cache, cache_bytes, "k_cache"),
            (v_cache, cache_bytes, "v_cache"),
        ] {
            if buf.size() < bytes {
                return Err(invalid(format!(
                    "buffer \"{}\" ({role}) has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )));
            }
        }
        let mut constants = r.constants_at(self.offsets);
        constants.push(("QKV_STRIDE", f64::from(self.qkv_stride)));
        if self.qkv_parts > 1 {
            constants.push(("PARTS", f64::from(self.qkv_parts)));
            constants.push(("PART_STRIDE", f64::from(self.part_stride())));
        }
        let (shader, per_thread) = if self.takes_vec4() {
            (&BATCHED_VEC4_SHADER, 4)
        } else {
            (&BATCHED_SHADER, 2)
        };
        let pipeline = gpu.pipeline(shader, "main", &constants)?;
        let bind_group = gpu.bind_group(&pipeline, &[params, qkv, k_cache, v_cache])?;
        let threads = (r.n_heads + 2 * r.n_kv_heads) * (r.head_dim / per_thread);
        let cost = r.cost().times(m);
        Ok(Dispatch::new(
            Rope::OP,
            pipeline,
            bind_group,
            [threads.div_ceil(WG), self.max_batch, 1],
            cost,
            &[params, qkv],
            &[qkv, k_cache, v_cache],
        ))
    }

    /// Whether `batched_vec4.wgsl` runs this op: GGUF "normal" pairs (side by side) and
    /// heads, rotated spans, q/k/v offsets and the row stride all multiples of 4 floats
    /// (every Llama-style model's; NeoX's pairs lie apart and keep `batched.wgsl`).
    pub fn takes_vec4(&self) -> bool {
        let (q, k, v) = self.offsets;
        !self.rope.neox
            && [
                self.rope.head_dim,
                self.rope.rope_dims,
                q,
                k,
                v,
                self.qkv_stride,
            ]
            .iter()
            .all(|n| n.is_multiple_of(4))
    }

    /// Floats between two parts of qkv.
    pub fn part_stride(&self) -> u32 {
        self.max_batch * self.qkv_stride
    }

    /// CPU reference over the first `n_rows` rows starting at position `pos0`.
    pub fn cpu<T: crate::Real>(
        &self,
        pos0: u32,
        n_rows: u32,
        qkv: &mut [T],
        k_cache: &mut [T],
        v_cache: &mut [T],
    ) {
        let r = &self.rope;
        let (q, k, v) = self.offsets;
        let (qn, kvn) = ((r.n_heads * r.head_dim) as usize, r.kv_row() as usize);
        let part = self.part_stride() as usize;
        // The parts summed in the kernel's order.
        let summed = |qkv: &[T], at: usize, len: usize| -> Vec<T> {
            (at..at + len)
                .map(|i| (1..self.qkv_parts as usize).fold(qkv[i], |s, p| s + qkv[i + p * part]))
                .collect()
        };
        for b in 0..n_rows as usize {
            let at = b * self.qkv_stride as usize;
            let mut qq = summed(qkv, at + q as usize, qn);
            let kk = summed(qkv, at + k as usize, kvn);
            let vv = summed(qkv, at + v as usize, kvn);
            r.cpu(pos0 + b as u32, &mut qq, &kk, &vv, k_cache, v_cache);
            qkv[at + q as usize..][..qn].copy_from_slice(&qq);
        }
    }
}
