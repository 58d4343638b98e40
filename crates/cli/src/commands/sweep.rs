//! `gpuscope bench --sweep AXIS=LIST ... | --experiment NAME`: gemv configurations timed
//! one by one ([`gpuscope_ops::harness::sweep`]), with roofline columns from this
//! machine's measured ceilings and the fastest configuration per shape
//! ([`gpuscope_report::sweep`]).
//!
//! Axes (`--sweep`, repeatable; unset axes take the decoder's choice for each shape):
//! `shape=ROWSxCOLS,...` (default: the model's distinct gemv shapes), `format=`, `layout=`
//! (gguf, packed; default: the decoder's on this adapter), `variant=`,
//! `lanes=` (per row), `rows=` (per lane), `wg=` (threads per workgroup), `fuse=on,off`.
//! Experiments (`--experiment`, repeatable, or `all`), at one shape (the first `shape=`
//! given, else the model's FFN up projection):
//! - `memory-vs-compute`: the gemv full, read-only and compute-only;
//! - `quant-overhead`: f16, q8_0, q4_0 and q4_k;
//! - `workgroup`: 64 to 1024 threads per workgroup (those the adapter allows);
//! - `tile`: lanes per row (powers of two the variant allows) × rows per lane (1, 2, 4).
//!
//! The workgroup and tile experiments use the adapter's gemv variant, or `shared` where
//! that is `rows` (lavapipe), whose one lane per row and fixed workgroup leave nothing to
//! sweep. A value the user gave that the adapter cannot run is an error before anything
//! runs; a built-in experiment's point the shape or adapter cannot take is left out and
//! listed.

use std::io::Write;

use anyhow::anyhow;
use gpuscope_model::{load_gguf, KernelPlan, Preset};
use gpuscope_ops::gemv::GemvVariant;
use gpuscope_ops::harness::sweep_plan::{self, Defaults, Matrix};
use gpuscope_ops::harness::PerfOptions;
use gpuscope_ops::WeightFormat;
use gpuscope_report::render::sweep::{
    render_sweep_csv, render_sweep_html, render_sweep_json, render_sweep_jsonl, render_sweep_md,
};
use gpuscope_report::sweep::{SweepConfig, SweepMeasurement, SweepReport, SweepRow};
use gpuscope_runtime::Gpu;
use indicatif::{ProgressBar, ProgressStyle};

use crate::args::{BenchArgs, BenchFormat};
use crate::exit::Exit;
use crate::interrupt::Interrupt;

/// The model's distinct gemv shapes with their formats (layer 0 and the output head),
/// and the FFN up projection's shape (the experiments' default).
fn model_shapes(args: &BenchArgs) -> Result<(Vec<Matrix>, (u32, u32)), Exit> {
    let mut shapes: Vec<Matrix> = Vec::new();
    let mut push = |rows: u32, cols: u32, format: WeightFormat| {
        if !shapes.iter().any(|m| (m.rows, m.cols) == (rows, cols)) {
            shapes.push(Matrix { rows, cols, format });
        }
    };
    if let Some(path) = &args.model {
        let m = load_gguf(path).map_err(|e| anyhow!("loading {}: {e}", path.display()))?;
        let l = m
            .weights
            .layers
            .first()
            .ok_or_else(|| anyhow!("{}: the model has no layers", path.display()))?;
        for t in [&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down] {
            push(t.rows, t.cols, t.format);
        }
        let o = m.weights.output();
        push(o.rows, o.cols, o.format);
        return Ok((shapes, (l.w_up.rows, l.w_up.cols)));
    }
    let preset: Preset = super::common::preset(&args.preset)?;
    let format: WeightFormat = args
        .weights
        .parse()
        .map_err(|e| anyhow!("--weights {}: {e}", args.weights))?;
    let c = preset.config();
    let q = c.n_heads * c.head_dim;
    let kv = c.n_kv_heads * c.head_dim;
    for (r, cols) in [
        (q, c.dim),
        (kv, c.dim),
        (c.dim, q),
        (c.ffn_dim, c.dim),
        (c.dim, c.ffn_dim),
        (c.vocab, c.dim),
    ] {
        push(r, cols, format);
    }
    Ok((shapes, (c.ffn_dim, c.dim)))
}

pub fn run(args: &BenchArgs) -> Result<(), Exit> {
    let axes = sweep_plan::parse_axes(&args.sweep).map_err(|e| anyhow!(e))?;
    let experiments = sweep_plan::experiment_names(&args.experiment).map_err(|e| anyhow!(e))?;
    let (model, ffn_up) = model_shapes(args)?;
    let gpu = Gpu::new(&args.device.kernel_timing_options())?;
    let interrupt = Interrupt::install()?;
    let mut skipped = Vec::new();
    let defaults = Defaults {
        variant: GemvVariant::for_adapter(&gpu),
        layout: KernelPlan::for_adapter(&gpu).weights,
    };
    let plan = sweep_plan::plan(
        &axes,
        &experiments,
        &gpu,
        defaults,
        &model,
        ffn_up,
        &mut skipped,
    )
    .map_err(|e| anyhow!("{e}"))?;
    if plan.is_empty() {
        return Err(anyhow!("nothing to sweep: {}", skipped.join("; ")).into());
    }
    let adapter = gpu.adapter_desc();
    let ceilings = super::ceilings::cached(&adapter, true);
    eprintln!(
        "gpuscope: sweeping {} gemv configurations on {} ({}), GPU timing {}, caches {}",
        plan.len(),
        adapter.name,
        adapter.backend,
        gpu.timing(),
        if args.warm_caches { "warm" } else { "cold" }
    );
    let opts = PerfOptions {
        warmup: 2,
        steps: args.repetitions as usize,
        ceiling_gb_s: None,
        // As the decoder reads its weights: from memory (see ops perf).
        cold: !args.warm_caches,
    };
    let progress = ProgressBar::new(plan.len() as u64).with_style(
        ProgressStyle::with_template("{msg:>20} [{bar:30}] {pos}/{len} configurations, {elapsed}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    let mut rows = Vec::new();
    for p in &plan {
        if interrupt.caught().is_some() {
            break;
        }
        progress.set_message(p.experiment);
        let pt = &p.point;
        let t = pt.run(&gpu, &opts).map_err(|e| {
            anyhow!(
                "{} {}x{} {} {}: {e}",
                p.experiment,
                pt.rows,
                pt.cols,
                pt.format.name(),
                pt.variant.name()
            )
        })?;
        rows.push(SweepRow::new(
            &measurement(p, t),
            ceilings.as_ref().map(|(c, _)| c),
        ));
        progress.inc(1);
    }
    progress.finish_and_clear();
    let mut report = SweepReport {
        tool: super::ceilings::tool(),
        adapter: adapter.name.clone(),
        backend: adapter.backend.clone(),
        driver: format!("{} {}", adapter.driver, adapter.driver_info),
        timing: gpu.timing().to_string(),
        ceilings: match &ceilings {
            Some((_, path)) => format!("measured on this adapter ({path})"),
            None => "none measured on this adapter (run `gpuscope peak` for the roofline columns)"
                .into(),
        },
        rows,
        skipped,
    };
    report.mark_best();
    if args.save_tuning && interrupt.caught().is_none() {
        save_tuning(&report, &adapter)?;
    }
    let out = match args.output {
        BenchFormat::Md => render_sweep_md(&report),
        BenchFormat::Csv => render_sweep_csv(&report),
        BenchFormat::Json => render_sweep_json(&report),
        BenchFormat::Jsonl => render_sweep_jsonl(&report),
        BenchFormat::Html => render_sweep_html(&report),
    };
    std::io::stdout().write_all(out.as_bytes())?;
    match interrupt.caught() {
        Some(caught) => Err(caught.exit(&format!(
            "stopped after {} of {} configurations; those measured are printed",
            report.rows.len(),
            plan.len()
        ))),
        None => Ok(()),
    }
}

/// A timed point as the report's row data.
fn measurement(p: &sweep_plan::Planned, t: gpuscope_ops::harness::SweepTiming) -> SweepMeasurement {
    let pt = &p.point;
    SweepMeasurement {
        config: SweepConfig {
            experiment: p.experiment.to_string(),
            shape: format!("{}x{}", pt.rows, pt.cols),
            format: pt.format.name().to_string(),
            layout: pt.layout.for_format(pt.format).name().to_string(),
            variant: pt.variant.name().to_string(),
            lanes: t.lanes,
            rows_per_lane: t.rows_per_lane,
            workgroup: t.workgroup,
            fuse: match pt.fuse {
                None => "-".into(),
                Some(true) => "on".into(),
                Some(false) => "off".into(),
            },
            mode: pt.mode.name().to_string(),
            dispatches: t.dispatches,
        },
        samples_ns: t.samples_ns,
        bytes: t.bytes,
        flops: t.flops,
    }
}

/// Stores the sweep's choice per size class as the adapter's kernel tuning
/// ([`gpuscope_report::tuning`]) and says what it chose, where.
fn save_tuning(report: &SweepReport, adapter: &gpuscope_trace::AdapterDesc) -> Result<(), Exit> {
    let large = gpuscope_model::LARGE_GEMV_WEIGHTS;
    let (gemv, gemv_large, evidence) = gpuscope_report::tuning::choose(report, large);
    if gemv.is_none() && gemv_large.is_none() {
        return Err(anyhow!(
            "--save-tuning: the sweep timed no full gemv of its own shapes (use --sweep variant=...)"
        )
        .into());
    }
    let root = gpuscope_report::cache::cache_root().ok_or_else(|| {
        anyhow!(
            "--save-tuning: no cache directory on this platform; set {}",
            gpuscope_report::cache::CACHE_DIR_ENV
        )
    })?;
    let t = gpuscope_report::tuning::Tuning {
        identity: gpuscope_trace::ceilings::CeilingsIdentity::now(
            adapter,
            &super::ceilings::tool(),
        ),
        gemv,
        gemv_large,
        large_weights: large,
        evidence,
    };
    let path = gpuscope_report::tuning::store(&root, &t)
        .map_err(|e| anyhow!("--save-tuning: cannot write the tuning: {e}"))?;
    eprintln!(
        "gpuscope: kernel tuning saved to {}: gemv {}, gemv_large {} ({})",
        path.display(),
        t.gemv.as_deref().unwrap_or("(rule)"),
        t.gemv_large.as_deref().unwrap_or("(rule)"),
        t.evidence
    );
    Ok(())
}
