//! Scale: decoding, analysing and rendering a profile of a million dispatch events
//! (the goal: `gpuscope report` in at most 1 s and 500 MB on a 2-core machine; see
//! BENCHMARKS.md), and exporting it for viewers (Perfetto in at most 2 s).
//! `cargo bench -p gpuscope-trace --bench report`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use gpuscope_report::{analysis, render};
use gpuscope_trace::compact;

const DISPATCHES: usize = 1_000_000;

fn scale(c: &mut Criterion) {
    let p = common::large_profile(DISPATCHES);
    let bytes = compact::encode(&p).expect("encodes");
    let mut g = c.benchmark_group("1M dispatches");
    g.sample_size(10);
    // The decoded profile is dropped outside the timing: `report` does not free it.
    g.bench_function("decode compact", |b| {
        b.iter_with_large_drop(|| compact::decode(&bytes).expect("decodes"))
    });
    g.bench_function("analyze", |b| b.iter(|| analysis::analyze(&p)));
    let a = analysis::analyze(&p);
    g.bench_function("render text", |b| {
        b.iter(|| render::render_analysis_text(&p, &a))
    });
    g.bench_function("decode + analyze + render", |b| {
        b.iter_with_large_drop(|| {
            let p = compact::decode(&bytes).expect("decodes");
            let text = render::render_text(&p);
            (p, text)
        })
    });
    g.bench_function("encode compact", |b| b.iter(|| compact::encode(&p)));
    // Viewer exports (issue 9: the Perfetto trace of 1M dispatches in at most 2 s).
    let ceilings = a.roofline.ceilings;
    g.bench_function("export perfetto", |b| {
        b.iter(|| {
            render::perfetto::write_perfetto(&p, ceilings.as_ref(), std::io::sink())
                .expect("writes")
        })
    });
    g.bench_function("render markdown", |b| {
        b.iter(|| render::render_analysis_markdown(&p, &a))
    });
    g.bench_function("render html", |b| {
        b.iter(|| render::render_analysis_html(&p, &a))
    });
    g.finish();
}

criterion_group!(benches, scale);
criterion_main!(benches);
