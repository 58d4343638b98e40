//! Steady-state detection on hand-built runs (see `analysis::steady` for the method).

use gpuscope_report::analysis::steady::{GpuEvidence, SteadyMethod};
use gpuscope_report::analysis::*;
use gpuscope_report::render::render_text;

use gpuscope_trace::fixtures as fixture;

#[test]
fn the_h200_clock_ramp_is_flagged_and_left_out_of_the_headline() {
    let p = fixture::clock_ramp();
    let s = steady_state(&p);
    assert_eq!(s.method, SteadyMethod::Detected);
    // Reference: the last 8 tokens (6 at 6.3 ms, 2 at 21.3 ms): median 6.3 ms, MAD 0,
    // so the spread is its 1% floor and the band its 10% floor, 0.63 ms.
    let r = s.reference.unwrap();
    assert_eq!((r.median_ns, r.n), (6_300_000, 8));
    assert_eq!(r.band_ns, 630_000.0);
    let slow = s.slow_start.as_ref().expect("a slow start");
    assert_eq!((slow.first_token, slow.last_token, slow.len()), (0, 9, 10));
    assert_eq!(slow.median_ns, 21_300_000);
    assert_eq!(
        slow.gpu,
        GpuEvidence::Slower {
            slow_busy_ns: 21_000_000,
            steady_busy_ns: 6_000_000
        }
    );
    assert!(slow.kind().starts_with("clock ramp"));
    assert_eq!(s.steady, (10..16).collect::<Vec<usize>>());
    assert!(s.settled && s.outliers.is_empty() && s.drift.is_none());
    // 3 warm-up tokens were not enough: 3 + 10.
    assert_eq!(s.suggested_warmup, Some(13));

    let t = token_stats_steady(&p);
    assert_eq!(t.selection, TokenSelection::Steady);
    assert_eq!(t.tokens, (10..16).collect::<Vec<u32>>());
    let rate = t.tok_per_s.unwrap();
    assert!((rate - 1e9 / 6.3e6).abs() < 1e-6, "{rate}");
    // The median of all 16 tokens is 21.3 ms (46.9 tok/s): what the old headline said.
    assert_eq!(token_stats(&p).wall_ns.unwrap().median, 21_300_000);

    let report = render_text(&p);
    assert!(
        report.contains("Steady state: reached; headlines use 6 of 16 tokens (10-15)\n"),
        "{report}"
    );
    assert!(report.contains(
        "  slow start: tokens 0-9 (10 tokens) at median 21.300 ms: clock ramp (the GPU itself was slower); GPU busy 21.000 ms vs 6.000 ms"
    ));
    assert!(report.contains("rerun with --warmup 13"));
    // The steady state is said before the tokens.
    assert!(report.find("Steady state:") < report.find("Tokens:"));
}

#[test]
fn an_outlier_is_named_and_left_out() {
    let mut times: Vec<(u64, Option<u64>)> = (0..20)
        .map(|i| (1_000_000 + (i % 3) * 5_000, Some(900_000)))
        .collect();
    times[12] = (3_000_000, Some(900_000));
    let p = fixture::tokens_only(&times);
    let s = steady_state(&p);
    assert!(s.slow_start.is_none(), "{s:?}");
    assert_eq!(s.outliers.len(), 1);
    let o = s.outliers[0];
    assert_eq!((o.token, o.wall_ns), (12, 3_000_000));
    assert!(o.z > 3.5, "{}", o.z);
    assert_eq!(s.steady.len(), 19);
    assert!(!s.steady.contains(&12));
    assert!(s.settled);
    assert_eq!(s.suggested_warmup, None);
    let r = render_text(&p);
    assert!(
        r.contains("outliers: 1 left out: token 12 3.000 ms (z +"),
        "{r}"
    );
}

#[test]
fn a_cpu_side_warm_up_is_told_from_a_clock_ramp() {
    let times: Vec<(u64, Option<u64>)> = (0..12)
        .map(|i| (if i < 2 { 5_000_000 } else { 1_000_000 }, Some(800_000)))
        .collect();
    let s = steady_state(&fixture::tokens_only(&times));
    let slow = s.slow_start.unwrap();
    assert_eq!(slow.len(), 2);
    assert!(matches!(slow.gpu, GpuEvidence::Unchanged { .. }));
    assert!(slow.kind().contains("CPU side"));
    // Without GPU times nothing tells them apart.
    let times: Vec<(u64, Option<u64>)> = times.iter().map(|&(w, _)| (w, None)).collect();
    let slow = steady_state(&fixture::tokens_only(&times))
        .slow_start
        .unwrap();
    assert_eq!(slow.gpu, GpuEvidence::Unknown);
}

#[test]
fn a_run_that_never_settles_says_so() {
    // 20 ms down to 1 ms in even steps: no three consecutive tokens agree with the tail.
    let times: Vec<(u64, Option<u64>)> = (0..20u64)
        .map(|i| (20_000_000 - i * 1_000_000, None))
        .collect();
    let p = fixture::tokens_only(&times);
    let s = steady_state(&p);
    assert!(!s.settled, "{s:?}");
    assert!(!s.steady.is_empty(), "headlines still have tokens to use");
    let r = render_text(&p);
    assert!(r.contains("Steady state: NOT reached"), "{r}");
    assert!(r.contains("decode more tokens (--tokens) or more warm-up (--warmup)"));
}

#[test]
fn short_runs_skip_detection_and_say_so() {
    let s = steady_state(&fixture::small());
    assert_eq!(s.method, SteadyMethod::TooFewTokens);
    assert_eq!(s.steady, vec![1, 2]);
    let r = render_text(&fixture::small());
    assert!(r.contains(
        "Steady state: not detected (3 tokens; the method needs 8): every token but the first used"
    ));
}

#[test]
fn a_single_token_run_renders_every_section() {
    let mut p = fixture::small_with_ceilings();
    p.tokens.truncate(1);
    p.dispatches.retain(|d| d.token == 0);
    p.passes.retain(|s| s.token == 0);
    let s = steady_state(&p);
    assert_eq!(s.steady, vec![0]);
    let r = render_text(&p);
    for part in [
        "the only token used",
        "Roofline per token (all tokens)",
        "Timeline (all tokens",
        "Checklist (",
        "Bottleneck: CPU/launch-bound",
    ] {
        assert!(r.contains(part), "{part:?} missing in:\n{r}");
    }
}

/// Token 0 of a run with two steps in flight: its wall is a whole step (its own start to
/// its completion), the others intervals between completions (H100, SmolLM2 after a
/// 141-token prompt: 1,165 µs against 725-752 µs, GPU time unchanged).
fn two_in_flight(overlap: bool) -> gpuscope_trace::Profile {
    let walls: Vec<(u64, Option<u64>)> = (0..12)
        .map(|i| (if i == 0 { 1_165_000 } else { 750_000 }, None))
        .collect();
    let mut p = fixture::tokens_only(&walls);
    p.warmup_tokens = Some(1);
    p.threads = vec!["main".into()];
    // Token i completes at 1,165 + 750 i µs; with two in flight it began a step before
    // the previous completion, else right after it.
    p.cpu_spans = (0..12u64)
        .map(|i| {
            let end = 1_165_000 + 750_000 * i;
            let start = if i == 0 {
                0
            } else if overlap {
                end - 1_500_000
            } else {
                end - 750_000
            };
            gpuscope_trace::CpuSpan {
                name: "step".into(),
                thread: 0,
                token: Some(i as u32),
                start_ns: start,
                end_ns: end,
                detail: None,
            }
        })
        .collect();
    p
}

#[test]
fn the_first_token_of_a_pipelined_run_is_the_pipeline_filling_not_a_warm_up() {
    let p = two_in_flight(true);
    let s = steady_state(&p);
    let slow = s.slow_start.as_ref().expect("token 0 is slower");
    assert_eq!(slow.len(), 1);
    assert!(slow.pipeline_fill, "{slow:?}");
    assert!(slow.kind().starts_with("the pipeline filling"));
    // More warm-up would not remove it: nothing suggested.
    assert_eq!(s.suggested_warmup, None);
    assert_eq!(s.steady, (1..12).collect::<Vec<usize>>());
    let r = render_text(&p);
    assert!(
        r.contains("slow start: tokens 0-0 (1 tokens) at median 1.165 ms: the pipeline filling"),
        "{r}"
    );
    assert!(!r.contains("rerun with --warmup"), "{r}");

    // Steps one after another: the same slow token is a warm-up, and more warm-up is
    // suggested (1 + 1).
    let s = steady_state(&two_in_flight(false));
    assert!(!s.slow_start.as_ref().unwrap().pipeline_fill);
    assert_eq!(s.suggested_warmup, Some(2));
}

/// Regression: `profile --preset tiny --tokens 20000` said "still drifting: the steady
/// tokens' first half has median 5.593 ms, the second half 13.464 ms": attention reading
/// a longer KV cache, linear in position and expected. The line is taken out, its slope
/// reported with the op that carries it, and the run is settled.
#[test]
fn time_growing_with_position_is_growth_not_drift() {
    let mut p = fixture::long(2000, 2);
    for d in &mut p.dispatches {
        let span = d.gpu.as_mut().unwrap();
        let pos = u64::from(d.token);
        if d.layer == Some(1) {
            d.op = "attention".into();
            // 2 µs + 0.4 µs per position.
            span.end_ns = span.start_ns + 2_000 + 400 * pos;
        }
    }
    for t in &mut p.tokens {
        // 5 ms + 0.4 µs per position, ±0.5% of jitter.
        let jitter = 1.0 + 0.005 * (((t.index * 7919) % 100) as f64 / 50.0 - 1.0);
        t.wall_ns = ((5_000_000 + 400 * u64::from(t.position)) as f64 * jitter) as u64;
    }
    let s = steady_state(&p);
    assert!(s.settled, "{:?} {:?}", s.drift, s.growth);
    assert!(s.drift.is_none());
    let g = s.growth.expect("growth found");
    assert!((380.0..420.0).contains(&g.us_per_1k()), "{g:?}");
    assert_eq!(g.by_op[0].0, "attention");
    assert!((380.0..420.0).contains(&g.by_op[0].1), "{g:?}");
    assert!(
        s.steady.len() > 1800,
        "growth is not an outlier: {}",
        s.steady.len()
    );
    let r = gpuscope_report::render::render_text(&p);
    assert!(
        r.contains("grows with context: +4") && r.contains("carried by attention"),
        "{}",
        r.lines()
            .filter(|l| l.contains("grows"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A flat run has no growth to take out; `fixture::long`'s 1 µs per token is one.
#[test]
fn a_flat_run_has_no_growth() {
    let mut p = fixture::long(200, 2);
    let g = steady_state(&p)
        .growth
        .expect("1 µs per position over 150 is a 15% rise");
    assert!((g.us_per_1k() - 1000.0).abs() < 1e-6, "{g:?}");
    for t in &mut p.tokens {
        t.wall_ns = 1_000_000 + u64::from(t.index % 7) * 1000;
    }
    let s = steady_state(&p);
    assert!(s.growth.is_none(), "{:?}", s.growth);
}
