//! The roofline of `fixture::small()` against `fixture::ceilings()`: copy 100 bytes/ns,
//! 1000 FLOP/ns, dependent dispatch 2 µs, CPU 1 µs per dispatch. Too few tokens for
//! steady-state detection: tokens 1 and 2 are used.

use gpuscope_report::analysis::roofline::FloorTerm;
use gpuscope_report::analysis::*;
use gpuscope_report::render::render_text;

use gpuscope_trace::fixtures as fixture;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

fn op<'a>(r: &'a Roofline, name: &str) -> &'a gpuscope_report::analysis::roofline::OpRoofline {
    r.ops.iter().find(|o| o.op == name).unwrap()
}

#[test]
fn per_op_intensity_ceiling_percent_and_bound() {
    let a = analyze(&fixture::small_with_ceilings());
    let r = &a.roofline;
    let c = r.ceilings.unwrap();
    assert_eq!(
        (c.bandwidth_gbps, c.flop_rate_gflops, c.dispatch_floor_ns),
        (100.0, Some(1000.0), Some(2000.0))
    );
    // gemv_q4_1: 4 timed calls of 100 kB and 200 kFLOP in 40 µs. Per call
    // t* = max(1000 ns memory, 200 ns compute, 2000 ns floor) = 2000 ns.
    let q4 = op(r, "gemv_q4_1");
    assert_eq!(q4.intensity, Some(2.0));
    assert_eq!(q4.ceiling_gflops, Some(200.0));
    assert_eq!(q4.attainable_ns, Some(8000.0));
    assert!(close(q4.percent_of_ceiling.unwrap(), 20.0));
    assert_eq!(q4.bound, Some(Bound::Memory));
    // gemv_f16: 2 calls of 300 kB in 40 µs: t* = 3000 ns each.
    let f16 = op(r, "gemv_f16");
    assert!(close(f16.percent_of_ceiling.unwrap(), 15.0));
    // rms_norm: 3 timed calls of 2 µs, at most 2 x the dispatch floor: launch-bound,
    // and at its ceiling (the floor).
    let norm = op(r, "rms_norm");
    assert_eq!(norm.bound, Some(Bound::Launch));
    assert!(close(norm.percent_of_ceiling.unwrap(), 100.0));
}

#[test]
fn token_floor_and_distance() {
    let a = analyze(&fixture::small_with_ceilings());
    let f = a.roofline.token_floor.as_ref().unwrap();
    // 511 kB per token = 5110 ns; 7 dispatches x 2 µs = 14 µs; 7 x 1 µs = 7 µs.
    assert!(close(f.bytes_ns.median, 5110.0));
    assert!(close(f.dispatches_ns.unwrap().median, 14_000.0));
    assert!(close(f.cpu_ns.unwrap().median, 7000.0));
    assert!(close(f.floor_ns.median, 14_000.0));
    assert_eq!(f.limiter, FloorTerm::Dispatches);
    // Walls 400 and 300 µs: 28.6x and 21.4x; the nearest-rank median of two is the lower.
    assert!(close(f.times_floor.median, 300_000.0 / 14_000.0));
    assert!(close(f.times_floor.p90, 400_000.0 / 14_000.0));
    assert_eq!(f.times_floor.n, 2);
}

#[test]
fn what_it_would_take() {
    let a = analyze(&fixture::small_with_ceilings());
    let w = a.roofline.what_it_would_take.as_ref().unwrap();
    let names: Vec<&str> = w.savings.iter().map(|s| s.op.as_str()).collect();
    assert_eq!(names, ["gemv_f16", "gemv_q4_1", "rms_norm"]);
    // Per token (2 tokens): gemv_f16 20 µs now, 6000 / 0.8 / 2 = 3750 ns at 80%.
    assert!(close(w.savings[0].now_ns, 20_000.0));
    assert!(close(w.savings[0].target_ns, 3750.0));
    assert!(close(w.savings[1].saved_ns, 15_000.0));
    // rms_norm already beats 80% of its ceiling: nothing to save.
    assert_eq!(w.savings[2].saved_ns, 0.0);
    assert!(close(w.token_now_ns, 300_000.0));
    assert!(close(w.token_after_ns, 300_000.0 - 16_250.0 - 15_000.0));
    let r = render_text(&fixture::small_with_ceilings());
    assert!(r.contains("what it would take: at 80% of their ceilings, gemv_f16 20.0 µs -> 3.8 µs (saves 16.2 µs)"), "{r}");
    assert!(
        r.contains("a token would take 0.269 ms instead of 0.300 ms"),
        "{r}"
    );
}

#[test]
fn without_ceilings_only_intensity_is_known() {
    let a = analyze(&fixture::small());
    let r = &a.roofline;
    assert!(r.ceilings.is_none());
    assert_eq!(op(r, "gemv_q4_1").intensity, Some(2.0));
    assert!(r
        .ops
        .iter()
        .all(|o| o.percent_of_ceiling.is_none() && o.bound.is_none()));
    assert!(r.token_floor.is_none() && r.what_it_would_take.is_none());
    let text = render_text(&fixture::small());
    assert!(text.contains("Roofline per token: needs measured ceilings"));
}
