//! Batched silu_mul for prompt processing: reads gate and up from one buffer of rows
//! `[gate | padding | up]` (the batched gate/up gemv's output, row stride `in_stride`,
//! `up` at `up_offset`), writes `max_batch × n` rows; rows past `params[1]` are skipped.
//!
//! The frame (`batched.wgsl`) takes its activation from the file appended to it, so
//! gelu_mul's batched form ([`crate::gelu_mul::GeluMulBatched`]) is the same frame and
//! the same checks ([`SiluMulBatched::dispatch_with`]) with gelu.

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::SiluMul;

pub static BATCHED_SHADER: ShaderSource = ShaderSource {
    name: "silu_mul_batched",
    wgsl: concat!(include_str!("batched.wgsl"), include_str!("silu.wgsl")),
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiluMulBatched {
    pub n: u32,
    pub max_batch: u32,
    pub in_stride: u32,
    pub up_offset: u32,
}

impl SiluMulBatched {
    pub fn cost(&self) -> Cost {
        SiluMul { n: self.n }
            .cost()
            .times(u64::from(self.max_batch))
    }

    pub fn dispatch(
        &self,
        gpu: &Gpu,
        gate_up: &GpuBuffer,
        out: &GpuBuffer,
        params: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        let op = (SiluMul::OP, &BATCHED_SHADER, self.cost());
        self.dispatch_with(op, gpu, gate_up, out, params)
    }

    /// The frame over this shape with another activation: `(op name, shader, cost)`.
    pub(crate) fn dispatch_with(
        &self,
        (op, shader, cost): (&'static str, &'static ShaderSource, Cost),
        gpu: &Gpu,
        gate_up: &GpuBuffer,
        out: &GpuBuffer,
        params: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        let m = u64::from(self.max_batch);
        if self.n == 0
            || self.max_batch == 0
            || self.up_offset < self.n
            || self.in_stride < self.up_offset + self.n
        {
            return Err(GpuError::Invalid(format!("{self:?}: bad shape")));
        }
        for (buf, bytes, role) in [
            (gate_up, 4 * m * u64::from(self.in_stride), "gate_up"),
            (out, 4 * m * u64::from(self.n), "out"),
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
        let pipeline = gpu.pipeline(
            shader,
            "main",
            &[
                ("N", f64::from(self.n)),
                ("IN_STRIDE", f64::from(self.in_stride)),
                ("UP_OFFSET", f64::from(self.up_offset)),
            ],
        )?;
        let bind_group = gpu.bind_group(&pipeline, &[gate_up, out, params])?;
        let groups = self.n.div_ceil(256);
        if groups > 65535 || self.max_batch > 65535 {
            return Err(GpuError::Invalid(format!("{self:?}: grid too large")));
        }
        Ok(Dispatch::new(
            op,
            pipeline,
            bind_group,
            [groups, self.max_batch, 1],
            cost,
            &[gate_up, params],
            &[out],
        ))
    }

    /// CPU reference over the first `n_rows` rows.
    pub fn cpu<T: crate::Real>(&self, gate_up: &[T], out: &mut [T], n_rows: u32) {
        let op = SiluMul { n: self.n };
        self.cpu_with(gate_up, out, n_rows, |g, u, o| op.cpu(g, u, o));
    }

    /// The CPU frame with `act(gate, up, out)` per row.
    pub(crate) fn cpu_with<T: crate::Real>(
        &self,
        gate_up: &[T],
        out: &mut [T],
        n_rows: u32,
        act: impl Fn(&[T], &[T], &mut [T]),
    ) {
        let (n, s, u) = (
            self.n as usize,
            self.in_stride as usize,
            self.up_offset as usize,
        );
        for b in 0..n_rows as usize {
            let row = &gate_up[b * s..];
            act(&row[..n], &row[u..u + n], &mut out[b * n..]);
        }
    }
}
