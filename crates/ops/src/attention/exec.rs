//! CPU execution of `attention`, `attention_batched`, `attn_scores` and `attn_values`
//! dispatches (see [`crate::exec`]).

use super::{AttnBatched, AttnFused, AttnOutput, AttnScores, AttnValues};
use crate::exec::{Call, ExecError};
use crate::Real;

pub(crate) fn batched_shaders() -> Vec<&'static str> {
    vec![
        super::batched::batched_shader().name,
        super::batched::batched_subgroup_shader(false).name,
        super::batched::batched_subgroup_shader(true).name,
    ]
    .into_iter()
    .chain(
        super::batched::coopmat_shaders()
            .into_iter()
            .map(|s| s.name),
    )
    .collect()
}

/// (n_heads, n_kv_heads, head_dim, max_ctx) from the constants, checked.
fn shape<T: Real>(c: &Call<T>) -> Result<(u32, u32, u32, u32), ExecError> {
    let s = (
        c.u32_const("N_HEADS")?,
        c.u32_const("N_KV_HEADS")?,
        c.u32_const("HEAD_DIM")?,
        c.u32_const("MAX_CTX")?,
    );
    if s.1 == 0 || s.0 % s.1 != 0 {
        return Err(ExecError::Constant {
            shader: c.shader().to_string(),
            name: "N_KV_HEADS".into(),
            problem: format!("{}, which does not divide N_HEADS {}", s.1, s.0),
        });
    }
    Ok(s)
}

/// `n_ctx = step[1]`, clamped to the cache as the kernels do.
fn n_ctx<T: Real>(c: &Call<T>, max_ctx: u32) -> Result<u32, ExecError> {
    Ok(c.u32_at(0, 1)?.min(max_ctx))
}

fn need_qkv<T: Real>(c: &Call<T>, (h, kv, hd, ctx): (u32, u32, u32, u32)) -> Result<(), ExecError> {
    c.need_words(1, (h * hd) as u64)?;
    c.need_words(2, (kv * hd) as u64 * ctx as u64)
}

/// Bindings: step, q, k_cache, v_cache, out.
pub(crate) fn run_fused<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let s @ (n_heads, n_kv_heads, head_dim, max_ctx) = shape(c)?;
    need_qkv(c, s)?;
    c.need_words(3, (n_kv_heads * head_dim) as u64 * max_ctx as u64)?;
    c.need_words(4, (n_heads * head_dim) as u64)?;
    let op = AttnFused {
        n_heads,
        n_kv_heads,
        head_dim,
        max_ctx,
    };
    let n = n_ctx(c, max_ctx)?;
    let (q, k, v) = (c.floats(1)?, c.floats(2)?, c.floats(3)?);
    // The `split` variant's first pass is this shader with CHUNK > 0: partials, not
    // the output.
    match c.u32_const_or("CHUNK", 0)? {
        0 => op.cpu(n, &q, &k, &v, c.out(4)?),
        chunk => {
            let splits = u64::from(max_ctx.div_ceil(chunk));
            c.need_words(4, u64::from(n_heads) * splits * u64::from(head_dim + 2))?;
            op.cpu_split(n, chunk, &q, &k, &v, c.out(4)?)
        }
    }
    Ok(())
}

/// Bindings: step, partials (of the split pass), out.
pub(crate) fn run_combine<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let (n_heads, head_dim, max_ctx) = (
        c.u32_const("N_HEADS")?,
        c.u32_const("HEAD_DIM")?,
        c.u32_const("MAX_CTX")?,
    );
    let (chunk, splits) = (c.u32_const("CHUNK")?, c.u32_const("SPLITS")?);
    if chunk == 0 || splits != max_ctx.div_ceil(chunk) {
        return Err(ExecError::Constant {
            shader: c.shader().to_string(),
            name: "SPLITS".into(),
            problem: format!("{splits}, not MAX_CTX {max_ctx} over CHUNK {chunk}"),
        });
    }
    // The combine reads no k/v: any kv-head count that divides the heads will do.
    let op = AttnFused {
        n_heads,
        n_kv_heads: 1,
        head_dim,
        max_ctx,
    };
    c.need_words(
        1,
        u64::from(n_heads) * u64::from(splits) * u64::from(head_dim + 2),
    )?;
    c.need_words(2, u64::from(n_heads * head_dim))?;
    let n = n_ctx(c, max_ctx)?;
    let partials = c.floats(1)?;
    op.cpu_combine(n, chunk, &partials, c.out(2)?);
    Ok(())
}

/// Bindings: params (`[pos0, n_rows, ..]`), q (rows `Q_STRIDE` apart), k_cache, v_cache,
/// out (rows `OUT_STRIDE` apart).
pub(crate) fn run_batched<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let (n_heads, n_kv_heads, head_dim, max_ctx) = shape(c)?;
    let (pos0, n_rows) = (c.u32_at(0, 0)?, c.u32_at(0, 1)?);
    let op = AttnBatched {
        attn: AttnFused {
            n_heads,
            n_kv_heads,
            head_dim,
            max_ctx,
        },
        max_batch: n_rows,
        q_stride: c.u32_const("Q_STRIDE")?,
        out_stride: c.u32_const("OUT_STRIDE")?,
        coopmat: false,
    };
    let hq = (n_heads * head_dim) as u64;
    let rows = n_rows as u64;
    c.need_words(1, op.q_stride as u64 * rows.saturating_sub(1) + hq)?;
    for b in [2, 3] {
        c.need_words(b, (n_kv_heads * head_dim) as u64 * max_ctx as u64)?;
    }
    c.need_words(4, op.out_stride as u64 * rows.saturating_sub(1) + hq)?;
    // Row b sees min(pos0 + b + 1, max_ctx) cache rows, as the kernel clamps.
    let (q, k, v) = (c.floats(1)?, c.floats(2)?, c.floats(3)?);
    let out = c.out(4)?;
    for b in 0..n_rows {
        let row = AttnBatched { max_batch: 1, ..op };
        let n = (pos0 + b + 1).min(max_ctx);
        let (qo, oo) = ((b * op.q_stride) as usize, (b * op.out_stride) as usize);
        row.cpu(n - 1, 1, &q[qo..], &k, &v, &mut out[oo..]);
    }
    Ok(())
}

/// Bindings: step, q, k_cache, scores.
pub(crate) fn run_scores<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let s @ (n_heads, n_kv_heads, head_dim, max_ctx) = shape(c)?;
    need_qkv(c, s)?;
    c.need_words(3, n_heads as u64 * max_ctx as u64)?;
    let op = AttnScores {
        n_heads,
        n_kv_heads,
        head_dim,
        max_ctx,
    };
    let n = n_ctx(c, max_ctx)?;
    let (q, k) = (c.floats(1)?, c.floats(2)?);
    op.cpu(n, &q, &k, c.out(3)?);
    Ok(())
}

/// Bindings: step, probs, v_cache, out.
pub(crate) fn run_values<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let (n_heads, n_kv_heads, head_dim, max_ctx) = shape(c)?;
    c.need_words(1, n_heads as u64 * max_ctx as u64)?;
    c.need_words(2, (n_kv_heads * head_dim) as u64 * max_ctx as u64)?;
    c.need_words(3, (n_heads * head_dim) as u64)?;
    let op = AttnValues {
        n_heads,
        n_kv_heads,
        head_dim,
        max_ctx,
    };
    let n = n_ctx(c, max_ctx)?;
    let (p, v) = (c.floats(1)?, c.floats(2)?);
    op.cpu(n, &p, &v, c.out(3)?);
    Ok(())
}

/// Bindings: the output matrix, q, k_cache, v_cache, partials, step ([`AttnOutput::cpu`]).
pub(crate) fn run_output<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let (format, layout) =
        super::output::output_shader_format(c.shader()).ok_or_else(|| ExecError::NoExecutor {
            shader: c.shader().to_string(),
        })?;
    let (n_heads, n_kv_heads, head_dim, max_ctx) = shape(c)?;
    let op = AttnOutput {
        attn: AttnFused {
            n_heads,
            n_kv_heads,
            head_dim,
            max_ctx,
        },
        o: crate::gemv::Gemv {
            rows: c.u32_const("ROWS")?,
            cols: c.u32_const("COLS")?,
            format,
            out_offset: 0,
            layout,
        },
    };
    if op.o.cols != n_heads * head_dim || format.row_bytes(u64::from(op.o.cols)).is_err() {
        return Err(ExecError::Constant {
            shader: c.shader().to_string(),
            name: "COLS".into(),
            problem: format!("{}, not n_heads · head_dim in whole blocks", op.o.cols),
        });
    }
    c.need_bytes(0, op.o.buffer_bytes(), "matrix")?;
    c.need_words(1, u64::from(n_heads * head_dim))?;
    let cache = u64::from(n_kv_heads * head_dim) * u64::from(max_ctx);
    c.need_words(2, cache)?;
    c.need_words(3, cache)?;
    c.need_words(4, op.partials_bytes() / 4)?;
    let n = c.u32_at(5, 1)?.min(max_ctx);
    let (q, k, v) = (c.floats(1)?, c.floats(2)?, c.floats(3)?);
    let w = c.bytes(0)?.to_vec();
    op.cpu(n, &w, &q, &k, &v, c.out(4)?);
    Ok(())
}
