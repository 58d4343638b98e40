//! `rms_norm`: `out = x / sqrt(mean(x²) + eps) * weight` over one vector of `n` floats.
//!
//! [`RmsNorm::dispatch_add`] adds the result to `out` instead (`rms_norm+add`: Gemma 3's
//! post norms, `x += rms_norm(W·h)·w`, in one dispatch where a norm and an `add` took two).
//!
//! One workgroup of 256 threads with a shared-memory reduction: `n` is a hidden size (576
//! to 8192), too small to be worth splitting over workgroups.

mod batched;
mod cost;
mod cpu;
pub(crate) mod exec;

pub use batched::RmsNormBatched;

use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use crate::need;

pub static SHADER: ShaderSource = ShaderSource {
    name: "rms_norm",
    wgsl: include_str!("kernel.wgsl"),
};

/// RMS normalisation of one `n`-vector, then an elementwise scale by `weight`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RmsNorm {
    pub n: u32,
    pub eps: f32,
}

impl RmsNorm {
    pub const OP: &'static str = "rms_norm";

    /// The op name of [`Self::dispatch_add`]'s dispatches.
    pub const OP_ADD: &'static str = "rms_norm+add";

    /// Reads `x` and `weight` (`n` f32 each), writes `out` (`n` f32).
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        x: &GpuBuffer,
        weight: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        self.dispatch_into(gpu, x, weight, out, false)
    }

    /// `out += rms_norm(x) · weight` (`n` f32 each).
    pub fn dispatch_add(
        &self,
        gpu: &Gpu,
        x: &GpuBuffer,
        weight: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        self.dispatch_into(gpu, x, weight, out, true)
    }

    fn dispatch_into(
        &self,
        gpu: &Gpu,
        x: &GpuBuffer,
        weight: &GpuBuffer,
        out: &GpuBuffer,
        add: bool,
    ) -> Result<Dispatch, GpuError> {
        if self.n == 0 {
            return Err(GpuError::Invalid(format!("{self:?}: n must be > 0")));
        }
        let bytes = 4 * self.n as u64;
        for (buf, role) in [(x, "x"), (weight, "weight"), (out, "out")] {
            need(buf, bytes, role, self)?;
        }
        let pipeline = gpu.pipeline(
            &SHADER,
            "main",
            &[
                ("N", self.n as f64),
                ("EPS", self.eps as f64),
                ("ADD", f64::from(u8::from(add))),
            ],
        )?;
        let bind_group = gpu.bind_group(&pipeline, &[x, weight, out])?;
        let (op, cost, reads): (_, _, &[&GpuBuffer]) = if add {
            (Self::OP_ADD, self.cost_add(), &[x, weight, out])
        } else {
            (Self::OP, self.cost(), &[x, weight])
        };
        Ok(Dispatch::new(
            op,
            pipeline,
            bind_group,
            [1, 1, 1],
            cost,
            reads,
            &[out],
        ))
    }
}
