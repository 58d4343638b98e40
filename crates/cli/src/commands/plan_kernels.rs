//! `ops test | perf`'s rows for the kernels the adapter's default plan runs: the decode
//! graph of a synthetic SmolLM2-135M (the default model shape) in each weight format
//! asked (else q8_0, q4_0 and q4_1, whose plans differ most: dp4a and packed gemvs on
//! GPUs, rows and wide frames on CPU adapters). `test` checks them inside two decode
//! steps against the CPU executors; `perf` times each as the decoder binds it. The
//! harness's rows that are one of these kernels are marked as the plan's too.

use gpuscope_model::check::kernels::{check_plan_kernels, plan_dispatches, PlanKernel};
use gpuscope_model::{synthetic_weights, Preset};
use gpuscope_ops::harness::{backend_name, time_dispatch, CaseFilter, PerfOptions, PerfRow};
use gpuscope_ops::WeightFormat;
use gpuscope_runtime::{Gpu, GpuOptions, TimingRequest};
use gpuscope_trace::compare::Thresholds;
use gpuscope_trace::opstest::{OpPerfResult, OpTestResult};
use gpuscope_trace::TimingMode;

use crate::exit::Exit;

const PRESET: Preset = Preset::Smollm2_135m;
const SEED: u64 = 1;

/// The formats whose plans are built: those asked, else the default three less those an
/// `--op` filter rules out by naming another format (`--op gemv_q8_0`: q8_0 only).
fn formats(filter: &CaseFilter) -> Vec<WeightFormat> {
    if !filter.formats.is_empty() {
        return filter.formats.clone();
    }
    let named = |op: &str| {
        WeightFormat::ALL
            .into_iter()
            .find(|f| op.contains(f.name()))
    };
    [WeightFormat::Q8_0, WeightFormat::Q4_0, WeightFormat::Q4_1]
        .into_iter()
        .filter(|f| {
            filter.ops.is_empty()
                || filter
                    .ops
                    .iter()
                    .any(|op| named(op).is_none_or(|n| n == *f))
        })
        .collect()
}

/// The row's shape: the preset and the first dispatch that runs the kernel.
fn shape(k: &PlanKernel) -> String {
    format!("{}.{}", PRESET.name(), k.label)
}

fn selected(filter: &CaseFilter, k: &PlanKernel) -> bool {
    let shape = shape(k);
    (filter.ops.is_empty() || filter.ops.iter().any(|o| k.shader.contains(o.as_str())))
        && (filter.shapes.is_empty() || filter.shapes.iter().any(|s| shape.contains(s.as_str())))
}

fn params(k: &PlanKernel) -> String {
    format!("op={},calls_per_token={}", k.op, k.calls)
}

/// The plan's kernels checked against the CPU executors, as `ops test` rows; `device`
/// is the harness's adapter choice (opened again with timing off, as `check` opens it).
pub fn test_rows(
    device: &GpuOptions,
    filter: &CaseFilter,
    thresholds: &Thresholds,
) -> Result<Vec<OpTestResult>, Exit> {
    let gpu = Gpu::new(&GpuOptions {
        timing: TimingRequest::Exactly(TimingMode::Off),
        ..device.clone()
    })?;
    let mut rows = Vec::new();
    for format in formats(filter) {
        let name = format!("{} (synthetic, {})", PRESET.name(), format.name());
        let weights = synthetic_weights(&PRESET.config(), format, SEED, PRESET.name());
        let checks = check_plan_kernels(&gpu, &weights, &name, thresholds)
            .map_err(|e| anyhow::anyhow!("checking the default plan's kernels of {name}: {e}"))?;
        for c in checks.into_iter().filter(|c| selected(filter, &c.kernel)) {
            rows.push(OpTestResult {
                backend_name: backend_name(&gpu),
                op_name: c.kernel.shader.clone(),
                format: format.name().to_string(),
                shape: shape(&c.kernel),
                op_params: params(&c.kernel),
                test_mode: "plan".into(),
                supported: true,
                passed: c.failure.is_none(),
                error_message: c.failure.unwrap_or_default(),
                error: c.worst,
                guard_words_changed: 0,
                used_by_plan: true,
            });
        }
    }
    Ok(rows)
}

/// The plan's kernels timed where the decoder binds them, as `ops perf` rows.
pub fn perf_rows(
    gpu: &Gpu,
    filter: &CaseFilter,
    opts: &PerfOptions,
) -> Result<Vec<OpPerfResult>, Exit> {
    let mut rows = Vec::new();
    for format in formats(filter) {
        let weights = synthetic_weights(&PRESET.config(), format, SEED, PRESET.name());
        let (_decoder, kernels) = plan_dispatches(gpu, &weights)?;
        for (k, d) in kernels.iter().filter(|(k, _)| selected(filter, k)) {
            let named = PerfRow {
                op_name: k.shader.clone(),
                format: format.name().to_string(),
                shape: shape(k),
                op_params: params(k),
            };
            let mut row = time_dispatch(gpu, d, opts, named)?;
            row.used_by_plan = true;
            rows.push(row);
        }
    }
    Ok(rows)
}
