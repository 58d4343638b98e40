//! CPU execution of `add` and `add_batched` dispatches (see [`crate::exec`]).

use super::{Add, AddBatched};
use crate::exec::{Call, ExecError};
use crate::Real;

/// Bindings: acc (read-write), x.
pub(crate) fn run<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let op = Add {
        n: c.u32_const("N")?,
    };
    c.need_words(0, op.n as u64)?;
    c.need_words(1, op.n as u64)?;
    let x = c.floats(1)?;
    op.cpu(c.out(0)?, &x);
    Ok(())
}

pub(crate) fn batched_shaders() -> Vec<&'static str> {
    vec![super::batched::BATCHED_SHADER.name]
}

/// Bindings: acc (rows `ACC_STRIDE` apart, read-write), x (rows `X_STRIDE` apart, or one
/// row with 0), params (`[pos0, n_rows, ..]`).
pub(crate) fn run_batched<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let n_rows = c.u32_at(2, 1)?;
    let op = AddBatched {
        n: c.u32_const("N")?,
        max_batch: n_rows,
        acc_stride: c.u32_const("ACC_STRIDE")?,
        x_stride: c.u32_const("X_STRIDE")?,
    };
    c.need_words(0, u64::from(op.acc_stride) * u64::from(n_rows))?;
    c.need_words(1, op.x_len(n_rows))?;
    let x = c.floats(1)?;
    op.cpu(c.out(0)?, &x, n_rows);
    Ok(())
}
