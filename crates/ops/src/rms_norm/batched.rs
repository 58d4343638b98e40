//! Batched rms_norm for prompt processing: rows `0..params[1]` of an `max_batch × n`
//! matrix, one workgroup per row; or, with `last_only`, only the last row (into row 0 of
//! `out`), which is all a prefill's head needs.

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::RmsNorm;

pub static BATCHED_SHADER: ShaderSource = ShaderSource {
    name: "rms_norm_batched",
    wgsl: concat!(
        "alias Elem = f32;\nconst PER: u32 = 1u;\nfn sq(v: f32) -> f32 { return v * v; }\n",
        include_str!("batched.wgsl")
    ),
};

/// The same op over rows of a multiple of 4 floats, read and written as vec4s.
pub static BATCHED_VEC4_SHADER: ShaderSource = ShaderSource {
    name: "rms_norm_batched.vec4",
    wgsl: concat!(
        "alias Elem = vec4<f32>;\nconst PER: u32 = 4u;\nfn sq(v: vec4<f32>) -> f32 { return dot(v, v); }\n",
        include_str!("batched.wgsl")
    ),
};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RmsNormBatched {
    pub norm: RmsNorm,
    pub max_batch: u32,
    /// Normalise only row `n_rows - 1`, into row 0 of `out`.
    pub last_only: bool,
}

impl RmsNormBatched {
    fn out_rows(&self) -> u64 {
        if self.last_only {
            1
        } else {
            u64::from(self.max_batch)
        }
    }

    /// Threads per workgroup on `gpu`: 8 on CPU adapters (one SIMD step of lavapipe: a
    /// 256-thread workgroup there is 32 coroutines switched at each of the reduction's 9
    /// barriers), else 256.
    pub fn workgroup_size(gpu: &Gpu) -> u32 {
        if gpu.adapter_info().device_type == gpuscope_runtime::wgpu::DeviceType::Cpu {
            8
        } else {
            256
        }
    }

    pub fn cost(&self) -> Cost {
        let c = self.norm.cost();
        Cost {
            bytes: c.bytes * self.out_rows(),
            flops: c.flops * self.out_rows(),
        }
    }

    pub fn dispatch(
        &self,
        gpu: &Gpu,
        x: &GpuBuffer,
        weight: &GpuBuffer,
        out: &GpuBuffer,
        params: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        let n = u64::from(self.norm.n);
        if n == 0 || self.max_batch == 0 {
            return Err(GpuError::Invalid(format!(
                "{self:?}: n and max_batch must be > 0"
            )));
        }
        for (buf, bytes, role) in [
            (x, 4 * n * u64::from(self.max_batch), "x"),
            (weight, 4 * n, "weight"),
            (out, 4 * n * self.out_rows(), "out"),
            (params, 16, "params"),
        ] {
            if buf.size() < bytes {
                return Err(GpuError::Invalid(format!(
                    "{self:?}: buffer \"{}\" ({role}) has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )));
            }
        }
        let shader = if self.norm.n.is_multiple_of(4) {
            &BATCHED_VEC4_SHADER
        } else {
            &BATCHED_SHADER
        };
        let pipeline = gpu.pipeline(
            shader,
            "main",
            &[
                ("N", f64::from(self.norm.n)),
                ("EPS", f64::from(self.norm.eps)),
                ("LAST_ONLY", if self.last_only { 1.0 } else { 0.0 }),
                ("WG", f64::from(Self::workgroup_size(gpu))),
            ],
        )?;
        let bind_group = gpu.bind_group(&pipeline, &[x, weight, out, params])?;
        let groups = if self.last_only { 1 } else { self.max_batch };
        Ok(Dispatch::new(
            RmsNorm::OP,
            pipeline,
            bind_group,
            [groups, 1, 1],
            self.cost(),
            &[x, weight, params],
            &[out],
        ))
    }

    /// CPU reference over the first `n_rows` rows.
    pub fn cpu<T: crate::Real>(&self, x: &[T], weight: &[T], out: &mut [T], n_rows: u32) {
        let n = self.norm.n as usize;
        let rows = 0..n_rows as usize;
        for b in rows {
            if self.last_only && b + 1 != n_rows as usize {
                continue;
            }
            let ob = if self.last_only { 0 } else { b };
            self.norm.cpu(&x[b * n..], weight, &mut out[ob * n..]);
        }
    }
}
