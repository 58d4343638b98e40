//! Criterion micro-benchmarks of the gemv kernels: one per implementation (variant) ×
//! weight format and layout (`q4_0`, `q4_0.packed`, ...) × shape, timed by GPU timestamps (criterion's statistics over the GPU
//! time of each run, not over wall-clock time).
//!
//!     cargo bench -p gpuscope-ops --bench gemv                      # every variant the adapter runs
//!     cargo bench -p gpuscope-ops --bench gemv -- 'gemv/subgroup/q4_0'  # criterion's filter
//!     GPUSCOPE_GEMV_VARIANT=blocks cargo bench -p gpuscope-ops --bench gemv   # force one
//!     GPUSCOPE_GEMV_SHAPES=4096x4096,14336x4096 cargo bench -p gpuscope-ops --bench gemv
//!
//! The adapter is gpuscope's choice (`GPUSCOPE_ADAPTER`, `GPUSCOPE_BACKEND` pick another);
//! lavapipe runs it without a GPU. A forced variant the adapter cannot run is an error;
//! otherwise such variants, and formats a shape's columns cannot hold, are left out with a
//! line on stderr. Default shapes: SmolLM2-135M's attention (576x576) and FFN up
//! (1536x576) projections.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use gpuscope_ops::gemv::{GemvVariant, WeightLayout};
use gpuscope_ops::harness::{time_group, PerfOptions, SweepMode, SweepPoint};
use gpuscope_ops::WeightFormat;
use gpuscope_runtime::{Gpu, GpuOptions, TimingRequest};
use gpuscope_trace::TimingMode;

/// Runs per step of [`time_group`] (its `REPEATS`): steps = iterations / this, rounded up.
const RUNS_PER_STEP: u64 = 10;

fn shapes() -> Vec<(u32, u32)> {
    let spec = std::env::var("GPUSCOPE_GEMV_SHAPES").unwrap_or_else(|_| "576x576,1536x576".into());
    spec.split(',')
        .map(|s| {
            let (r, c) = s
                .trim()
                .split_once('x')
                .unwrap_or_else(|| panic!("GPUSCOPE_GEMV_SHAPES: `{s}` is not ROWSxCOLS"));
            (
                r.parse()
                    .unwrap_or_else(|_| panic!("GPUSCOPE_GEMV_SHAPES: bad rows in `{s}`")),
                c.parse()
                    .unwrap_or_else(|_| panic!("GPUSCOPE_GEMV_SHAPES: bad columns in `{s}`")),
            )
        })
        .collect()
}

fn variants(gpu: &Gpu) -> Vec<GemvVariant> {
    match std::env::var("GPUSCOPE_GEMV_VARIANT") {
        Ok(name) => {
            let v = GemvVariant::parse(&name).unwrap_or_else(|| {
                panic!("GPUSCOPE_GEMV_VARIANT={name}: expected shared, subgroup, rows or blocks")
            });
            if let Err(why) = v.supported(gpu) {
                panic!("GPUSCOPE_GEMV_VARIANT={name}: {why}");
            }
            vec![v]
        }
        Err(_) => GemvVariant::ALL
            .into_iter()
            .filter(|v| match v.supported(gpu) {
                Ok(()) => true,
                Err(why) => {
                    eprintln!("gemv bench: leaving out {}: {why}", v.name());
                    false
                }
            })
            .collect(),
    }
}

fn gemv(c: &mut Criterion) {
    // Pass timestamps: nothing added per dispatch (see `time_group`).
    let options = GpuOptions {
        timing: TimingRequest::Exactly(TimingMode::Pass),
        ..GpuOptions::default()
    };
    let gpu = match Gpu::new(&options) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("gemv bench: no adapter ({e}); nothing to measure");
            return;
        }
    };
    eprintln!(
        "gemv bench on {} (GPU timing {})",
        gpu.adapter_info().name,
        gpu.timing()
    );
    for variant in variants(&gpu) {
        let mut group = c.benchmark_group(format!("gemv/{}", variant.name()));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        let layouts = WeightFormat::ALL.into_iter().flat_map(|f| {
            WeightLayout::ALL
                .into_iter()
                .filter(move |l| l.supports(f))
                .map(move |l| (f, l))
        });
        for (format, layout) in layouts {
            for (rows, cols) in shapes() {
                let point = SweepPoint {
                    rows,
                    cols,
                    format,
                    layout,
                    variant,
                    lanes: None,
                    rows_per_lane: None,
                    workgroup: None,
                    fuse: None,
                    mode: SweepMode::Full,
                };
                if let Err(why) = point.check(&gpu) {
                    eprintln!(
                        "gemv bench: leaving out {} {rows}x{cols}: {why}",
                        format.name()
                    );
                    continue;
                }
                let dispatches = point.build(&gpu).expect("the gemv builds");
                let name = match layout {
                    WeightLayout::Gguf => format.name().to_string(),
                    packed => format!("{}.{}", format.name(), packed.name()),
                };
                group.bench_function(format!("{name}/{rows}x{cols}"), |b| {
                    b.iter_custom(|iters| {
                        let opts = PerfOptions {
                            warmup: 0,
                            steps: iters.div_ceil(RUNS_PER_STEP) as usize,
                            ceiling_gb_s: None,
                            // Warm, as this benchmark's history was taken: it compares
                            // kernel variants' own speed (ops perf times cold).
                            cold: false,
                        };
                        // At least `iters` runs timed: their mean, `iters` times.
                        let samples = time_group(&gpu, &dispatches, &opts).expect("timed");
                        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
                        Duration::from_nanos((mean * iters as f64) as u64)
                    })
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, gemv);
criterion_main!(benches);
