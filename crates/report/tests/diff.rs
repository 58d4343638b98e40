//! The significance test, the diff of two profiles, the gate, and their renderings.

use gpuscope_report::analysis::diff::{
    CounterScope, MismatchKind, Presence, SampleUnit, Side, Verdict,
};
use gpuscope_report::analysis::gate::CheckOutcome;
use gpuscope_report::analysis::significance::shift_test;
use gpuscope_report::analysis::{diff, gate, DiffError, DiffOptions, GateError, GateOptions};
use gpuscope_report::render::diff::{json, render_diff_md, render_diff_text};
use gpuscope_trace::{Profile, Sampling, TimingMode};

use gpuscope_trace::fixtures as fixture;

mod significance {
    use super::*;

    #[test]
    fn equal_samples_are_no_shift_and_p_one() {
        let t = shift_test(&[5, 5, 5], &[5, 5]).unwrap();
        assert_eq!(t.shift_ns, 0);
        assert_eq!(t.p_value, 1.0);
    }

    #[test]
    fn separated_samples_match_the_normal_approximation() {
        // U = 25 of 25; mean 12.5, variance 25·11/12; z = (12.5 - 0.5) / 4.787 = 2.507:
        // two-sided p = 0.01219 (scipy's mannwhitneyu, asymptotic, continuity corrected).
        let t = shift_test(&[1, 2, 3, 4, 5], &[6, 7, 8, 9, 10]).unwrap();
        assert!((t.p_value - 0.01219).abs() < 5e-5, "{}", t.p_value);
        assert_eq!(t.shift_ns, 5);
        let back = shift_test(&[6, 7, 8, 9, 10], &[1, 2, 3, 4, 5]).unwrap();
        assert_eq!(back.shift_ns, -5);
        assert!((back.p_value - t.p_value).abs() < 1e-12, "two-sided");
    }

    #[test]
    fn shift_is_the_lower_median_of_pairwise_differences() {
        // y - x: 1, -3, -7, 2, -2, -6; sorted -7 -6 -3 -2 1 2: the 3rd is -3.
        assert_eq!(shift_test(&[1, 5, 9], &[2, 3]).unwrap().shift_ns, -3);
        let x: Vec<u64> = (1..=40).collect();
        let y: Vec<u64> = x.iter().map(|v| v + 10).collect();
        let t = shift_test(&x, &y).unwrap();
        assert_eq!(t.shift_ns, 10);
        assert!(t.p_value < 0.01, "{}", t.p_value);
    }

    #[test]
    fn empty_sides_are_not_compared() {
        assert!(shift_test(&[], &[1]).is_none());
        assert!(shift_test(&[1], &[]).is_none());
    }
}

/// A deterministic jitter in [-amplitude, +amplitude] (a small LCG: no dependency).
struct Jitter(u64);

impl Jitter {
    fn scale(&mut self, ns: u64, amplitude: f64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let unit = (self.0 >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
        (ns as f64 * (1.0 + amplitude * (2.0 * unit - 1.0))) as u64
    }
}

/// `fixture::long(64, 4)` with ±3% jitter on every time, the op `gemv_q4_1` of layer 2
/// and every token's wall `factor` times slower.
fn run(seed: u64, factor: f64) -> Profile {
    let mut p = fixture::long(64, 4);
    let mut j = Jitter(seed);
    for t in &mut p.tokens {
        t.wall_ns = j.scale((t.wall_ns as f64 * factor) as u64, 0.03);
        t.gpu_busy_ns = t.gpu_busy_ns.map(|b| j.scale(b, 0.03));
    }
    for (d, s) in p.dispatches.iter_mut().zip(p.passes.iter_mut()) {
        let span = d.gpu.as_mut().unwrap();
        let f = if d.layer == Some(2) { factor } else { 1.0 };
        let ns = j.scale(((span.end_ns - span.start_ns) as f64 * f) as u64, 0.03);
        span.end_ns = span.start_ns + ns;
        s.gpu = d.gpu;
    }
    p
}

fn limits(max_regress: f64) -> GateOptions {
    GateOptions {
        max_regress: Some(max_regress),
        max_regress_op: vec![("L2.ffn_down".into(), max_regress)],
        max_counter_increase: Some(0),
    }
}

#[test]
fn a_profile_against_itself_is_all_noise_and_passes_the_gate() {
    let p = run(1, 1.0);
    let d = diff(&p, &p, &DiffOptions::default()).unwrap();
    assert!(d.mismatches.is_empty() && d.settings.is_empty());
    assert_eq!(d.headline.tokens.base, 63, "the first token is left out");
    assert_eq!(d.headline.wall.verdict, Verdict::Noise);
    assert_eq!(d.headline.wall.shift_ns, Some(0));
    assert_eq!(d.headline.tok_per_s.change, Some(0.0));
    for o in &d.ops {
        assert_eq!(
            (o.presence, o.time.verdict),
            (Presence::Both, Verdict::Noise)
        );
        assert_eq!(o.time.unit, SampleUnit::Token);
    }
    assert!(d.counters.iter().all(|c| c.delta() == 0));
    assert_eq!(d.counters.len(), 30, "10 counters in 3 scopes");
    assert!(gate(&d, &limits(0.05)).unwrap().passed());
}

#[test]
fn jitter_alone_is_noise() {
    let d = diff(&run(1, 1.0), &run(2, 1.0), &DiffOptions::default()).unwrap();
    assert_eq!(
        d.headline.wall.verdict,
        Verdict::Noise,
        "{:?}",
        d.headline.wall
    );
    let change = d.headline.wall.change.unwrap();
    assert!(change.abs() < 0.02, "{change}");
    assert!(gate(&d, &limits(0.05)).unwrap().passed());
}

#[test]
fn a_twenty_percent_slowdown_is_found_where_it_is_and_fails_the_gate() {
    let d = diff(&run(1, 1.0), &run(2, 1.2), &DiffOptions::default()).unwrap();
    let wall = d.headline.wall;
    assert_eq!(wall.verdict, Verdict::Slower);
    let change = wall.change.unwrap();
    assert!((0.15..0.25).contains(&change), "{change}");
    assert!(wall.p_value.unwrap() < 1e-6);
    let tok = d.headline.tok_per_s.change.unwrap();
    assert!((-0.22..-0.12).contains(&tok), "{tok}");
    // Only layer 2's dispatch got slower.
    for l in &d.labels {
        let expected = if l.label == "L2.ffn_down" {
            Verdict::Slower
        } else {
            Verdict::Noise
        };
        assert_eq!(l.time.verdict, expected, "{}: {:?}", l.label, l.time);
    }
    let layer2 = d.layers.iter().find(|l| l.name == "L2").unwrap();
    assert_eq!(layer2.time.verdict, Verdict::Slower);

    let g = gate(&d, &limits(0.05)).unwrap();
    let failed: Vec<_> = g.failures().map(|c| format!("{:?}", c.subject)).collect();
    assert_eq!(failed, ["TimePerToken", "Op(\"L2.ffn_down\")"], "{g:?}");
    assert!(
        gate(&d, &limits(0.5)).unwrap().passed(),
        "within a 50% limit"
    );
}

#[test]
fn faster_is_never_a_failure() {
    let d = diff(&run(1, 1.2), &run(2, 1.0), &DiffOptions::default()).unwrap();
    assert_eq!(d.headline.wall.verdict, Verdict::Faster);
    assert!(gate(&d, &limits(0.0)).unwrap().passed());
}

#[test]
fn a_small_significant_change_below_the_minimum_effect_is_noise() {
    let base = run(1, 1.0);
    let mut new = base.clone();
    for t in &mut new.tokens {
        t.wall_ns += t.wall_ns * 3 / 200; // +1.5%, every token: significant, but small.
    }
    let d = diff(&base, &new, &DiffOptions::default()).unwrap();
    assert!(d.headline.wall.p_value.unwrap() < 0.01);
    assert_eq!(d.headline.wall.verdict, Verdict::Noise);
    let strict = DiffOptions {
        min_effect: 0.005,
        ..Default::default()
    };
    let d = diff(&base, &new, &strict).unwrap();
    assert_eq!(d.headline.wall.verdict, Verdict::Slower);
}

#[test]
fn counter_increases_fail_the_gate_exactly() {
    let base = run(1, 1.0);
    let mut new = base.clone();
    new.tokens[10].counters.syncs = 2;
    let d = diff(&base, &new, &DiffOptions::default()).unwrap();
    let syncs = d
        .counters
        .iter()
        .find(|c| c.scope == CounterScope::SteadyMax && c.name == "syncs")
        .unwrap();
    assert_eq!((syncs.base, syncs.new, syncs.delta()), (1, 2, 1));
    let g = gate(&d, &limits(0.05)).unwrap();
    assert_eq!(g.failures().count(), 1, "{g:?}");
    let one = GateOptions {
        max_counter_increase: Some(1),
        ..Default::default()
    };
    assert!(gate(&d, &one).unwrap().passed());
}

#[test]
fn ops_and_labels_added_or_removed_are_marked() {
    let base = run(1, 1.0);
    let mut new = base.clone();
    for d in new.dispatches.iter_mut().filter(|d| d.layer == Some(3)) {
        d.op = "gemv_q8_0".into();
        d.label = "L3.ffn_fused".into();
    }
    let d = diff(&base, &new, &DiffOptions::default()).unwrap();
    let presence = |op: &str| d.ops.iter().find(|o| o.op == op).unwrap().presence;
    assert_eq!(presence("gemv_q4_1"), Presence::Both);
    assert_eq!(presence("gemv_q8_0"), Presence::Added);
    let label = |l: &str| d.labels.iter().find(|x| x.label == l).unwrap().presence;
    assert_eq!(label("L3.ffn_down"), Presence::Removed);
    assert_eq!(label("L3.ffn_fused"), Presence::Added);
    let q4 = d.ops.iter().find(|o| o.op == "gemv_q4_1").unwrap();
    assert_eq!(
        (q4.calls_per_token.base, q4.calls_per_token.new),
        (4.0, 3.0)
    );
    let g = gate(
        &d,
        &GateOptions {
            max_regress_op: vec![("gemv_q8_0".into(), 0.05)],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(g.checks[0].outcome, CheckOutcome::NotChecked);
    assert_eq!(
        gate(
            &d,
            &GateOptions {
                max_regress_op: vec![("nope".into(), 0.05)],
                ..Default::default()
            }
        ),
        Err(GateError::UnknownOp("nope".into()))
    );
}

#[test]
fn model_adapter_and_timing_differences_are_reported() {
    let base = run(1, 1.0);
    let mut new = base.clone();
    new.adapter.name = "Other GPU".into();
    new.workload.weights = "q8_0".into();
    new.timing.mode = TimingMode::Pass;
    new.workload
        .settings
        .insert("fuse".into(), "attention".into());
    let d = diff(&base, &new, &DiffOptions::default()).unwrap();
    let kinds: Vec<(MismatchKind, &str)> = d
        .mismatches
        .iter()
        .map(|m| (m.kind, m.what.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (MismatchKind::Model, "weights"),
            (MismatchKind::Adapter, "adapter"),
            (MismatchKind::Timing, "timing mode")
        ]
    );
    assert_eq!(d.incompatible().count(), 2, "timing alone is not refused");
    assert_eq!(d.settings.len(), 1);
    assert_eq!(
        (d.settings[0].base.as_deref(), d.settings[0].new.as_deref()),
        (None, Some("attention"))
    );
}

#[test]
fn empty_profiles_are_refused() {
    let p = run(1, 1.0);
    let mut empty = p.clone();
    empty.tokens.clear();
    assert_eq!(
        diff(&p, &empty, &DiffOptions::default()),
        Err(DiffError::NoTokens(Side::New))
    );
    assert_eq!(
        diff(&empty, &p, &DiffOptions::default())
            .unwrap_err()
            .to_string(),
        "the base profile has no tokens: nothing to compare"
    );
}

#[test]
fn sampled_profiles_compare_dispatch_spans() {
    // One dispatch in 4 timed: no token has all of an op's calls timed.
    let sample = |mut p: Profile| {
        p.timing.sampling = Some(Sampling { stride: 4 });
        for d in &mut p.dispatches {
            if !(Sampling { stride: 4 }).is_timed(d.token, d.index) {
                d.gpu = None;
            }
        }
        p
    };
    let d = diff(
        &sample(run(1, 1.0)),
        &sample(run(2, 1.0)),
        &DiffOptions::default(),
    )
    .unwrap();
    let op = &d.ops[0];
    assert_eq!(op.time.unit, SampleUnit::Dispatch);
    assert!(op.time.base.unwrap().count > 0);
    assert!(d.notes.iter().any(|n| n.contains("one dispatch in 4")));
}

#[test]
fn renderings_show_the_same_rows() {
    let d = diff(&run(1, 1.0), &run(2, 1.2), &DiffOptions::default()).unwrap();
    let g = gate(&d, &limits(0.05)).unwrap();
    let text = render_diff_text(&d, Some(&g));
    for needle in [
        "Headline",
        "wall ms per token",
        "SLOWER",
        "L2.ffn_down",
        "Layers (GPU time per token)",
        "all 30 counters equal",
        "GATE FAILED: 2 of 12 checks",
    ] {
        assert!(text.contains(needle), "text lacks {needle:?}:\n{text}");
    }
    let md = render_diff_md(&d, Some(&g));
    for needle in [
        "# gpuscope diff",
        "## Gate",
        "| op |",
        "| ---: |",
        "> **GATE FAILED",
    ] {
        assert!(md.contains(needle), "markdown lacks {needle:?}:\n{md}");
    }
    let v: serde_json::Value = serde_json::from_str(&json(&d, Some(&g))).unwrap();
    assert_eq!(v["diff_format"]["major"], 1);
    assert_eq!(v["headline"]["wall"]["verdict"], "slower");
    assert_eq!(v["labels"].as_array().unwrap().len(), 4, "every label");
    assert_eq!(v["gate"]["checks"][0]["outcome"], "fail");
}

/// `run`'s profile with one op per layer (`op0`..`op3`), every time (wall, GPU busy,
/// every dispatch) `factor` times longer when `uniform`, else only layer 2's dispatch
/// and the wall.
fn four_ops(seed: u64, factor: f64, uniform: bool) -> Profile {
    let mut p = run(seed, 1.0);
    let mut j = Jitter(seed + 100);
    for t in &mut p.tokens {
        t.wall_ns = j.scale((t.wall_ns as f64 * factor) as u64, 0.01);
        if uniform {
            t.gpu_busy_ns = t.gpu_busy_ns.map(|b| (b as f64 * factor) as u64);
        }
    }
    for d in &mut p.dispatches {
        d.op = format!("op{}", d.layer.unwrap()).into();
        if uniform || d.layer == Some(2) {
            let span = d.gpu.as_mut().unwrap();
            span.end_ns = span.start_ns + ((span.end_ns - span.start_ns) as f64 * factor) as u64;
        }
    }
    p
}

/// Regression: an A/A diff of two identical builds, one run on a loaded machine, said
/// "wall -28.8%, faster" with every op shifted the same way and no warning.
#[test]
fn a_uniform_slowdown_is_a_machine_change_the_gate_cannot_judge() {
    let d = diff(
        &four_ops(1, 1.0, true),
        &four_ops(2, 1.3, true),
        &DiffOptions::default(),
    )
    .unwrap();
    assert_eq!(d.headline.wall.verdict, Verdict::Slower);
    let m = d.machine_change.expect("everything moved together");
    assert!((1.25..1.35).contains(&m.factor), "{m:?}");
    assert_eq!((m.ops, m.ops_moved), (4, 4));
    let g = gate(&d, &limits(0.05)).unwrap();
    assert!(g.passed(), "no timing check fails: {g:?}");
    assert!(g
        .checks
        .iter()
        .any(|c| c.outcome == CheckOutcome::Inconclusive));
    let text = render_diff_text(&d, Some(&g));
    assert!(text.contains("machine or its load changed"), "{text}");
    // A code change that moves one op is not the machine's.
    let d = diff(
        &four_ops(1, 1.0, false),
        &four_ops(2, 1.3, false),
        &DiffOptions::default(),
    )
    .unwrap();
    assert!(d.machine_change.is_none(), "{:?}", d.machine_change);
    assert!(!gate(&d, &limits(0.05)).unwrap().passed());
}

/// Regression: the change column showed the Hodges-Lehmann shift over the base median,
/// which can disagree with the medians printed beside it (`1.504 -> 0.054 -16.9%`).
#[test]
fn the_change_column_is_the_ratio_of_the_medians_shown() {
    let d = diff(
        &four_ops(1, 1.0, true),
        &four_ops(2, 1.3, true),
        &DiffOptions::default(),
    )
    .unwrap();
    for t in d.ops.iter().map(|o| o.time).chain([d.headline.wall]) {
        let (b, n) = (
            t.base.unwrap().median_ns as f64,
            t.new.unwrap().median_ns as f64,
        );
        assert!((t.change.unwrap() - (n / b - 1.0)).abs() < 1e-12, "{t:?}");
    }
}

/// Two engines, one sampled: the new one makes twice the calls, each half as long. Per
/// call it looks 50% faster; per token it spends the same. Per-op rows compare each
/// run's estimated time per token.
#[test]
fn two_engines_sampled_compare_time_per_token_not_per_call() {
    let sample = |mut p: Profile| {
        p.timing.sampling = Some(Sampling { stride: 4 });
        for d in &mut p.dispatches {
            if !(Sampling { stride: 4 }).is_timed(d.token, d.index) {
                d.gpu = None;
            }
        }
        p
    };
    let mut other = run(2, 1.0);
    let halves: Vec<_> = other
        .dispatches
        .iter_mut()
        .map(|d| {
            let g = d.gpu.as_mut().unwrap();
            g.end_ns = g.start_ns + (g.end_ns - g.start_ns) / 2;
            let mut second = d.clone();
            second.index += 4;
            second
        })
        .collect();
    other.dispatches.extend(halves);
    other.workload.settings.insert(
        "source".into(),
        gpuscope_trace::profile::SOURCE_VULKAN_LAYER.into(),
    );
    other
        .workload
        .settings
        .insert("command".into(), "llama-bench -m model.gguf".into());
    let d = diff(
        &sample(run(1, 1.0)),
        &sample(other),
        &DiffOptions::default(),
    )
    .unwrap();
    let op = &d.ops[0];
    assert_eq!(op.time.unit, SampleUnit::Estimate);
    let (b, n) = (
        op.time.base.unwrap().median_ns,
        op.time.new.unwrap().median_ns,
    );
    assert!(
        (n as f64 / b as f64 - 1.0).abs() < 0.1,
        "per token: base {b} ns, new {n} ns"
    );
    assert!((op.calls_per_token.new / op.calls_per_token.base - 2.0).abs() < 1e-9);
    assert!(render_diff_text(&d, None).contains("estimated"));
}
