//! `gelu_mul`: `out = gelu(gate) · up`, elementwise (the GeGLU of a Gemma FFN), gelu in
//! ggml's tanh approximation (`ggml_gelu`).

mod batched;
mod cost;
mod cpu;
pub(crate) mod exec;

pub use batched::GeluMulBatched;

use gpuscope_runtime::{grid_2d, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

pub static SHADER: ShaderSource = ShaderSource {
    name: "gelu_mul",
    wgsl: concat!(include_str!("kernel.wgsl"), include_str!("gelu.wgsl")),
};

const WG: u32 = 256;

/// `gelu(gate) · up` over `n` floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeluMul {
    pub n: u32,
}

impl GeluMul {
    pub const OP: &'static str = "gelu_mul";

    /// Reads `gate` and `up`, writes `out` (`n` f32 each).
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        gate: &GpuBuffer,
        up: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        if self.n == 0 {
            return Err(GpuError::Invalid(format!("{self:?}: n must be > 0")));
        }
        for (buf, role) in [(gate, "gate"), (up, "up"), (out, "out")] {
            if buf.size() < 4 * self.n as u64 {
                return Err(GpuError::Invalid(format!(
                    "{self:?}: buffer \"{}\" ({role}) has {} bytes, needs {}",
                    buf.label(),
                    buf.size(),
                    4 * self.n as u64
                )));
            }
        }
        let pipeline = gpu.pipeline(&SHADER, "main", &[("N", self.n as f64)])?;
        let bind_group = gpu.bind_group(&pipeline, &[gate, up, out])?;
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            grid_2d(self.n.div_ceil(WG)),
            self.cost(),
            &[gate, up],
            &[out],
        ))
    }
}
