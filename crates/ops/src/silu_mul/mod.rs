//! `silu_mul`: `out = gate · sigmoid(gate) · up`, elementwise (the SwiGLU of a Llama FFN).

mod batched;
mod cost;
mod cpu;
pub(crate) mod exec;

pub use batched::SiluMulBatched;

use gpuscope_runtime::{grid_2d, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

pub static SHADER: ShaderSource = ShaderSource {
    name: "silu_mul",
    wgsl: include_str!("kernel.wgsl"),
};

const WG: u32 = 256;

/// `silu(gate) · up` over `n` floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiluMul {
    pub n: u32,
}

impl SiluMul {
    pub const OP: &'static str = "silu_mul";

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
