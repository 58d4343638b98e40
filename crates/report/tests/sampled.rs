//! Sampled timing estimated whole (issue 29): per-op shares, per-layer times, GPU busy
//! and the bottleneck from one dispatch in `stride` per token.

use gpuscope_report::analysis::{analyze, LayerTimeSource};
use gpuscope_report::render::render_text;
use gpuscope_trace::fixtures::{self as fixture, sampled_from};
use gpuscope_trace::Profile;

/// 24 layers of three ops with different times, each call's span jittered by up to
/// ±12% (a fixed pseudo-random sequence), every dispatch timed.
fn full(tokens: u32) -> Profile {
    let mut p = fixture::long(tokens, 24);
    let mut seed = 0x2545_f491_u64;
    for d in &mut p.dispatches {
        d.op = ["gemv_q4_0", "rms_norm", "attention"][d.index as usize % 3].into();
        let base = [9000u64, 1500, 4000][d.index as usize % 3];
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let jitter = (seed >> 33) % 241; // 0..=240
        let ns = base * (880 + jitter) / 1000;
        let g = d.gpu.as_mut().unwrap();
        g.end_ns = g.start_ns + ns;
    }
    // One dispatch per pass: the pass spans are the dispatch spans.
    for (s, d) in p.passes.iter_mut().zip(&p.dispatches) {
        s.gpu = d.gpu;
    }
    p
}

fn shares(p: &Profile) -> Vec<(String, f64)> {
    analyze(p)
        .ops
        .rows
        .iter()
        .map(|r| (r.op.clone(), r.gpu_percent.expect("a share")))
        .collect()
}

#[test]
fn estimated_shares_layers_and_busy_match_full_timing() {
    let full = full(64);
    let sampled = sampled_from(&full, 16);
    let a = analyze(&sampled);
    let e = a.estimate.as_ref().expect("a sampled profile is estimated");
    assert_eq!((e.covered, e.sites, e.stride), (24, 24, 16));
    for ((op, want), (op2, got)) in shares(&full).iter().zip(shares(&sampled)) {
        assert_eq!(op, &op2);
        assert!(
            (want - got).abs() < 2.0,
            "{op}: full {want:.2}% vs estimated {got:.2}%"
        );
    }
    // Per-layer times, GPU busy, utilization and a bottleneck: none left unknown.
    let full_a = analyze(&full);
    assert_eq!(a.layers.layer_rows().count(), 24);
    for (f, s) in full_a.layers.layer_rows().zip(a.layers.layer_rows()) {
        assert_eq!(s.source, Some(LayerTimeSource::Estimated));
        let (f, s) = (
            f.gpu_ns_median.unwrap() as f64,
            s.gpu_ns_median.unwrap() as f64,
        );
        assert!((f - s).abs() / f < 0.15, "{f} vs {s}");
    }
    let busy = a.tokens_steady.gpu_busy_ns.expect("estimated busy").median as f64;
    let dispatch_sum: f64 =
        full_a.ops.total_gpu_ns.unwrap() as f64 / full_a.tokens_steady.count() as f64;
    assert!(
        (busy - dispatch_sum).abs() / dispatch_sum < 0.05,
        "{busy} vs {dispatch_sum}"
    );
    assert!(a.tokens_steady.gpu_busy_estimated && a.timeline.busy_estimated);
    assert!(a.timeline.utilization_percent.is_some());
    assert!(
        a.bottleneck
            .headline
            .contains("estimated from sampled timing")
            && !a.bottleneck.headline.contains("unknown"),
        "{}",
        a.bottleneck.headline
    );
    let r = render_text(&sampled);
    for part in [
        "Sampled estimate: per-op, per-layer and GPU-busy times below are estimated from",
        "covering 24 of 24 dispatches",
        "sampled dispatch spans, estimated",
        "utilization, estimated",
    ] {
        assert!(r.contains(part), "{part:?} missing in:\n{r}");
    }
    assert!(!r.contains("GPU time unknown"), "{r}");
}

#[test]
fn thin_coverage_says_how_many_more_tokens_and_imputes_from_the_op() {
    // 8 tokens at stride 16: half the sites never sampled; each op still is.
    let sampled = sampled_from(&full(8), 16);
    let a = analyze(&sampled);
    let e = a.estimate.as_ref().unwrap();
    assert!(
        e.covered < e.sites && e.imputed == e.sites - e.covered,
        "{e:?}"
    );
    assert_eq!(e.missing, 0);
    assert!(e.is_thin() && e.more_tokens >= 16, "{e:?}");
    let r = render_text(&sampled);
    assert!(r.contains("more tokens (--tokens)"), "{r}");
    assert!(r.contains("imputed from their op"), "{r}");
}

/// One preempted sample (100× its site's time, as a loaded CI machine gives) weighs
/// `stride` times what it weighs timed every dispatch; the estimate drops it.
#[test]
fn one_preempted_sample_does_not_move_the_estimate() {
    let clean = sampled_from(&full(128), 8);
    let mut hit = clean.clone();
    let d = hit
        .dispatches
        .iter_mut()
        .find(|d| d.index == 0 && d.token > 64 && d.gpu.is_some())
        .expect("a sampled call of site 0");
    let g = d.gpu.as_mut().unwrap();
    g.end_ns = g.start_ns + 100 * 9000;
    for ((op, want), (_, got)) in shares(&clean).iter().zip(shares(&hit)) {
        assert!(
            (want - got).abs() < 1.0,
            "{op}: {want:.2}% without the preempted call, {got:.2}% with it"
        );
    }
}

#[test]
fn full_timing_is_not_estimated() {
    assert!(analyze(&full(8)).estimate.is_none());
}

/// Correction for the instrument (issue 29): with `peak`'s timestamp cost, each timed
/// call loses it (never below the dependent-dispatch floor); shares, busy and the
/// bottleneck are given corrected beside measured.
#[test]
fn dispatch_spans_are_corrected_for_their_timestamps() {
    let mut p = full(32);
    p.timing.mode = gpuscope_trace::TimingMode::Dispatch;
    let mut c = fixture::ceilings();
    c.dispatch_ns = Some(measured(600.0));
    c.timestamp_ns = Some(measured(1000.0));
    p.ceilings = Some(c);
    let a = analyze(&p);
    let c = a
        .correction
        .as_ref()
        .expect("timing dispatch with a measured cost");
    assert_eq!(c.timestamp_ns, 1000.0);
    let avg = |op: &str| {
        c.ops
            .rows
            .iter()
            .find(|r| r.op == op)
            .unwrap()
            .avg_gpu_ns
            .unwrap()
    };
    // Medians of about 9000, 1500 and 4000 ns, less 1000 (the norm stays above 600).
    assert!(
        (avg("gemv_q4_0") - 8000.0).abs() < 400.0,
        "{}",
        avg("gemv_q4_0")
    );
    assert!((avg("rms_norm") - 500.0).abs() < 150.0 || avg("rms_norm") >= 600.0);
    assert!(
        (avg("attention") - 3000.0).abs() < 250.0,
        "{}",
        avg("attention")
    );
    assert!(c.corrected_per_token_ns < c.measured_per_token_ns);
    let share = |ops: &gpuscope_report::analysis::OpBreakdown, op: &str| {
        ops.rows
            .iter()
            .find(|r| r.op == op)
            .unwrap()
            .gpu_percent
            .unwrap()
    };
    assert!(share(&c.ops, "gemv_q4_0") > share(&a.ops, "gemv_q4_0"));
    assert!(
        a.bottleneck
            .headline
            .contains("corrected for their timestamps"),
        "{}",
        a.bottleneck.headline
    );
    let r = render_text(&p);
    assert!(
        r.contains("Corrected for the instrument: timestamps add 1.0 µs"),
        "{r}"
    );
    // Without the measured cost, nothing is corrected.
    p.ceilings.as_mut().unwrap().timestamp_ns = None;
    assert!(analyze(&p).correction.is_none());
}

fn measured(median: f64) -> gpuscope_trace::ceilings::Measured {
    gpuscope_trace::ceilings::Measured {
        median,
        p10: median * 0.95,
        p90: median * 1.05,
        n: 10,
    }
}

/// Sampled and corrected: the estimated GPU busy time and utilization describe the
/// untimed program (each site's span less its timestamps), said so in the report.
#[test]
fn an_estimated_busy_time_is_corrected_for_the_timestamps() {
    let mut p = sampled_from(&full(64), 16);
    let uncorrected = analyze(&p);
    let mut c = fixture::ceilings();
    c.dispatch_ns = Some(measured(600.0));
    c.timestamp_ns = Some(measured(1000.0));
    p.ceilings = Some(c);
    let a = analyze(&p);
    let c = a
        .correction
        .as_ref()
        .expect("sampled dispatch timing is corrected");
    assert!(a.timeline.busy_corrected && a.tokens_steady.gpu_busy_corrected);
    let busy =
        |a: &gpuscope_report::analysis::Analysis| a.tokens_steady.gpu_busy_ns.unwrap().median;
    assert_eq!(
        busy(&uncorrected) - busy(&a),
        c.measured_per_token_ns - c.corrected_per_token_ns
    );
    assert!(
        a.timeline.utilization_percent.unwrap() < uncorrected.timeline.utilization_percent.unwrap()
    );
    let r = render_text(&p);
    assert!(r.contains("corrected for their timestamps"), "{r}");
    assert!(r.contains("each corrected for its timestamps"), "{r}");
    // The HTML page's op panel gives the corrected estimate, saying so.
    let html = gpuscope_report::render::html::render_html(&p);
    assert!(
        html.contains("Corrected for the instrument: each timed call less the 1.0")
            && html.contains("Sampled timing: estimated from"),
        "the op panel's basis is missing"
    );
    // An estimate past the wall time is said to be impossible, not printed bare.
    for t in &mut p.tokens {
        t.wall_ns = 1000;
    }
    let r = render_text(&p);
    assert!(
        analyze(&p).timeline.utilization_percent.unwrap() > 100.0
            && r.contains("over 100%, which busy time cannot be"),
        "{r}"
    );
}
