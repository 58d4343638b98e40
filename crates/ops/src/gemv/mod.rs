//! `gemv`: y[out_offset + r] = Σ_c W[r, c]·x[c], with W in any [`WeightFormat`], stored
//! row-major in GGUF block layout and uploaded as the file's raw bytes.
//!
//! One WGSL frame (`kernel.wgsl`: grid, rows, reduction) is shared by every format; each
//! format adds its bindings and the per-lane dot product (`kernel_<fmt>.wgsl`). Bindings:
//! 0 = weights (`rows · row_bytes(cols)` bytes), 1 = x (`cols` f32), 2 = y (at least
//! `out_offset + rows` f32). `out_offset` lets a matrix too large for one binding (an
//! lm_head of 128256 rows) be split into row chunks that write one output vector.
//!
//! Speed, measured with pass timestamps over 20..200 back-to-back dispatches on an NVIDIA
//! H100 80GB HBM3 (driver 580, Vulkan), default tuning, 128256×4096 (too big for L2): f32
//! 2835 GB/s, f16 2747, q8_0 2600, q4_1 1737, q4_0 1540, against 3091 GB/s for a plain
//! vec4 read kernel on the same device. Small matrices (576×576) take ~4 µs, about the
//! cost of any dependent dispatch there. The 4-bit kernels are bound by instruction issue
//! (nibble unpacking), not memory: the next gain is fewer instructions per element.
//! The bf16 and K-format kernels (q4_k, q5_k, q6_k: 8-element units, 32 per 256-element
//! super-block) have not been timed on a GPU yet; they are tested on lavapipe only.

mod batched;
mod cost;
mod cpu;

pub use batched::{batched_shader, GemvBatched, BATCH_CHUNK};

use gpuscope_runtime::{grid_2d, Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use crate::quant::WeightFormat;

/// Threads per workgroup; must match `WG_SIZE` in `kernel.wgsl`.
pub const WORKGROUP_SIZE: u32 = 256;

/// A matrix-vector product over a weight matrix of `rows × cols`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gemv {
    pub rows: u32,
    pub cols: u32,
    pub format: WeightFormat,
    /// First element of `y` written: row `r` goes to `y[out_offset + r]`.
    pub out_offset: u32,
}

/// How a dispatch spreads the matrix over threads (see `kernel.wgsl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemvTuning {
    /// Lanes sharing one row: a power of two from 1 to [`WORKGROUP_SIZE`].
    pub threads_per_row: u32,
    /// Rows each lane computes, for more independent loads in flight per step: 1 to
    /// [`MAX_ROWS_PER_THREAD`].
    pub rows_per_thread: u32,
}

/// Must match `NR_MAX` in `kernel.wgsl`.
pub const MAX_ROWS_PER_THREAD: u32 = 4;

macro_rules! gemv_shader {
    ($name:literal, $($file:literal),+) => {
        ShaderSource {
            name: $name,
            wgsl: concat!(include_str!("kernel.wgsl"), $("\n", include_str!($file)),+),
        }
    };
}

const SHADER_F32: ShaderSource = gemv_shader!("gemv_f32", "kernel_f32.wgsl");
const SHADER_F16: ShaderSource = gemv_shader!("gemv_f16", "kernel_f16.wgsl");
const SHADER_Q8_0: ShaderSource =
    gemv_shader!("gemv_q8_0", "kernel_q8_0.wgsl", "quant_common.wgsl");
const SHADER_Q4_0: ShaderSource =
    gemv_shader!("gemv_q4_0", "kernel_q4_0.wgsl", "quant_common.wgsl");
const SHADER_Q4_1: ShaderSource =
    gemv_shader!("gemv_q4_1", "kernel_q4_1.wgsl", "quant_common.wgsl");
const SHADER_BF16: ShaderSource = gemv_shader!("gemv_bf16", "kernel_bf16.wgsl");
const SHADER_Q4_K: ShaderSource =
    gemv_shader!("gemv_q4_k", "kernel_q4_k.wgsl", "quant_common.wgsl");
const SHADER_Q5_K: ShaderSource =
    gemv_shader!("gemv_q5_k", "kernel_q5_k.wgsl", "quant_common.wgsl");
const SHADER_Q6_K: ShaderSource =
    gemv_shader!("gemv_q6_k", "kernel_q6_k.wgsl", "quant_common.wgsl");

/// The WGSL source of the gemv kernel for `format` (for captures and naga checks).
pub fn shader(format: WeightFormat) -> &'static ShaderSource {
    match format {
        WeightFormat::F32 => &SHADER_F32,
        WeightFormat::F16 => &SHADER_F16,
        WeightFormat::Q8_0 => &SHADER_Q8_0,
        WeightFormat::Q4_0 => &SHADER_Q4_0,
        WeightFormat::Q4_1 => &SHADER_Q4_1,
        WeightFormat::BF16 => &SHADER_BF16,
        WeightFormat::Q4_K => &SHADER_Q4_K,
        WeightFormat::Q5_K => &SHADER_Q5_K,
        WeightFormat::Q6_K => &SHADER_Q6_K,
    }
}

impl Gemv {
    /// Kernel family name: `gemv_<format>`.
    pub fn op_name(&self) -> &'static str {
        shader(self.format).name
    }

    /// Bytes of the weight matrix in its GGUF layout.
    ///
    /// # Panics
    /// If `cols` is not a whole number of blocks of the format.
    pub fn weight_bytes(&self) -> u64 {
        u64::from(self.rows) * self.row_bytes()
    }

    fn row_bytes(&self) -> u64 {
        self.format
            .row_bytes(u64::from(self.cols))
            .unwrap_or_else(|e| panic!("gemv {}x{}: {e}", self.rows, self.cols))
    }

    /// Work items per row: what a lane handles in one step (an element for f32, a pair for
    /// f16 and bf16, 8 elements for the block formats: a quarter of a 32-element block, a
    /// 32nd of a K super-block; see `kernel.wgsl`).
    fn units_per_row(&self) -> u32 {
        match self.format {
            WeightFormat::F32 => self.cols,
            WeightFormat::F16 | WeightFormat::BF16 => self.cols.div_ceil(2),
            _ => self.cols / 8,
        }
    }

    /// The tuning [`Self::dispatch`] uses, from sweeps on an NVIDIA H100 and H200 (wgpu 30,
    /// Vulkan; lanes 16..128 × rows 1, 2, 4 over Llama-sized shapes, 576..4096 columns,
    /// 576..128256 rows), where it lands within ~15% of the best setting per shape: about
    /// 4 units per lane (at most 64 lanes for the block formats, whose units are fatter),
    /// fewer lanes when rows are plentiful (an lm_head), and 2 (block formats) or 4 (float
    /// formats) rows per lane once there are rows enough to fill the GPU anyway.
    pub fn default_tuning(&self) -> GemvTuning {
        let max_lanes = if self.format.is_quantized() { 64 } else { 128 };
        let mut threads_per_row = self
            .units_per_row()
            .div_ceil(4)
            .next_power_of_two()
            .clamp(16, max_lanes);
        if self.rows >= 32768 {
            threads_per_row = (threads_per_row / 4).max(16);
        } else if self.rows >= 8192 {
            threads_per_row = (threads_per_row / 2).max(16);
        }
        let rows_per_thread = if self.rows < 4096 {
            1
        } else if self.format.is_quantized() {
            2
        } else {
            4
        };
        GemvTuning {
            threads_per_row,
            rows_per_thread,
        }
    }

    /// Builds the dispatch with [`Self::default_tuning`].
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        w: &GpuBuffer,
        x: &GpuBuffer,
        y: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        self.dispatch_with(gpu, w, x, y, self.default_tuning())
    }

    /// Builds the dispatch with an explicit tuning: for workgroup sweeps and for tests of
    /// every reduction width and of the 2-D grid.
    pub fn dispatch_with(
        &self,
        gpu: &Gpu,
        w: &GpuBuffer,
        x: &GpuBuffer,
        y: &GpuBuffer,
        tuning: GemvTuning,
    ) -> Result<Dispatch, GpuError> {
        self.build(gpu, w, x, y, tuning, false)
    }

    /// Like [`Self::dispatch`] but adds into `y` (y += W·x): a residual add fused into
    /// the projection, one dispatch instead of two.
    pub fn dispatch_accumulate(
        &self,
        gpu: &Gpu,
        w: &GpuBuffer,
        x: &GpuBuffer,
        y: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        self.build(gpu, w, x, y, self.default_tuning(), true)
    }

    fn build(
        &self,
        gpu: &Gpu,
        w: &GpuBuffer,
        x: &GpuBuffer,
        y: &GpuBuffer,
        tuning: GemvTuning,
        accumulate: bool,
    ) -> Result<Dispatch, GpuError> {
        let name = self.op_name();
        let invalid =
            |what: String| GpuError::Invalid(format!("{name} {}x{}: {what}", self.rows, self.cols));
        if self.rows == 0 || self.cols == 0 {
            return Err(invalid("empty matrix".into()));
        }
        self.format
            .row_bytes(u64::from(self.cols))
            .map_err(|e| invalid(e.to_string()))?;
        let GemvTuning {
            threads_per_row,
            rows_per_thread,
        } = tuning;
        if !threads_per_row.is_power_of_two() || threads_per_row > WORKGROUP_SIZE {
            return Err(invalid(format!(
                "threads_per_row {threads_per_row} is not a power of two from 1 to {WORKGROUP_SIZE}"
            )));
        }
        if !(1..=MAX_ROWS_PER_THREAD).contains(&rows_per_thread) {
            return Err(invalid(format!(
                "rows_per_thread {rows_per_thread} is not from 1 to {MAX_ROWS_PER_THREAD}"
            )));
        }
        // Kernels index with u32; a binding is at most 4 GiB anyway, but the element
        // index of f32/f16 rows and the output index must not wrap either.
        let elems = u64::from(self.rows) * u64::from(self.cols);
        if elems > u64::from(u32::MAX)
            || self.weight_bytes() > u64::from(u32::MAX)
            || u64::from(self.out_offset) + u64::from(self.rows) > u64::from(u32::MAX)
        {
            return Err(invalid(
                "more than 2^32 elements: split the matrix into row chunks".into(),
            ));
        }
        // The quantized kernels read whole 4-byte words, up to 2 bytes past the last block;
        // the runtime pads every buffer to 4 bytes, which covers that.
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
        need(w, self.weight_bytes().next_multiple_of(4), "weight")?;
        need(x, u64::from(self.cols) * 4, "x")?;
        need(
            y,
            (u64::from(self.out_offset) + u64::from(self.rows)) * 4,
            "y",
        )?;

        let pipeline = gpu.pipeline(
            shader(self.format),
            "main",
            &[
                ("ROWS", f64::from(self.rows)),
                ("COLS", f64::from(self.cols)),
                ("OUT_OFFSET", f64::from(self.out_offset)),
                ("TPR", f64::from(threads_per_row)),
                ("NR", f64::from(rows_per_thread)),
                ("ACCUMULATE", if accumulate { 1.0 } else { 0.0 }),
            ],
        )?;
        let bind_group = gpu.bind_group(&pipeline, &[w, x, y])?;
        let rows_per_wg = WORKGROUP_SIZE / threads_per_row * rows_per_thread;
        let workgroups = grid_2d(self.rows.div_ceil(rows_per_wg));
        let (cost, reads): (Cost, &[&GpuBuffer]) = if accumulate {
            (self.cost_accumulate(), &[w, x, y])
        } else {
            (self.cost(), &[w, x])
        };
        Ok(Dispatch::new(
            name,
            pipeline,
            bind_group,
            workgroups,
            cost,
            reads,
            &[y],
        ))
    }
}
