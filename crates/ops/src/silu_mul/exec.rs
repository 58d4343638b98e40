//! CPU execution of `silu_mul` and `silu_mul_batched` dispatches (see [`crate::exec`]).

use super::{SiluMul, SiluMulBatched};
use crate::exec::{Call, ExecError};
use crate::Real;

pub(crate) fn batched_shaders() -> Vec<&'static str> {
    vec![super::batched::BATCHED_SHADER.name]
}

/// Bindings: gate, up, out.
pub(crate) fn run<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let op = SiluMul {
        n: c.u32_const("N")?,
    };
    for b in 0..3 {
        c.need_words(b, op.n as u64)?;
    }
    let (gate, up) = (c.floats(0)?, c.floats(1)?);
    op.cpu(&gate, &up, c.out(2)?);
    Ok(())
}

/// Bindings: gate_up (rows of `[gate | .. | up]`), out, params (`[pos0, n_rows, ..]`).
pub(crate) fn run_batched<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let (op, gate_up) = batched_frame(c)?;
    op.cpu(&gate_up, c.out(1)?, op.max_batch);
    Ok(())
}

/// The batched frame's shape for the call's rows (`max_batch` = the rows to run), its
/// buffers checked, and the gate/up rows (gelu_mul's batched form shares the frame).
pub(crate) fn batched_frame<T: Real>(c: &Call<T>) -> Result<(SiluMulBatched, Vec<T>), ExecError> {
    let n_rows = c.u32_at(2, 1)?;
    let op = SiluMulBatched {
        n: c.u32_const("N")?,
        max_batch: n_rows,
        in_stride: c.u32_const("IN_STRIDE")?,
        up_offset: c.u32_const("UP_OFFSET")?,
    };
    c.need_words(0, op.in_stride as u64 * n_rows as u64)?;
    c.need_words(1, op.n as u64 * n_rows as u64)?;
    Ok((op, c.floats(0)?))
}
