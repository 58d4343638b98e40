//! Batched gemv for prompt processing: `Y[b] (+)= W·X[b]` for the first `params[1]` rows
//! of X (row stride `cols`) into Y (row stride `y_stride`, at `out_offset` within a row).
//!
//! Decisions:
//! - One frame (`kernel_batched.wgsl`) over the same per-format `unit_dot` as
//!   [`Gemv`]: the format files are appended with their reads of `x[i]` rewritten to
//!   `x[xoff + i]`, so each weight format's decoding lives in one place.
//! - The batch size is read from a small params buffer (`[pos0, n_rows, 0, 0]`), so the
//!   dispatch is built once for `max_batch` rows and reused for any prompt chunk up to it;
//!   workgroups past `n_rows` return at once.
//! - Batch rows are taken in chunks of 8 (one workgroup row of the grid per chunk): weights
//!   are walked once per chunk, not once per prompt row.

use std::sync::OnceLock;

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::{shader, Gemv, WORKGROUP_SIZE};
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

/// Rewrites `x[` (not part of a longer identifier) to `x[xoff + `.
fn rewrite_x_reads(src: &str) -> String {
    let mut out = String::with_capacity(src.len() + 256);
    let bytes = src.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        if bytes[i] == b'x'
            && bytes.get(i + 1) == Some(&b'[')
            && (i == 0 || !is_ident(bytes[i - 1]))
        {
            out.push_str("x[xoff + ");
            i += 2;
        } else {
            out.push(bytes[i] as char);
            i += 1;
        }
    }
    out
}

/// The batched shader of `format` (built once from the gemv kernel's format files).
pub fn batched_shader(format: WeightFormat) -> &'static ShaderSource {
    static SHADERS: OnceLock<Vec<ShaderSource>> = OnceLock::new();
    let all = SHADERS.get_or_init(|| {
        WeightFormat::ALL
            .iter()
            .map(|&f| {
                let single = shader(f);
                let format_part = single
                    .wgsl
                    .strip_prefix(include_str!("kernel.wgsl"))
                    .expect("gemv shaders start with the frame");
                let wgsl = format!(
                    "{}\n{}",
                    include_str!("kernel_batched.wgsl"),
                    rewrite_x_reads(format_part)
                );
                let name = format!("gemv_batched_{}", &single.name["gemv_".len()..]);
                ShaderSource {
                    name: Box::leak(name.into_boxed_str()),
                    wgsl: Box::leak(wgsl.into_boxed_str()),
                }
            })
            .collect()
    });
    let i = WeightFormat::ALL.iter().position(|&f| f == format).unwrap();
    &all[i]
}

impl GemvBatched {
    fn x_is_vec4(&self) -> bool {
        batched_shader(self.gemv.format)
            .wgsl
            .contains("var<storage, read> x: array<vec4<f32>>")
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
        let name = batched_shader(g.format).name;
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
        need(w, g.weight_bytes().next_multiple_of(4), "weight")?;
        need(x, m * u64::from(g.cols) * 4, "x")?;
        need(y, m * u64::from(self.y_stride) * 4, "y")?;
        need(params, 16, "params")?;
        let tpr = g.default_tuning().threads_per_row;
        let x_stride = if self.x_is_vec4() { g.cols / 4 } else { g.cols };
        let pipeline = gpu.pipeline(
            batched_shader(g.format),
            "main",
            &[
                ("ROWS", f64::from(g.rows)),
                ("COLS", f64::from(g.cols)),
                ("OUT_OFFSET", f64::from(g.out_offset)),
                ("TPR", f64::from(tpr)),
                ("ACCUMULATE", if accumulate { 1.0 } else { 0.0 }),
                ("X_STRIDE", f64::from(x_stride)),
                ("Y_STRIDE", f64::from(self.y_stride)),
            ],
        )?;
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
    pub fn cpu(&self, w: &[u8], x: &[f32], y: &mut [f32], n_rows: u32, accumulate: bool) {
        let g = &self.gemv;
        let (cols, ys) = (g.cols as usize, self.y_stride as usize);
        for b in 0..n_rows as usize {
            let mut row = vec![0f32; (g.out_offset + g.rows) as usize];
            g.cpu(w, &x[b * cols..(b + 1) * cols], &mut row);
            for r in g.out_offset as usize..(g.out_offset + g.rows) as usize {
                let dst = &mut y[b * ys + r];
                *dst = if accumulate { *dst + row[r] } else { row[r] };
            }
        }
    }
}
