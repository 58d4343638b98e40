//! `ops perf`: one case timed with GPU timestamps.
//!
//! The dispatch is repeated `REPEATS` times in one pass, `steps` times after `warmup`
//! steps; with per-dispatch timestamps each run is one sample, with per-pass timestamps
//! each pass gives one sample (its time divided by the runs). The median and the 10th and
//! 90th percentiles of the samples are reported; GB/s and GFLOP/s come from the op's
//! declared cost at the median.
//!
//! Cold by default: before each run a dispatch writes a buffer twice the size of the
//! largest last-level cache (`cache_flush_bytes`), so the run reads its operands from
//! memory as a decoder does (its weights are read once a token, and a model's are larger
//! than the cache). Repeated warm, a 33 MB matrix stayed in an H100's 50 MB L2 and read at
//! "114% of the copy ceiling". Each cold run is then a pass of its own after its flush's
//! (per-pass timestamps time it alone). Warm runs only on request, labelled as warm.

use gpuscope_runtime::{cache_flush_dispatch, Dispatch, Gpu, GpuError, Graph, Section, StepRunner};
use gpuscope_trace::opstest::{pct_of_ceiling, OpPerfResult};
use gpuscope_trace::stats::percentile_f64;
use gpuscope_trace::TimingMode;

use super::cases::{seed, Builder, Case};

/// Runs of the dispatch per pass.
const REPEATS: usize = 10;

#[derive(Debug, Clone, Copy)]
pub struct PerfOptions {
    pub warmup: usize,
    pub steps: usize,
    /// A measured copy bandwidth (GB/s) for the % of ceiling column.
    pub ceiling_gb_s: Option<f64>,
    /// Flush the caches before each run (see the module docs); `false`: warm runs.
    pub cold: bool,
}

impl Default for PerfOptions {
    fn default() -> Self {
        PerfOptions {
            warmup: 2,
            steps: 5,
            ceiling_gb_s: None,
            cold: true,
        }
    }
}

/// GPU time of one run of `group` (its dispatches in order), in ns, one sample per run:
/// the group is repeated `REPEATS` times in one pass, `steps` times after `warmup`
/// steps. Sorted. With per-dispatch timestamps a run's sample is the sum of its
/// dispatches' times; with per-pass timestamps it is the pass's time over the runs.
pub fn time_group(gpu: &Gpu, group: &[Dispatch], opts: &PerfOptions) -> Result<Vec<f64>, GpuError> {
    let timing = gpu.timing();
    if timing == TimingMode::Off {
        return Err(GpuError::Invalid(
            "timing kernels needs GPU timestamps (TIMESTAMP_QUERY); this device was opened without them"
                .into(),
        ));
    }
    if gpu.timing_info().sampling.is_some() {
        return Err(GpuError::Invalid(
            "timing kernels needs every run timed: open the device with pass or dispatch timing, not sampled"
                .into(),
        ));
    }
    let name = group.first().map_or("(empty)", |d| d.op.as_str());
    let k = group.len().max(1);
    let flush = match (opts.cold, group.first().and_then(written)) {
        (true, Some(fence)) => Some(cache_flush_dispatch(gpu, &fence)?),
        _ => None,
    };
    // Cold: a pass per flush and per run; warm: the runs in one pass.
    let sections = match &flush {
        Some(f) => (0..REPEATS)
            .flat_map(|_| {
                [
                    Section::new("cache flush", None, vec![f.clone()]),
                    Section::new("ops perf", None, group.to_vec()),
                ]
            })
            .collect(),
        None => vec![Section::new(
            "ops perf",
            None,
            (0..REPEATS).flat_map(|_| group.iter().cloned()).collect(),
        )],
    };
    let graph = Graph { sections };
    let (skip, runs_per_pass) = match flush {
        Some(_) => (1, 1),
        None => (0, REPEATS),
    };
    let mut runner = StepRunner::new(gpu, &graph, &[])?;
    let mut samples = Vec::new();
    for step in 0..opts.warmup + opts.steps {
        let out = runner.step(gpu, &graph, &[])?;
        if step < opts.warmup {
            continue;
        }
        match timing {
            TimingMode::Dispatch => {
                let times: Vec<Option<f64>> = out
                    .dispatches
                    .iter()
                    .map(|s| match (&s.issue, s.gpu) {
                        (None, Some(g)) => Some(g.duration_ns() as f64),
                        _ => None,
                    })
                    .collect();
                // A run counts only when every one of its dispatches has a valid time;
                // a flush before it is not timed.
                samples.extend(
                    times
                        .chunks(k + skip)
                        .filter_map(|run| run[skip..].iter().copied().sum::<Option<f64>>()),
                );
            }
            _ => samples.extend(
                out.passes
                    .iter()
                    .skip(skip)
                    .step_by(skip + 1)
                    .filter(|s| s.issue.is_none())
                    .filter_map(|s| s.gpu.map(|g| g.duration_ns() as f64 / runs_per_pass as f64)),
            ),
        }
    }
    if samples.is_empty() {
        return Err(GpuError::Invalid(format!(
            "{name}: no valid GPU timestamp in {} runs",
            opts.steps
        )));
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples)
}

/// A buffer the dispatch writes (the flush's fence), as bound.
fn written(d: &Dispatch) -> Option<gpuscope_runtime::GpuBuffer> {
    d.bind_group
        .bindings()
        .iter()
        .find(|b| d.writes.contains(&b.id()))
        .cloned()
}

pub fn run_perf(gpu: &Gpu, case: &Case, opts: &PerfOptions) -> Result<OpPerfResult, GpuError> {
    let mut b = Builder::new(gpu, seed(case));
    let d = case.build(&mut b)?;
    let named = PerfRow {
        op_name: case.op.clone(),
        format: case.format.map_or("-".into(), |f| f.name().to_string()),
        shape: case.shape.clone(),
        op_params: case.op_params(),
    };
    time_dispatch(gpu, &d, opts, named)
}

/// What names a timed dispatch in the results.
#[derive(Debug, Clone)]
pub struct PerfRow {
    pub op_name: String,
    pub format: String,
    pub shape: String,
    pub op_params: String,
}

/// `d` timed alone (see [`time_group`]), with GB/s and GFLOP/s from its declared cost.
pub fn time_dispatch(
    gpu: &Gpu,
    d: &Dispatch,
    opts: &PerfOptions,
    named: PerfRow,
) -> Result<OpPerfResult, GpuError> {
    let timing = gpu.timing();
    let mut samples = time_group(gpu, std::slice::from_ref(d), opts)?;
    let runs = samples.len() as u64;
    let mut pct = |p: f64| percentile_f64(&mut samples, p).expect("time_group returns samples");
    let (median_ns, p10_ns, p90_ns) = (pct(50.0).max(1.0), pct(10.0), pct(90.0));
    let bandwidth = d.cost.bytes as f64 / median_ns;
    Ok(OpPerfResult {
        backend_name: super::backend_name(gpu),
        op_name: named.op_name,
        format: named.format,
        shape: named.shape,
        op_params: named.op_params,
        test_mode: if opts.cold {
            "perf"
        } else {
            "perf (warm caches)"
        }
        .into(),
        time_us: median_ns / 1e3,
        time_us_p10: p10_ns / 1e3,
        time_us_p90: p90_ns / 1e3,
        n_runs: runs,
        flops: d.cost.flops as f64 / median_ns * 1e9,
        bandwidth_gb_s: bandwidth,
        pct_of_ceiling: opts.ceiling_gb_s.and_then(|c| pct_of_ceiling(bandwidth, c)),
        timing: timing.to_string(),
        used_by_plan: false,
    })
}
