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
//! - q4_0, q4_1 and q8_0 (either layout) also have a dp4a form
//!   ([`GemvBatched::dispatch_dp4a`], `kernel_gemm_dp4a.wgsl`): 64x64 tiles of weight rows ×
//!   batch rows staged in workgroup memory, x quantized to int8 blocks as the dp4a gemv
//!   does, integer dot products; weights read once per 64 batch rows.

use std::sync::OnceLock;

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::{Gemv, QuantizeX, WeightLayout, WORKGROUP_SIZE};
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

/// Weight rows and batch rows of one dp4a gemm tile (`TM`, `TN` in `kernel_gemm_dp4a.wgsl`).
pub const GEMM_TILE: u32 = 64;

/// Workgroup memory the dp4a gemm stages a step in (`ws`, `wd`, `xs`, `xm`: 4 blocks of
/// 64 weight rows and 64 batch rows).
pub const GEMM_WORKGROUP_BYTES: u32 = 2 * (512 * 16 + 256 * 8);

/// The dp4a gemm shader of `format` in `layout`; `None` for formats it has no form for
/// (only q4_0, q4_1 and q8_0 do).
pub fn gemm_dp4a_shader(
    format: WeightFormat,
    layout: WeightLayout,
) -> Option<&'static ShaderSource> {
    static SHADERS: OnceLock<Vec<(WeightFormat, WeightLayout, ShaderSource)>> = OnceLock::new();
    let all = SHADERS.get_or_init(|| {
        let loader = |f: WeightFormat, l: WeightLayout| -> Option<&'static str> {
            Some(match (f, l) {
                (WeightFormat::Q4_0, WeightLayout::Packed) => {
                    include_str!("gemm_load_q4_0_packed.wgsl")
                }
                (WeightFormat::Q4_1, WeightLayout::Packed) => {
                    include_str!("gemm_load_q4_1_packed.wgsl")
                }
                (WeightFormat::Q8_0, WeightLayout::Packed) => {
                    include_str!("gemm_load_q8_0_packed.wgsl")
                }
                (WeightFormat::Q4_0, WeightLayout::Gguf) => {
                    include_str!("gemm_load_q4_0_gguf.wgsl")
                }
                (WeightFormat::Q4_1, WeightLayout::Gguf) => {
                    include_str!("gemm_load_q4_1_gguf.wgsl")
                }
                (WeightFormat::Q8_0, WeightLayout::Gguf) => {
                    include_str!("gemm_load_q8_0_gguf.wgsl")
                }
                _ => return None,
            })
        };
        WeightLayout::ALL
            .iter()
            .flat_map(|&l| WeightFormat::ALL.iter().map(move |&f| (f, l)))
            .filter_map(|(f, l)| {
                let load = loader(f, l)?;
                let common = match l {
                    WeightLayout::Packed => include_str!("packed_common.wgsl"),
                    WeightLayout::Gguf => "",
                };
                let wgsl = format!(
                    "{}\n{common}\n{}\n{}\n{load}",
                    include_str!("kernel_gemm_dp4a.wgsl"),
                    include_str!("quant_common.wgsl"),
                    include_str!("idot_common.wgsl"),
                );
                let name = match l {
                    WeightLayout::Gguf => format!("gemm_dp4a_{}", f.name()),
                    _ => format!("gemm_dp4a_{}.{}", f.name(), l.name()),
                };
                Some((
                    f,
                    l,
                    ShaderSource {
                        name: Box::leak(name.into_boxed_str()),
                        wgsl: Box::leak(wgsl.into_boxed_str()),
                    },
                ))
            })
            .collect()
    });
    all.iter()
        .find(|(f, l, _)| (*f, *l) == (format, layout))
        .map(|(_, _, s)| s)
}

/// Every dp4a gemm shader (for the CPU executors).
pub fn gemm_dp4a_shaders() -> Vec<&'static ShaderSource> {
    WeightLayout::ALL
        .into_iter()
        .flat_map(|l| {
            WeightFormat::ALL
                .into_iter()
                .filter_map(move |f| gemm_dp4a_shader(f, l))
        })
        .collect()
}

impl GemvBatched {
    fn x_is_vec4(&self) -> bool {
        super::shader::x_is_vec4(self.gemv.format)
    }

    /// Declared cost for a full batch of `max_batch` rows (weights read once per chunk of 8).
    pub fn cost(&self) -> Cost {
        self.cost_reading_weights_per(BATCH_CHUNK)
    }

    /// A full batch's cost when the weights are read once per `rows_per_pass` batch rows.
    fn cost_reading_weights_per(&self, rows_per_pass: u32) -> Cost {
        let (rows, cols, m) = (
            u64::from(self.gemv.rows),
            u64::from(self.gemv.cols),
            u64::from(self.max_batch),
        );
        Cost {
            bytes: self.gemv.weight_bytes() * m.div_ceil(u64::from(rows_per_pass))
                + m * (cols + rows) * 4,
            flops: 2 * m * rows * cols,
        }
    }

    /// The shape's and buffers' checks both forms make before building a dispatch; `x`
    /// must hold `x_bytes`.
    fn check(
        &self,
        name: &str,
        w: &GpuBuffer,
        (x, x_bytes): (&GpuBuffer, u64),
        y: &GpuBuffer,
        params: &GpuBuffer,
    ) -> Result<(), GpuError> {
        let g = &self.gemv;
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
        need(x, x_bytes, "x")?;
        need(y, m * u64::from(self.y_stride) * 4, "y")?;
        need(params, 16, "params")?;
        Ok(())
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
        let shader = batched_shader(g.format, g.layout);
        let x_bytes = u64::from(self.max_batch) * u64::from(g.cols) * 4;
        self.check(shader.name, w, (x, x_bytes), y, params)?;
        let tpr = g.default_tuning().threads_per_row;
        let x_stride = if self.x_is_vec4() { g.cols / 4 } else { g.cols };
        self.build(
            gpu,
            shader,
            &[("TPR", f64::from(tpr)), ("X_STRIDE", f64::from(x_stride))],
            [
                g.rows.div_ceil(WORKGROUP_SIZE / tpr),
                self.max_batch.div_ceil(BATCH_CHUNK),
            ],
            self.cost(),
            [w, x, y, params],
            accumulate,
        )
    }

    /// The pipeline, bind group and dispatch both forms share: the constants every
    /// batched frame takes plus `extra`, bindings w, x, y, params, `grid` workgroups.
    #[allow(clippy::too_many_arguments)]
    fn build(
        &self,
        gpu: &Gpu,
        shader: &ShaderSource,
        extra: &[(&str, f64)],
        grid: [u32; 2],
        cost: Cost,
        [w, x, y, params]: [&GpuBuffer; 4],
        accumulate: bool,
    ) -> Result<Dispatch, GpuError> {
        let g = &self.gemv;
        if grid[0] > 65535 || grid[1] > 65535 {
            return Err(GpuError::Invalid(format!(
                "{}: too many rows for one dispatch: split the matrix",
                shader.name
            )));
        }
        let mut constants = vec![
            ("ROWS", f64::from(g.rows)),
            ("COLS", f64::from(g.cols)),
            ("OUT_OFFSET", f64::from(g.out_offset)),
            ("ACCUMULATE", if accumulate { 1.0 } else { 0.0 }),
            ("Y_STRIDE", f64::from(self.y_stride)),
        ];
        constants.extend_from_slice(extra);
        if g.layout == WeightLayout::Packed {
            constants.push((
                "SCALES_AT",
                f64::from(WeightLayout::scales_at(g.format, g.rows, g.cols)),
            ));
        }
        let pipeline = gpu.pipeline(shader, "main", &constants)?;
        let bind_group = gpu.bind_group(&pipeline, &[w, x, y, params])?;
        let reads: &[&GpuBuffer] = if accumulate {
            &[w, x, y, params]
        } else {
            &[w, x, params]
        };
        Ok(Dispatch::new(
            shader.name,
            pipeline,
            bind_group,
            [grid[0], grid[1], 1],
            cost,
            reads,
            &[y],
        ))
    }

    /// Declared cost of the dp4a form for a full batch: weights read once per tile of
    /// [`GEMM_TILE`] batch rows, x as quantized blocks (48 bytes per 32 elements).
    pub fn cost_dp4a(&self) -> Cost {
        let f32_x = u64::from(self.max_batch) * u64::from(self.gemv.cols) * 4;
        let c = self.cost_reading_weights_per(GEMM_TILE);
        Cost {
            bytes: c.bytes - f32_x + self.quantize_x().buffer_bytes(),
            ..c
        }
    }

    /// Whether the dp4a form has a kernel for this matrix's format and layout and `gpu`
    /// gives a workgroup the memory it stages in ([`GEMM_WORKGROUP_BYTES`]).
    pub fn runs_dp4a(&self, gpu: &Gpu) -> bool {
        gemm_dp4a_shader(self.gemv.format, self.gemv.layout).is_some()
            && gpu.limits().max_compute_workgroup_storage_size >= GEMM_WORKGROUP_BYTES
    }

    /// The quantization of x the dp4a form reads: its dispatch goes first, into a buffer
    /// of [`QuantizeX::buffer_bytes`] that every matrix multiplying the same x can share.
    pub fn quantize_x(&self) -> QuantizeX {
        QuantizeX {
            cols: self.gemv.cols,
            max_batch: self.max_batch,
        }
    }

    /// Builds the dp4a form's dispatch: bindings as [`Self::dispatch`]'s, but x as
    /// [`Self::quantize_x`] wrote it (`xq`). It computes with x quantized per 32-element
    /// block ([`super::q8_blocks`]): [`Self::cpu_q8`] is its oracle.
    pub fn dispatch_dp4a(
        &self,
        gpu: &Gpu,
        w: &GpuBuffer,
        xq: &GpuBuffer,
        y: &GpuBuffer,
        params: &GpuBuffer,
        accumulate: bool,
    ) -> Result<Dispatch, GpuError> {
        let g = &self.gemv;
        let shader = gemm_dp4a_shader(g.format, g.layout).ok_or_else(|| {
            GpuError::Invalid(format!(
                "gemm_dp4a: no kernel for {} weights in the {} layout (q4_0, q4_1, q8_0 only)",
                g.format.name(),
                g.layout.name()
            ))
        })?;
        self.check(
            shader.name,
            w,
            (xq, self.quantize_x().buffer_bytes()),
            y,
            params,
        )?;
        let limit = gpu.limits().max_compute_workgroup_storage_size;
        if limit < GEMM_WORKGROUP_BYTES {
            return Err(GpuError::Invalid(format!(
                "{}: stages {GEMM_WORKGROUP_BYTES} bytes of workgroup memory, the device allows {limit} (use the batched gemv)",
                shader.name
            )));
        }
        self.build(
            gpu,
            shader,
            &[],
            [
                g.rows.div_ceil(GEMM_TILE),
                self.max_batch.div_ceil(GEMM_TILE),
            ],
            self.cost_dp4a(),
            [w, xq, y, params],
            accumulate,
        )
    }

    /// The dp4a form's oracle: [`Self::cpu`] over each x row quantized by
    /// [`super::q8_blocks`] (in f32, as the kernel does).
    pub fn cpu_q8<T: crate::Real>(
        &self,
        w: &[u8],
        x: &[T],
        y: &mut [T],
        n_rows: u32,
        accumulate: bool,
    ) {
        let cols = self.gemv.cols as usize;
        let xq: Vec<T> = x[..n_rows as usize * cols]
            .chunks(cols)
            .flat_map(|row| {
                let f: Vec<f32> = row.iter().map(|v| v.as_f32()).collect();
                super::q8_blocks(&f).into_iter().map(T::of)
            })
            .collect();
        self.cpu(w, &xq, y, n_rows, accumulate)
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
