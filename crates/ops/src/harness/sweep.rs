//! `bench --sweep` and `--experiment`: one gemv shape under one configuration (format,
//! variant, lanes per row, rows per lane, workgroup size, rms_norm fused or not, and the
//! experiments' read-only and compute-only forms), timed like `ops perf`
//! ([`super::perf::time_group`]).
//!
//! - `fuse`: `on` times the gemv with rms_norm folded into its input (one dispatch),
//!   `off` an rms_norm dispatch then the plain gemv (two); unset, the plain gemv alone.
//! - [`SweepMode::ReadOnly`]: the read-only bandwidth kernel of `gpuscope peak` over the
//!   same weight bytes, no arithmetic: the time the bytes alone take.
//! - [`SweepMode::ComputeOnly`]: the gemv itself with `ROW_SPAN = 8` (the frames' experiment
//!   constant): every row reads the weights of one of 8 rows, which stay in cache, so the
//!   same arithmetic runs with almost no memory traffic.
//! - workgroup size: the lanes frame's `WG_SIZE` (256 in the kernels the decoder runs) is
//!   a WGSL constant sized into its shared-memory reduction, so a sweep value rebuilds the
//!   kernel with both edited; the `rows` frame takes it as its `WG` override, `dp4a` as
//!   its `WG_SIZE` override (its own default: `Gemv::dp4a_split`, whose row groups per
//!   row set the point keeps).
//!
//! Every point is checked against the adapter before anything runs ([`SweepPoint::check`]),
//! so a value it cannot run is one error naming the value.

use gpuscope_runtime::{grid_2d, read_only_dispatch, Dispatch, Gpu, GpuError};

use super::cases::Builder;
use super::perf::{time_group, PerfOptions};
use crate::gemv::{
    Gemv, GemvBuffers, GemvEpilogue, GemvFused, GemvTuning, GemvVariant, WeightLayout,
    MAX_ROWS_PER_THREAD, ROWS_WORKGROUP_SIZE, WORKGROUP_SIZE,
};
use crate::quant::WeightFormat;
use crate::rms_norm::RmsNorm;

/// Rows the compute-only form reads its weights from (`ROW_SPAN`).
const COMPUTE_ONLY_ROWS: f64 = 8.0;
const EPS: f32 = 1e-5;

/// What of the gemv runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepMode {
    /// The kernel as the decoder runs it.
    Full,
    /// Only the weight bytes read (no arithmetic).
    ReadOnly,
    /// Only the arithmetic (weights from a few cached rows).
    ComputeOnly,
}

impl SweepMode {
    pub fn name(self) -> &'static str {
        match self {
            SweepMode::Full => "full",
            SweepMode::ReadOnly => "read-only",
            SweepMode::ComputeOnly => "compute-only",
        }
    }
}

/// One configuration of one shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepPoint {
    pub rows: u32,
    pub cols: u32,
    pub format: WeightFormat,
    /// How the weights lie in their buffer; formats without a packed form keep their GGUF
    /// bytes ([`WeightLayout::for_format`]), as in the decoder.
    pub layout: WeightLayout,
    pub variant: GemvVariant,
    /// Lanes per row; `None`: the variant's tuning for the shape.
    pub lanes: Option<u32>,
    /// Rows per lane; `None`: the variant's tuning for the shape.
    pub rows_per_lane: Option<u32>,
    /// Threads per workgroup; `None`: the frame's own (256, 8 for `rows`, `Gemv::dp4a_split`'s 256-1024 for `dp4a`).
    pub workgroup: Option<u32>,
    /// rms_norm folded in (`Some(true)`), as its own dispatch (`Some(false)`), or absent.
    pub fuse: Option<bool>,
    pub mode: SweepMode,
}

/// A point as it ran: the resolved tuning, its samples and its declared cost.
#[derive(Debug, Clone)]
pub struct SweepTiming {
    pub lanes: u32,
    pub rows_per_lane: u32,
    pub workgroup: u32,
    /// GPU time of one run (all its dispatches), ns, sorted.
    pub samples_ns: Vec<f64>,
    pub bytes: u64,
    pub flops: u64,
    pub dispatches: u32,
}

impl SweepPoint {
    fn gemv(&self) -> Gemv {
        Gemv {
            rows: self.rows,
            cols: self.cols,
            format: self.format,
            out_offset: 0,
            layout: self.layout.for_format(self.format),
        }
    }

    /// The tuning this point runs with on `gpu`.
    pub fn tuning(&self, gpu: &Gpu) -> GemvTuning {
        let mut t = self.gemv().tuning(self.variant, gpu);
        if let Some(l) = self.lanes {
            t.threads_per_row = l;
        }
        if let Some(r) = self.rows_per_lane {
            t.rows_per_thread = r;
        }
        t
    }

    fn frame_workgroup(&self, gpu: &Gpu) -> u32 {
        match self.variant {
            GemvVariant::Rows => ROWS_WORKGROUP_SIZE,
            GemvVariant::Dp4a => self.gemv().dp4a_split(gpu).workgroup,
            _ => WORKGROUP_SIZE,
        }
    }

    /// The workgroup size this point runs with on `gpu`.
    pub fn workgroup_size(&self, gpu: &Gpu) -> u32 {
        self.workgroup.unwrap_or_else(|| self.frame_workgroup(gpu))
    }

    /// Whether `gpu` can run this point; if not, why, naming the value (`lanes=512`).
    pub fn check(&self, gpu: &Gpu) -> Result<(), String> {
        let f = self.format;
        if self.cols == 0 || self.rows == 0 {
            return Err(format!(
                "shape={}x{}: rows and columns must be > 0",
                self.rows, self.cols
            ));
        }
        if !self.cols.is_multiple_of(f.block_elems()) {
            return Err(format!(
                "format={}: {} columns are not whole {}-element blocks of {}",
                f.name(),
                self.cols,
                f.block_elems(),
                f.name()
            ));
        }
        let bytes = self.gemv().weight_bytes();
        let max = gpu.limits().max_storage_buffer_binding_size;
        if bytes > max {
            return Err(format!(
                "shape={}x{}: {bytes} bytes of {} weights exceed the adapter's largest binding ({max} bytes)",
                self.rows,
                self.cols,
                f.name()
            ));
        }
        self.variant
            .supported(gpu)
            .map_err(|e| format!("variant={}: {e}", self.variant.name()))?;
        let layout = self.gemv().layout;
        if !self.variant.runs(f, layout) {
            return Err(format!(
                "variant={}: no kernel for {} weights in the {} layout (dp4a: q4_0, q4_1, q8_0 with layout=packed)",
                self.variant.name(),
                f.name(),
                layout.name()
            ));
        }
        let t = self.tuning(gpu);
        let max_lanes = self.variant.max_threads_per_row(gpu);
        if !t.threads_per_row.is_power_of_two() || t.threads_per_row > max_lanes {
            return Err(format!(
                "lanes={}: variant {} takes a power of two from 1 to {max_lanes} lanes per row on \"{}\"",
                t.threads_per_row,
                self.variant.name(),
                gpu.adapter_info().name
            ));
        }
        if !(1..=MAX_ROWS_PER_THREAD).contains(&t.rows_per_thread) {
            return Err(format!(
                "rows={}: rows per lane go from 1 to {MAX_ROWS_PER_THREAD}",
                t.rows_per_thread
            ));
        }
        if let Some(wg) = self.workgroup {
            let limits = gpu.limits();
            let max_wg = limits
                .max_compute_invocations_per_workgroup
                .min(limits.max_compute_workgroup_size_x);
            if wg > max_wg {
                return Err(format!(
                    "wg={wg}: over the adapter's limit of {max_wg} invocations per workgroup (\"{}\")",
                    gpu.adapter_info().name
                ));
            }
            // dp4a keeps its k-split: each row set takes that many row groups.
            let groups = match self.variant {
                GemvVariant::Dp4a => self.gemv().dp4a_split(gpu).k_split,
                _ => 1,
            };
            if !wg.is_power_of_two() || wg < t.threads_per_row * groups {
                return Err(format!(
                    "wg={wg}: a workgroup size is a power of two of at least the lanes per row ({}) times the row groups per row set ({groups})",
                    t.threads_per_row
                ));
            }
            // The shared-memory reduction keeps one vec4 per thread.
            let shared = 16 * wg;
            if !self.variant.subgroup_reduce(gpu)
                && self.variant != GemvVariant::Rows
                && shared > limits.max_compute_workgroup_storage_size
            {
                return Err(format!(
                    "wg={wg}: its reduction needs {shared} bytes of workgroup memory, over the adapter's {}",
                    limits.max_compute_workgroup_storage_size
                ));
            }
            if self.variant == GemvVariant::Rows
                && wg != ROWS_WORKGROUP_SIZE
                && crate::gemv::x_shared(gpu, self.variant, f)
            {
                return Err(format!(
                    "wg={wg}: on this adapter the rows frame shares x across its {ROWS_WORKGROUP_SIZE}-lane workgroup (one subgroup) for {}; its workgroup size is fixed",
                    f.name()
                ));
            }
        }
        if self.fuse.is_some() && self.mode != SweepMode::Full {
            return Err(format!(
                "fuse: applies to the full kernel, not the {} form",
                self.mode.name()
            ));
        }
        Ok(())
    }

    /// Builds this point's dispatches on fresh random inputs and times them.
    pub fn run(&self, gpu: &Gpu, opts: &PerfOptions) -> Result<SweepTiming, GpuError> {
        self.check(gpu).map_err(GpuError::Invalid)?;
        let group = self.build(gpu)?;
        let samples_ns = time_group(gpu, &group, opts)?;
        let t = self.tuning(gpu);
        Ok(SweepTiming {
            lanes: t.threads_per_row,
            rows_per_lane: t.rows_per_thread,
            workgroup: self.workgroup_size(gpu),
            samples_ns,
            bytes: group.iter().map(|d| d.cost.bytes).sum(),
            flops: group.iter().map(|d| d.cost.flops).sum(),
            dispatches: group.len() as u32,
        })
    }

    /// This point's dispatches, in order, on fresh random inputs (after [`Self::check`]).
    pub fn build(&self, gpu: &Gpu) -> Result<Vec<Dispatch>, GpuError> {
        let gemv = self.gemv();
        let mut b = Builder::new(
            gpu,
            0x5eed ^ u64::from(self.rows) ^ (u64::from(self.cols) << 20),
        );
        let w = b.weights_in("w", self.rows, self.cols, self.format, gemv.layout)?;
        let x = b.input_f32("x", self.cols as u64)?;
        let y = gpu.create_buffer("y", 4 * u64::from(self.rows))?;
        let tuning = self.tuning(gpu);
        if self.mode == SweepMode::ReadOnly {
            let (d, _) = read_only_dispatch(gpu, &w, gemv.buffer_bytes())?;
            return Ok(vec![d]);
        }
        let mut group = Vec::new();
        let d = match self.fuse {
            None => GemvFused::plain(gemv).dispatch(gpu, tuning, &GemvBuffers::new(&w, &x, &y))?,
            Some(fused) => {
                let nw = b.input_f32("norm.weight", self.cols as u64)?;
                if fused {
                    let buffers = GemvBuffers {
                        norm_weight: Some(&nw),
                        ..GemvBuffers::new(&w, &x, &y)
                    };
                    GemvFused {
                        gemv,
                        norm: Some(EPS),
                        post_norm: None,
                        partials: 0,
                        epilogue: GemvEpilogue::Store,
                    }
                    .dispatch(gpu, tuning, &buffers)?
                } else {
                    let normed = gpu.create_buffer("x.normed", 4 * u64::from(self.cols))?;
                    let norm = RmsNorm {
                        n: self.cols,
                        eps: EPS,
                    };
                    group.push(norm.dispatch(gpu, &x, &nw, &normed)?);
                    GemvFused::plain(gemv).dispatch(
                        gpu,
                        tuning,
                        &GemvBuffers::new(&w, &normed, &y),
                    )?
                }
            }
        };
        group.push(self.edited(gpu, d, tuning)?);
        Ok(group)
    }

    /// The gemv dispatch with this point's workgroup size and compute-only constant, when
    /// they differ from the kernel's own.
    fn edited(&self, gpu: &Gpu, d: Dispatch, t: GemvTuning) -> Result<Dispatch, GpuError> {
        let mut extra: Vec<(&str, f64)> = Vec::new();
        if self.mode == SweepMode::ComputeOnly {
            extra.push(("ROW_SPAN", COMPUTE_ONLY_ROWS));
        }
        let wg = self.workgroup_size(gpu);
        let wg_name = format!("wg{wg}");
        let mut wgsl = None;
        let mut workgroups = d.workgroups;
        if wg != self.frame_workgroup(gpu) {
            let rows_per_wg = match self.variant {
                GemvVariant::Rows => {
                    extra.push(("WG", f64::from(wg)));
                    wg * t.rows_per_thread
                }
                GemvVariant::Dp4a => {
                    // The kernel's own k-split, at this workgroup size.
                    let split = crate::gemv::Dp4aSplit {
                        workgroup: wg,
                        ..self.gemv().dp4a_split(gpu)
                    };
                    extra.push(("WG_SIZE", f64::from(wg)));
                    extra.push(("KSUMS", f64::from(split.sums(t))));
                    split.rows_per_workgroup(t)
                }
                _ => {
                    wgsl = Some(lanes_frame_with_workgroup(d.pipeline.wgsl(), wg));
                    wg / t.threads_per_row * t.rows_per_thread
                }
            };
            workgroups = grid_2d(self.rows.div_ceil(rows_per_wg));
        }
        if extra.is_empty() && wgsl.is_none() {
            return Ok(d);
        }
        let source = wgsl.map(|w| (wg_name.as_str(), w));
        let mut d = super::rebuild(gpu, &d, source, &extra, true)?;
        d.workgroups = workgroups;
        Ok(d)
    }
}

/// The lanes frame's WGSL with `wg` threads per workgroup: its `WG_SIZE` constant and the
/// shared-memory reduction's array (one slot per thread).
fn lanes_frame_with_workgroup(wgsl: &str, wg: u32) -> String {
    let edits = [
        (
            "const WG_SIZE: u32 = 256u;",
            format!("const WG_SIZE: u32 = {wg}u;"),
        ),
        (
            "array<vec4<f32>, 256>; // WG_SIZE",
            format!("array<vec4<f32>, {wg}>; // WG_SIZE"),
        ),
    ];
    let mut out = wgsl.to_string();
    for (from, to) in edits {
        // The reduction's array is absent where lanes reduce with subgroup shuffles.
        out = out.replacen(from, &to, 1);
    }
    assert!(
        out.contains(&format!("const WG_SIZE: u32 = {wg}u;")),
        "the lanes frame no longer declares `const WG_SIZE: u32 = 256u;`"
    );
    out
}
