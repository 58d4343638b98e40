//! Batched gemv for prompt processing: `Y[b] (+)= W·X[b]` for the first `params[1]` rows
//! of X (row stride `cols`) into Y (row stride `y_stride`, at `out_offset` within a row).
//!
//! Decisions:
//! - One frame (`kernel_batched.wgsl`) over the same per-format `unit_dot` as
//!   [`Gemv`]: the format files read x through `xv(i)`, which this frame defines as
//!   `x[xoff + i]`, so each weight format's decoding lives in one place.
//! - The batch size is read from a small params buffer (`[pos0, n_rows, 0, 0]`), so the
//!   dispatch is built once for `max_batch` rows and reused for any prompt chunk up to it;
//!   workgroups past `n_rows` return at once.
//! - Batch rows are taken in chunks of 8 (one workgroup row of the grid per chunk): weights
//!   are walked once per chunk, not once per prompt row.

use std::sync::OnceLock;

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::{Gemv, WeightLayout, WORKGROUP_SIZE};
use crate::quant::WeightFormat;

/// Batch rows one workgroup applies a weight tile to; must match `BATCH_CHUNK` in
/// `kernel_batched.wgsl`.
pub const BATCH_CHUNK: u32 = 8;

/// A gemv over up to `max_batch` rows of x at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemvBatched {
    pub gemv: Gemv,
    pub max_batch: u32,
    /// f32 elements per row of y (at least `out_offset + rows`).
    pub y_stride: u32,
}

/// The batched shader of `format` in `layout` (built once from the gemv kernel's format
/// files).
///
/// # Panics
/// If the format has no such layout ([`WeightLayout::supports`]).
pub fn batched_shader(format: WeightFormat, layout: WeightLayout) -> &'static ShaderSource {
    static SHADERS: OnceLock<Vec<(WeightFormat, WeightLayout, ShaderSource)>> = OnceLock::new();
    let all = SHADERS.get_or_init(|| {
        WeightLayout::ALL
            .iter()
            .flat_map(|&l| WeightFormat::ALL.iter().map(move |&f| (f, l)))
            .filter(|(f, l)| l.supports(*f))
            .map(|(f, l)| {
                let wgsl = format!(
                    "{}\n{}",
                    include_str!("kernel_batched.wgsl"),
                    super::shader::format_part(f, l)
                );
                let name = match l {
                    WeightLayout::Gguf => format!("gemv_batched_{}", f.name()),
                    _ => format!("gemv_batched_{}.{}", f.name(), l.name()),
                };
                let source = ShaderSource {
                    name: Box::leak(name.into_boxed_str()),
                    wgsl: Box::leak(wgsl.into_boxed_str()),
                };
                (f, l, source)
            })
            .collect()
    });
    all.iter()
        .find(|(f, l, _)| (*f, *l) == (format, layout))
        .map(|(_, _, s)| s)
        .unwrap_or_else(|| panic!("{} has no {} layout", format.name(), layout.name()))
}

impl GemvBatched {
    fn x_is_vec4(&self) -> bool {
        super::shader::x_is_vec4(self.gemv.format)
    }

    /// Declared cost for a full batch of `max_batch` rows (weights read once per chunk of 8).
    pub fn cost(&self) -> Cost {
        let (rows, cols, m) = (
            u64::from(self.gemv.rows),
            u64::from(self.gemv.cols),
            u64::from(self.max_batch),
        );
        Cost {
            bytes: self.gemv.weight_bytes() * m.div_ceil(u64::from(BATCH_CHUNK))
                + m * (cols + rows) * 4,
            flops: 2 * m * rows * cols,
        }
    }

    /// Builds the dispatch: bindings w, x (`max_batch × cols` f32), y
    /// (`max_batch × y_stride` f32), params (`[pos0, n_rows, 0, 0]`).
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        w: &GpuBuffer,
        x: &GpuBuffer,
        y: &GpuBuffer,
        params: &GpuBuffer,
        accumulate: bool,
    ) -> Result<Dispatch, GpuError> {
        let g = &self.gemv;
        if !g.layout.supports(g.format) {
            return Err(GpuError::Invalid(format!(
                "gemv_batched_{}: no {} weight layout",
                g.format.name(),
                g.layout.name()
            )));
        }
        let name = batched_shader(g.format, g.layout).name;
        let invalid = |what: String| {
            GpuError::Invalid(format!(
                "{name} {}x{}×{}: {what}",
                g.rows, g.cols, self.max_batch
            ))
        };
        if g.rows == 0 || g.cols == 0 || self.max_batch == 0 {
            return Err(invalid("empty matrix or batch".into()));
        }
        g.format
            .row_bytes(u64::from(g.cols))
            .map_err(|e| invalid(e.to_string()))?;
        if self.y_stride < g.out_offset + g.rows {
            return Err(invalid(format!(
                "y_stride {} < out_offset + rows",
                self.y_stride
            )));
        }
        let m = u64::from(self.max_batch);
        if u64::from(g.rows) * u64::from(g.cols) > u64::from(u32::MAX)
            || m * u64::from(self.y_stride) > u64::from(u32::MAX)
            || m * u64::from(g.cols) > u64::from(u32::MAX)
        {
            return Err(invalid("more than 2^32 elements".into()));
        }
        let need = |buf: &GpuBuffer, bytes: u64, what: &str| {
            if buf.size() < bytes {
                Err(invalid(format!(
                    "{what} buffer \"{}\" has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )))
            } else {
                Ok(())
            }
        };
        need(w, g.buffer_bytes(), "weight")?;
        need(x, m * u64::from(g.cols) * 4, "x")?;
        need(y, m * u64::from(self.y_stride) * 4, "y")?;
        need(params, 16, "params")?;
        let tpr = g.default_tuning().threads_per_row;
        let x_stride = if self.x_is_vec4() { g.cols / 4 } else { g.cols };
        let mut constants = vec![
            ("ROWS", f64::from(g.rows)),
            ("COLS", f64::from(g.cols)),
            ("OUT_OFFSET", f64::from(g.out_offset)),
            ("TPR", f64::from(tpr)),
            ("ACCUMULATE", if accumulate { 1.0 } else { 0.0 }),
            ("X_STRIDE", f64::from(x_stride)),
            ("Y_STRIDE", f64::from(self.y_stride)),
        ];
        if g.layout == WeightLayout::Packed {
            constants.push((
                "SCALES_AT",
                f64::from(WeightLayout::scales_at(g.format, g.rows, g.cols)),
            ));
        }
        let pipeline = gpu.pipeline(batched_shader(g.format, g.layout), "main", &constants)?;
        let bind_group = gpu.bind_group(&pipeline, &[w, x, y, params])?;
        let groups = g.rows.div_ceil(WORKGROUP_SIZE / tpr);
        let chunks = self.max_batch.div_ceil(BATCH_CHUNK);
        if groups > 65535 || chunks > 65535 {
            return Err(invalid(
                "too many rows for one dispatch: split the matrix".into(),
            ));
        }
        let reads: &[&GpuBuffer] = if accumulate {
            &[w, x, y, params]
        } else {
            &[w, x, params]
        };
        Ok(Dispatch::new(
            name,
            pipeline,
            bind_group,
            [groups, chunks, 1],
            self.cost(),
            reads,
            &[y],
        ))
    }

    /// CPU reference: the single-row oracle applied to each of the first `n_rows` rows.
    pub fn cpu<T: crate::Real>(
        &self,
        w: &[u8],
        x: &[T],
        y: &mut [T],
        n_rows: u32,
        accumulate: bool,
    ) {
        let g = &self.gemv;
        let (cols, ys) = (g.cols as usize, self.y_stride as usize);
        for b in 0..n_rows as usize {
            let mut row = vec![T::zero(); (g.out_offset + g.rows) as usize];
            g.cpu(w, &x[b * cols..(b + 1) * cols], &mut row);
            for r in g.out_offset as usize..(g.out_offset + g.rows) as usize {
                let dst = &mut y[b * ys + r];
                *dst = if accumulate { *dst + row[r] } else { row[r] };
            }
        }
    }
}
