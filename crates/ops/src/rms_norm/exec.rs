//! CPU execution of `rms_norm` and `rms_norm_batched` dispatches (see [`crate::exec`]).

use super::{RmsNorm, RmsNormBatched};
use crate::exec::{Call, ExecError};
use crate::Real;

pub(crate) fn batched_shaders() -> Vec<&'static str> {
    vec![
        super::batched::BATCHED_SHADER.name,
        super::batched::BATCHED_VEC4_SHADER.name,
    ]
}

fn norm<T: Real>(c: &Call<T>) -> Result<RmsNorm, ExecError> {
    Ok(RmsNorm {
        n: c.u32_const("N")?,
        eps: c.f32_const("EPS")?,
    })
}

/// Bindings: x, weight, out (written, or added to with ADD).
pub(crate) fn run<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let op = norm(c)?;
    for b in 0..3 {
        c.need_words(b, op.n as u64)?;
    }
    // Captures made before the post-norm form existed have no ADD constant.
    let add = c.u32_const_or("ADD", 0)? != 0;
    let (x, w) = (c.floats(0)?, c.floats(1)?);
    if add {
        op.cpu_add(&x, &w, c.out(2)?);
    } else {
        op.cpu(&x, &w, c.out(2)?);
    }
    Ok(())
}

/// Bindings: x, weight, out, params (`[pos0, n_rows, ..]`).
pub(crate) fn run_batched<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let norm = norm(c)?;
    let last_only = c.flag_const("LAST_ONLY")?;
    let n_rows = c.u32_at(3, 1)?;
    let n = norm.n as u64;
    c.need_words(0, n * n_rows as u64)?;
    c.need_words(1, n)?;
    c.need_words(2, if last_only { n } else { n * n_rows as u64 })?;
    let op = RmsNormBatched {
        norm,
        max_batch: n_rows,
        last_only,
    };
    let (x, w) = (c.floats(0)?, c.floats(1)?);
    op.cpu(&x, &w, c.out(2)?, n_rows);
    Ok(())
}
