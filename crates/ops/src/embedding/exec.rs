//! CPU execution of `embedding_<format>` and `embedding_batched_<format>` dispatches (see
//! [`crate::exec`]). The weight format comes from the shader name.

use super::{batched_shader, shader, Embedding, EmbeddingBatched};
use crate::exec::{Call, ExecError};
use crate::{Real, WeightFormat};

fn embedding<T: Real>(
    c: &Call<T>,
    name_of: fn(WeightFormat) -> &'static str,
) -> Result<Embedding, ExecError> {
    let format = c.format_of(name_of)?;
    let e = Embedding {
        rows: c.u32_const("ROWS")?,
        dim: c.u32_const("DIM")?,
        format,
        row_start: c.u32_const("ROW_START")?,
    };
    let Ok(row_bytes) = format.row_bytes(e.dim as u64) else {
        return Err(ExecError::Constant {
            shader: c.shader().to_string(),
            name: "DIM".into(),
            problem: format!("{}, not whole {} blocks", e.dim, format.name()),
        });
    };
    c.need_bytes(0, row_bytes * e.rows as u64, "table")?;
    Ok(e)
}

/// Bindings: table, token (`token[0]`), out.
pub(crate) fn run<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let e = embedding(c, |f| shader(f).name)?;
    c.need_words(2, e.dim as u64)?;
    let (table, token) = (c.bytes(0)?, c.u32_at(1, 0)?);
    // Captures made before the scale existed lack the constant.
    let scale = c.f32_const_or("SCALE", 1.0)?;
    e.cpu_scaled(table, token, c.out(2)?, scale);
    Ok(())
}

/// Bindings: table, tokens, out (`n_rows × dim`), params (`[pos0, n_rows, ..]`).
pub(crate) fn run_batched<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let emb = embedding(c, |f| batched_shader(f).name)?;
    let n_rows = c.u32_at(3, 1)?;
    c.need_words(2, emb.dim as u64 * n_rows as u64)?;
    let op = EmbeddingBatched {
        emb,
        max_batch: n_rows,
    };
    let (table, tokens) = (c.bytes(0)?, c.u32s(1, n_rows as usize)?);
    let scale = c.f32_const_or("SCALE", 1.0)?;
    op.cpu_scaled(table, &tokens, c.out(2)?, scale);
    Ok(())
}
