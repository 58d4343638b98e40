//! CPU execution of `softmax` dispatches (see [`crate::exec`]).

use super::Softmax;
use crate::exec::{Call, ExecError};
use crate::Real;

/// Bindings: step (`[.., n_ctx, ..]`), data (in place).
pub(crate) fn run<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let op = Softmax {
        rows: c.u32_const("ROWS")?,
        row_stride: c.u32_const("ROW_STRIDE")?,
    };
    let n_ctx = c.u32_at(0, 1)?;
    c.need_words(1, op.rows as u64 * op.row_stride as u64)?;
    op.cpu(n_ctx, c.out(1)?);
    Ok(())
}
