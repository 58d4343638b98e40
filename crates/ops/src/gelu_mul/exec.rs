//! CPU execution of `gelu_mul` dispatches (see [`crate::exec`]).

use super::GeluMul;
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
