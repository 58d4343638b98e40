//! `gemv`: `y[out_offset + r] = Σ_c W[r, c]·x[c]`, with W in any [`WeightFormat`], stored
//! row-major in GGUF block layout and uploaded as the file's raw bytes; and its fused
//! forms ([`GemvFused`]: rms_norm folded into the input, rope + KV-cache store or
//! silu·mul as the epilogue).
//!
//! A shader is composed (`shader.rs`) from a frame, the format's per-lane dot product
//! (`kernel_<fmt>.wgsl`: `unit_dot`, reading x through `xv`), an input and an epilogue.
//! Bindings: 0 = weights (`rows · row_bytes(cols)` bytes), 1 = x (`cols` f32), 2 = y (at
//! least `out_offset + rows` f32), then the fused forms' extra buffers. `out_offset` lets
//! a matrix too large for one binding (an lm_head of 128256 rows) be split into row chunks
//! that write one output vector.
//!
//! Variants ([`GemvVariant`]), chosen per adapter by [`GemvVariant::for_adapter`] and
//! overridable (`--kernel gemv=VARIANT`):
//! - `shared`: lanes per row, shared-memory tree reduction (any adapter);
//! - `subgroup`: the same with subgroup shuffles instead of the tree (no barriers), where
//!   `SUBGROUP` is offered;
//! - `rows`: one lane per few rows, no reduction at all, small workgroups: for adapters
//!   that are CPUs (lavapipe), where barriers and wide workgroups are expensive;
//! - `blocks`: the lanes frame with a whole 32-element block per lane step (`block_dot`:
//!   every word of the block loaded once, a single 16-byte load over the packed layout),
//!   reduced with subgroup shuffles where offered, else shared memory: more bytes in
//!   flight per lane for big matrices;
//! - `dp4a`: x quantized to int8 per 32-element block in workgroup memory, then integer
//!   dot products (`dot4I8Packed`) against the packed q4_0 / q4_1 / q8_0 quants and the
//!   GGUF q5_0 / q5_1 / q4_K / q5_K blocks, as llama.cpp's MMVQ kernels do
//!   (`kernel_dp4a.wgsl`). It computes W·x̂ with x̂ the quantized x ([`q8_blocks`]), not
//!   W·x: its oracle quantizes the same way. q6_K and the float formats have no dp4a
//!   form ([`GemvVariant::runs`]); the decoder gives those matrices its fallback variant.
//!
//! Weight layouts ([`WeightLayout`], `--kernel weights=gguf|packed`): the GGUF bytes, or
//! q4_0 / q4_1 / q8_0 repacked at upload into 16-byte-aligned quants and a scales region.
//! Every variant and the batched kernel read both; the layout is a field of [`Gemv`], so
//! an executor knows how to read the buffer.
//!
//! Speed (`shared`), measured with pass timestamps over 20..200 back-to-back dispatches on
//! an NVIDIA H100 80GB HBM3 (driver 580, Vulkan), default tuning, 128256×4096 (too big for
//! L2): f32 2835 GB/s, f16 2747, q8_0 2600, q4_1 1737, q4_0 1540, against 3091 GB/s for a
//! plain vec4 read kernel on the same device. Small matrices (576×576) take ~4 µs, about
//! the cost of any dependent dispatch there. The 4-bit kernels are bound by instruction
//! issue (nibble unpacking), not memory. The bf16 and K-format kernels (q4_k, q5_k, q6_k:
//! 8-element units, 32 per 256-element super-block) have not been timed on a GPU yet.

mod batched;
mod cost;
mod cpu;
pub(crate) mod exec;
mod fused;
mod layout;
mod quantize_x;
pub(crate) mod shader;

pub use batched::{
    batched_shader, batched_wide_shader, gemm_shader, gemm_shaders, GemmKind, GemmOut, GemvBatched,
    BATCH_CHUNK, COOPMAT_TILES, COOPMAT_WIDE_ROWS, GEMM_TILE,
};
pub use fused::{GemvBuffers, GemvEpilogue, GemvFused, Partials, PostNorm};
pub use layout::WeightLayout;
pub use quantize_x::{QuantizeX, QUANTIZED_BLOCK_BYTES, QUANTIZE_X_SHADER};
pub(crate) use shader::{x_shared, EpilogueKind};

use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use crate::quant::WeightFormat;

/// Threads per workgroup of the lanes frame (`shared`, `subgroup`); must match `WG_SIZE`
/// in `kernel.wgsl`.
pub const WORKGROUP_SIZE: u32 = 256;
/// Threads per workgroup of the `dp4a` frame for x of at least [`DP4A_WIDE_COLS`]
/// columns ([`Gemv::dp4a_split`]).
pub const DP4A_WIDE_WORKGROUP: u32 = 512;
/// From this many columns the `dp4a` frame takes [`DP4A_WIDE_WORKGROUP`] threads.
pub const DP4A_WIDE_COLS: u32 = 2048;
/// Wide matrices of fewer rows than this split each row set's blocks over two row groups
/// ([`Gemv::dp4a_split`]).
pub const DP4A_SPLIT_MAX_ROWS: u32 = 16384;
/// From this many columns a split matrix takes workgroups of twice
/// [`DP4A_WIDE_WORKGROUP`] threads.
pub const DP4A_WIDE_SPLIT_COLS: u32 = 8192;

/// How the `dp4a` frame spreads a matrix over workgroups ([`Gemv::dp4a_split`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dp4aSplit {
    /// Threads per workgroup (`WG_SIZE`).
    pub workgroup: u32,
    /// Row groups sharing each row set (`KSPLIT`), each over every `k_split`-th block of
    /// the row; their sums meet in workgroup memory. 1: a row group has its rows alone.
    pub k_split: u32,
}

impl Dp4aSplit {
    /// Matrix rows one workgroup computes with `tuning`'s lanes and rows per lane.
    pub fn rows_per_workgroup(&self, tuning: GemvTuning) -> u32 {
        self.workgroup / (tuning.threads_per_row * self.k_split) * tuning.rows_per_thread
    }

    /// Bytes of workgroup memory the row groups' sums take (`KSUMS` vec4s).
    pub fn sum_bytes(&self, tuning: GemvTuning) -> u64 {
        16 * u64::from(self.sums(tuning))
    }

    /// `KSUMS`: one vec4 per row group when split, else one unused.
    pub fn sums(&self, tuning: GemvTuning) -> u32 {
        if self.k_split > 1 {
            self.workgroup / tuning.threads_per_row
        } else {
            1
        }
    }
}

/// Threads per workgroup of the `rows` frame: one 8-wide SIMD step of lavapipe on AVX2
/// (its subgroup size), so a workgroup is one loop iteration of its CPU thread.
pub const ROWS_WORKGROUP_SIZE: u32 = 8;

/// A matrix-vector product over a weight matrix of `rows × cols`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gemv {
    pub rows: u32,
    pub cols: u32,
    pub format: WeightFormat,
    /// First element of `y` written: row `r` goes to `y[out_offset + r]`.
    pub out_offset: u32,
    /// How the weights lie in their buffer ([`WeightLayout::Packed`]: q4_0, q4_1, q8_0).
    pub layout: WeightLayout,
}

/// Which gemv frame runs (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GemvVariant {
    Shared,
    Subgroup,
    Rows,
    Blocks,
    Dp4a,
}

impl GemvVariant {
    pub const ALL: [GemvVariant; 5] = [
        Self::Shared,
        Self::Subgroup,
        Self::Rows,
        Self::Blocks,
        Self::Dp4a,
    ];

    /// The name `--kernel gemv=NAME` takes and profiles record.
    pub fn name(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Subgroup => "subgroup",
            Self::Rows => "rows",
            Self::Blocks => "blocks",
            Self::Dp4a => "dp4a",
        }
    }

    /// Whether this variant has a kernel for `format` stored in `layout` (`dp4a`: the one
    /// layout [`Self::layout_for`] names; every other variant: everything).
    pub fn runs(self, format: WeightFormat, layout: WeightLayout) -> bool {
        match self {
            Self::Dp4a => Self::dp4a_layout(format) == Some(layout),
            _ => true,
        }
    }

    /// The layout this variant reads `format` in where it reads only one (`dp4a`: q4_0,
    /// q4_1 and q8_0 packed, q5_0, q5_1, q4_K and q5_K as GGUF bytes), else `None` (`dp4a` has no
    /// kernel for the format; the other variants read every layout).
    pub fn layout_for(self, format: WeightFormat) -> Option<WeightLayout> {
        match self {
            Self::Dp4a => Self::dp4a_layout(format),
            _ => None,
        }
    }

    /// The formats `dp4a` has a kernel for, and the layout it reads each in. q5_0 / q5_1
    /// read the GGUF blocks (their fifth bits splice into the nibbles as the block is
    /// loaded, `idot_q5_*.wgsl`), as q4_K / q5_K do (a 32-element sub-block with its own
    /// scale and offset, `idot_k.wgsl`): no packed layout of theirs exists for the other
    /// frames. q6_K (210-byte super-blocks, 16-element scales) has none.
    fn dp4a_layout(format: WeightFormat) -> Option<WeightLayout> {
        match format {
            WeightFormat::Q4_0 | WeightFormat::Q4_1 | WeightFormat::Q8_0 => {
                Some(WeightLayout::Packed)
            }
            WeightFormat::Q5_0 | WeightFormat::Q5_1 | WeightFormat::Q4_K | WeightFormat::Q5_K => {
                Some(WeightLayout::Gguf)
            }
            _ => None,
        }
    }

    /// Whether the kernel computes with x quantized to int8 blocks ([`q8_blocks`]).
    pub fn quantizes_x(self) -> bool {
        self == Self::Dp4a
    }

    pub fn parse(name: &str) -> Option<GemvVariant> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The variant expected to be fastest on this adapter: `rows` on CPU adapters
    /// (lavapipe: one CPU thread runs a workgroup as a loop of 8-wide steps, so lanes that
    /// share a row only add barriers); `subgroup` where SUBGROUP is offered (a reduction
    /// without workgroup memory or barriers); `shared` otherwise.
    pub fn for_adapter(gpu: &Gpu) -> GemvVariant {
        if gpu.adapter_info().device_type == gpuscope_runtime::wgpu::DeviceType::Cpu {
            GemvVariant::Rows
        } else if Self::Subgroup.supported(gpu).is_ok() {
            GemvVariant::Subgroup
        } else {
            GemvVariant::Shared
        }
    }

    /// Whether the lanes of a row group add up their sums with subgroup shuffles (`subgroup`,
    /// and `blocks` where SUBGROUP is offered) rather than a shared-memory tree.
    pub fn subgroup_reduce(self, gpu: &Gpu) -> bool {
        match self {
            Self::Subgroup | Self::Dp4a => true,
            Self::Blocks => Self::Subgroup.supported(gpu).is_ok(),
            Self::Shared | Self::Rows => false,
        }
    }

    /// The most lanes a row group may have: a subgroup for subgroup reductions, one for
    /// `rows`, a workgroup otherwise.
    pub fn max_threads_per_row(self, gpu: &Gpu) -> u32 {
        if self == Self::Rows {
            1
        } else if self.subgroup_reduce(gpu) {
            gpu.adapter_info().subgroup_min_size.max(1)
        } else {
            WORKGROUP_SIZE
        }
    }

    /// Whether the device can run this variant, and if not, why.
    pub fn supported(self, gpu: &Gpu) -> Result<(), String> {
        match self {
            Self::Subgroup if !gpu.features().contains(gpuscope_runtime::wgpu::Features::SUBGROUP) => {
                Err(format!(
                    "gemv variant `subgroup` needs the SUBGROUP feature, which \"{}\" does not offer (use gemv=shared)",
                    gpu.adapter_info().name
                ))
            }
            Self::Dp4a => {
                let info = gpu.adapter_info();
                if !gpu.features().contains(gpuscope_runtime::wgpu::Features::SUBGROUP)
                    || info.subgroup_min_size < 8
                {
                    Err(format!(
                        "gemv variant `dp4a` needs the SUBGROUP feature with subgroups of at least 8 lanes; \"{}\" offers {} (use gemv=subgroup or gemv=shared)",
                        info.name,
                        if gpu.features().contains(gpuscope_runtime::wgpu::Features::SUBGROUP) {
                            format!("subgroups of {} to {} lanes", info.subgroup_min_size, info.subgroup_max_size)
                        } else {
                            "no subgroups".to_string()
                        }
                    ))
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }
}

/// x as the `dp4a` kernels see it: each 32-element block quantized to int8 with one
/// scale, `d = max|x| / 127`, `q = round(x / d)` (ties to even, as WGSL's `round`),
/// returned dequantized (`q · d`), in f32 as the kernel computes it. A partial last block
/// (not a dp4a shape) is quantized on its own.
pub fn q8_blocks(x: &[f32]) -> Vec<f32> {
    x.chunks(32)
        .flat_map(|block| {
            let (d, q) = q8_block(block);
            q.into_iter().map(move |q| f32::from(q) * d)
        })
        .collect()
}

/// [`q8_blocks`] for a reference that follows another path's rounding (`gpuscope check`'s
/// chained comparison): where the subject's quant of an element (from `subject`, the
/// tested GPU's own x for the same dispatch) is one of the two int8 steps around this x's
/// `x / d`, that quant is taken; elsewhere this x's own rounding. Two paths a few last
/// bits apart round some elements of a block to neighbouring steps; followed, those flips
/// do not compound through the layers, while a quant that is not a neighbour (a wrong
/// kernel, or paths that truly diverged) is not followed.
///
/// # Panics
/// If `subject` is shorter than `x`.
pub fn q8_blocks_following(x: &[f32], subject: &[f32]) -> Vec<f32> {
    assert!(
        subject.len() >= x.len(),
        "q8_blocks_following: subject too short"
    );
    x.chunks(32)
        .zip(subject.chunks(32))
        .flat_map(|(block, theirs)| {
            let (d, own) = q8_block(block);
            let (_, followed) = q8_block(&theirs[..block.len()]);
            let inv = if d > 0.0 { 1.0 / d } else { 0.0 };
            block
                .iter()
                .zip(own.into_iter().zip(followed))
                .map(move |(&v, (own, followed))| {
                    let neighbour = (v * inv - f32::from(followed)).abs() < 1.0;
                    f32::from(if neighbour { followed } else { own }) * d
                })
                .collect::<Vec<f32>>()
        })
        .collect()
}

/// How an oracle treats the gemv's input x.
#[derive(Debug, Clone, Copy)]
pub enum XRounding<'a> {
    /// x as it is (every frame but `dp4a`).
    Exact,
    /// x rounded to int8 blocks, [`q8_blocks`] (the `dp4a` frame).
    Int8,
    /// x rounded to int8 blocks following another path's x where it rounds to a
    /// neighbouring step, [`q8_blocks_following`]; the slice is that path's x, before the
    /// fused norm's weight (as the kernel's input binding holds it).
    Int8Following(&'a [f32]),
}

impl XRounding<'_> {
    /// [`Self::Int8`] for a variant that quantizes x, else [`Self::Exact`].
    pub fn of(variant: GemvVariant) -> XRounding<'static> {
        if variant.quantizes_x() {
            XRounding::Int8
        } else {
            XRounding::Exact
        }
    }
}

/// One block quantized as [`q8_blocks`] does it: its scale `d` and int8 quants.
pub(crate) fn q8_block(block: &[f32]) -> (f32, Vec<i8>) {
    let amax = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let inv = if d > 0.0 { 1.0 / d } else { 0.0 };
    let q = block
        .iter()
        .map(|&v| (v * inv).round_ties_even().clamp(-128.0, 127.0) as i8)
        .collect();
    (d, q)
}

/// How a dispatch spreads the matrix over threads (see `kernel.wgsl`, `kernel_rows.wgsl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemvTuning {
    pub variant: GemvVariant,
    /// Lanes sharing one row: a power of two from 1 to [`WORKGROUP_SIZE`] (`shared`), to
    /// the adapter's smallest subgroup size (`subgroup`); 1 for `rows`.
    pub threads_per_row: u32,
    /// Rows each lane computes, for more independent loads in flight per step (and, in
    /// `rows`, x loaded once for several rows): 1 to [`MAX_ROWS_PER_THREAD`].
    pub rows_per_thread: u32,
}

/// Must match the accumulator width (`vec4`) in the frames.
pub const MAX_ROWS_PER_THREAD: u32 = 4;

/// Whether the kernel named `shader` rounds its activations to int8 before the matrix
/// (the `dp4a` gemvs: `gemv_q4_0.dp4a.packed`, `rms_norm+gemv_q4_1+rope.dp4a.packed`,
/// with a fold before the norm `add+rms_norm+gemv_q4_1+silu_mul.dp4a.packed`; and
/// attention with the output projection, `attention+gemv_q4_1.groups1024.packed`, which
/// rounds each head's output as they do).
pub fn rounds_activations(shader: &str) -> bool {
    let mut parts = shader.split('.');
    let op = parts.next().unwrap_or_default();
    let gemv_op = op.starts_with("gemv_") || op.contains("+gemv_");
    (gemv_op && parts.next() == Some(GemvVariant::Dp4a.name()))
        || op.starts_with(crate::attention::AttnOutput::OP)
}

/// The plain gemv shader of `format` with the `shared` frame (for captures and naga
/// checks); other combinations are composed on demand.
pub fn shader(format: WeightFormat) -> &'static ShaderSource {
    GemvFused::plain(Gemv {
        rows: 1,
        cols: format.block_elems(),
        format,
        out_offset: 0,
        layout: WeightLayout::Gguf,
    })
    .shader(GemvVariant::Shared, false, false, false)
}

impl Gemv {
    /// Kernel family name: `gemv_<format>`.
    pub fn op_name(&self) -> &'static str {
        match self.format {
            WeightFormat::F32 => "gemv_f32",
            WeightFormat::F16 => "gemv_f16",
            WeightFormat::Q8_0 => "gemv_q8_0",
            WeightFormat::Q4_0 => "gemv_q4_0",
            WeightFormat::Q4_1 => "gemv_q4_1",
            WeightFormat::BF16 => "gemv_bf16",
            WeightFormat::Q4_K => "gemv_q4_k",
            WeightFormat::Q5_K => "gemv_q5_k",
            WeightFormat::Q6_K => "gemv_q6_k",
            WeightFormat::Q5_0 => "gemv_q5_0",
            WeightFormat::Q5_1 => "gemv_q5_1",
        }
    }

    /// Bytes of the weight matrix in its GGUF layout (what a pass over it moves, in either
    /// layout).
    ///
    /// # Panics
    /// If `cols` is not a whole number of blocks of the format.
    pub fn weight_bytes(&self) -> u64 {
        u64::from(self.rows) * self.row_bytes()
    }

    /// Bytes the weight buffer must hold in the matrix's layout
    /// ([`WeightLayout::buffer_bytes`]; the quantized kernels over GGUF bytes read whole
    /// 4-byte words, up to 2 bytes past the last block, which the runtime's padding of
    /// every buffer to 4 bytes covers).
    pub fn buffer_bytes(&self) -> u64 {
        self.layout
            .buffer_bytes(self.format, self.rows, self.cols)
            .next_multiple_of(4)
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

    /// The `shared` tuning [`Self::dispatch`] uses, from sweeps on an NVIDIA H100 and H200
    /// (wgpu 30, Vulkan; lanes 16..128 × rows 1, 2, 4 over Llama-sized shapes, 576..4096
    /// columns, 576..128256 rows), where it lands within ~15% of the best setting per
    /// shape: about 4 units per lane (at most 64 lanes for the block formats, whose units
    /// are fatter), fewer lanes when rows are plentiful (an lm_head), and 2 (block formats)
    /// or 4 (float formats) rows per lane once there are rows enough to fill the GPU anyway.
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
            variant: GemvVariant::Shared,
            threads_per_row,
            rows_per_thread,
        }
    }

    /// How the `dp4a` frame spreads this matrix over workgroups: threads per workgroup and
    /// row groups per row set ([`Dp4aSplit`]).
    ///
    /// - Every workgroup quantizes all of x before its first dot product, and a matrix of
    ///   a few hundred workgroups is resident at once (all quantizing together): from
    ///   [`DP4A_WIDE_COLS`] columns a workgroup has [`DP4A_WIDE_WORKGROUP`] threads, which
    ///   quantize x faster and fewer times (faster for Llama-8B; SmolLM2's 576-wide
    ///   head was slower with 512; measured: BENCHMARKS.md).
    /// - Below [`DP4A_SPLIT_MAX_ROWS`] rows (q/k/v, attention output, down projection:
    ///   one wave of workgroups, each streaming its rows alone) two row groups share each
    ///   row set, each over every other block ([`Dp4aSplit::k_split`] 2): twice the lanes
    ///   per row, half the steps per lane; the down projection's rows (from
    ///   [`DP4A_WIDE_SPLIT_COLS`] columns) get 1024-thread workgroups. Faster for
    ///   Llama-8B; four row groups per row set, or two on the 28672-row gate/up, were
    ///   slower (measured: BENCHMARKS.md, run 13).
    pub fn dp4a_split(&self, gpu: &Gpu) -> Dp4aSplit {
        let limits = gpu.limits();
        let allowed = limits
            .max_compute_invocations_per_workgroup
            .min(limits.max_compute_workgroup_size_x);
        if self.cols < DP4A_WIDE_COLS || DP4A_WIDE_WORKGROUP > allowed {
            return Dp4aSplit {
                workgroup: WORKGROUP_SIZE,
                k_split: 1,
            };
        }
        if self.rows >= DP4A_SPLIT_MAX_ROWS {
            return Dp4aSplit {
                workgroup: DP4A_WIDE_WORKGROUP,
                k_split: 1,
            };
        }
        let workgroup = if self.cols >= DP4A_WIDE_SPLIT_COLS && 2 * DP4A_WIDE_WORKGROUP <= allowed {
            2 * DP4A_WIDE_WORKGROUP
        } else {
            DP4A_WIDE_WORKGROUP
        };
        Dp4aSplit {
            workgroup,
            k_split: 2,
        }
    }

    /// Workgroup memory of the `dp4a` kernel for this matrix with `tuning`: xq (16 bytes
    /// per 16 columns) and xm (8 bytes per block), the 128 partial sums of x² and the row
    /// groups' sums (ksum) of kernel_dp4a.wgsl.
    pub fn dp4a_workgroup_bytes(&self, gpu: &Gpu, tuning: GemvTuning) -> u64 {
        u64::from(self.cols)
            + u64::from(self.cols / 32) * 8
            + 512
            + self.dp4a_split(gpu).sum_bytes(tuning)
    }

    /// Whether the `dp4a` kernel for this matrix fits the device's workgroup memory with
    /// its default tuning (x of 28672 columns takes 36 KB: an adapter with 32 KB runs
    /// such a matrix on the fallback variant).
    pub fn dp4a_fits(&self, gpu: &Gpu) -> bool {
        let t = self.tuning(GemvVariant::Dp4a, gpu);
        self.dp4a_workgroup_bytes(gpu, t)
            <= u64::from(gpu.limits().max_compute_workgroup_storage_size)
    }

    /// The tuning of `variant` for this shape on `gpu`: the `shared` tuning; for
    /// `subgroup` the same with at most a subgroup of lanes per row; for `rows` one lane
    /// per 4 rows (x is loaded once for 4 rows: on lavapipe every load is issued lane by
    /// lane, and 4 rows per lane halved the time of one per lane).
    pub fn tuning(&self, variant: GemvVariant, gpu: &Gpu) -> GemvTuning {
        let base = self.default_tuning();
        match variant {
            GemvVariant::Shared => base,
            GemvVariant::Subgroup => GemvTuning {
                variant,
                threads_per_row: base
                    .threads_per_row
                    .min(gpu.adapter_info().subgroup_min_size.max(1)),
                ..base
            },
            GemvVariant::Rows => GemvTuning {
                variant,
                threads_per_row: 1,
                rows_per_thread: MAX_ROWS_PER_THREAD,
            },
            GemvVariant::Blocks | GemvVariant::Dp4a => {
                // A lane's step is a whole 32-element block (4 units): about 4 blocks
                // per lane per row, at least 4 lanes, at most what the reduction allows.
                let steps = self.units_per_row().div_ceil(4);
                // Two rows per lane from 4096 rows (dp4a too: H100, Llama-8B q4_0, 334
                // tok/s with 2 everywhere, 312 with 1 below 16384 rows). Not 4 lanes x 1
                // row for 14336-wide rows, though a sweep timed that fastest: the sweep's
                // matrix stayed in L2, and in the decoder (from HBM) its 64 workgroups
                // took Llama-8B from 335 to 229 tok/s (BENCHMARKS.md, run 10).
                // dp4a below DP4A_WIDE_COLS columns (SmolLM2's 576 and 1536): 16 lanes x
                // 1 row, whose more workgroups and shorter lanes suit matrices bound by
                // launch latency (H100, synthetic SmolLM2 at 141-269 positions with every
                // matrix dp4a: 1304-1308 tok/s against 1242-1246 by the rule; BENCHMARKS.md
                // run 12). Pair epilogues round the row up (`GemvFused::fit_tuning`).
                let narrow_dp4a = variant == GemvVariant::Dp4a && self.cols < DP4A_WIDE_COLS;
                GemvTuning {
                    variant,
                    threads_per_row: if narrow_dp4a {
                        16
                    } else {
                        steps.div_ceil(4).next_power_of_two()
                    }
                    .max(4)
                    .min(variant.max_threads_per_row(gpu)),
                    rows_per_thread: if self.rows >= 4096 && !narrow_dp4a {
                        2
                    } else {
                        1
                    },
                }
            }
        }
    }

    /// [`Self::tuning`], or with `shape = Some((lanes per row, rows per lane))` that spread
    /// for every shape (sweeps: `--kernel gemv=VARIANT:LANESxROWS`); lanes are capped at
    /// what the variant's reduction allows on `gpu`, rows at [`MAX_ROWS_PER_THREAD`].
    pub fn tuning_with(
        &self,
        variant: GemvVariant,
        shape: Option<(u32, u32)>,
        gpu: &Gpu,
    ) -> GemvTuning {
        let mut t = self.tuning(variant, gpu);
        if let Some((lanes, rows)) = shape {
            t.threads_per_row = lanes
                .next_power_of_two()
                .min(variant.max_threads_per_row(gpu));
            t.rows_per_thread = rows.clamp(1, MAX_ROWS_PER_THREAD);
        }
        t
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

    /// Builds the dispatch with an explicit tuning: for variants, workgroup sweeps and
    /// tests of every reduction width and of the 2-D grid.
    pub fn dispatch_with(
        &self,
        gpu: &Gpu,
        w: &GpuBuffer,
        x: &GpuBuffer,
        y: &GpuBuffer,
        tuning: GemvTuning,
    ) -> Result<Dispatch, GpuError> {
        GemvFused::plain(*self).dispatch(gpu, tuning, &GemvBuffers::new(w, x, y))
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
        GemvFused {
            gemv: *self,
            norm: None,
            post_norm: None,
            partials: 0,
            epilogue: GemvEpilogue::Accumulate,
        }
        .dispatch(gpu, self.default_tuning(), &GemvBuffers::new(w, x, y))
    }
}
