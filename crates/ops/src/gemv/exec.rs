//! CPU execution of the gemv family's dispatches (see [`crate::exec`]): the composed
//! `gemv_<format>...` shaders (every variant, layout and fused form; what a shader
//! computes comes from its name, [`ShaderKey::name`]) and `gemv_batched_<format>[.packed]`.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::shader::{EpilogueKind, ShaderKey};
use super::{
    batched_shader, batched_wide_shader, GemmKind, Gemv, GemvBatched, GemvEpilogue, GemvFused,
    WeightLayout, XRounding,
};
use crate::exec::{Call, ExecError};
use crate::rope::Rope;
use crate::{Real, WeightFormat};

/// Every composed gemv shader, by name.
fn keys() -> &'static HashMap<String, ShaderKey> {
    static KEYS: OnceLock<HashMap<String, ShaderKey>> = OnceLock::new();
    KEYS.get_or_init(|| {
        [
            (false, (false, false)),
            (true, (false, false)),
            (true, (true, false)),
            (true, (false, true)),
        ]
        .into_iter()
        .flat_map(|(norm, post)| {
            [
                EpilogueKind::Store,
                EpilogueKind::Rope,
                EpilogueKind::Silu,
                EpilogueKind::Gelu,
                EpilogueKind::SiluDown,
            ]
            .into_iter()
            .flat_map(move |e| ShaderKey::all(norm, post, e))
        })
        .map(|k| (k.name(), k))
        .collect()
    })
}

/// The names of the composed shaders with this input (`norm`; `post`, `partials`) and
/// epilogue (one executor entry each: their bindings differ).
pub(crate) fn fused_shaders(
    norm: bool,
    post: (bool, bool),
    epilogue: EpilogueKind,
) -> Vec<&'static str> {
    type Named = (bool, (bool, bool), EpilogueKind, &'static str);
    static NAMES: OnceLock<Vec<Named>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            keys()
                .iter()
                .map(|(name, k)| (k.norm, (k.post, k.partials), k.epilogue, name.as_str()))
                .collect()
        })
        .iter()
        .filter(|(n, p, e, _)| (*n, *p, *e) == (norm, post, epilogue))
        .map(|(_, _, _, name)| *name)
        .collect()
}

fn bad_const<T: Real>(c: &Call<T>, name: &str, problem: String) -> ExecError {
    ExecError::Constant {
        shader: c.shader().to_string(),
        name: name.into(),
        problem,
    }
}

/// The matrix: `rows` physical rows (packed: from SCALES_AT, which counts every block).
fn gemv<T: Real>(
    c: &Call<T>,
    format: WeightFormat,
    layout: WeightLayout,
    rows: u32,
) -> Result<Gemv, ExecError> {
    let cols = c.u32_const("COLS")?;
    if format.row_bytes(cols as u64).is_err() {
        return Err(bad_const(
            c,
            "COLS",
            format!("{cols}, not whole {} blocks", format.name()),
        ));
    }
    let rows = match layout {
        WeightLayout::Gguf => rows,
        WeightLayout::Packed => {
            let at = c.u32_const("SCALES_AT")? as u64;
            let per_row = cols as u64 / 32 * if format == WeightFormat::Q8_0 { 2 } else { 1 };
            u32::try_from(at / per_row.max(1)).unwrap_or(u32::MAX)
        }
    };
    let g = Gemv {
        rows,
        cols,
        format,
        out_offset: c.u32_const("OUT_OFFSET")?,
        layout,
    };
    c.need_bytes(0, g.buffer_bytes(), "matrix")?;
    Ok(g)
}

/// Bindings: w, x, y, then the norm weight (with rms_norm folded in), then d, the post
/// norm's weight and x_out (a post norm folded in), then step, k_cache, v_cache (rope
/// epilogue). The oracle is [`GemvFused::post_input`], then [`GemvFused::cpu`].
pub(crate) fn run<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let key = *keys()
        .get(c.shader())
        .ok_or_else(|| ExecError::NoExecutor {
            shader: c.shader().to_string(),
        })?;
    let op = fused_op(c, key)?;
    let g = op.gemv;
    let b = super::shader::binding_numbers(key.norm, (key.post, key.partials));
    let rope_first = b.rope;
    let (x, nw) = input(c, &op, b)?;
    let w = c.bytes(0)?;
    // The chained reference follows the GPU's int8 rounding of x where the two round to
    // neighbouring steps (`XRounding::Int8Following`, docs/check.md): the GPU's x, after
    // the folded post norm where there is one (formed here in f32 from the GPU's x and d).
    let subject_x = key
        .variant
        .quantizes_x()
        .then(|| subject_input(c, &op, b))
        .flatten();
    let q8x = match &subject_x {
        Some(theirs) if theirs.len() >= g.cols as usize => XRounding::Int8Following(theirs),
        _ => XRounding::of(key.variant),
    };
    match op.epilogue {
        GemvEpilogue::RopeKv(rope) => {
            let (step, kc, vc) = (rope_first, rope_first + 1, rope_first + 2);
            let q_dim = (rope.n_heads * rope.head_dim) as u64;
            c.need_words(2, q_dim.min(g.out_offset as u64 + g.rows as u64))?;
            c.need_words(kc, rope.kv_row() * rope.max_ctx as u64)?;
            c.need_words(vc, rope.kv_row() * rope.max_ctx as u64)?;
            let pos = c.u32_at(step, 0)?;
            let (mut y, mut k, mut v) = (c.floats(2)?, c.floats(kc)?, c.floats(vc)?);
            op.cpu_variant(
                q8x,
                w,
                &x,
                nw.as_deref(),
                &mut y,
                Some((pos, &mut k[..], &mut v[..])),
            );
            c.out(2)?.copy_from_slice(&y);
            c.out(kc)?.copy_from_slice(&k);
            c.out(vc)?.copy_from_slice(&v);
        }
        GemvEpilogue::SiluDown { dim, .. } => {
            let down = op.down_gemv().expect("SiluDown");
            c.need_bytes(rope_first, down.buffer_bytes(), "down matrix")?;
            let w_down = c.bytes(rope_first)?;
            c.need_words(2, u64::from(op.down_partials()) * u64::from(dim))?;
            op.cpu_down(q8x, (w, w_down), &x, nw.as_deref(), c.out(2)?);
        }
        GemvEpilogue::SiluMul { n, .. } | GemvEpilogue::GeluMul { n, .. } => {
            c.need_words(2, g.out_offset as u64 + n as u64)?;
            op.cpu_variant(q8x, w, &x, nw.as_deref(), c.out(2)?, None);
        }
        _ => {
            c.need_words(2, g.out_offset as u64 + g.rows as u64)?;
            op.cpu_variant(q8x, w, &x, nw.as_deref(), c.out(2)?, None);
        }
    }
    Ok(())
}

/// The op a composed gemv shader's call runs: its key's form, the constants' shape.
fn fused_op<T: Real>(c: &Call<T>, key: ShaderKey) -> Result<GemvFused, ExecError> {
    let logical_rows = c.u32_const("ROWS")?;
    let (epilogue, rows) = match key.epilogue {
        EpilogueKind::Store => {
            let e = if c.flag_const("ACCUMULATE")? {
                GemvEpilogue::Accumulate
            } else {
                GemvEpilogue::Store
            };
            (e, logical_rows)
        }
        EpilogueKind::SiluDown => {
            let (n, up_row) = (logical_rows / 2, c.u32_const("UP_ROW")?);
            let dim = c.u32_const("DOWN_ROWS")?;
            if c.u32_const("DOWN_COLS")? != n || dim == 0 || !n.is_multiple_of(32) {
                return Err(bad_const(
                    c,
                    "DOWN_COLS",
                    format!("not the FFN width {n} in whole blocks, or no rows"),
                ));
            }
            (GemvEpilogue::SiluDown { n, up_row, dim }, up_row + n)
        }
        EpilogueKind::Silu | EpilogueKind::Gelu => {
            let (n, up_row) = (logical_rows / 2, c.u32_const("UP_ROW")?);
            let e = if key.epilogue == EpilogueKind::Silu {
                GemvEpilogue::SiluMul { n, up_row }
            } else {
                GemvEpilogue::GeluMul { n, up_row }
            };
            (e, up_row + n)
        }
        EpilogueKind::Rope => {
            let head_dim = c.u32_const("HEAD_DIM")?.max(1);
            let rope = Rope {
                n_heads: c.u32_const("Q_DIM")? / head_dim,
                n_kv_heads: c.u32_const("KV_DIM")? / head_dim,
                head_dim,
                rope_dims: c.u32_const("ROPE_DIMS")?,
                base: c.f32_const("BASE")?,
                max_ctx: c.u32_const("MAX_CTX")?,
                neox: false,
                ring: false,
            };
            (GemvEpilogue::RopeKv(rope), logical_rows)
        }
    };
    Ok(GemvFused {
        gemv: gemv(c, key.format, key.layout, rows)?,
        norm: if key.norm {
            Some(c.f32_const("EPS")?)
        } else {
            None
        },
        post_norm: if key.post {
            Some(c.f32_const("POST_EPS")?)
        } else {
            None
        },
        partials: if key.partials {
            c.u32_const("N_PARTIALS")?
        } else {
            0
        },
        epilogue,
    })
}

/// The gemv's input and its norm weight: x, or with a post norm folded in x after it
/// ([`GemvFused::post_input`]), or with partials x plus them
/// ([`GemvFused::partials_input`]), which also goes to x_out, as the kernel writes it.
fn input<T: Real>(
    c: &mut Call<T>,
    op: &GemvFused,
    b: super::shader::Bindings,
) -> Result<(Vec<T>, Option<Vec<T>>), ExecError> {
    let cols = op.gemv.cols as u64;
    c.need_words(1, cols)?;
    let nw = match op.norm {
        Some(_) => {
            c.need_words(b.norm, cols)?;
            Some(c.floats(b.norm)?)
        }
        None => None,
    };
    let x = c.floats(1)?;
    if op.partials > 0 {
        c.need_words(b.post, u64::from(op.partials) * cols)?;
        c.need_words(b.post + 1, cols)?;
        let x = op.partials_input(&x, &c.floats(b.post)?);
        c.out(b.post + 1)?.copy_from_slice(&x);
        return Ok((x, nw));
    }
    if op.post_norm.is_none() {
        return Ok((x, nw));
    }
    for i in 0..3 {
        c.need_words(b.post + i, cols)?;
    }
    let (d, pw) = (c.floats(b.post)?, c.floats(b.post + 1)?);
    let x = op.post_input(&x, Some((&d, &pw)));
    c.out(b.post + 2)?.copy_from_slice(&x);
    Ok((x, nw))
}

/// Every batched gemv frame shader, by name (the lanes frame's and the wide rows
/// frame's compute the same).
pub(crate) fn batched_shaders() -> Vec<&'static str> {
    WeightLayout::ALL
        .into_iter()
        .flat_map(|l| {
            WeightFormat::ALL
                .into_iter()
                .filter(move |f| l.supports(*f))
                .map(move |f| batched_shader(f, l).name)
        })
        .chain(
            WeightFormat::ALL
                .into_iter()
                .filter_map(|f| batched_wide_shader(f).map(|s| s.name)),
        )
        .collect()
}

/// Every gemm shader of `kind`, by name.
pub(crate) fn gemm_shaders(kind: GemmKind) -> Vec<&'static str> {
    super::gemm_shaders(kind)
        .into_iter()
        .map(|s| s.name)
        .collect()
}

/// Bindings: w, x (`n_rows × cols`), y (`n_rows × Y_STRIDE`), params (`[pos0, n_rows, ..]`).
pub(crate) fn run_batched<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let (format, layout) =
        format_and_layout(c, |f, l| l.supports(f).then(|| batched_shader(f, l).name)).or_else(
            |_| {
                format_and_layout(c, |f, l| {
                    (l == WeightLayout::Packed)
                        .then(|| batched_wide_shader(f).map(|s| s.name))
                        .flatten()
                })
            },
        )?;
    let (op, accumulate) = batched_op(c, format, layout)?;
    let n_rows = op.max_batch;
    c.need_words(1, op.gemv.cols as u64 * n_rows as u64)?;
    let (w, x) = (c.bytes(0)?, c.floats(1)?);
    op.cpu(w, &x, c.out(2)?, n_rows, accumulate);
    Ok(())
}

/// Bindings: w, xq (x quantized by `quantize_x_q8`, `n_rows × cols / 32` blocks), y, params.
pub(crate) fn run_gemm_dp4a<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let (format, layout) = gemm_format_and_layout(c, GemmKind::Dp4a)?;
    let (op, accumulate) = batched_op(c, format, layout)?;
    let words = op.gemv.cols as u64 / 32 * 12 * op.max_batch as u64;
    c.need_words(1, words)?;
    let x: Vec<T> = super::QuantizeX::dequantize(&c.u32s(1, words as usize)?)
        .into_iter()
        .map(T::of)
        .collect();
    let w = c.bytes(0)?;
    op.cpu(w, &x, c.out(2)?, op.max_batch, accumulate);
    Ok(())
}

/// Bindings: w, x (`n_rows × cols` f32, rounded to f16 by the kernel), y (K_PARTS parts of
/// MAX_BATCH × Y_STRIDE floats), params.
pub(crate) fn run_gemm_coopmat<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let (format, layout) = gemm_format_and_layout(c, GemmKind::Coopmat)?;
    let (op, accumulate) = batched_op(c, format, layout)?;
    // Captures from before K parts have no K_PARTS: one part.
    let parts = c.u32_const_or("K_PARTS", 1)?;
    if parts == 0 || !op.gemv.cols.is_multiple_of(parts) || (parts > 1 && accumulate) {
        return Err(bad_const(
            c,
            "K_PARTS",
            format!("{parts} parts of {} columns", op.gemv.cols),
        ));
    }
    let part_floats = c.u32_const("MAX_BATCH")? as u64 * op.y_stride as u64;
    c.need_words(1, op.gemv.cols as u64 * op.max_batch as u64)?;
    c.need_words(
        2,
        (parts as u64 - 1) * part_floats + op.y_stride as u64 * op.max_batch as u64,
    )?;
    let (w, x) = (c.bytes(0)?, c.floats(1)?);
    if c.u32_const_or("SILU_UP", 0)? != 0 {
        let (ffn, up_row) = (c.u32_const("FFN")?, c.u32_const("UP_ROW")?);
        if parts != 1 || accumulate || up_row < ffn || up_row + ffn != op.gemv.rows {
            return Err(bad_const(
                c,
                "SILU_UP",
                format!(
                    "FFN {ffn}, UP_ROW {up_row} of {} rows, {parts} parts",
                    op.gemv.rows
                ),
            ));
        }
        op.cpu_f16_silu(w, &x, c.out(2)?, op.max_batch, (ffn, up_row));
        return Ok(());
    }
    let y = c.out(2)?;
    for p in 0..parts {
        let at = (p as u64 * part_floats) as usize;
        op.cpu_f16_part(w, &x, &mut y[at..], op.max_batch, accumulate, (p, parts));
    }
    Ok(())
}

/// The (format, layout) of a gemm shader of `kind`, whichever its tile.
fn gemm_format_and_layout<T: Real>(
    c: &Call<T>,
    kind: GemmKind,
) -> Result<(WeightFormat, WeightLayout), ExecError> {
    kind.tiles()
        .iter()
        .find_map(|&tile| {
            format_and_layout(c, |f, l| {
                super::gemm_shader(kind, tile, f, l).map(|s| s.name)
            })
            .ok()
        })
        .ok_or_else(|| ExecError::NoExecutor {
            shader: c.shader().to_string(),
        })
}

/// The (format, layout) whose shader of a family (`name_of`, `None` where the family has
/// none) the call's shader is.
fn format_and_layout<T: Real>(
    c: &Call<T>,
    name_of: impl Fn(WeightFormat, WeightLayout) -> Option<&'static str>,
) -> Result<(WeightFormat, WeightLayout), ExecError> {
    WeightLayout::ALL
        .into_iter()
        .flat_map(|l| WeightFormat::ALL.into_iter().map(move |f| (f, l)))
        .find(|&(f, l)| name_of(f, l) == Some(c.shader()))
        .ok_or_else(|| ExecError::NoExecutor {
            shader: c.shader().to_string(),
        })
}

/// The batched op of a batched or gemm dispatch (its `max_batch` the params' `n_rows`),
/// with its output checked for size, and whether it accumulates.
fn batched_op<T: Real>(
    c: &Call<T>,
    format: WeightFormat,
    layout: WeightLayout,
) -> Result<(GemvBatched, bool), ExecError> {
    let g = gemv(c, format, layout, c.u32_const("ROWS")?)?;
    let n_rows = c.u32_at(3, 1)?;
    let op = GemvBatched {
        gemv: g,
        max_batch: n_rows,
        y_stride: c.u32_const("Y_STRIDE")?,
    };
    c.need_words(2, op.y_stride as u64 * n_rows as u64)?;
    Ok((op, c.flag_const("ACCUMULATE")?))
}

/// Bindings: x (`n_rows × COLS` f32), xq, params (`[pos0, n_rows, ..]`).
pub(crate) fn run_quantize_x<T: Real>(c: &mut Call<T>) -> Result<(), ExecError> {
    let n_rows = c.u32_at(2, 1)?;
    let op = super::QuantizeX {
        cols: c.u32_const("COLS")?,
        max_batch: n_rows,
    };
    c.need_words(0, op.cols as u64 * n_rows as u64)?;
    c.need_words(1, op.buffer_bytes() / 4)?;
    // The kernel quantizes in f32 (as the gemm's oracle does), whatever T is.
    let x: Vec<f32> = c.floats(0)?.into_iter().map(|v| v.as_f32()).collect();
    for (i, word) in op.cpu(&x, n_rows).into_iter().enumerate() {
        c.set_u32(1, i, word)?;
    }
    Ok(())
}

/// The x the tested GPU quantized (`Call::following`): its binding 1, with a folded post
/// norm applied in f32 to its own d and weight, or its partials added.
fn subject_input<T: Real>(
    c: &Call<T>,
    op: &GemvFused,
    b: super::shader::Bindings,
) -> Option<Vec<f32>> {
    let x = c.subject_f32s(1)?;
    let cols = op.gemv.cols as usize;
    if op.partials > 0 {
        let parts = c.subject_f32s(b.post)?;
        if x.len() < cols || parts.len() < op.partials as usize * cols {
            return None;
        }
        return Some(op.partials_input(&x, &parts));
    }
    if op.post_norm.is_none() {
        return Some(x);
    }
    let (d, pw) = (c.subject_f32s(b.post)?, c.subject_f32s(b.post + 1)?);
    if x.len() < cols || d.len() < cols || pw.len() < cols {
        return None;
    }
    Some(op.post_input(&x, Some((&d[..], &pw[..]))))
}
