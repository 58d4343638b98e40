//! [`GemvFused`]: a gemv with rms_norm folded into its input and/or an epilogue that does
//! the next op's work on the rows as they come out of the dot products (the decoder's
//! dispatch count per layer goes from 9 to 5 with every fusion on).
//!
//! Op names (the kernel family, what reports group by): `gemv_<fmt>` for the plain and
//! accumulating forms, `rms_norm+` in front when the norm is folded in, `+rope` or
//! `+silu_mul` behind for those epilogues, e.g. `rms_norm+gemv_q4_1+rope`. The struct's
//! fields are everything a CPU executor needs; [`GemvFused::cpu`] is the oracle.

use gpuscope_runtime::{grid_2d, Dispatch, Gpu, GpuBuffer, GpuError};

use super::shader::{self, EpilogueKind, ShaderKey};
use super::{
    Gemv, GemvTuning, GemvVariant, MAX_ROWS_PER_THREAD, ROWS_WORKGROUP_SIZE, WORKGROUP_SIZE,
};
use crate::rope::Rope;

/// Logical rows (gate/up pairs x 2) of a workgroup with the down projection folded in:
/// one 32-column block of W_down per workgroup.
const DOWN_LOGICAL_ROWS: u32 = 64;

/// What happens to each row's dot product.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GemvEpilogue {
    /// `y[out_offset + r] = row r`.
    Store,
    /// `y[out_offset + r] += row r` (a residual add).
    Accumulate,
    /// The matrix is (part of) the stacked q | k | v projection; global row
    /// `g = out_offset + r` is q for `g < q_dim`, k for the next `kv_dim`, v after. q rows
    /// are rope-rotated into `y`, k rows rotated into the KV cache row `pos`, v rows copied
    /// into the V cache row `pos`, as [`Rope::cpu`] does (`pos` from the step buffer).
    RopeKv(Rope),
    /// The matrix is the stacked gate | up projection: rows `0..n` gate, rows
    /// `up_row..up_row + n` up; `y[out_offset + j] = silu(gate_j) · up_j`.
    SiluMul { n: u32, up_row: u32 },
    /// As `SiluMul` with gelu (tanh approximation, Gemma's GeGLU):
    /// `y[out_offset + j] = gelu(gate_j) · up_j`.
    GeluMul { n: u32, up_row: u32 },
    /// As `SiluMul`, then the down projection (`dim` x `n`, the gate/up matrix's format
    /// and layout, bound as [`GemvBuffers::down`]) split by its columns: workgroup `p`
    /// takes h's block `p` (32 values, in f32) and writes
    /// `y[p · dim + r] = Σ_{c in block p} W_down[r, c] · h_c`, `n / 32` partials that the
    /// next gemv adds to the residual stream ([`GemvFused::partials`]). The dp4a frame
    /// only, 32 FFN rows per workgroup (`epilogue_silu_down.wgsl`; two blocks per
    /// workgroup, half as many partials, ran 3% slower on an H100: BENCHMARKS.md run 43).
    SiluDown { n: u32, up_row: u32, dim: u32 },
}

impl GemvEpilogue {
    /// `(n, up_row)` of a gated activation (`SiluMul`, `GeluMul`).
    pub fn gated(&self) -> Option<(u32, u32)> {
        match *self {
            GemvEpilogue::SiluMul { n, up_row }
            | GemvEpilogue::GeluMul { n, up_row }
            | GemvEpilogue::SiluDown { n, up_row, .. } => Some((n, up_row)),
            _ => None,
        }
    }
}

/// A gemv with optional fusions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemvFused {
    /// The matrix (`rows` is all of its rows, padding included) and where rows land.
    pub gemv: Gemv,
    /// `Some(eps)`: x is the residual stream and the kernel multiplies it by the norm
    /// weight and 1 / sqrt(mean(x²) + eps) first (rms_norm folded in).
    pub norm: Option<f32>,
    /// `Some(eps)`: a post norm (Gemma 3) and its residual add come first, x + d /
    /// sqrt(mean(d²) + eps) ∘ pw with d the previous projection's output, and the sum is
    /// both the input (to `norm`) and written out as the next residual stream
    /// ([`PostNorm`]). The `dp4a` frame only, with `norm`.
    pub post_norm: Option<f32>,
    /// n > 0: x is first the residual stream plus n partial vectors (the attention's
    /// output projection per head, `attention/output.rs`), in order, and that sum is
    /// also written out as the next residual stream ([`Partials`]). The `dp4a` frame
    /// only, with `norm`, not with `post_norm`.
    pub partials: u32,
    pub epilogue: GemvEpilogue,
}

/// The buffers of the partials added to x ([`GemvFused::partials`]).
#[derive(Debug, Clone, Copy)]
pub struct Partials<'a> {
    /// `partials` vectors of `cols` f32, one after the other.
    pub parts: &'a GpuBuffer,
    /// Where x + their sum goes (`cols` f32; not x: other workgroups still read x).
    pub x_out: &'a GpuBuffer,
}

/// The buffers of a folded post norm ([`GemvFused::post_norm`]).
#[derive(Debug, Clone, Copy)]
pub struct PostNorm<'a> {
    /// The previous projection's output (`cols` f32).
    pub d: &'a GpuBuffer,
    /// The post norm's weight (`cols` f32).
    pub weight: &'a GpuBuffer,
    /// Where x + the normed d goes (`cols` f32; not x: other workgroups still read x).
    pub x_out: &'a GpuBuffer,
}

/// A dispatch's buffers in binding order, and those it reads and writes.
struct Bound<'b> {
    buffers: Vec<&'b GpuBuffer>,
    reads: Vec<&'b GpuBuffer>,
    writes: Vec<&'b GpuBuffer>,
}

/// The buffers a [`GemvFused`] dispatch binds.
#[derive(Debug, Clone, Copy)]
pub struct GemvBuffers<'a> {
    pub w: &'a GpuBuffer,
    pub x: &'a GpuBuffer,
    pub y: &'a GpuBuffer,
    /// The rms_norm weight (`cols` f32), with `norm`.
    pub norm_weight: Option<&'a GpuBuffer>,
    /// The step buffer (`[pos, ..]`), K cache and V cache, with [`GemvEpilogue::RopeKv`].
    pub kv: Option<(&'a GpuBuffer, &'a GpuBuffer, &'a GpuBuffer)>,
    /// With `post_norm`.
    pub post: Option<PostNorm<'a>>,
    /// With `partials`.
    pub partials: Option<Partials<'a>>,
    /// The down matrix, with [`GemvEpilogue::SiluDown`].
    pub down: Option<&'a GpuBuffer>,
}

impl<'a> GemvBuffers<'a> {
    pub fn new(w: &'a GpuBuffer, x: &'a GpuBuffer, y: &'a GpuBuffer) -> GemvBuffers<'a> {
        GemvBuffers {
            w,
            x,
            y,
            norm_weight: None,
            kv: None,
            post: None,
            partials: None,
            down: None,
        }
    }
}

impl GemvFused {
    pub fn plain(gemv: Gemv) -> GemvFused {
        GemvFused {
            gemv,
            norm: None,
            post_norm: None,
            partials: 0,
            epilogue: GemvEpilogue::Store,
        }
    }

    /// The kernel family: `gemv_q4_1`, `rms_norm+gemv_q4_1+rope`, ...
    pub fn op_name(&self) -> String {
        shader::op_name(
            self.gemv.format,
            self.norm.is_some(),
            (self.post_norm.is_some(), self.partials > 0),
            self.epilogue_kind(),
        )
    }

    pub(crate) fn epilogue_kind(&self) -> EpilogueKind {
        match self.epilogue {
            GemvEpilogue::Store | GemvEpilogue::Accumulate => EpilogueKind::Store,
            GemvEpilogue::RopeKv(_) => EpilogueKind::Rope,
            GemvEpilogue::SiluMul { .. } => EpilogueKind::Silu,
            GemvEpilogue::GeluMul { .. } => EpilogueKind::Gelu,
            GemvEpilogue::SiluDown { .. } => EpilogueKind::SiluDown,
        }
    }

    /// Rows as the frame counts them: matrix rows, or gate/up pairs × 2 for silu_mul and
    /// gelu_mul.
    pub(crate) fn logical_rows(&self) -> u32 {
        match self.epilogue.gated() {
            Some((n, _)) => 2 * n,
            None => self.gemv.rows,
        }
    }

    /// The epilogue works on row pairs, so each lane must own whole pairs.
    fn pairs(&self) -> bool {
        matches!(self.epilogue, GemvEpilogue::RopeKv(_)) || self.epilogue.gated().is_some()
    }

    /// Adjusts a tuning to what the epilogue needs (2 or 4 rows per lane for the pair
    /// epilogues); tunings of [`Gemv::tuning`] go through here in the decoder.
    /// The folded down projection takes 32 FFN rows (64 logical rows) per workgroup:
    /// rows per lane to fill a workgroup of the narrow dp4a frame (256 threads, one row
    /// group per row set) at the tuning's lanes per row (16 lanes x 4 rows on an H100, 8 x
    /// 2 where subgroups are 8 wide); `check_tuning` refuses what else does not.
    pub fn fit_tuning(&self, mut tuning: GemvTuning) -> GemvTuning {
        if let GemvEpilogue::SiluDown { .. } = self.epilogue {
            let groups = (WORKGROUP_SIZE / tuning.threads_per_row.max(1)).max(1);
            tuning.rows_per_thread = (DOWN_LOGICAL_ROWS / groups).clamp(1, MAX_ROWS_PER_THREAD);
            return tuning;
        }
        if self.pairs() && tuning.rows_per_thread % 2 == 1 {
            tuning.rows_per_thread = (tuning.rows_per_thread + 1).min(MAX_ROWS_PER_THREAD);
        }
        tuning
    }

    /// The composed shader for `variant` (`subgroup_reduce`: the lanes frames' reduction
    /// by subgroup shuffles, see [`GemvVariant::subgroup_reduce`]; `x_shared`: the `rows`
    /// frame's x through subgroup shuffles, see `input_shared.wgsl`; `wide`: the `rows`
    /// frame over 32-byte loads, see `kernel_rows_wide.wgsl`).
    pub fn shader(
        &self,
        variant: GemvVariant,
        subgroup_reduce: bool,
        x_shared: bool,
        wide: bool,
    ) -> &'static gpuscope_runtime::ShaderSource {
        let key = ShaderKey {
            variant,
            subgroup_reduce: subgroup_reduce && variant != GemvVariant::Rows,
            layout: self.gemv.layout,
            format: self.gemv.format,
            norm: self.norm.is_some(),
            post: self.post_norm.is_some(),
            partials: self.partials > 0,
            epilogue: self.epilogue_kind(),
            x_shared,
            wide,
        };
        shader::shader(key, key.name())
    }

    fn invalid(&self, what: impl std::fmt::Display) -> GpuError {
        GpuError::Invalid(format!(
            "{} {}x{}: {what}",
            self.op_name(),
            self.gemv.rows,
            self.gemv.cols
        ))
    }

    fn check_tuning(&self, gpu: &Gpu, t: GemvTuning) -> Result<(), GpuError> {
        let GemvTuning {
            variant,
            threads_per_row: tpr,
            rows_per_thread: nr,
        } = t;
        variant.supported(gpu).map_err(|e| self.invalid(e))?;
        let g = &self.gemv;
        if !variant.runs(g.format, g.layout) {
            return Err(self.invalid(format!(
                "gemv variant `{}` has no kernel for {} weights in the {} layout (dp4a: q4_0, q4_1, q8_0 packed; q5_0, q5_1 gguf)",
                variant.name(),
                g.format.name(),
                g.layout.name()
            )));
        }
        if self.post_norm.is_some() && (variant != GemvVariant::Dp4a || self.norm.is_none()) {
            return Err(self.invalid(format!(
                "a post norm folds into the dp4a frame with rms_norm folded in, not `{}`{}",
                variant.name(),
                if self.norm.is_none() {
                    " without a norm"
                } else {
                    ""
                }
            )));
        }
        if self.partials > 0
            && (variant != GemvVariant::Dp4a || self.norm.is_none() || self.post_norm.is_some())
        {
            return Err(self.invalid(format!(
                "partials fold into the dp4a frame with rms_norm folded in and no post norm, not `{}`",
                variant.name()
            )));
        }
        if let GemvEpilogue::SiluDown { .. } = self.epilogue {
            self.check_down_tuning(gpu, t)?;
        }
        if variant == GemvVariant::Dp4a {
            let split = g.dp4a_split(gpu);
            // The folded post norm's sums of its subgroups: 128 more f32s; x plus the
            // partials: x again in f32.
            let post_bytes = if self.post_norm.is_some() { 512 } else { 0 }
                + if self.partials > 0 {
                    u64::from(self.gemv.cols) * 4
                } else {
                    0
                };
            let bytes = g.dp4a_workgroup_bytes(gpu, t) + post_bytes;
            if split.workgroup < tpr * split.k_split {
                return Err(self.invalid(format!(
                    "{tpr} lanes per row: the dp4a frame splits each row set over {} row groups of a {}-thread workgroup",
                    split.k_split, split.workgroup
                )));
            }
            let limit = u64::from(gpu.limits().max_compute_workgroup_storage_size);
            if bytes > limit {
                return Err(self.invalid(format!(
                    "the dp4a kernel keeps x as int8 in workgroup memory: {bytes} bytes for {} columns, the device allows {limit} (use gemv=subgroup for this matrix)",
                    g.cols
                )));
            }
        }
        let max_tpr = variant.max_threads_per_row(gpu);
        if !tpr.is_power_of_two() || tpr > max_tpr {
            return Err(self.invalid(format!(
                "threads_per_row {tpr} is not a power of two from 1 to {max_tpr} (variant {})",
                variant.name()
            )));
        }
        if !(1..=MAX_ROWS_PER_THREAD).contains(&nr) {
            return Err(self.invalid(format!(
                "rows_per_thread {nr} is not from 1 to {MAX_ROWS_PER_THREAD}"
            )));
        }
        if self.pairs() && nr % 2 != 0 {
            return Err(self.invalid(format!(
                "rows_per_thread {nr}: the {} epilogue needs whole row pairs per lane (2 or 4)",
                self.op_name()
            )));
        }
        Ok(())
    }

    /// The folded down projection: the dp4a frame, packed q4_0 / q4_1 / q8_0, exactly 32
    /// FFN rows per workgroup, each thread at most 4 down rows.
    fn check_down_tuning(&self, gpu: &Gpu, t: GemvTuning) -> Result<(), GpuError> {
        let GemvEpilogue::SiluDown { n, dim, .. } = self.epilogue else {
            return Ok(());
        };
        let g = &self.gemv;
        if t.variant != GemvVariant::Dp4a || !shader::down_format(g.format, g.layout) {
            return Err(self.invalid(format!(
                "the folded down projection runs in the dp4a frame over packed q4_0, q4_1 or q8_0, not `{}` over {} in the {} layout",
                t.variant.name(),
                g.format.name(),
                g.layout.name()
            )));
        }
        let split = g.dp4a_split(gpu);
        let per_wg = split.rows_per_workgroup(t);
        if per_wg != DOWN_LOGICAL_ROWS || !n.is_multiple_of(32) {
            return Err(self.invalid(format!(
                "the folded down projection takes 32 FFN rows a workgroup: {per_wg} logical rows with {} lanes x {} rows in {}-thread workgroups, FFN width {n}",
                t.threads_per_row, t.rows_per_thread, split.workgroup
            )));
        }
        if dim > 4 * split.workgroup {
            return Err(self.invalid(format!(
                "the folded down projection gives each thread at most 4 of its {dim} rows ({} threads)",
                split.workgroup
            )));
        }
        Ok(())
    }

    /// Whether `gpu` runs the folded down projection with `tuning` (`Ok` for the other
    /// epilogues), else why not.
    pub fn down_supported(&self, gpu: &Gpu, tuning: GemvTuning) -> Result<(), String> {
        self.check_tuning(gpu, tuning).map_err(|e| e.to_string())
    }

    /// How many partials the folded down projection writes (0 for the other epilogues).
    pub fn down_partials(&self) -> u32 {
        match self.epilogue {
            GemvEpilogue::SiluDown { n, .. } => n / 32,
            _ => 0,
        }
    }

    /// The down matrix of [`GemvEpilogue::SiluDown`]: `dim` x `n` in the gate/up matrix's
    /// format and layout.
    pub fn down_gemv(&self) -> Option<Gemv> {
        match self.epilogue {
            GemvEpilogue::SiluDown { n, dim, .. } => Some(Gemv {
                rows: dim,
                cols: n,
                out_offset: 0,
                ..self.gemv
            }),
            _ => None,
        }
    }

    /// `buf` holds at least `bytes` (the `what` buffer), else an error naming both.
    fn need(&self, buf: &GpuBuffer, bytes: u64, what: &str) -> Result<(), GpuError> {
        if buf.size() < bytes {
            return Err(self.invalid(format!(
                "{what} buffer \"{}\" has {} bytes, needs {bytes}",
                buf.label(),
                buf.size()
            )));
        }
        Ok(())
    }

    /// The buffers of what is folded in before the norm (a post norm, the partials):
    /// bound where folded in, large enough, and x_out apart from x.
    fn check_folds(&self, b: &GemvBuffers) -> Result<(), GpuError> {
        let cols = u64::from(self.gemv.cols);
        let need = |buf: &GpuBuffer, bytes: u64, what: &str| self.need(buf, bytes, what);
        match (self.post_norm, b.post) {
            (Some(_), Some(p)) => {
                need(p.d, cols * 4, "post norm input")?;
                need(p.weight, cols * 4, "post norm weight")?;
                need(p.x_out, cols * 4, "x_out")?;
                if p.x_out.id() == b.x.id() {
                    return Err(self.invalid(
                        "the folded post norm writes the residual stream to x's own buffer (other workgroups still read it)",
                    ));
                }
            }
            (Some(_), None) => {
                return Err(self.invalid("a post norm folded in but its buffers not bound"))
            }
            (None, _) => {}
        }
        match (self.partials, b.partials) {
            (0, _) => {}
            (n, Some(p)) => {
                need(p.parts, u64::from(n) * cols * 4, "partials")?;
                need(p.x_out, cols * 4, "x_out")?;
                if p.x_out.id() == b.x.id() {
                    return Err(self.invalid(
                        "the partials' sum goes to x's own buffer (other workgroups still read it)",
                    ));
                }
            }
            (_, None) => return Err(self.invalid("partials folded in but not bound")),
        }
        Ok(())
    }

    /// Checks the shape, the epilogue's constraints and the buffers' sizes.
    fn check(&self, b: &GemvBuffers) -> Result<(), GpuError> {
        let g = &self.gemv;
        if g.rows == 0 || g.cols == 0 {
            return Err(self.invalid("empty matrix"));
        }
        g.format
            .row_bytes(u64::from(g.cols))
            .map_err(|e| self.invalid(e))?;
        // Kernels index with u32; a binding is at most 4 GiB anyway, but the element
        // index of f32/f16 rows and the output index must not wrap either.
        let elems = u64::from(g.rows) * u64::from(g.cols);
        if elems > u64::from(u32::MAX)
            || g.weight_bytes() > u64::from(u32::MAX)
            || u64::from(g.out_offset) + u64::from(g.rows) > u64::from(u32::MAX)
        {
            return Err(self.invalid("more than 2^32 elements: split the matrix into row chunks"));
        }
        let need = |buf: &GpuBuffer, bytes: u64, what: &str| self.need(buf, bytes, what);
        if !g.layout.supports(g.format) {
            return Err(self.invalid(format!(
                "{} has no {} weight layout",
                g.format.name(),
                g.layout.name()
            )));
        }
        need(b.w, g.buffer_bytes(), "weight")?;
        need(b.x, u64::from(g.cols) * 4, "x")?;
        let out_end = match self.epilogue {
            GemvEpilogue::SiluDown { n, dim, .. } => u64::from(n / 32) * u64::from(dim),
            _ => match self.epilogue.gated() {
                Some((n, _)) => u64::from(g.out_offset) + u64::from(n),
                None => u64::from(g.out_offset) + u64::from(g.rows),
            },
        };
        match (self.norm, b.norm_weight) {
            (Some(_), Some(nw)) => need(nw, u64::from(g.cols) * 4, "norm weight")?,
            (Some(_), None) => {
                return Err(self.invalid("rms_norm folded in but no norm weight bound"))
            }
            (None, _) => {}
        }
        self.check_folds(b)?;
        match self.epilogue {
            GemvEpilogue::Store | GemvEpilogue::Accumulate => need(b.y, out_end * 4, "y")?,
            GemvEpilogue::SiluMul { n, up_row }
            | GemvEpilogue::GeluMul { n, up_row }
            | GemvEpilogue::SiluDown { n, up_row, .. } => {
                if let Some(down) = self.down_gemv() {
                    let Some(wd) = b.down else {
                        return Err(self.invalid("the folded down projection's matrix not bound"));
                    };
                    need(wd, down.buffer_bytes(), "down matrix")?;
                    if g.out_offset != 0 {
                        return Err(
                            self.invalid("the folded down projection writes partials from 0")
                        );
                    }
                }
                if up_row < n || u64::from(up_row) + u64::from(n) > u64::from(g.rows) {
                    return Err(self.invalid(format!(
                        "gated activation: up rows {up_row}..{} must follow the {n} gate rows inside the matrix",
                        u64::from(up_row) + u64::from(n)
                    )));
                }
                need(b.y, out_end * 4, "y")?;
            }
            GemvEpilogue::RopeKv(rope) => {
                let q_dim = rope.n_heads * rope.head_dim;
                let kv_dim = rope.n_kv_heads * rope.head_dim;
                let ok_rope = rope.head_dim % 2 == 0
                    && rope.rope_dims % 2 == 0
                    && rope.rope_dims <= rope.head_dim
                    && rope.max_ctx > 0;
                if !ok_rope {
                    return Err(self.invalid(format!("rope: bad shape {rope:?}")));
                }
                if rope.neox || rope.ring {
                    return Err(self.invalid(
                        "rope: the epilogue rotates adjacent rows into a linear cache only (no NeoX mode, no ring); run the rope op after the gemv",
                    ));
                }
                if !g.out_offset.is_multiple_of(2)
                    || !g.rows.is_multiple_of(2)
                    || u64::from(g.out_offset) + u64::from(g.rows)
                        > u64::from(q_dim) + 2 * u64::from(kv_dim)
                {
                    return Err(self.invalid(format!(
                        "rope: rows {}..{} must be whole pairs within q|k|v ({} rows)",
                        g.out_offset,
                        u64::from(g.out_offset) + u64::from(g.rows),
                        q_dim + 2 * kv_dim
                    )));
                }
                let Some((step, kc, vc)) = b.kv else {
                    return Err(self.invalid("rope: no step buffer and KV cache bound"));
                };
                need(b.y, u64::from(q_dim).min(out_end) * 4, "y (q)")?;
                need(step, 16, "step")?;
                let cache = 4 * u64::from(kv_dim) * u64::from(rope.max_ctx);
                need(kc, cache, "k_cache")?;
                need(vc, cache, "v_cache")?;
            }
        }
        Ok(())
    }

    /// Builds the dispatch.
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        tuning: GemvTuning,
        b: &GemvBuffers,
    ) -> Result<Dispatch, GpuError> {
        self.dispatch_planted(gpu, tuning, b, 0)
    }

    /// Like [`Self::dispatch`], with a *planted slowdown* for tests of the regression
    /// gate: every lane computes its dot products `extra_passes` more times
    /// (`EXTRA_PASSES` in the frames). The output is the same and so are the dispatch,
    /// its declared cost and every counter: only GPU time grows, which is what the gate
    /// must catch from timings alone. 0 is [`Self::dispatch`].
    pub fn dispatch_planted(
        &self,
        gpu: &Gpu,
        tuning: GemvTuning,
        b: &GemvBuffers,
        extra_passes: u32,
    ) -> Result<Dispatch, GpuError> {
        self.check_tuning(gpu, tuning)?;
        self.check(b)?;
        let g = &self.gemv;
        let GemvTuning {
            variant,
            threads_per_row,
            rows_per_thread,
        } = tuning;
        let rows = self.logical_rows();
        let mut constants: Vec<(&str, f64)> = vec![
            ("ROWS", f64::from(rows)),
            ("COLS", f64::from(g.cols)),
            ("OUT_OFFSET", f64::from(g.out_offset)),
            ("NR", f64::from(rows_per_thread)),
        ];
        let rows_per_wg = match variant {
            GemvVariant::Rows => {
                constants.push(("WG", f64::from(ROWS_WORKGROUP_SIZE)));
                ROWS_WORKGROUP_SIZE * rows_per_thread
            }
            GemvVariant::Dp4a => {
                let split = g.dp4a_split(gpu);
                constants.push(("TPR", f64::from(threads_per_row)));
                constants.push(("WG_SIZE", f64::from(split.workgroup)));
                constants.push(("KSPLIT", f64::from(split.k_split)));
                constants.push(("KSUMS", f64::from(split.sums(tuning))));
                split.rows_per_workgroup(tuning)
            }
            _ => {
                constants.push(("TPR", f64::from(threads_per_row)));
                WORKGROUP_SIZE / threads_per_row * rows_per_thread
            }
        };
        if let Some(eps) = self.norm {
            constants.push(("EPS", f64::from(eps)));
        }
        if let Some(eps) = self.post_norm {
            constants.push(("POST_EPS", f64::from(eps)));
        }
        if self.partials > 0 {
            constants.push(("N_PARTIALS", f64::from(self.partials)));
            constants.push(("X_SUM_VEC4S", f64::from(g.cols / 4)));
        }
        if variant == GemvVariant::Dp4a {
            constants.push(("XQ_VEC4S", f64::from(g.cols / 16)));
            constants.push(("X_BLOCKS", f64::from(g.cols / 32)));
        }
        if g.layout == super::WeightLayout::Packed {
            constants.push((
                "SCALES_AT",
                f64::from(super::WeightLayout::scales_at(g.format, g.rows, g.cols)),
            ));
        }
        // Only when planted, so every other pipeline keeps its cache key.
        if extra_passes > 0 {
            constants.push(("EXTRA_PASSES", f64::from(extra_passes)));
        }
        constants.extend(self.epilogue_constants());
        let bound = self.bound(b);
        let x_shared = shader::x_shared(gpu, variant, g.format);
        let wide = shader::wide(gpu, variant, g);
        // Built without naga's runtime checks (no loop counters in the unit loops, no
        // clamps). In range by construction, with the sizes `check` verified: weight rows
        // are clamped to ROWS - 1 (silu's up rows < up_row + n <= rows), units < n_units,
        // and a unit's words lie in its row's blocks but for q4_0's and q8_0's spliced
        // word, at most 2 bytes past the last block, inside the buffer's 4-byte padding;
        // x (and the norm weight) are read below COLS (/ 4 as vec4); y is written below
        // out_offset + rows (silu: + n; rope: q rows below q_dim); KV-cache rows only
        // for pos < MAX_CTX; workgroup arrays at lid + s < (group + 1) · TPR <= 256.
        // Every loop is bounded by a constant (units, x's length, EXTRA_PASSES) or halves
        // to 0. The wide rows frame (`wide`) reads 32-byte elements: a row's quants from
        // its first block (an even block, so element-aligned) to its last, and the
        // element holding each pair's scales, at most the one holding the matrix's last
        // scales, whole because packed buffers are padded to 32 bytes; x and the norm
        // weight below COLS / 8 elements (COLS a multiple of 64).
        let pipeline = gpu.pipeline_trusted(
            self.shader(variant, variant.subgroup_reduce(gpu), x_shared, wide),
            "main",
            &constants,
        )?;
        let bind_group = gpu.bind_group(&pipeline, &bound.buffers)?;
        Ok(Dispatch::new(
            self.op_name(),
            pipeline,
            bind_group,
            grid_2d(rows.div_ceil(rows_per_wg)),
            self.cost(),
            &bound.reads,
            &bound.writes,
        ))
    }

    /// The epilogue's override constants.
    fn epilogue_constants(&self) -> Vec<(&'static str, f64)> {
        match self.epilogue {
            GemvEpilogue::Store => vec![("ACCUMULATE", 0.0)],
            GemvEpilogue::Accumulate => vec![("ACCUMULATE", 1.0)],
            GemvEpilogue::SiluMul { up_row, .. } | GemvEpilogue::GeluMul { up_row, .. } => {
                vec![("UP_ROW", f64::from(up_row))]
            }
            GemvEpilogue::SiluDown { n, up_row, dim } => {
                let g = &self.gemv;
                vec![
                    ("UP_ROW", f64::from(up_row)),
                    ("DOWN_ROWS", f64::from(dim)),
                    ("DOWN_COLS", f64::from(n)),
                    (
                        "DOWN_SCALES_AT",
                        f64::from(super::WeightLayout::scales_at(g.format, dim, n)),
                    ),
                ]
            }
            GemvEpilogue::RopeKv(rope) => vec![
                ("Q_DIM", f64::from(rope.n_heads * rope.head_dim)),
                ("KV_DIM", f64::from(rope.n_kv_heads * rope.head_dim)),
                ("HEAD_DIM", f64::from(rope.head_dim)),
                ("ROPE_DIMS", f64::from(rope.rope_dims)),
                ("BASE", f64::from(rope.base)),
                ("MAX_CTX", f64::from(rope.max_ctx)),
            ],
        }
    }

    /// The buffers in binding order (w, x, y, the norm weight, the post norm's three,
    /// rope's three), and which of them the kernel reads and writes (`check` verified
    /// that each form has its buffers).
    fn bound<'b>(&self, b: &GemvBuffers<'b>) -> Bound<'b> {
        let mut out = Bound {
            buffers: vec![b.w, b.x, b.y],
            reads: vec![b.w, b.x],
            writes: vec![b.y],
        };
        if let (Some(_), Some(nw)) = (self.norm, b.norm_weight) {
            out.buffers.push(nw);
            out.reads.push(nw);
        }
        if let (Some(_), Some(p)) = (self.post_norm, b.post) {
            out.buffers.extend([p.d, p.weight, p.x_out]);
            out.reads.extend([p.d, p.weight]);
            out.writes.push(p.x_out);
        }
        if let (1.., Some(p)) = (self.partials, b.partials) {
            out.buffers.extend([p.parts, p.x_out]);
            out.reads.push(p.parts);
            out.writes.push(p.x_out);
        }
        match self.epilogue {
            GemvEpilogue::Accumulate => out.reads.push(b.y),
            GemvEpilogue::SiluDown { .. } => {
                let wd = b.down.expect("checked");
                out.buffers.push(wd);
                out.reads.push(wd);
            }
            GemvEpilogue::RopeKv(_) => {
                let (step, kc, vc) = b.kv.expect("checked");
                out.buffers.extend([step, kc, vc]);
                out.reads.push(step);
                out.writes.extend([kc, vc]);
            }
            _ => {}
        }
        out
    }
}
