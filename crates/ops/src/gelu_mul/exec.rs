//! CPU execution of `gelu_mul` and `gelu_mul_batched` dispatches (see [`crate::exec`]).

use super::{GeluMul, GeluMulBatched};
use crate::exec::{Call, ExecError};
use crate::Real;

/// Bindings: gate, up, out.
pub(crate) fn run<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let op = GeluMul {
        n: c.u32_const("N")?,
    };
    for b in 0..3 {
        c.need_words(b, op.n as u64)?;
    }
    let (gate, up) = (c.floats(0)?, c.floats(1)?);
    op.cpu(&gate, &up, c.out(2)?);
    Ok(())
}

pub(crate) fn batched_shaders() -> Vec<&'static str> {
    vec![super::batched::BATCHED_SHADER.name]
}

/// Bindings: gate_up (rows of `[gate | .. | up]`), out, params (`[pos0, n_rows, ..]`).
pub(crate) fn run_batched<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let n_rows = c.u32_at(2, 1)?;
    let op = GeluMulBatched {
        n: c.u32_const("N")?,
        max_batch: n_rows,
        in_stride: c.u32_const("IN_STRIDE")?,
        up_offset: c.u32_const("UP_OFFSET")?,
    };
    c.need_words(0, op.in_stride as u64 * n_rows as u64)?;
    c.need_words(1, op.n as u64 * n_rows as u64)?;
    let gate_up = c.floats(0)?;
    op.cpu(&gate_up, c.out(1)?, n_rows);
    Ok(())
}
