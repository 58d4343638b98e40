//! Batched `add` for prompt processing: for rows `b < params[1]`,
//! `acc[b·acc_stride + i] += x[b·x_stride + i]` over `n` floats. With `x_stride` 0 every
//! row gets the same `x`: a bias (Qwen2's q/k/v) added to a batch of rows.

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::Add;

pub static BATCHED_SHADER: ShaderSource = ShaderSource {
    name: "add_batched",
    wgsl: include_str!("batched.wgsl"),
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddBatched {
    pub n: u32,
    pub max_batch: u32,
    /// f32 elements per row of `acc` (at least `n`).
    pub acc_stride: u32,
    /// f32 elements per row of `x`: `n` or more, or 0 for one row added to every row.
    pub x_stride: u32,
}

impl AddBatched {
    pub fn cost(&self) -> Cost {
        Add { n: self.n }.cost().times(u64::from(self.max_batch))
    }

    /// Elements of `x` the op reads for `rows` rows.
    pub(crate) fn x_len(&self, rows: u32) -> u64 {
        if self.x_stride == 0 {
            u64::from(self.n)
        } else {
            u64::from(self.x_stride) * u64::from(rows)
        }
    }

    /// Reads and writes `acc`, reads `x` and `params` (`[pos0, n_rows, ..]`).
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        acc: &GpuBuffer,
        x: &GpuBuffer,
        params: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        let invalid = |what: String| GpuError::Invalid(format!("{self:?}: {what}"));
        if self.n == 0
            || self.max_batch == 0
            || self.acc_stride < self.n
            || (self.x_stride != 0 && self.x_stride < self.n)
        {
            return Err(invalid("bad shape".into()));
        }
        if acc.id() == x.id() {
            return Err(invalid(format!(
                "acc and x are the same buffer \"{}\"",
                acc.label()
            )));
        }
        let m = u64::from(self.max_batch);
        for (buf, bytes, role) in [
            (acc, 4 * m * u64::from(self.acc_stride), "acc"),
            (x, 4 * self.x_len(self.max_batch), "x"),
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
        let groups = self.n.div_ceil(256);
        if groups > 65535 || self.max_batch > 65535 {
            return Err(invalid("grid too large".into()));
        }
        let pipeline = gpu.pipeline(
            &BATCHED_SHADER,
            "main",
            &[
                ("N", f64::from(self.n)),
                ("ACC_STRIDE", f64::from(self.acc_stride)),
                ("X_STRIDE", f64::from(self.x_stride)),
            ],
        )?;
        let bind_group = gpu.bind_group(&pipeline, &[acc, x, params])?;
        Ok(Dispatch::new(
            Add::OP,
            pipeline,
            bind_group,
            [groups, self.max_batch, 1],
            self.cost(),
            &[acc, x, params],
            &[acc],
        ))
    }

    /// CPU reference over the first `n_rows` rows.
    pub fn cpu<T: crate::Real>(&self, acc: &mut [T], x: &[T], n_rows: u32) {
        let op = Add { n: self.n };
        for b in 0..n_rows as usize {
            let xs = &x[b * self.x_stride as usize..];
            op.cpu(&mut acc[b * self.acc_stride as usize..], xs);
        }
    }
}
