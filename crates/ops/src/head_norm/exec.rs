//! CPU execution of `head_norm` and `head_norm_batched` dispatches (see [`crate::exec`]).

use super::{HeadNorm, HeadNormBatched};
use crate::exec::{Call, ExecError};
use crate::Real;

/// Bindings: qkv (in place), q_weight, k_weight.
pub(crate) fn run<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let op = head_norm(c)?;
    c.need_words(0, op.extent())?;
    c.need_words(1, u64::from(op.head_dim))?;
    c.need_words(2, u64::from(op.head_dim))?;
    let (qw, kw) = (c.floats(1)?, c.floats(2)?);
    op.cpu(c.out(0)?, &qw, &kw);
    Ok(())
}

fn head_norm<T: Real>(c: &Call<T>) -> Result<HeadNorm, ExecError> {
    Ok(HeadNorm {
        n_heads: c.u32_const("N_HEADS")?,
        n_kv_heads: c.u32_const("N_KV_HEADS")?,
        head_dim: c.u32_const("HEAD_DIM")?,
        q_off: c.u32_const("Q_OFF")?,
        k_off: c.u32_const("K_OFF")?,
        eps: c.f32_const("EPS")?,
    })
}

pub(crate) fn batched_shaders() -> Vec<&'static str> {
    vec![super::batched_shader().name]
}

/// Bindings: qkv (rows `ROW_STRIDE` apart, in place), q_weight, k_weight, params
/// (`[pos0, n_rows, ..]`).
pub(crate) fn run_batched<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let n_rows = c.u32_at(3, 1)?;
    let op = HeadNormBatched {
        norm: head_norm(c)?,
        max_batch: n_rows,
        row_stride: c.u32_const("ROW_STRIDE")?,
    };
    let extent = op.norm.extent();
    if n_rows > 0 {
        c.need_words(0, u64::from(op.row_stride) * u64::from(n_rows - 1) + extent)?;
    }
    c.need_words(1, u64::from(op.norm.head_dim))?;
    c.need_words(2, u64::from(op.norm.head_dim))?;
    let (qw, kw) = (c.floats(1)?, c.floats(2)?);
    op.cpu(c.out(0)?, &qw, &kw, n_rows);
    Ok(())
}
