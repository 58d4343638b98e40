//! Batched head norms for prompt processing: [`HeadNorm`] over each row `b < params[1]`
//! of a `max_batch × row_stride` q/k/v matrix (the batched q/k/v gemv's output).
//!
//! The kernel is `kernel.wgsl` with three edits made when the shader is first built (so
//! the norm's code exists once): a params binding, the grid's y as the row, and the row's
//! offset added to each head's.

use std::sync::OnceLock;

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::HeadNorm;

/// The batched shader, derived once from `kernel.wgsl`.
pub fn batched_shader() -> &'static ShaderSource {
    static SHADER: OnceLock<ShaderSource> = OnceLock::new();
    SHADER.get_or_init(|| {
        let mut s = super::SHADER.wgsl.to_string();
        for (from, to) in [
            (
                "override EPS: f32 = 1e-6;",
                "override EPS: f32 = 1e-6;\n// f32 elements per row of qkv.\noverride ROW_STRIDE: u32 = 0u;",
            ),
            (
                "@group(0) @binding(2) var<storage, read> k_weight: array<f32>;",
                "@group(0) @binding(2) var<storage, read> k_weight: array<f32>;\n@group(0) @binding(3) var<storage, read> params: array<u32, 4>;",
            ),
            (
                "    let h = wg.x;\n",
                "    let h = wg.x;\n    let b = wg.y;\n    // Workgroup-uniform: rows past the batch return before any barrier.\n    if b >= params[1] {\n        return;\n    }\n",
            ),
            ("    let base = select(", "    let base = b * ROW_STRIDE + select("),
        ] {
            assert_eq!(
                s.matches(from).count(),
                1,
                "head_norm batched: `{from}` not found once in kernel.wgsl"
            );
            s = s.replacen(from, to, 1);
        }
        ShaderSource {
            name: "head_norm_batched",
            wgsl: Box::leak(s.into_boxed_str()),
        }
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadNormBatched {
    /// One row's heads (offsets within the row).
    pub norm: HeadNorm,
    pub max_batch: u32,
    /// f32 elements per row of qkv (at least [`HeadNorm::extent`]).
    pub row_stride: u32,
}

impl HeadNormBatched {
    pub fn cost(&self) -> Cost {
        self.norm.cost().times(u64::from(self.max_batch))
    }

    /// Normalizes the heads of rows `0..params[1]` of `qkv` in place with `q_weight` and
    /// `k_weight` (`head_dim` f32 each).
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        qkv: &GpuBuffer,
        q_weight: &GpuBuffer,
        k_weight: &GpuBuffer,
        params: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        let n = &self.norm;
        n.check()?;
        let invalid = |what: String| GpuError::Invalid(format!("{self:?}: {what}"));
        if self.max_batch == 0 || self.max_batch > 65535 {
            return Err(invalid("max_batch must be 1 to 65535".into()));
        }
        if u64::from(self.row_stride) < n.extent() {
            return Err(invalid("row_stride is shorter than a row's heads".into()));
        }
        let hd = 4 * u64::from(n.head_dim);
        for (buf, bytes, role) in [
            (
                qkv,
                4 * u64::from(self.row_stride) * u64::from(self.max_batch),
                "qkv",
            ),
            (q_weight, hd, "q_weight"),
            (k_weight, hd, "k_weight"),
            (params, 16, "params"),
        ] {
            if buf.size() < bytes {
                return Err(invalid(format!(
                    "buffer \"{}\" ({role}) has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )));
            }
        }
        let mut constants = n.constants().to_vec();
        constants.push(("ROW_STRIDE", f64::from(self.row_stride)));
        let pipeline = gpu.pipeline(batched_shader(), "main", &constants)?;
        let bind_group = gpu.bind_group(&pipeline, &[qkv, q_weight, k_weight, params])?;
        Ok(Dispatch::new(
            HeadNorm::OP,
            pipeline,
            bind_group,
            [n.n_heads + n.n_kv_heads, self.max_batch, 1],
            self.cost(),
            &[qkv, q_weight, k_weight, params],
            &[qkv],
        ))
    }

    /// CPU reference over the first `n_rows` rows.
    pub fn cpu<T: crate::Real>(&self, qkv: &mut [T], q_weight: &[T], k_weight: &[T], n_rows: u32) {
        for b in 0..n_rows as usize {
            let row = &mut qkv[b * self.row_stride as usize..];
            self.norm.cpu(row, q_weight, k_weight);
        }
    }
}
