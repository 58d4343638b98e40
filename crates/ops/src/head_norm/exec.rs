//! CPU execution of `head_norm` dispatches (see [`crate::exec`]).

use super::HeadNorm;
use crate::exec::{Call, ExecError};
use crate::Real;

/// Bindings: qkv (in place), q_weight, k_weight.
pub(crate) fn run<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let op = HeadNorm {
        n_heads: c.u32_const("N_HEADS")?,
        n_kv_heads: c.u32_const("N_KV_HEADS")?,
        head_dim: c.u32_const("HEAD_DIM")?,
        q_off: c.u32_const("Q_OFF")?,
        k_off: c.u32_const("K_OFF")?,
        eps: c.f32_const("EPS")?,
    };
    c.need_words(0, op.extent())?;
    c.need_words(1, u64::from(op.head_dim))?;
    c.need_words(2, u64::from(op.head_dim))?;
    let (qw, kw) = (c.floats(1)?, c.floats(2)?);
    op.cpu(c.out(0)?, &qw, &kw);
    Ok(())
}
