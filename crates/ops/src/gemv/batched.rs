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
//! - q4_0, q4_1 and q8_0 (either layout) also have two gemm forms
//!   ([`GemvBatched::dispatch_gemm`]), 64x64 tiles of weight rows × batch rows staged in
//!   workgroup memory, weights read once per 64 batch rows: dp4a (`kernel_gemm_dp4a.wgsl`:
//!   x quantized to int8 blocks as the dp4a gemv does, integer dot products) and coopmat
//!   (`kernel_gemm_coopmat.wgsl`: f16 tiles on cooperative matrices, where wgpu offers
//!   them: tensor cores).

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

/// The batched wide rows frame's shader for `format` (`kernel_batched_rows_wide.wgsl`:
/// packed q4_0 / q4_1 / q8_0 read as `vec4<u64>`, for CPU adapters), named
/// `gemv_batched_<fmt>.packed.wide`; `None` for other formats.
pub fn batched_wide_shader(format: WeightFormat) -> Option<&'static ShaderSource> {
    static SHADERS: OnceLock<Vec<(WeightFormat, ShaderSource)>> = OnceLock::new();
    let all = SHADERS.get_or_init(|| {
        [WeightFormat::Q4_0, WeightFormat::Q4_1, WeightFormat::Q8_0]
            .into_iter()
            .map(|f| {
                let name = format!(
                    "gemv_batched_{}.{}.wide",
                    f.name(),
                    WeightLayout::Packed.name()
                );
                let wgsl = format!(
                    "// {name}: composed by gpuscope-ops (gemv/batched.rs).\n{}\n{}\n{}",
                    include_str!("kernel_batched_rows_wide.wgsl"),
                    include_str!("wide_common.wgsl"),
                    super::shader::wide_format_part(f),
                );
                (
                    f,
                    ShaderSource {
                        name: Box::leak(name.into_boxed_str()),
                        wgsl: Box::leak(wgsl.into_boxed_str()),
                    },
                )
            })
            .collect()
    });
    all.iter().find(|(f, _)| *f == format).map(|(_, s)| s)
}

/// Weight rows per lane of the batched wide rows frame (`LANE_ROWS` in
/// `kernel_batched_rows_wide.wgsl`): x, loaded per batch row, is shared by them.
const BATCHED_WIDE_LANE_ROWS: u32 = 8;

/// Weight rows and batch rows of one dp4a gemm tile (`TM`, `TN` in
/// `kernel_gemm_dp4a.wgsl`), and of the coopmat gemm's smaller tile.
pub const GEMM_TILE: u32 = 64;

/// The coopmat gemm's tile sides: 64 (4 subgroups of 32 × 32 outputs) and 128 (8 subgroups
/// of 32 × 64), chosen per matrix ([`GemvBatched::gemm_tile`]).
pub const COOPMAT_TILES: [u32; 2] = [64, 128];

/// Weight rows from which the coopmat gemm takes 128-wide tiles (where the device gives
/// a workgroup their memory): faster for Llama-8B's 4096- and 14336-row matrices, slower
/// for SmolLM2's 576-1536 rows, where 128-wide tiles leave SMs idle (measured:
/// BENCHMARKS.md, run 11).
pub const COOPMAT_WIDE_ROWS: u32 = 4096;

/// What a gemm does with y.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GemmOut {
    /// y = W·x.
    Store,
    /// y += W·x (a fused residual add).
    Accumulate,
    /// K split in `n` parts, summed apart so that `n` times the workgroups share the
    /// matrix: part p of y (`max_batch × y_stride` floats after part p − 1) = the product
    /// over the p-th `cols / n` columns; the reader adds the parts. Coopmat only, with
    /// `cols` whole 64-column steps in each part.
    Parts(u32),
    /// y = silu(gate) · up, for the gate/up matrix of `ffn` gate rows and `ffn` up rows
    /// from row `up_row` (its rows are `up_row + ffn`): y gets `ffn` columns. The fused
    /// activation of the prompt's FFN; coopmat only.
    SiluMul { ffn: u32, up_row: u32 },
}

/// How a gemm's output lies in y ([`GemvBatched::gemm_layout`]); its copies of y's rows
/// are [`GemmOut::parts`].
struct GemmLayout {
    /// Columns of a y row written, from `out_offset`.
    y_cols: u32,
    /// Tile rows the grid covers.
    grid_rows: u32,
}

impl GemmOut {
    /// The parts of y it writes.
    pub fn parts(self) -> u32 {
        match self {
            GemmOut::Parts(n) => n,
            GemmOut::Store | GemmOut::Accumulate | GemmOut::SiluMul { .. } => 1,
        }
    }
}

/// The tiled prompt-processing kernels over q4_0 / q4_1 / q8_0 weights (either layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GemmKind {
    /// `kernel_gemm_dp4a.wgsl`: x quantized to int8 blocks ([`QuantizeX`]), integer dot
    /// products.
    Dp4a,
    /// `kernel_gemm_coopmat.wgsl`: weights dequantized to f16 and x converted to f16 in
    /// workgroup memory, 16x16 cooperative-matrix multiply-adds (tensor cores) into f32.
    Coopmat,
}

impl GemmKind {
    pub const ALL: [GemmKind; 2] = [GemmKind::Dp4a, GemmKind::Coopmat];

    pub fn name(self) -> &'static str {
        match self {
            GemmKind::Dp4a => "dp4a",
            GemmKind::Coopmat => "coopmat",
        }
    }

    /// The tile sides this kind has shaders for.
    pub fn tiles(self) -> &'static [u32] {
        match self {
            GemmKind::Dp4a => &[GEMM_TILE],
            GemmKind::Coopmat => &COOPMAT_TILES,
        }
    }

    /// Workgroup memory one workgroup of a `tile`-wide tile stages in: dp4a `ws`, `wd`,
    /// `xs`, `xm` (4 blocks of 64 weight rows and 64 batch rows); coopmat `wa`, `xb` (tile
    /// rows of 72 halves each) and `ys` (a 16x16 f32 fragment per subgroup).
    pub fn workgroup_bytes(self, tile: u32) -> u32 {
        match self {
            GemmKind::Dp4a => 2 * (512 * 16 + 256 * 8),
            GemmKind::Coopmat => 2 * tile * 18 * 8 + (2 * tile / 32) * 64 * 16,
        }
    }

    /// Whether `gpu` runs this kernel (with its smallest tile): the workgroup memory, and
    /// for coopmat the cooperative-matrix feature ([`Gpu::cooperative_matrix_f16`]) with
    /// subgroups of exactly 32 (the kernel splits its tile among subgroups of 32).
    pub fn supported(self, gpu: &Gpu) -> Result<(), String> {
        let limit = gpu.limits().max_compute_workgroup_storage_size;
        let bytes = self.workgroup_bytes(self.tiles()[0]);
        if limit < bytes {
            return Err(format!(
                "the {} gemm stages {bytes} bytes of workgroup memory, the device allows {limit}",
                self.name(),
            ));
        }
        if self == GemmKind::Coopmat {
            if !gpu.cooperative_matrix_f16() {
                return Err("the coopmat gemm needs 16x16 f16 cooperative matrices with f32 accumulators (wgpu's EXPERIMENTAL_COOPERATIVE_MATRIX), which this adapter does not offer".into());
            }
            let info = gpu.adapter_info();
            if (info.subgroup_min_size, info.subgroup_max_size) != (32, 32) {
                return Err(format!(
                    "the coopmat gemm needs subgroups of 32, this adapter's are {}..{}",
                    info.subgroup_min_size, info.subgroup_max_size
                ));
            }
        }
        Ok(())
    }

    /// The frame's WGSL for a `tile`-wide tile (coopmat's template filled in).
    fn frame(self, tile: u32) -> String {
        match self {
            GemmKind::Dp4a => include_str!("kernel_gemm_dp4a.wgsl").to_string(),
            GemmKind::Coopmat => coopmat_frame(tile),
        }
    }
}

/// `kernel_gemm_coopmat.wgsl` for a `tile`-wide tile: each subgroup takes 32 weight rows
/// (two A fragments) by 16 · FN batch rows (FN B fragments), FN = 2 at 64, 4 at 128.
fn coopmat_frame(tile: u32) -> String {
    let fn_count = tile / 32;
    // Fragment (i, j): weight rows rf + 16i.., batch rows bf + 16j...
    let frags_ij: Vec<(u32, u32)> = (0..2)
        .flat_map(|i| (0..fn_count).map(move |j| (i, j)))
        .collect();
    let y_at = |i: u32, j: u32| {
        format!(
            "        let y{i}{j} = yo + (bf + {}u) * Y_STRIDE + OUT_OFFSET + rf + {}u;\n",
            16 * j,
            16 * i
        )
    };
    let mut acc: String = frags_ij
        .iter()
        .map(|(i, j)| format!("    var c{i}{j} = coop_mat16x16<f32, C>();\n"))
        .collect();
    // Nested, not `&&`: naga lowers `&&` to a local variable, which its uniformity
    // analysis does not follow.
    acc += "    if whole {\n    if ACCUMULATE != 0u {\n        let s = Y_STRIDE;\n";
    for &(i, j) in &frags_ij {
        acc += &y_at(i, j);
        acc += &format!("        c{i}{j} = coopLoad<coop_mat16x16<f32, C>>(&y[y{i}{j}], s);\n");
    }
    acc += "    }\n    }\n";
    let mut frags = String::new();
    for j in 0..fn_count {
        frags += &format!(
            "            let ib{j} = (WN * sn + {}u) * SV + kk * 4u;\n            let f{j} = coopLoad<coop_mat16x16<f16, B>>(&xb[ib{j}], s);\n",
            16 * j
        );
    }
    for &(i, j) in &frags_ij {
        frags += &format!("            c{i}{j} = coopMultiplyAdd(a{i}, f{j}, c{i}{j});\n");
    }
    // silu(gate) · up: each subgroup's pairs (c0j gate, c1j up) for every tile.
    let mut emits = String::from("    if SILU_UP != 0u {\n        let lane = lid % 32u;\n");
    for j in 0..fn_count {
        emits += &format!(
            "        emit_silu(c0{j}, c1{j}, sg, lane, r0 / 2u + 16u * sm, bf + {}u, n);\n",
            16 * j
        );
    }
    emits += "    } else {\n    if whole {\n        let s = Y_STRIDE;\n";
    for &(i, j) in &frags_ij {
        emits += &y_at(i, j);
        emits += &format!("        coopStore(c{i}{j}, &y[y{i}{j}], s);\n");
    }
    emits += "    } else {\n        let lane = lid % 32u;\n";
    for &(i, j) in &frags_ij {
        emits += &format!(
            "        emit(c{i}{j}, sg, lane, rf + {}u, bf + {}u, n, yo);\n",
            16 * i,
            16 * j
        );
    }
    emits += "    }\n    }\n";
    include_str!("kernel_gemm_coopmat.wgsl")
        .replace("ACCUMULATORS\n", &acc)
        .replace("FRAGMENTS\n", &frags)
        .replace("EMITS\n", &emits)
        .replace("TILE_SIZEu", &format!("{tile}u"))
        .replace("SUBGROUP_COLSu", &format!("{}u", 16 * fn_count))
        .replace("TILE_SVu", &format!("{}u", tile * 18))
        .replace("YS_SIZEu", &format!("{}u", 2 * tile / 32 * 64))
}

/// The gemm shader of `kind` with `tile`-wide tiles for `format` in `layout`; `None` for
/// formats it has no form for (only q4_0, q4_1 and q8_0 do) and tiles it has no shader
/// for ([`GemmKind::tiles`]).
pub fn gemm_shader(
    kind: GemmKind,
    tile: u32,
    format: WeightFormat,
    layout: WeightLayout,
) -> Option<&'static ShaderSource> {
    type Shaders = Vec<(GemmKind, u32, WeightFormat, WeightLayout, ShaderSource)>;
    static SHADERS: OnceLock<Shaders> = OnceLock::new();
    let all = SHADERS.get_or_init(|| {
        // A format whose 32-element blocks are (d, o) with quants that fit int8 has a
        // loader: q6_K, whose 16-element sub-blocks each have their own scale, has none.
        let loader = |f: WeightFormat, l: WeightLayout| -> Option<&'static str> {
            Some(match (f, l) {
                (WeightFormat::Q4_K, WeightLayout::Gguf) => {
                    concat!(
                        include_str!("gemm_k_sub_block.wgsl"),
                        include_str!("gemm_load_q4_k_gguf.wgsl")
                    )
                }
                (WeightFormat::Q5_K, WeightLayout::Gguf) => {
                    concat!(
                        include_str!("gemm_k_sub_block.wgsl"),
                        include_str!("gemm_load_q5_k_gguf.wgsl")
                    )
                }
                (WeightFormat::Q5_0, WeightLayout::Gguf) => {
                    concat!(
                        include_str!("gemm_q5_block.wgsl"),
                        include_str!("gemm_load_q5_0_gguf.wgsl")
                    )
                }
                (WeightFormat::Q5_1, WeightLayout::Gguf) => {
                    concat!(
                        include_str!("gemm_q5_block.wgsl"),
                        include_str!("gemm_load_q5_1_gguf.wgsl")
                    )
                }
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
        let mut out = Vec::new();
        for kind in GemmKind::ALL {
            for &tile in kind.tiles() {
                for l in WeightLayout::ALL {
                    for f in WeightFormat::ALL {
                        let Some(load) = loader(f, l) else {
                            continue;
                        };
                        let common = match l {
                            WeightLayout::Packed => include_str!("packed_common.wgsl"),
                            WeightLayout::Gguf => "",
                        };
                        let wgsl = format!(
                            "{}\n{common}\n{}\n{}\n{}\n{load}",
                            kind.frame(tile),
                            include_str!("quant_common.wgsl"),
                            include_str!("idot_common.wgsl"),
                            include_str!("gemm_raw.wgsl"),
                        );
                        let mut name = format!("gemm_{}_{}", kind.name(), f.name());
                        if l != WeightLayout::Gguf {
                            name += &format!(".{}", l.name());
                        }
                        if tile != GEMM_TILE {
                            name += &format!(".t{tile}");
                        }
                        let source = ShaderSource {
                            name: Box::leak(name.into_boxed_str()),
                            wgsl: Box::leak(wgsl.into_boxed_str()),
                        };
                        out.push((kind, tile, f, l, source));
                    }
                }
            }
        }
        out
    });
    all.iter()
        .find(|(k, t, f, l, _)| (*k, *t, *f, *l) == (kind, tile, format, layout))
        .map(|(.., s)| s)
}

/// Every gemm shader of `kind`, every tile (for the CPU executors).
pub fn gemm_shaders(kind: GemmKind) -> Vec<&'static ShaderSource> {
    let mut out = Vec::new();
    for &tile in kind.tiles() {
        for l in WeightLayout::ALL {
            for f in WeightFormat::ALL {
                out.extend(gemm_shader(kind, tile, f, l));
            }
        }
    }
    out
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
        (y, y_parts, y_cols): (&GpuBuffer, u32, u32),
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
        if self.y_stride < g.out_offset + y_cols {
            return Err(invalid(format!(
                "y_stride {} < out_offset + {y_cols} columns written",
                self.y_stride
            )));
        }
        let m = u64::from(self.max_batch);
        if u64::from(g.rows) * u64::from(g.cols) > u64::from(u32::MAX)
            || u64::from(y_parts) * m * u64::from(self.y_stride) > u64::from(u32::MAX)
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
        need(
            y,
            u64::from(y_parts) * m * u64::from(self.y_stride) * 4,
            "y",
        )?;
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
        self.check(shader.name, w, (x, x_bytes), (y, 1, g.rows), params)?;
        let tpr = g.default_tuning().threads_per_row;
        let x_stride = if self.x_is_vec4() { g.cols / 4 } else { g.cols };
        self.build(
            gpu,
            shader,
            &[("TPR", f64::from(tpr)), ("X_STRIDE", f64::from(x_stride))],
            [
                g.rows.div_ceil(WORKGROUP_SIZE / tpr),
                self.max_batch.div_ceil(BATCH_CHUNK),
                1,
            ],
            self.cost(),
            [w, x, y, params],
            accumulate,
            false,
        )
    }

    /// Whether [`Self::dispatch_wide`] runs this matrix on `gpu`: the wide rows frame's
    /// conditions (packed q4_0 / q4_1 / q8_0, rows of an even number of blocks, a device
    /// with SHADER_INT64 and subgroups of exactly 8 lanes; see `shader::wide`).
    pub fn runs_wide(&self, gpu: &Gpu) -> bool {
        super::shader::wide(gpu, super::GemvVariant::Rows, &self.gemv)
    }

    /// The batched form of the wide rows frame (CPU adapters: lavapipe): bindings as
    /// [`Self::dispatch`]'s; each workgroup loads its rows' weights once per 8 batch rows.
    pub fn dispatch_wide(
        &self,
        gpu: &Gpu,
        w: &GpuBuffer,
        x: &GpuBuffer,
        y: &GpuBuffer,
        params: &GpuBuffer,
        accumulate: bool,
    ) -> Result<Dispatch, GpuError> {
        let g = &self.gemv;
        let shader = batched_wide_shader(g.format)
            .filter(|_| self.runs_wide(gpu))
            .ok_or_else(|| {
                GpuError::Invalid(format!(
                    "gemv_batched_{} {}x{}: the wide rows frame needs packed q4_0 / q4_1 / q8_0 weights, a multiple of 64 columns, SHADER_INT64 and 8-lane subgroups (use the batched gemv)",
                    g.format.name(),
                    g.rows,
                    g.cols
                ))
            })?;
        let x_bytes = u64::from(self.max_batch) * u64::from(g.cols) * 4;
        self.check(shader.name, w, (x, x_bytes), (y, 1, g.rows), params)?;
        let wg = super::ROWS_WORKGROUP_SIZE;
        // Built without naga's runtime checks, as the decoder's wide frame (its proof is
        // at `GemvFused::dispatch`); here besides: batch rows are below min(params[1],
        // MAX_BATCH) = at most max_batch, so x rows (COLS / 8 elements each) and y rows
        // (Y_STRIDE, written below OUT_OFFSET + ROWS <= Y_STRIDE) stay inside the sizes
        // `check` verified.
        self.build(
            gpu,
            shader,
            &[
                ("WG", f64::from(wg)),
                ("MAX_BATCH", f64::from(self.max_batch)),
            ],
            [
                g.rows.div_ceil(wg * BATCHED_WIDE_LANE_ROWS),
                self.max_batch.div_ceil(BATCH_CHUNK),
                1,
            ],
            self.cost(),
            [w, x, y, params],
            accumulate,
            true,
        )
    }

    /// The pipeline, bind group and dispatch the forms share: the constants every
    /// batched frame takes plus `extra`, bindings w, x, y, params, `grid` workgroups;
    /// `trusted`: built without naga's runtime checks (the caller gives the proof).
    #[allow(clippy::too_many_arguments)]
    fn build(
        &self,
        gpu: &Gpu,
        shader: &ShaderSource,
        extra: &[(&str, f64)],
        grid: [u32; 3],
        cost: Cost,
        [w, x, y, params]: [&GpuBuffer; 4],
        accumulate: bool,
        trusted: bool,
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
        let pipeline = if trusted {
            gpu.pipeline_trusted(shader, "main", &constants)?
        } else {
            gpu.pipeline(shader, "main", &constants)?
        };
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
            grid,
            cost,
            reads,
            &[y],
        ))
    }

    /// Declared cost of a gemm form for a full batch: weights read once per tile of
    /// `tile` batch rows; x as quantized blocks (dp4a: 48 bytes per 32 elements) or as
    /// f32 (coopmat).
    pub fn cost_gemm(&self, kind: GemmKind, tile: u32) -> Cost {
        let f32_x = u64::from(self.max_batch) * u64::from(self.gemv.cols) * 4;
        let c = self.cost_reading_weights_per(tile);
        match kind {
            GemmKind::Dp4a => Cost {
                bytes: c.bytes - f32_x + self.quantize_x().buffer_bytes(),
                ..c
            },
            GemmKind::Coopmat => c,
        }
    }

    /// The tile side the gemm of `kind` takes for this matrix on `gpu`: coopmat's 128 from
    /// [`COOPMAT_WIDE_ROWS`] rows where the device gives a workgroup its memory, else 64.
    pub fn gemm_tile(&self, kind: GemmKind, gpu: &Gpu) -> u32 {
        let wide = COOPMAT_TILES[1];
        if kind == GemmKind::Coopmat
            && self.gemv.rows >= COOPMAT_WIDE_ROWS
            && gpu.limits().max_compute_workgroup_storage_size >= kind.workgroup_bytes(wide)
        {
            wide
        } else {
            GEMM_TILE
        }
    }

    /// Whether the gemm of `kind` has a kernel for this matrix's format and layout and
    /// `gpu` runs it ([`GemmKind::supported`]).
    pub fn runs_gemm(&self, kind: GemmKind, gpu: &Gpu) -> bool {
        gemm_shader(kind, GEMM_TILE, self.gemv.format, self.gemv.layout).is_some()
            && kind.supported(gpu).is_ok()
    }

    /// The quantization of x the dp4a form reads: its dispatch goes first, into a buffer
    /// of [`QuantizeX::buffer_bytes`] that every matrix multiplying the same x can share.
    pub fn quantize_x(&self) -> QuantizeX {
        QuantizeX {
            cols: self.gemv.cols,
            max_batch: self.max_batch,
        }
    }

    /// Builds a gemm form's dispatch: bindings as [`Self::dispatch`]'s, but for dp4a x as
    /// [`Self::quantize_x`] wrote it (`xq`). dp4a computes with x quantized per 32-element
    /// block ([`super::q8_blocks`]; oracle [`Self::cpu_q8`]), coopmat with x and the
    /// weights rounded to f16 (oracle [`Self::cpu_f16`]). `out`: what it does with y.
    #[allow(clippy::too_many_arguments)]
    pub fn dispatch_gemm(
        &self,
        kind: GemmKind,
        gpu: &Gpu,
        w: &GpuBuffer,
        x: &GpuBuffer,
        y: &GpuBuffer,
        params: &GpuBuffer,
        out: GemmOut,
    ) -> Result<Dispatch, GpuError> {
        let g = &self.gemv;
        let tile = self.gemm_tile(kind, gpu);
        let shader = gemm_shader(kind, tile, g.format, g.layout).ok_or_else(|| {
            GpuError::Invalid(format!(
                "gemm_{}: no kernel for {} weights in the {} layout (q4_0, q4_1, q8_0 only)",
                kind.name(),
                g.format.name(),
                g.layout.name()
            ))
        })?;
        let x_bytes = match kind {
            GemmKind::Dp4a => self.quantize_x().buffer_bytes(),
            GemmKind::Coopmat => u64::from(self.max_batch) * u64::from(g.cols) * 4,
        };
        let layout = self
            .gemm_layout(kind, out)
            .map_err(|why| GpuError::Invalid(format!("{}: {why}", shader.name)))?;
        let parts = out.parts();
        self.check(
            shader.name,
            w,
            (x, x_bytes),
            (y, parts, layout.y_cols),
            params,
        )?;
        kind.supported(gpu).map_err(|why| {
            GpuError::Invalid(format!("{}: {why} (use the batched gemv)", shader.name))
        })?;
        // coopmat is built without naga's runtime checks: with them (ReadZeroSkipWrite on
        // every index) Llama-8B pp512 ran at 1,125 tok/s on an H100, without at 4,020. In
        // range by construction, with the sizes `check` verified: batch rows are below
        // min(params[1], MAX_BATCH) <= max_batch (x is read at clamped rows, y written
        // below them; a whole tile's cooperative loads and stores of y only where its
        // rows lie below ROWS and its batch rows below that bound), weight rows clamped
        // to ROWS - 1 (with SILU_UP: gate rows to FFN - 1, up rows UP_ROW + those, below
        // ROWS = UP_ROW + FFN as `gemm_layout` requires) and blocks to COLS / 32 - 1 (a
        // block's words lie in it but for q4_0's and q8_0's spliced word, at most 2 bytes
        // past the last block, inside the buffer's 4-byte padding), x's columns clamped
        // below COLS / 4 vec4s; y's part z < K_PARTS lies inside the K_PARTS copies
        // `check` sized, and silu · up writes columns below FFN = `y_cols`; the workgroup
        // arrays' indices and fragments stay below their sizes as the kernel's comments
        // work out for either tile; every loop is bounded by a constant. dp4a keeps the
        // checks (its params are not clamped).
        let mut coopmat = vec![
            ("MAX_BATCH", f64::from(self.max_batch)),
            ("K_PARTS", f64::from(parts)),
        ];
        if let GemmOut::SiluMul { ffn, up_row } = out {
            coopmat.extend([
                ("SILU_UP", 1.0),
                ("FFN", f64::from(ffn)),
                ("UP_ROW", f64::from(up_row)),
            ]);
        }
        let (extra, trusted): (&[(&str, f64)], bool) = match kind {
            GemmKind::Dp4a => (&[], false),
            GemmKind::Coopmat => (&coopmat, true),
        };
        let mut cost = self.cost_gemm(kind, tile);
        // y as written: every part's copy of its rows, of y_cols columns each.
        let m = u64::from(self.max_batch);
        cost.bytes = cost.bytes - 4 * m * u64::from(g.rows)
            + 4 * u64::from(parts) * m * u64::from(layout.y_cols);
        self.build(
            gpu,
            shader,
            extra,
            [
                layout.grid_rows.div_ceil(tile),
                self.max_batch.div_ceil(tile),
                parts,
            ],
            cost,
            [w, x, y, params],
            out == GemmOut::Accumulate,
            trusted,
        )
    }

    /// Where `out` puts the product in y, or why this gemm cannot.
    fn gemm_layout(&self, kind: GemmKind, out: GemmOut) -> Result<GemmLayout, String> {
        let g = &self.gemv;
        let whole = GemmLayout {
            y_cols: g.rows,
            grid_rows: g.rows,
        };
        match out {
            GemmOut::Store | GemmOut::Accumulate => Ok(whole),
            _ if kind != GemmKind::Coopmat => Err(format!("{out:?} needs the coopmat gemm")),
            GemmOut::Parts(n) if n >= 1 && g.cols.is_multiple_of(64 * n) => Ok(whole),
            GemmOut::Parts(n) => Err(format!(
                "K in {n} parts needs {} columns in whole 64-column steps a part",
                g.cols
            )),
            GemmOut::SiluMul { ffn, up_row }
                if ffn > 0 && up_row >= ffn && g.rows == up_row + ffn =>
            {
                Ok(GemmLayout {
                    y_cols: ffn,
                    grid_rows: 2 * ffn,
                })
            }
            GemmOut::SiluMul { ffn, up_row } => Err(format!(
                "silu(gate) · up needs {ffn} gate rows, up rows from {up_row} >= {ffn} and the matrix's {} rows = up_row + ffn",
                g.rows
            )),
        }
    }

    /// The coopmat form's oracle: [`Self::cpu`] over x rounded to f16. The kernel also
    /// rounds each dequantized weight to f16 (relative error at most 2^-11), which this
    /// oracle does not: checks compare it within their float tolerance.
    pub fn cpu_f16<T: crate::Real>(
        &self,
        w: &[u8],
        x: &[T],
        y: &mut [T],
        n_rows: u32,
        accumulate: bool,
    ) {
        self.cpu_f16_part(w, x, y, n_rows, accumulate, (0, 1))
    }

    /// [`Self::cpu_f16`] over part `p` of `parts` of K ([`GemmOut::Parts`]): the columns
    /// outside the p-th `cols / parts` count as zero.
    pub fn cpu_f16_part<T: crate::Real>(
        &self,
        w: &[u8],
        x: &[T],
        y: &mut [T],
        n_rows: u32,
        accumulate: bool,
        (p, parts): (u32, u32),
    ) {
        let cols = self.gemv.cols as usize;
        let part = cols / parts as usize;
        let range = p as usize * part..(p as usize + 1) * part;
        self.cpu_over_rounded_x(w, x, y, n_rows, accumulate, |row| {
            row.iter()
                .enumerate()
                .map(|(i, &v)| match range.contains(&i) {
                    true => half::f16::from_f32(v).to_f32(),
                    false => 0.0,
                })
                .collect()
        })
    }

    /// The coopmat form's oracle for [`GemmOut::SiluMul`]: [`Self::cpu_f16`]'s gate and up
    /// rows, then silu(gate) · up into y's `ffn` columns from `out_offset`.
    pub fn cpu_f16_silu<T: crate::Real>(
        &self,
        w: &[u8],
        x: &[T],
        y: &mut [T],
        n_rows: u32,
        (ffn, up_row): (u32, u32),
    ) {
        let rows = self.gemv.rows as usize;
        let whole = GemvBatched {
            gemv: super::Gemv {
                out_offset: 0,
                ..self.gemv
            },
            y_stride: self.gemv.rows,
            ..*self
        };
        let mut gu = vec![T::zero(); n_rows as usize * rows];
        whole.cpu_f16(w, x, &mut gu, n_rows, false);
        let act = crate::silu_mul::SiluMul { n: ffn };
        let (ffn, up) = (ffn as usize, up_row as usize);
        for (b, row) in gu.chunks(rows).enumerate() {
            let at = b * self.y_stride as usize + self.gemv.out_offset as usize;
            act.cpu(&row[..ffn], &row[up..up + ffn], &mut y[at..at + ffn]);
        }
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
        self.cpu_over_rounded_x(w, x, y, n_rows, accumulate, super::q8_blocks)
    }

    /// [`Self::cpu`] over the first `n_rows` rows of x, each passed through `round` in f32
    /// first (the gemm forms' oracles).
    fn cpu_over_rounded_x<T: crate::Real>(
        &self,
        w: &[u8],
        x: &[T],
        y: &mut [T],
        n_rows: u32,
        accumulate: bool,
        round: impl Fn(&[f32]) -> Vec<f32>,
    ) {
        let cols = self.gemv.cols as usize;
        let rounded: Vec<T> = x[..n_rows as usize * cols]
            .chunks(cols)
            .flat_map(|row| {
                let f: Vec<f32> = row.iter().map(|v| v.as_f32()).collect();
                round(&f).into_iter().map(T::of)
            })
            .collect();
        self.cpu(w, &rounded, y, n_rows, accumulate)
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
