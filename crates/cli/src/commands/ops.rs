//! `gpuscope ops test | perf`: the harness of [`gpuscope_ops::harness`], then the
//! kernels the adapter's default plan runs ([`super::plan_kernels`]), results as a
//! table, CSV or JSON (llama.cpp test-backend-ops field names); exit code 5 when a test
//! fails.

use std::io::Write;

use anyhow::{anyhow, Context};
use gpuscope_ops::harness::{
    cases, run_perf, run_test, Case, CaseFilter, Fault, PerfOptions, ShapeSet,
};
use gpuscope_ops::WeightFormat;
use gpuscope_runtime::Gpu;
use gpuscope_trace::compare::Thresholds;
use gpuscope_trace::opstest::{
    perf_csv, perf_table, test_csv, test_table, OpPerfResult, OpTestResult,
};

use crate::args::{OpsArgs, OpsMode, OutputFormat};
use crate::exit::{Exit, CHECK_FAILED};

fn filter(args: &OpsArgs) -> Result<CaseFilter, Exit> {
    let formats = args
        .formats
        .iter()
        .map(|f| {
            f.parse::<WeightFormat>()
                .map_err(|e| anyhow!("--format {f}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CaseFilter {
        ops: args.op.clone(),
        formats,
        shapes: args.shape.clone(),
    })
}

fn write_json(path: &std::path::Path, json: String) -> Result<(), Exit> {
    gpuscope_trace::atomic::write_atomic(path, (json + "\n").as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("gpuscope: results written to {}", path.display());
    Ok(())
}

fn no_case(args: &OpsArgs) -> Exit {
    anyhow!(
        "no case matches --op {:?} --format {:?} --shape {:?} (in the harness's table or the default plan's kernels)",
        args.op,
        args.formats,
        args.shape
    )
    .into()
}

pub fn run(mode: &OpsMode) -> Result<(), Exit> {
    let (args, perf) = match mode {
        OpsMode::Test(a) => (a, false),
        OpsMode::Perf(a) => (a, true),
    };
    let mut thresholds = Thresholds::default();
    for t in &args.threshold {
        thresholds.set(t).map_err(|e| anyhow!(e))?;
    }
    let fault = args
        .inject_fault
        .as_deref()
        .map(Fault::parse)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    let filter = filter(args)?;
    let gpu = Gpu::new(&args.device.kernel_timing_options())?;
    let set = if args.all_shapes {
        ShapeSet::All
    } else {
        ShapeSet::Default
    };
    let list = cases(set, gpu.limits().max_storage_buffer_binding_size, &filter);
    if perf {
        perf_cases(args, &gpu, &list, &filter)
    } else {
        test_cases(args, &gpu, &list, &filter, &thresholds, fault)
    }
}

/// The copy bandwidth `% ceil` is of: `--ceiling`, else the cached `peak`'s.
fn ceiling(args: &OpsArgs, gpu: &Gpu) -> Result<Option<f64>, Exit> {
    let Some(v) = args.ceiling.as_deref() else {
        let copy =
            super::ceilings::cached(&gpu.adapter_desc(), true).and_then(|(c, _)| c.copy_gbps);
        match copy {
            Some(m) => eprintln!(
                "gpuscope: % of ceiling is of the cached copy bandwidth, {:.1} GB/s",
                m.median
            ),
            None => eprintln!(
                "gpuscope: no measured copy bandwidth for this adapter: run `gpuscope peak` once, or pass --ceiling GB/S"
            ),
        }
        return Ok(copy.map(|m| m.median));
    };
    Ok(Some(
        v.parse::<f64>()
            .ok()
            .filter(|v| *v > 0.0)
            .ok_or_else(|| anyhow!("--ceiling {v}: expected GB/s, a positive number"))?,
    ))
}

fn perf_cases(args: &OpsArgs, gpu: &Gpu, list: &[Case], filter: &CaseFilter) -> Result<(), Exit> {
    let opts = PerfOptions {
        ceiling_gb_s: ceiling(args, gpu)?,
        cold: !args.warm_caches,
        ..Default::default()
    };
    let mut rows: Vec<OpPerfResult> = Vec::new();
    for c in list {
        if let Some(why) = c.unsupported(gpu) {
            eprintln!(
                "gpuscope: {} {}: not supported here, skipped: {why}",
                c.op, c.shape
            );
            continue;
        }
        rows.push(run_perf(gpu, c, &opts).with_context(|| format!("{} {}", c.op, c.shape))?);
    }
    let plan = match args.no_plan {
        true => Vec::new(),
        false => super::plan_kernels::perf_rows(gpu, filter, &opts)?,
    };
    emit_rows(args, rows, plan, perf_table, perf_csv)?;
    Ok(())
}

/// A row of `ops test` or `ops perf`, as the plan's kernels mark it.
trait PlanRow: serde::Serialize {
    fn kernel(&self) -> &str;
    fn mark_used_by_plan(&mut self);
}

impl PlanRow for OpTestResult {
    fn kernel(&self) -> &str {
        &self.op_name
    }
    fn mark_used_by_plan(&mut self) {
        self.used_by_plan = true;
    }
}

impl PlanRow for OpPerfResult {
    fn kernel(&self) -> &str {
        &self.op_name
    }
    fn mark_used_by_plan(&mut self) {
        self.used_by_plan = true;
    }
}

/// The harness's rows (those the plan runs marked) then the plan's, written as `--json`
/// and `--output` ask; the rows, for a verdict.
fn emit_rows<R: PlanRow>(
    args: &OpsArgs,
    mut rows: Vec<R>,
    plan: Vec<R>,
    table: fn(&[R]) -> String,
    csv: fn(&[R]) -> String,
) -> Result<Vec<R>, Exit> {
    let used: std::collections::HashSet<&str> = plan.iter().map(PlanRow::kernel).collect();
    for r in rows.iter_mut().filter(|r| used.contains(r.kernel())) {
        r.mark_used_by_plan();
    }
    rows.extend(plan);
    if rows.is_empty() {
        return Err(no_case(args));
    }
    if let Some(p) = &args.json {
        write_json(p, serde_json::to_string_pretty(&rows)?)?;
    }
    let text = match args.output {
        OutputFormat::Table => table(&rows),
        OutputFormat::Csv => csv(&rows),
        OutputFormat::Json => serde_json::to_string_pretty(&rows)? + "\n",
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(rows)
}

fn test_cases(
    args: &OpsArgs,
    gpu: &Gpu,
    list: &[Case],
    filter: &CaseFilter,
    thresholds: &Thresholds,
    fault: Option<Fault>,
) -> Result<(), Exit> {
    let rows: Vec<OpTestResult> = list
        .iter()
        .map(|c| run_test(gpu, c, thresholds, fault))
        .collect();
    let plan = match args.no_plan {
        true => Vec::new(),
        false => super::plan_kernels::test_rows(&args.device.gpu_options(), filter, thresholds)?,
    };
    let rows = emit_rows(args, rows, plan, test_table, test_csv)?;
    // Cases the adapter cannot run at all are reported, not failed (test-backend-ops'
    // "not supported").
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| r.supported && !r.passed)
        .map(|r| r.op_name.as_str())
        .collect();
    if !failed.is_empty() {
        let mut names = failed.clone();
        names.sort();
        names.dedup();
        return Err(Exit {
            code: CHECK_FAILED,
            error: anyhow!(
                "{} of {} cases failed: {}",
                failed.len(),
                rows.len(),
                names.join(", ")
            ),
        });
    }
    Ok(())
}
