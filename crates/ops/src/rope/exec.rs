//! CPU execution of `rope`, `rope_qkv` and `rope_qkv_batched` dispatches (see
//! [`crate::exec`]).

use super::{Rope, RopeBatched, RopeNormed};
use crate::exec::{Call, ExecError};
use crate::Real;

pub(crate) fn batched_shaders() -> Vec<&'static str> {
    vec![
        super::batched::BATCHED_SHADER.name,
        super::batched::BATCHED_VEC4_SHADER.name,
    ]
}

fn rope<T: Real>(c: &Call<T>) -> Result<Rope, ExecError> {
    let r = Rope {
        n_heads: c.u32_const("N_HEADS")?,
        n_kv_heads: c.u32_const("N_KV_HEADS")?,
        head_dim: c.u32_const("HEAD_DIM")?,
        rope_dims: c.u32_const("ROPE_DIMS")?,
        base: c.f32_const("BASE")?,
        max_ctx: c.u32_const("MAX_CTX")?,
        // Captures made before the NeoX and ring forms existed have neither constant.
        neox: c.u32_const_or("NEOX", 0)? != 0,
        ring: c.u32_const_or("RING", 0)? != 0,
    };
    if !r.head_dim.is_multiple_of(2) || !r.rope_dims.is_multiple_of(2) || r.rope_dims > r.head_dim {
        return Err(ExecError::Constant {
            shader: c.shader().to_string(),
            name: "ROPE_DIMS".into(),
            problem: format!(
                "{} with HEAD_DIM {}: needs even dims",
                r.rope_dims, r.head_dim
            ),
        });
    }
    Ok(r)
}

/// Position `pos` of the step buffer, or `None` past the cache (the kernel does nothing).
fn position<T: Real>(c: &Call<T>, r: &Rope, at: usize) -> Result<Option<u32>, ExecError> {
    let pos = c.u32_at(0, at)?;
    Ok((r.ring || pos < r.max_ctx).then_some(pos))
}

fn need_caches<T: Real>(c: &Call<T>, r: &Rope, k: u32, v: u32) -> Result<(), ExecError> {
    c.need_words(k, r.kv_row() * r.max_ctx as u64)?;
    c.need_words(v, r.kv_row() * r.max_ctx as u64)
}

/// Bindings: step, q (in place), k, v, k_cache, v_cache.
pub(crate) fn run<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let r = rope(c)?;
    c.need_words(1, (r.n_heads * r.head_dim) as u64)?;
    c.need_words(2, r.kv_row())?;
    c.need_words(3, r.kv_row())?;
    need_caches(c, &r, 4, 5)?;
    let Some(pos) = position(c, &r, 0)? else {
        return Ok(());
    };
    let (k, v) = (c.floats(2)?, c.floats(3)?);
    let mut q = c.floats(1)?;
    let (mut kc, mut vc) = (c.floats(4)?, c.floats(5)?);
    r.cpu(pos, &mut q, &k, &v, &mut kc, &mut vc);
    c.out(1)?.copy_from_slice(&q);
    c.out(4)?.copy_from_slice(&kc);
    c.out(5)?.copy_from_slice(&vc);
    Ok(())
}

/// Bindings: step, qkv (q rotated in place; k, v read at `K_OFF`, `V_OFF`), k_cache, v_cache.
pub(crate) fn run_qkv<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let r = rope(c)?;
    let (q_off, k_off, v_off) = (
        c.u32_const("Q_OFF")? as usize,
        c.u32_const("K_OFF")? as usize,
        c.u32_const("V_OFF")? as usize,
    );
    let (qn, kvn) = ((r.n_heads * r.head_dim) as usize, r.kv_row() as usize);
    c.need_words(1, (q_off + qn).max(k_off + kvn).max(v_off + kvn) as u64)?;
    need_caches(c, &r, 2, 3)?;
    let Some(pos) = position(c, &r, 0)? else {
        return Ok(());
    };
    let mut qkv = c.floats(1)?;
    let (k, v) = (qkv[k_off..][..kvn].to_vec(), qkv[v_off..][..kvn].to_vec());
    let (mut kc, mut vc) = (c.floats(2)?, c.floats(3)?);
    r.cpu(pos, &mut qkv[q_off..][..qn], &k, &v, &mut kc, &mut vc);
    c.out(1)?.copy_from_slice(&qkv);
    c.out(2)?.copy_from_slice(&kc);
    c.out(3)?.copy_from_slice(&vc);
    Ok(())
}

/// Bindings: step, qkv (q and k normed, q rotated in place; v read), k_cache, v_cache,
/// q_weight, k_weight.
pub(crate) fn run_normed<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let rope = rope(c)?;
    let op = RopeNormed {
        rope,
        eps: c.f32_const("EPS")?,
        offsets: (
            c.u32_const("Q_OFF")?,
            c.u32_const("K_OFF")?,
            c.u32_const("V_OFF")?,
        ),
    };
    c.need_words(1, op.extent())?;
    need_caches(c, &rope, 2, 3)?;
    c.need_words(4, u64::from(rope.head_dim))?;
    c.need_words(5, u64::from(rope.head_dim))?;
    let Some(pos) = position(c, &rope, 0)? else {
        return Ok(());
    };
    let (qw, kw) = (c.floats(4)?, c.floats(5)?);
    let mut qkv = c.floats(1)?;
    let (mut kc, mut vc) = (c.floats(2)?, c.floats(3)?);
    op.cpu(pos, &mut qkv, &qw, &kw, &mut kc, &mut vc);
    c.out(1)?.copy_from_slice(&qkv);
    c.out(2)?.copy_from_slice(&kc);
    c.out(3)?.copy_from_slice(&vc);
    Ok(())
}

/// Bindings: params (`[pos0, n_rows, ..]`), qkv (`n_rows × QKV_STRIDE`), k_cache, v_cache.
pub(crate) fn run_batched<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let r = rope(c)?;
    let (pos0, n_rows) = (c.u32_at(0, 0)?, c.u32_at(0, 1)?);
    let qkv_stride = c.u32_const("QKV_STRIDE")?;
    let qkv_parts = c.u32_const_or("PARTS", 1)?;
    // One part: its rows are the batch's; more: the parts lie max_batch rows apart.
    let max_batch = match qkv_parts {
        1 => n_rows,
        _ => c.u32_const("PART_STRIDE")? / qkv_stride.max(1),
    };
    let op = RopeBatched {
        rope: r,
        max_batch,
        qkv_stride,
        offsets: (
            c.u32_const("Q_OFF")?,
            c.u32_const("K_OFF")?,
            c.u32_const("V_OFF")?,
        ),
        qkv_parts,
    };
    if qkv_parts == 0 || n_rows > max_batch {
        return Err(ExecError::Constant {
            shader: c.shader().to_string(),
            name: "PARTS".into(),
            problem: format!("{qkv_parts} parts of {max_batch} rows for {n_rows} rows"),
        });
    }
    c.need_words(
        1,
        (qkv_parts as u64 - 1) * op.part_stride() as u64 + qkv_stride as u64 * n_rows as u64,
    )?;
    need_caches(c, &r, 2, 3)?;
    // Rows past the cache do nothing in the kernel (a ring has no end).
    let rows = if r.ring {
        n_rows
    } else {
        n_rows.min(r.max_ctx.saturating_sub(pos0))
    };
    let mut qkv = c.floats(1)?;
    let (mut kc, mut vc) = (c.floats(2)?, c.floats(3)?);
    op.cpu(pos0, rows, &mut qkv, &mut kc, &mut vc);
    c.out(1)?.copy_from_slice(&qkv);
    c.out(2)?.copy_from_slice(&kc);
    c.out(3)?.copy_from_slice(&vc);
    Ok(())
}
