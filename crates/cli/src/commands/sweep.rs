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
use gpuscope_ops::gemv::{GemvVariant, WeightLayout};
use gpuscope_ops::harness::{PerfOptions, SweepMode, SweepPoint};
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

pub const EXPERIMENTS: [&str; 4] = ["memory-vs-compute", "quant-overhead", "workgroup", "tile"];

/// The user's axes; `None` where not given.
#[derive(Debug, Default)]
struct Axes {
    shape: Option<Vec<(u32, u32)>>,
    format: Option<Vec<WeightFormat>>,
    layout: Option<Vec<WeightLayout>>,
    variant: Option<Vec<GemvVariant>>,
    lanes: Option<Vec<u32>>,
    rows: Option<Vec<u32>>,
    wg: Option<Vec<u32>>,
    fuse: Option<Vec<bool>>,
}

fn list<T>(axis: &str, values: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
    values
        .split(',')
        .map(|v| {
            let v = v.trim();
            parse(v).ok_or_else(|| format!("--sweep {axis}={v}: not a valid {axis}"))
        })
        .collect()
}

fn parse_axes(specs: &[String]) -> Result<Axes, String> {
    let mut a = Axes::default();
    let number = |v: &str| v.parse::<u32>().ok();
    for spec in specs {
        let (axis, values) = spec.split_once('=').ok_or_else(|| {
            format!("--sweep {spec}: expected AXIS=V1,V2 (axes: shape, format, layout, variant, lanes, rows, wg, fuse)")
        })?;
        let axis = axis.trim();
        match axis {
            "shape" => {
                a.shape = Some(list(axis, values, |v| {
                    let (r, c) = v.split_once('x')?;
                    Some((r.parse().ok()?, c.parse().ok()?))
                })?)
            }
            "format" => a.format = Some(list(axis, values, |v| v.parse().ok())?),
            "layout" => a.layout = Some(list(axis, values, WeightLayout::parse)?),
            "variant" => a.variant = Some(list(axis, values, GemvVariant::parse)?),
            "lanes" => a.lanes = Some(list(axis, values, number)?),
            "rows" => a.rows = Some(list(axis, values, number)?),
            "wg" => a.wg = Some(list(axis, values, number)?),
            "fuse" => {
                a.fuse = Some(list(axis, values, |v| match v {
                    "on" => Some(true),
                    "off" => Some(false),
                    _ => None,
                })?)
            }
            _ => {
                return Err(format!(
                    "--sweep {spec}: unknown axis `{axis}` (axes: shape, format, layout, variant, lanes, rows, wg, fuse)"
                ))
            }
        }
    }
    Ok(a)
}

/// A weight matrix of the model: rows, columns, format.
type Matrix = (u32, u32, WeightFormat);

/// The model's distinct gemv shapes with their formats (layer 0 and the output head),
/// and the FFN up projection's shape (the experiments' default).
fn model_shapes(args: &BenchArgs) -> Result<(Vec<Matrix>, (u32, u32)), Exit> {
    let mut shapes = Vec::new();
    let mut push = |r: u32, c: u32, f: WeightFormat| {
        if !shapes.iter().any(|&(r2, c2, _)| (r2, c2) == (r, c)) {
            shapes.push((r, c, f));
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
    let preset: Preset = super::profile::preset(&args.preset)?;
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

/// A point of an experiment or of the user's sweep, named for the report.
struct Planned {
    experiment: &'static str,
    point: SweepPoint,
}

fn points(
    axes: &Axes,
    experiments: &[&'static str],
    gpu: &Gpu,
    model: &[Matrix],
    ffn_up: (u32, u32),
    skipped: &mut Vec<String>,
) -> Result<Vec<Planned>, String> {
    let default_variant = GemvVariant::for_adapter(gpu);
    // The decoder's weight layout on this adapter (packed on CPU adapters).
    let default_layout = KernelPlan::for_adapter(gpu).weights;
    let base = |rows: u32, cols: u32, format: WeightFormat| SweepPoint {
        rows,
        cols,
        format,
        layout: default_layout.for_format(format),
        variant: default_variant,
        lanes: None,
        rows_per_lane: None,
        workgroup: None,
        fuse: None,
        mode: SweepMode::Full,
    };
    let mut out = Vec::new();
    let user_axes = axes.format.is_some()
        || axes.layout.is_some()
        || axes.variant.is_some()
        || axes.lanes.is_some()
        || axes.rows.is_some()
        || axes.wg.is_some()
        || axes.fuse.is_some()
        || (axes.shape.is_some() && experiments.is_empty());
    if user_axes {
        let shapes: Vec<Matrix> = match &axes.shape {
            Some(s) => s
                .iter()
                .map(|&(r, c)| (r, c, model.first().map_or(WeightFormat::Q8_0, |m| m.2)))
                .collect(),
            None => model.to_vec(),
        };
        let opt = |v: &Option<Vec<u32>>| -> Vec<Option<u32>> {
            v.as_ref()
                .map_or(vec![None], |v| v.iter().copied().map(Some).collect())
        };
        for &(rows, cols, model_format) in &shapes {
            let formats = axes.format.clone().unwrap_or_else(|| vec![model_format]);
            let layouts = axes.layout.clone().unwrap_or_else(|| vec![default_layout]);
            let variants = axes
                .variant
                .clone()
                .unwrap_or_else(|| vec![default_variant]);
            let fuses: Vec<Option<bool>> = axes
                .fuse
                .as_ref()
                .map_or(vec![None], |v| v.iter().copied().map(Some).collect());
            for (&format, &layout) in formats
                .iter()
                .flat_map(|f| layouts.iter().map(move |l| (f, l)))
            {
                for &variant in &variants {
                    for lanes in opt(&axes.lanes) {
                        for rows_per_lane in opt(&axes.rows) {
                            for workgroup in opt(&axes.wg) {
                                for &fuse in &fuses {
                                    // dp4a reads packed weights only: unless the
                                    // layout is swept, it gets them (as in the decoder).
                                    let layout = if axes.layout.is_none() && variant.quantizes_x() {
                                        WeightLayout::Packed
                                    } else {
                                        layout
                                    };
                                    let point = SweepPoint {
                                        // A format without a packed form keeps its GGUF
                                        // bytes, once.
                                        layout: layout.for_format(format),
                                        variant,
                                        lanes,
                                        rows_per_lane,
                                        workgroup,
                                        fuse,
                                        ..base(rows, cols, format)
                                    };
                                    if out.iter().any(|p: &Planned| p.point == point) {
                                        continue;
                                    }
                                    point.check(gpu)?;
                                    out.push(Planned {
                                        experiment: "sweep",
                                        point,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    // Experiments: one shape, the model's format for it.
    let (rows, cols) = axes
        .shape
        .as_ref()
        .and_then(|s| s.first().copied())
        .unwrap_or(ffn_up);
    let format = model
        .iter()
        .find(|m| (m.0, m.1) == (rows, cols))
        .map_or_else(
            || model.first().map_or(WeightFormat::Q8_0, |m| m.2),
            |m| m.2,
        );
    let swept_variant = if default_variant == GemvVariant::Rows {
        GemvVariant::Shared
    } else {
        default_variant
    };
    for &e in experiments {
        let candidates: Vec<SweepPoint> = match e {
            "memory-vs-compute" => [SweepMode::Full, SweepMode::ReadOnly, SweepMode::ComputeOnly]
                .into_iter()
                .map(|mode| SweepPoint {
                    mode,
                    ..base(rows, cols, format)
                })
                .collect(),
            "quant-overhead" => [
                WeightFormat::F16,
                WeightFormat::Q8_0,
                WeightFormat::Q4_0,
                WeightFormat::Q4_K,
            ]
            .into_iter()
            .map(|f| base(rows, cols, f))
            .collect(),
            "workgroup" => [64, 128, 256, 512, 1024]
                .into_iter()
                .map(|wg| SweepPoint {
                    variant: swept_variant,
                    workgroup: Some(wg),
                    ..base(rows, cols, format)
                })
                .collect(),
            "tile" => {
                let max = swept_variant.max_threads_per_row(gpu);
                let lanes = (0..=8).map(|i| 1u32 << i).filter(|&l| l <= max);
                lanes
                    .flat_map(|l| {
                        [1, 2, 4].map(move |r| SweepPoint {
                            variant: swept_variant,
                            lanes: Some(l),
                            rows_per_lane: Some(r),
                            ..base(rows, cols, format)
                        })
                    })
                    .collect()
            }
            _ => unreachable!("checked by experiment_names"),
        };
        for point in candidates {
            match point.check(gpu) {
                Ok(()) => out.push(Planned {
                    experiment: e,
                    point,
                }),
                Err(why) => skipped.push(format!("{e}: {why}")),
            }
        }
    }
    Ok(out)
}

fn experiment_names(given: &[String]) -> Result<Vec<&'static str>, String> {
    let mut out: Vec<&'static str> = Vec::new();
    for g in given {
        let names: Vec<&'static str> = if g == "all" {
            EXPERIMENTS.to_vec()
        } else {
            vec![EXPERIMENTS.into_iter().find(|e| e == g).ok_or_else(|| {
                format!(
                    "--experiment {g}: unknown (expected {}, or all)",
                    EXPERIMENTS.join(", ")
                )
            })?]
        };
        for n in names {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    Ok(out)
}

pub fn run(args: &BenchArgs) -> Result<(), Exit> {
    let axes = parse_axes(&args.sweep).map_err(|e| anyhow!(e))?;
    let experiments = experiment_names(&args.experiment).map_err(|e| anyhow!(e))?;
    let (model, ffn_up) = model_shapes(args)?;
    let gpu = Gpu::new(&args.device.kernel_timing_options())?;
    let interrupt = Interrupt::install()?;
    let mut skipped = Vec::new();
    let plan = points(&axes, &experiments, &gpu, &model, ffn_up, &mut skipped)
        .map_err(|e| anyhow!("{e}"))?;
    if plan.is_empty() {
        return Err(anyhow!("nothing to sweep: {}", skipped.join("; ")).into());
    }
    let adapter = gpu.adapter_desc();
    let ceilings = super::ceilings::cached(&adapter, true);
    eprintln!(
        "gpuscope: sweeping {} gemv configurations on {} ({}), GPU timing {}",
        plan.len(),
        adapter.name,
        adapter.backend,
        gpu.timing()
    );
    let opts = PerfOptions {
        warmup: 2,
        steps: args.repetitions as usize,
        ceiling_gb_s: None,
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
            &SweepMeasurement {
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
            },
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
