//! CPU execution of `add` dispatches (see [`crate::exec`]).

use super::Add;
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
