//! Sampled timing on the adapter (issue 29): the estimate from one dispatch in `stride`
//! per token agrees with timing every dispatch, and a sampled report leaves nothing
//! unknown.

use crate::common::{gpuscope, have_gpu, text};
use gpuscope_report::analysis::analyze;
use gpuscope_trace::fixtures::sampled_from;
use gpuscope_trace::io::load_profile;
use gpuscope_trace::Profile;

fn op_shares(p: &Profile) -> std::collections::BTreeMap<String, f64> {
    analyze(p)
        .ops
        .rows
        .iter()
        .filter_map(|r| Some((r.op.clone(), r.gpu_percent?)))
        .collect()
}

fn layer_shares(p: &Profile) -> Vec<(String, f64)> {
    let a = analyze(p);
    let total: u64 = a.layers.rows.iter().filter_map(|r| r.gpu_ns_median).sum();
    a.layers
        .rows
        .iter()
        .map(|r| {
            let ns = r.gpu_ns_median.expect("every section timed") as f64;
            (r.name.clone(), ns / total as f64 * 100.0)
        })
        .collect()
}

/// Deterministic: one dispatch-timed run, and the same run with all but the spans
/// sampling would have kept removed.
#[test]
fn sampled_estimates_match_timing_every_dispatch_within_5_points() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("full.json");
    let out = gpuscope(&[
        "profile",
        "--preset",
        "tiny",
        "--tokens",
        "128",
        "--warmup",
        "4",
        "--timing",
        "dispatch",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let full = load_profile(&json).unwrap();
    let sampled = sampled_from(&full, 8);
    assert!(analyze(&sampled).estimate.is_some());
    let (want, got) = (op_shares(&full), op_shares(&sampled));
    assert_eq!(
        want.keys().collect::<Vec<_>>(),
        got.keys().collect::<Vec<_>>()
    );
    for (op, w) in &want {
        let g = got[op];
        assert!(
            (w - g).abs() <= 5.0,
            "{op}: every dispatch {w:.1}%, sampled {g:.1}%"
        );
    }
    let (want, got) = (layer_shares(&full), layer_shares(&sampled));
    assert_eq!(want.len(), got.len(), "{want:?} vs {got:?}");
    for ((name, w), (name2, g)) in want.iter().zip(&got) {
        assert_eq!(name, name2);
        assert!(
            (w - g).abs() <= 5.0,
            "{name}: every dispatch {w:.1}%, sampled {g:.1}%"
        );
    }
}

#[test]
fn a_sampled_run_reports_layers_utilization_and_a_bottleneck() {
    if !have_gpu() {
        return;
    }
    let out = gpuscope(&[
        "profile", "--preset", "tiny", "--tokens", "48", "--warmup", "2", "--timing", "sampled",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = text(&out.stdout);
    for part in [
        "Sampled estimate: per-op, per-layer and GPU-busy times below are estimated from",
        "sampled dispatch spans, estimated",
        "utilization, estimated",
        "(estimated from sampled timing)",
    ] {
        assert!(r.contains(part), "{part:?} missing in:\n{r}");
    }
    for absent in [
        "GPU time unknown",
        "Layers: GPU time unknown",
        "not computable: busy",
    ] {
        assert!(!r.contains(absent), "{absent:?} in:\n{r}");
    }
}
