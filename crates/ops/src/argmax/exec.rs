//! CPU execution of `argmax` dispatches (see [`crate::exec`]).

use super::Argmax;
use crate::exec::{Call, ExecError};
use crate::Real;

/// Bindings: logits, out (`out[0]` = the index).
pub(crate) fn run<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let op = Argmax {
        n: c.u32_const("N")?,
    };
    c.need_words(0, op.n as u64)?;
    let logits = c.floats(0)?;
    c.set_u32(1, 0, op.cpu(&logits))
}
