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

/// Bindings: logits, partial values, partial indices (the split form's first dispatch).
pub(crate) fn run_partial<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let op = Argmax {
        n: c.u32_const("N")?,
    };
    c.need_words(0, op.n as u64)?;
    let g = op.partials() as usize;
    c.need_words(1, g as u64)?;
    c.need_words(2, g as u64)?;
    let (values, indices) = op.cpu_partials(&c.floats(0)?);
    c.out(1)?[..g].copy_from_slice(&values);
    for (k, i) in indices.into_iter().enumerate() {
        c.set_u32(2, k, i)?;
    }
    Ok(())
}

/// Bindings: partial values, partial indices, out (the split form's merge).
pub(crate) fn run_merge<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let g = c.u32_const("G")? as usize;
    c.need_words(0, g as u64)?;
    let values = c.floats(0)?;
    let indices = c.u32s(1, g)?;
    c.set_u32(2, 0, Argmax::cpu_merge(&values[..g], &indices))
}
