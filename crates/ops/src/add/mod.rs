//! `add`: `acc += x`, in place (the residual stream). In place because one dispatch
//! cannot bind a buffer both read-only and read-write, and it saves a buffer.

mod batched;
mod cost;
mod cpu;
pub(crate) mod exec;

pub use batched::AddBatched;

use gpuscope_runtime::{grid_2d, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

pub static SHADER: ShaderSource = ShaderSource {
    name: "add",
    wgsl: include_str!("kernel.wgsl"),
};

const WG: u32 = 256;

/// `acc += x` over `n` floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Add {
    pub n: u32,
}

impl Add {
    pub const OP: &'static str = "add";

    /// Reads and writes `acc`, reads `x` (`n` f32 each). `acc` and `x` must differ.
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        acc: &GpuBuffer,
        x: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        if self.n == 0 {
            return Err(GpuError::Invalid(format!("{self:?}: n must be > 0")));
        }
        if acc.id() == x.id() {
            return Err(GpuError::Invalid(format!(
                "{self:?}: acc and x are the same buffer \"{}\"; a buffer cannot be bound read-only and read-write in one dispatch",
                acc.label()
            )));
        }
        for (buf, role) in [(acc, "acc"), (x, "x")] {
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
        let bind_group = gpu.bind_group(&pipeline, &[acc, x])?;
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            grid_2d(self.n.div_ceil(WG)),
            self.cost(),
            &[acc, x],
            &[acc],
        ))
    }
}
