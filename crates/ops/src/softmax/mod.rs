//! `softmax`: in place over the first `n_ctx = step[1]` entries of each of `rows` rows
//! (row `r` starts at `r · row_stride`), numerically stable (`exp(x - max)`). Entries
//! `>= n_ctx` of a row are not touched.
//!
//! In the decoder the rows are attention heads and `row_stride` is `max_ctx`. Like the
//! attention ops, the work grows with `n_ctx`: `dispatch` records `cost_at(1)` and the
//! decoder replaces it with `cost_at(n_ctx)` each token.

mod cost;
mod cpu;
pub(crate) mod exec;

use gpuscope_runtime::{grid_2d, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use crate::need;

pub static SHADER: ShaderSource = ShaderSource {
    name: "softmax",
    wgsl: include_str!("kernel.wgsl"),
};

/// Row-wise softmax over a prefix of each row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Softmax {
    pub rows: u32,
    pub row_stride: u32,
}

impl Softmax {
    pub const OP: &'static str = "softmax";

    /// Binds `step` (`[.., n_ctx, ..]`) and `data` (`rows · row_stride` f32, in place).
    /// One workgroup per row; `n_ctx` is clamped to `row_stride`.
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        step: &GpuBuffer,
        data: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        if self.rows == 0 || self.row_stride == 0 {
            return Err(GpuError::Invalid(format!(
                "{self:?}: rows and row_stride must be > 0"
            )));
        }
        need(step, 16, "step", self)?;
        need(
            data,
            4 * self.rows as u64 * self.row_stride as u64,
            "data",
            self,
        )?;
        let pipeline = gpu.pipeline(
            &SHADER,
            "main",
            &[
                ("ROWS", self.rows as f64),
                ("ROW_STRIDE", self.row_stride as f64),
            ],
        )?;
        let bind_group = gpu.bind_group(&pipeline, &[step, data])?;
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            grid_2d(self.rows),
            self.cost(),
            &[step, data],
            &[data],
        ))
    }
}
