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

/// Bindings: gate_up (rows of `[gate | .. | up]`), out, params (`[pos0, n_rows, ..]`):
/// silu_mul's batched frame.
pub(crate) fn run_batched<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let (frame, gate_up) = crate::silu_mul::exec::batched_frame(c)?;
    let op = GeluMulBatched {
        n: frame.n,
        max_batch: frame.max_batch,
        in_stride: frame.in_stride,
        up_offset: frame.up_offset,
    };
    op.cpu(&gate_up, c.out(1)?, op.max_batch);
    Ok(())
}
