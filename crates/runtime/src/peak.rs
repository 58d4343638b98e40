//! Measured device ceilings (`gpuscope peak`): what the device reaches on kernels that
//! do nothing but move bytes, do FMAs or dispatch, timed with GPU timestamps around
//! each pass, repeated, and summarised as median, p10–p90 and count. Rooflines use
//! these, never datasheet figures. The result is plain data ([`Ceilings`]).
//!
//! - copy, read-only and write-only bandwidth: a grid-stride loop over `bytes`
//!   (capped by the binding limit) of `vec4<f32>`; bytes counted are those the kernel
//!   must move (read + write for the copy, plus the read kernel's one f32 per
//!   invocation that keeps its sum alive)
//! - f32 and f16 FMA rates: 8 independent `vec4` FMA chains per invocation, unrolled
//!   twice, with the iteration count read from a buffer (one pipeline) and doubled
//!   until a repetition takes `target_ns`; f16 only where SHADER_F16 is offered
//! - dependent dispatch: a chain of tiny dispatches in one pass, each reading what
//!   the previous wrote (so each waits for the one before); GPU time per dispatch
//! - CPU encode + submit per dispatch: the same chain with timing off, CPU time of
//!   encoding and submitting it over its length
//! - fill: a kernel with a fixed amount of work per workgroup, dispatched with 1, 2,
//!   4, ... workgroups; the smallest count that reaches 90% of the best throughput
//!   (workgroups per ns) measured is the number a dispatch needs to keep the device
//!   busy. Doubling stops once throughput has stopped growing for two steps.
//!
//! Without GPU timestamps every GPU figure falls back to wall-clock with a sync per
//! repetition, and `method` says so.

use std::collections::BTreeMap;

use gpuscope_trace::ceilings::{
    Ceilings, CeilingsIdentity, FillWorkgroups, Measured, CEILINGS_FORMAT,
};
use gpuscope_trace::{GpuSpan, TimingMode};

use crate::device::Gpu;
use crate::dispatch::{Cost, Dispatch, Graph, Section};
use crate::error::GpuError;
use crate::resources::{GpuBuffer, ShaderSource};
use crate::step::StepRunner;

const COPY: ShaderSource = ShaderSource {
    name: "peak_copy",
    wgsl: r#"
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
override N: u32;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // A grid-stride loop: a fixed grid covers any size within the 65535 limit.
    let stride = nwg.x * 256u;
    for (var i = gid.x; i < N; i += stride) {
        dst[i] = src[i];
    }
}
"#,
};

const READ: ShaderSource = ShaderSource {
    name: "peak_read",
    wgsl: r#"
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> sums: array<f32>;
override N: u32;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * 256u;
    var acc = vec4<f32>(0.0);
    for (var i = gid.x; i < N; i += stride) {
        acc += src[i];
    }
    // One write per invocation keeps the reads from being optimised away.
    sums[gid.x] = acc.x + acc.y + acc.z + acc.w;
}
"#,
};

const WRITE: ShaderSource = ShaderSource {
    name: "peak_write",
    wgsl: r#"
@group(0) @binding(0) var<storage, read_write> dst: array<vec4<f32>>;
override N: u32;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * 256u;
    for (var i = gid.x; i < N; i += stride) {
        dst[i] = vec4<f32>(f32(i), 1.0, 2.0, 3.0);
    }
}
"#,
};

/// The FMA kernel body, for `T` = `f32` or `f16`: 8 chains of `a = a * b + c`, which
/// converge (b < 1) so no value overflows or turns denormal.
macro_rules! fma_kernel {
    ($enable:literal, $t:literal) => {
        concat!(
            $enable,
            r#"
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let iters = params[0];
    let s = "#,
            $t,
            r#"(gid.x % 7u) * "#,
            $t,
            r#"(0.001);
    let b = vec4<"#,
            $t,
            r#">("#,
            $t,
            r#"(0.5) + s);
    let c = vec4<"#,
            $t,
            r#">(s);
    var a0 = c; var a1 = c + b; var a2 = c - s; var a3 = b;
    var a4 = c * "#,
            $t,
            r#"(2.0); var a5 = b * "#,
            $t,
            r#"(0.5); var a6 = c + s; var a7 = b - s;
    for (var i = 0u; i < iters; i++) {
        a0 = fma(a0, b, c); a1 = fma(a1, b, c); a2 = fma(a2, b, c); a3 = fma(a3, b, c);
        a4 = fma(a4, b, c); a5 = fma(a5, b, c); a6 = fma(a6, b, c); a7 = fma(a7, b, c);
        a0 = fma(a0, b, c); a1 = fma(a1, b, c); a2 = fma(a2, b, c); a3 = fma(a3, b, c);
        a4 = fma(a4, b, c); a5 = fma(a5, b, c); a6 = fma(a6, b, c); a7 = fma(a7, b, c);
    }
    let sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    out[gid.x] = f32(sum.x + sum.y + sum.z + sum.w);
}
"#
        )
    };
}

const FMA_F32: ShaderSource = ShaderSource {
    name: "peak_fma_f32",
    wgsl: fma_kernel!("", "f32"),
};

const FMA_F16: ShaderSource = ShaderSource {
    name: "peak_fma_f16",
    wgsl: fma_kernel!("enable f16;\n", "f16"),
};

/// FLOPs per invocation per loop iteration: 16 vec4 FMAs of 2 FLOPs per lane.
const FMA_FLOPS_PER_ITER: u64 = 16 * 4 * 2;
const FMA_WORKGROUP: u32 = 64;
/// Workgroups of the FMA kernel: 262 144 invocations, more than any GPU holds at once.
const FMA_WORKGROUPS: u32 = 4096;

const TINY: ShaderSource = ShaderSource {
    name: "peak_tiny",
    wgsl: r#"
@group(0) @binding(0) var<storage, read_write> v: array<f32>;
@compute @workgroup_size(1)
fn main() {
    v[0] = v[0] + 1.0;
}
"#,
};

/// A fixed amount of work per workgroup: 64 invocations, each `params[0]` dependent
/// FMAs.
const FILL: ShaderSource = ShaderSource {
    name: "peak_fill",
    wgsl: r#"
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    var a = f32(li) * 0.001;
    for (var i = 0u; i < params[0]; i++) {
        a = fma(a, 0.999, 0.001);
    }
    if (a == 12345.0) {
        out[0] = a;
    }
}
"#,
};
const FILL_WORKGROUP: u32 = 64;
/// Throughput within this share of the best counts as filling the device.
const FILL_SHARE: f64 = 0.9;

/// What to measure with.
#[derive(Debug, Clone)]
pub struct PeakOptions {
    /// Bytes the bandwidth kernels move per repetition (capped by the device's
    /// binding limit).
    pub bytes: u64,
    /// Timed repetitions per figure (after 2 warm-ups).
    pub repetitions: usize,
    /// The FMA and fill kernels grow until one repetition takes this long, ns.
    pub target_ns: u64,
    /// Dispatches in the dependent chain.
    pub chain: usize,
    /// Who measured, e.g. `gpuscope 0.1.0` (goes into the identity).
    pub tool: String,
}

impl Default for PeakOptions {
    fn default() -> PeakOptions {
        PeakOptions {
            bytes: 1 << 30,
            repetitions: 20,
            target_ns: 5_000_000,
            chain: 1000,
            tool: format!("gpuscope {}", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// Times single-dispatch graphs, one step each, with GPU timestamps around the pass
/// when the device has them.
struct Timer {
    runner: StepRunner,
    timed: bool,
}

impl Timer {
    fn new(gpu: &Gpu, graph: &Graph) -> Result<Timer, GpuError> {
        if gpu.timing() != TimingMode::Off {
            if let Ok(runner) = StepRunner::with_timing(gpu, graph, &[], TimingMode::Pass) {
                return Ok(Timer {
                    runner,
                    timed: true,
                });
            }
        }
        Ok(Timer {
            runner: StepRunner::with_timing(gpu, graph, &[], TimingMode::Off)?,
            timed: false,
        })
    }

    /// One step of `graph`; its GPU time (or wall time without timestamps), ns.
    fn once(
        &mut self,
        gpu: &Gpu,
        graph: &Graph,
        uploads: &[(&GpuBuffer, u64, &[u8])],
    ) -> Result<Option<u64>, GpuError> {
        let out = self.runner.step(gpu, graph, uploads)?;
        Ok(if self.timed {
            out.gpu_busy_ns
        } else {
            Some(out.wall_ns)
        }
        .filter(|&ns| ns > 0))
    }

    /// 2 warm-ups, then `reps` timed steps; `work / ns` of each.
    fn rates(
        &mut self,
        gpu: &Gpu,
        graph: &Graph,
        uploads: &[(&GpuBuffer, u64, &[u8])],
        reps: usize,
        work: f64,
    ) -> Result<Option<Measured>, GpuError> {
        let mut v = Vec::with_capacity(reps);
        for i in 0..reps + 2 {
            let ns = self.once(gpu, graph, uploads)?;
            if i >= 2 {
                v.extend(ns.map(|ns| work / ns as f64));
            }
        }
        Ok(Measured::of(&v))
    }
}

fn one(name: &str, d: Dispatch) -> Graph {
    Graph {
        sections: vec![Section::new(name, None, vec![d])],
    }
}

/// The read-only bandwidth kernel over the first `bytes` (rounded down to 16) of `src`,
/// and the bytes one run moves (the reads plus its one f32 per invocation). Also the
/// "read-only" variant of `bench --experiment memory-vs-compute`.
pub fn read_only_dispatch(
    gpu: &Gpu,
    src: &GpuBuffer,
    bytes: u64,
) -> Result<(Dispatch, f64), GpuError> {
    let n = (bytes / 16).max(1) as u32;
    // One f32 written per invocation: few enough invocations that the writes are a
    // small share of the bytes, enough to fill any device.
    let grid = n.div_ceil(256).clamp(1, 4096);
    let sums = gpu.create_buffer("peak.sums", grid as u64 * 256 * 4)?;
    let p = gpu.pipeline(&READ, "main", &[("N", n as f64)])?;
    let b = gpu.bind_group(&p, &[src, &sums])?;
    let moved = n as f64 * 16.0 + grid as f64 * 256.0 * 4.0;
    Ok((
        Dispatch::new(
            "peak_read",
            p,
            b,
            [grid, 1, 1],
            Cost {
                bytes: moved as u64,
                ..Cost::default()
            },
            &[src],
            &[&sums],
        ),
        moved,
    ))
}

/// Bytes a cache flush writes: twice the largest last-level cache of the adapter's kind
/// that we know of (GPUs: 256 MB, AMD's Infinity Cache; H100/H200 have 50 MB of L2; CPU
/// adapters such as lavapipe: a server's 32 MB L3), within the device's limits. wgpu
/// reports no cache size.
pub fn cache_flush_bytes(gpu: &Gpu) -> u64 {
    let want: u64 = if gpu.adapter_info().device_type == wgpu::DeviceType::Cpu {
        64 << 20
    } else {
        512 << 20
    };
    let l = gpu.limits();
    want.min(l.max_storage_buffer_binding_size)
        .min(l.max_buffer_size)
        / 16
        * 16
}

const FLUSH: ShaderSource = ShaderSource {
    name: "cache_flush",
    wgsl: r#"
@group(0) @binding(0) var<storage, read_write> dst: array<vec4<f32>>;
// The timed kernel's output, bound so that wgpu orders the flush before the kernel (a
// barrier between two read-write uses); never written.
@group(0) @binding(1) var<storage, read_write> fence: array<u32>;
override N: u32;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * 256u;
    for (var i = gid.x; i < N; i += stride) {
        dst[i] = vec4<f32>(f32(i), 1.0, 2.0, 3.0);
    }
    if gid.x == 0xffffffffu {
        fence[0] = 0u;
    }
}
"#,
};

/// A dispatch that writes [`cache_flush_bytes`] of a buffer of its own, evicting what
/// an earlier dispatch left in the caches (`ops perf`'s cold runs, as Nsight Compute's
/// `--cache-control all` flushes between replays). `fence` is a buffer the timed
/// kernel writes: binding it read-write makes wgpu put a barrier between the two, so the
/// kernel starts after the flush ends instead of beside it.
pub fn cache_flush_dispatch(gpu: &Gpu, fence: &GpuBuffer) -> Result<Dispatch, GpuError> {
    let bytes = cache_flush_bytes(gpu).max(16);
    let n = (bytes / 16) as u32;
    let dst = gpu.create_buffer("cache_flush", bytes)?;
    let p = gpu.pipeline(&FLUSH, "main", &[("N", n as f64)])?;
    let b = gpu.bind_group(&p, &[&dst, fence])?;
    Ok(Dispatch::new(
        "cache_flush",
        p,
        b,
        [n.div_ceil(256).clamp(1, 65535), 1, 1],
        Cost {
            bytes,
            ..Cost::default()
        },
        &[],
        &[&dst, fence],
    ))
}

/// Measures every ceiling (see the module docs); `progress` hears what is being
/// measured, for a status line.
pub fn measure_ceilings(
    gpu: &Gpu,
    opts: &PeakOptions,
    mut progress: impl FnMut(&str),
) -> Result<Ceilings, GpuError> {
    let mut m = Measuring {
        gpu,
        opts,
        reps: opts.repetitions.max(1),
        settings: BTreeMap::new(),
    };
    progress("bandwidth");
    let bandwidth = m.bandwidth()?;
    let mut timer = bandwidth.timer;
    progress("FMA rate");
    let params = gpu.create_buffer("peak.params", 16)?;
    let out = gpu.create_buffer("peak.out", FMA_WORKGROUPS as u64 * FMA_WORKGROUP as u64 * 4)?;
    let fma = m.fma(&mut timer, &params, &out)?;
    progress("dispatch cost");
    let cost = m.dispatch_cost()?;
    progress("workgroups that fill the device");
    let fill_graph = {
        let p = gpu.pipeline(&FILL, "main", &[])?;
        let b = gpu.bind_group(&p, &[&params, &out])?;
        one(
            "fill",
            Dispatch::new(
                "peak_fill",
                p,
                b,
                [1, 1, 1],
                Cost::default(),
                &[&params],
                &[&out],
            ),
        )
    };
    let floor_ns = cost.gpu_ns.map_or(0.0, |m| m.median);
    let fill = fill_workgroups(gpu, &mut timer, fill_graph, &params, opts, floor_ns)?;
    if fill.is_none() {
        // Why, for the report's "fill not measured" (a figure is never guessed).
        m.settings.insert(
            FILL_UNMEASURED.into(),
            "the fill kernel gave no valid time even at 1 workgroup".into(),
        );
    }

    let method = if timer.timed {
        "GPU timestamps around each pass"
    } else {
        "wall-clock with a sync per repetition (the device offers no GPU timestamps)"
    };
    Ok(Ceilings {
        format: CEILINGS_FORMAT,
        identity: CeilingsIdentity::now(&gpu.adapter_desc(), &opts.tool),
        method: method.into(),
        copy_gbps: bandwidth.copy_gbps,
        read_gbps: bandwidth.read_gbps,
        write_gbps: bandwidth.write_gbps,
        f32_gflops: fma.f32_gflops,
        f16_gflops: fma.f16_gflops,
        dispatch_ns: cost.gpu_ns,
        cpu_dispatch_ns: Measured::of(&cost.cpu_ns),
        timestamp_ns: cost.timestamp_ns,
        fill,
        settings: m.settings,
    })
}

/// The settings key that says why `fill` was not measured.
pub const FILL_UNMEASURED: &str = "fill_unmeasured";

/// What every measurement reads, and the settings they note for the ceilings file.
struct Measuring<'a> {
    gpu: &'a Gpu,
    opts: &'a PeakOptions,
    reps: usize,
    settings: BTreeMap<String, String>,
}

/// Copy, read-only and write-only bandwidth, and the timer they were measured with
/// (the later measurements reuse it).
struct Bandwidth {
    copy_gbps: Option<Measured>,
    read_gbps: Option<Measured>,
    write_gbps: Option<Measured>,
    timer: Timer,
}

struct FmaRates {
    f32_gflops: Option<Measured>,
    /// `None` without SHADER_F16.
    f16_gflops: Option<Measured>,
}

/// What one dispatch costs: GPU time in a chain of tiny dispatches, and the CPU's
/// encode and submit time per dispatch of that chain.
struct DispatchCost {
    gpu_ns: Option<Measured>,
    cpu_ns: Vec<f64>,
    /// What timestamps around each dispatch add to it (see `Ceilings::timestamp_ns`).
    timestamp_ns: Option<Measured>,
}

impl Measuring<'_> {
    /// Copy, read and write kernels over one buffer pair of `--bytes` (within the
    /// device's binding limits), the source filled with a pattern.
    fn bandwidth(&mut self) -> Result<Bandwidth, GpuError> {
        let (gpu, reps) = (self.gpu, self.reps);
        let limits = gpu.limits();
        let bytes = self
            .opts
            .bytes
            .min(limits.max_storage_buffer_binding_size)
            .min(limits.max_buffer_size)
            / 16
            * 16;
        let bytes = bytes.max(16);
        let n = (bytes / 16) as u32;
        self.settings
            .insert("bandwidth_bytes".into(), bytes.to_string());
        self.settings.insert("repetitions".into(), reps.to_string());
        let src = gpu.create_buffer("peak.src", bytes)?;
        let dst = gpu.create_buffer("peak.dst", bytes)?;
        // Never benchmark on zeros: fill the source with a pattern.
        let pattern: Vec<u8> = (0..(1u64 << 20).min(bytes))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let mut off = 0;
        while off < bytes {
            let len = pattern.len().min((bytes - off) as usize);
            gpu.write_buffer(&src, off, &pattern[..len]);
            off += len as u64;
        }
        let grid = n.div_ceil(256).clamp(1, 65535);
        let copy = {
            let p = gpu.pipeline(&COPY, "main", &[("N", n as f64)])?;
            let b = gpu.bind_group(&p, &[&src, &dst])?;
            one(
                "copy",
                Dispatch::new(
                    "peak_copy",
                    p,
                    b,
                    [grid, 1, 1],
                    Cost::default(),
                    &[&src],
                    &[&dst],
                ),
            )
        };
        let mut timer = Timer::new(gpu, &copy)?;
        let copy_gbps = timer.rates(gpu, &copy, &[], reps, 2.0 * bytes as f64)?;
        let (read_dispatch, read_bytes) = read_only_dispatch(gpu, &src, bytes)?;
        let read = one("read", read_dispatch);
        let read_gbps = timer.rates(gpu, &read, &[], reps, read_bytes)?;
        let write = {
            let p = gpu.pipeline(&WRITE, "main", &[("N", n as f64)])?;
            let b = gpu.bind_group(&p, &[&dst])?;
            one(
                "write",
                Dispatch::new(
                    "peak_write",
                    p,
                    b,
                    [grid, 1, 1],
                    Cost::default(),
                    &[],
                    &[&dst],
                ),
            )
        };
        let write_gbps = timer.rates(gpu, &write, &[], reps, bytes as f64)?;
        Ok(Bandwidth {
            copy_gbps,
            read_gbps,
            write_gbps,
            timer,
        })
    }

    /// f32 and (where the device has SHADER_F16) f16 FMA rates.
    fn fma(
        &mut self,
        timer: &mut Timer,
        params: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<FmaRates, GpuError> {
        let (gpu, opts, reps) = (self.gpu, self.opts, self.reps);
        let fma = |source: &ShaderSource| -> Result<Graph, GpuError> {
            let p = gpu.pipeline(source, "main", &[])?;
            let b = gpu.bind_group(&p, &[params, out])?;
            Ok(one(
                source.name,
                Dispatch::new(
                    source.name,
                    p,
                    b,
                    [FMA_WORKGROUPS, 1, 1],
                    Cost::default(),
                    &[params],
                    &[out],
                ),
            ))
        };
        let invocations = FMA_WORKGROUPS as u64 * FMA_WORKGROUP as u64;
        let f32_gflops = fma_rate(gpu, timer, &fma(&FMA_F32)?, params, opts, reps)?;
        self.settings
            .insert("fma_invocations".into(), invocations.to_string());
        let f16_gflops = if gpu.features().contains(wgpu::Features::SHADER_F16) {
            fma_rate(gpu, timer, &fma(&FMA_F16)?, params, opts, reps)?
        } else {
            self.settings.insert(
                "f16".into(),
                "not measured: the device was not opened with SHADER_F16".into(),
            );
            None
        };
        Ok(FmaRates {
            f32_gflops,
            f16_gflops,
        })
    }

    /// A chain of `--chain` tiny dispatches in one pass: GPU time per dispatch, and
    /// (untimed) the CPU's encode and submit time per dispatch.
    fn dispatch_cost(&mut self) -> Result<DispatchCost, GpuError> {
        let (gpu, reps) = (self.gpu, self.reps);
        let chain = self.opts.chain.max(1);
        self.settings.insert("chain".into(), chain.to_string());
        let tiny = gpu.create_buffer("peak.tiny", 16)?;
        let chain_graph = {
            let p = gpu.pipeline(&TINY, "main", &[])?;
            let b = gpu.bind_group(&p, &[&tiny])?;
            Graph {
                sections: vec![Section::new(
                    "tiny",
                    None,
                    (0..chain)
                        .map(|_| {
                            Dispatch::new(
                                "peak_tiny",
                                p.clone(),
                                b.clone(),
                                [1, 1, 1],
                                Cost::default(),
                                &[&tiny],
                                &[&tiny],
                            )
                        })
                        .collect(),
                )],
            }
        };
        let mut chain_timer = Timer::new(gpu, &chain_graph)?;
        let gpu_ns = chain_timer
            .rates(gpu, &chain_graph, &[], reps, chain as f64)?
            .map(invert);
        let mut cpu = StepRunner::with_timing(gpu, &chain_graph, &[], TimingMode::Off)?;
        let mut cpu_ns = Vec::with_capacity(reps);
        for i in 0..reps + 2 {
            let o = cpu.step(gpu, &chain_graph, &[])?;
            if i >= 2 {
                cpu_ns.push((o.cpu.encode_ns + o.cpu.submit_ns) as f64 / chain as f64);
            }
        }
        let timestamp_ns = match gpu_ns {
            Some(untimed) => self.timestamp_cost(&chain_graph, untimed.median)?,
            None => None,
        };
        Ok(DispatchCost {
            gpu_ns,
            cpu_ns,
            timestamp_ns,
        })
    }

    /// The chain timed per dispatch: its first start to last end, per dispatch, less
    /// `untimed_ns` (the per-pass figure). `None` where the adapter cannot time
    /// dispatches or a span is invalid.
    fn timestamp_cost(
        &mut self,
        chain_graph: &Graph,
        untimed_ns: f64,
    ) -> Result<Option<Measured>, GpuError> {
        let (gpu, reps) = (self.gpu, self.reps);
        let Ok(mut runner) = StepRunner::with_timing(gpu, chain_graph, &[], TimingMode::Dispatch)
        else {
            return Ok(None);
        };
        let mut extra = Vec::with_capacity(reps);
        for i in 0..reps + 2 {
            let o = runner.step(gpu, chain_graph, &[])?;
            let spans: Option<Vec<GpuSpan>> = o
                .dispatches
                .iter()
                .map(|d| d.gpu.filter(|_| d.issue.is_none()))
                .collect();
            let (Some(spans), true) = (spans, i >= 2) else {
                continue;
            };
            let (Some(first), Some(last)) = (
                spans.iter().map(|s| s.start_ns).min(),
                spans.iter().map(|s| s.end_ns).max(),
            ) else {
                continue;
            };
            let per_dispatch = last.saturating_sub(first) as f64 / spans.len() as f64;
            extra.push(per_dispatch - untimed_ns);
        }
        // Not measurable (as cheap as untimed within noise) stays unmeasured.
        Ok(Measured::of(&extra))
    }
}

/// A rate measured as work per ns turned into ns per unit of work.
fn invert(m: Measured) -> Measured {
    Measured {
        median: 1.0 / m.median,
        p10: 1.0 / m.p90,
        p90: 1.0 / m.p10,
        n: m.n,
    }
}

/// Iterations of the FMA loop doubled until one run takes `target_ns`, then the rate.
fn fma_rate(
    gpu: &Gpu,
    timer: &mut Timer,
    graph: &Graph,
    params: &GpuBuffer,
    opts: &PeakOptions,
    reps: usize,
) -> Result<Option<Measured>, GpuError> {
    let mut iters: u32 = 8;
    loop {
        let bytes = iters.to_le_bytes();
        let ns = timer.once(gpu, graph, &[(params, 0, &bytes)])?.unwrap_or(0);
        if ns >= opts.target_ns || iters >= 1 << 20 {
            break;
        }
        // Jump close to the target in one step once a time is measurable.
        let factor = if ns > 0 {
            (opts.target_ns as f64 / ns as f64).clamp(2.0, 64.0)
        } else {
            2.0
        };
        iters = ((iters as f64 * factor) as u32).min(1 << 20);
    }
    let flops = (FMA_WORKGROUPS as u64 * FMA_WORKGROUP as u64) as f64
        * iters as f64
        * FMA_FLOPS_PER_ITER as f64;
    let bytes = iters.to_le_bytes();
    timer.rates(gpu, graph, &[(params, 0, &bytes)], reps, flops)
}

/// The median of 3 timed runs, ns.
fn median_ns(
    timer: &mut Timer,
    gpu: &Gpu,
    graph: &Graph,
    uploads: &[(&GpuBuffer, u64, &[u8])],
) -> Result<Option<f64>, GpuError> {
    let mut v = Vec::with_capacity(3);
    for _ in 0..3 {
        v.extend(timer.once(gpu, graph, uploads)?.map(|n| n as f64));
    }
    Ok(Measured::of(&v).map(|m| m.median))
}

/// The smallest workgroup count within [`FILL_SHARE`] of the best throughput.
fn fill_workgroups(
    gpu: &Gpu,
    timer: &mut Timer,
    mut graph: Graph,
    params: &GpuBuffer,
    opts: &PeakOptions,
    dispatch_floor_ns: f64,
) -> Result<Option<FillWorkgroups>, GpuError> {
    // Work per workgroup: enough that one workgroup alone runs for 20 dispatch floors
    // (and a fiftieth of the target), so the cost of a dispatch does not hide the
    // device's width.
    let enough = (20.0 * dispatch_floor_ns).max(opts.target_ns as f64 / 50.0);
    let mut iters: u32 = 64;
    graph.sections[0].dispatches[0].workgroups = [1, 1, 1];
    timer.once(gpu, &graph, &[(params, 0, &iters.to_le_bytes())])?;
    loop {
        let bytes = iters.to_le_bytes();
        let ns = median_ns(timer, gpu, &graph, &[(params, 0, &bytes)])?.unwrap_or(0.0);
        if ns >= enough || iters >= 1 << 24 {
            break;
        }
        iters = iters.saturating_mul(2);
    }
    let bytes = iters.to_le_bytes();
    let mut throughput: Vec<(u32, f64)> = Vec::new();
    let mut flat = 0;
    let mut w: u32 = 1;
    while w <= 65535 {
        graph.sections[0].dispatches[0].workgroups = [w, 1, 1];
        let Some(t) = median_ns(timer, gpu, &graph, &[(params, 0, &bytes)])? else {
            break;
        };
        let rate = w as f64 / t;
        let best = throughput.iter().map(|x| x.1).fold(0.0, f64::max);
        flat = if rate < best * 1.1 { flat + 1 } else { 0 };
        throughput.push((w, rate));
        tracing::debug!(workgroups = w, iters, ns = t, "peak fill");
        // Past two doublings without gain, or a repetition over 8 targets: done.
        if (flat >= 2 && w >= 8) || t > 8.0 * opts.target_ns as f64 {
            break;
        }
        w *= 2;
    }
    let best = throughput.iter().map(|x| x.1).fold(0.0, f64::max);
    Ok(throughput
        .iter()
        .find(|x| x.1 >= FILL_SHARE * best)
        .map(|&(workgroups, _)| FillWorkgroups {
            workgroups,
            workgroup_size: FILL_WORKGROUP,
        }))
}
