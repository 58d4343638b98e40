//! `argmax`: `out[0]` (u32) = index of the largest of `n` floats (greedy sampling).
//! Ties go to the smallest index; NaN never wins; [`NONE`] when every value is NaN (a
//! visible failure rather than a plausible token 0). `-inf` is a number and can win.
//!
//! One workgroup of 256 threads: each scans a strided slice, then a tree in shared
//! memory. `n` is a vocabulary size (49152 to 128256).

mod cost;
mod cpu;
pub(crate) mod exec;

use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

pub static SHADER: ShaderSource = ShaderSource {
    name: "argmax",
    wgsl: include_str!("kernel.wgsl"),
};

/// What `argmax` returns when no value is a number.
pub const NONE: u32 = u32::MAX;

/// Index of the largest of `n` floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Argmax {
    pub n: u32,
}

impl Argmax {
    pub const OP: &'static str = "argmax";

    /// Reads `logits` (`n` f32), writes `out[0]` (one u32).
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        logits: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        if self.n == 0 || self.n == u32::MAX {
            return Err(GpuError::Invalid(format!(
                "{self:?}: n must be in 1..{}",
                u32::MAX
            )));
        }
        for (buf, role, bytes) in [(logits, "logits", 4 * self.n as u64), (out, "out", 4)] {
            if buf.size() < bytes {
                return Err(GpuError::Invalid(format!(
                    "{self:?}: buffer \"{}\" ({role}) has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )));
            }
        }
        let pipeline = gpu.pipeline(&SHADER, "main", &[("N", self.n as f64)])?;
        let bind_group = gpu.bind_group(&pipeline, &[logits, out])?;
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            [1, 1, 1],
            self.cost(),
            &[logits],
            &[out],
        ))
    }
}
