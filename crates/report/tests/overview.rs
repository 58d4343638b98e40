//! The analyses the viewers add: headline rates, opportunities, token buckets, the
//! representative token and per-dispatch rates.

use gpuscope_report::analysis::{
    analyze, dispatch_rate, headline, representative_token, token_buckets, token_stats,
    RooflineCeilings,
};
use gpuscope_trace::PromptRecord;

use gpuscope_trace::fixtures as fixture;

#[test]
fn headline_inverts_the_wall_spread_and_counts_the_prompt() {
    // Walls 1, 2, 4 ms: tg median 500 tok/s; p10 from the slowest (p90 wall) token.
    let p = fixture::tokens_only(&[(1_000_000, None), (2_000_000, None), (4_000_000, None)]);
    let stats = token_stats(&p);
    let prompt = PromptRecord {
        tokens: 10,
        wall_ns: 20_000_000,
        method: "one token per step".into(),
        ops: Vec::new(),
    };
    let h = headline(&stats, Some(&prompt));
    let tg = h.tg.unwrap();
    assert_eq!(tg.median, 500.0);
    assert_eq!(tg.n, 3);
    let w = stats.wall_ns.unwrap();
    assert_eq!(tg.p10, Some(1e9 / w.p90 as f64));
    assert_eq!(tg.p90, Some(1e9 / w.p10 as f64));
    let pp = h.pp.unwrap();
    assert_eq!((pp.median, pp.n, pp.p10), (500.0, 10, None));
    assert!(headline(&stats, None).pp.is_none());
}

#[test]
fn opportunities_are_ranked_by_saving_and_need_ceilings_for_estimates() {
    let a = analyze(&fixture::small_with_ceilings());
    let saved: Vec<f64> = a
        .opportunities
        .iter()
        .map(|o| o.saved_ns.unwrap())
        .collect();
    assert!(!saved.is_empty());
    assert!(saved.windows(2).all(|w| w[0] >= w[1]), "{saved:?}");
    // The roofline's own top savings are the same figures.
    let top = &a.roofline.what_it_would_take.as_ref().unwrap().savings[0];
    assert!(a
        .opportunities
        .iter()
        .any(|o| o.saved_ns == Some(top.saved_ns)));

    let a = analyze(&fixture::small());
    assert!(!a.opportunities.is_empty());
    assert!(a.opportunities.iter().all(|o| o.saved_ns.is_none()));
    assert!(a.opportunities[0].basis.contains("gpuscope peak"));
}

#[test]
fn token_buckets_merge_consecutive_tokens_into_means() {
    let times: Vec<(u64, Option<u64>)> = (0..10)
        .map(|i| (100 * (i + 1), Some(10 * (i + 1))))
        .collect();
    let p = fixture::tokens_only(&times);
    assert_eq!(
        token_buckets(&p, 100).len(),
        10,
        "one token per point when they fit"
    );
    let b = token_buckets(&p, 4);
    assert_eq!(b.len(), 4);
    assert_eq!((b[0].first, b[0].last), (0, 2));
    assert_eq!(b[0].wall_ns, 200.0);
    assert_eq!(b[0].gpu_busy_ns, Some(20.0));
    assert_eq!((b[3].first, b[3].last), (9, 9));
}

#[test]
fn representative_token_is_the_median_steady_token_with_dispatch_spans() {
    let p = fixture::timeline();
    let a = analyze(&p);
    let t = representative_token(&p, &a.tokens_steady).unwrap();
    assert!(p
        .dispatches
        .iter()
        .any(|d| d.token == t && d.valid_gpu_ns().is_some()));
    let mut untimed = fixture::timeline();
    for d in untimed.dispatches.iter_mut().filter(|d| d.token == 1) {
        d.gpu = None;
    }
    assert_eq!(
        representative_token(&untimed, &analyze(&untimed).tokens),
        Some(0)
    );
}

#[test]
fn dispatch_rate_is_bytes_over_time_and_attainable_over_measured() {
    let c = RooflineCeilings::from(&fixture::ceilings()).unwrap();
    let r = dispatch_rate(2000, 500, 1000, Some(&c)).unwrap();
    assert_eq!(r.gb_per_s, 2.0);
    assert_eq!(r.gflop_per_s, 0.5);
    let expected = c.attainable_ns(2000.0, 500.0) / 1000.0 * 100.0;
    assert_eq!(r.percent_of_ceiling, Some(expected));
    assert!(dispatch_rate(2000, 500, 0, Some(&c)).is_none());
    assert_eq!(
        dispatch_rate(1, 1, 1, None).unwrap().percent_of_ceiling,
        None
    );
}
