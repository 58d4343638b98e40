//! Batched gelu_mul for prompt processing: silu_mul's batched frame
//! ([`SiluMulBatched`]: rows of `[gate | padding | up]`, rows past `params[1]` skipped)
//! with gelu (`gelu.wgsl`) as its activation.

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::GeluMul;
use crate::silu_mul::SiluMulBatched;

pub static BATCHED_SHADER: ShaderSource = ShaderSource {
    name: "gelu_mul_batched",
    wgsl: concat!(
        include_str!("../silu_mul/batched.wgsl"),
        include_str!("gelu.wgsl")
    ),
};

/// `gelu(gate) · up` over `n` floats of each of up to `max_batch` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeluMulBatched {
    pub n: u32,
    pub max_batch: u32,
    pub in_stride: u32,
    pub up_offset: u32,
}

impl GeluMulBatched {
    fn frame(&self) -> SiluMulBatched {
        SiluMulBatched {
            n: self.n,
            max_batch: self.max_batch,
            in_stride: self.in_stride,
            up_offset: self.up_offset,
        }
    }

    pub fn cost(&self) -> Cost {
        GeluMul { n: self.n }
            .cost()
            .times(u64::from(self.max_batch))
    }

    /// Reads `gate_up` and `params` (`[pos0, n_rows, ..]`), writes `out` (`max_batch × n`).
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        gate_up: &GpuBuffer,
        out: &GpuBuffer,
        params: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        let op = (GeluMul::OP, &BATCHED_SHADER, self.cost());
        self.frame().dispatch_with(op, gpu, gate_up, out, params)
    }

    /// CPU reference over the first `n_rows` rows.
    pub fn cpu<T: crate::Real>(&self, gate_up: &[T], out: &mut [T], n_rows: u32) {
        let op = GeluMul { n: self.n };
        self.frame()
            .cpu_with(gate_up, out, n_rows, |g, u, o| op.cpu(g, u, o));
    }
}
