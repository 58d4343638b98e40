//! Sampled dispatch timing (`--timing sampled`, what `auto` picks where a timestamp
//! between dispatches is expensive) attributes GPU time to ops as full dispatch timing
//! does: every op's share of GPU time within 5 percentage points (interleaved in chunks:
//! run one mode after the other, lavapipe's per-op times drifted by several points over
//! the run). The step's first dispatch (the embedding) is left out of both: with every
//! dispatch timed its span starts at the pass's opening timestamp and carries lavapipe's
//! start of the submission (5.6% and 12.9% of GPU time in two runs, 2-15% sampled). A
//! binary of its own, so that no other test's GPU work lands inside its timings.

use std::collections::BTreeMap;

#[path = "common.rs"]
mod common;

use gpuscope_model::{profile_decode, Preset, ProfileOptions};
use gpuscope_ops::WeightFormat;
use gpuscope_runtime::{Gpu, GpuOptions, TimingRequest, AUTO_SAMPLING_STRIDE};
use gpuscope_trace::TimingMode;

/// Per op but the step's first (see the test): its share of GPU time in percent,
/// estimated as calls × the mean of its timed spans with the top and bottom 10% left out
/// (lavapipe's worker threads are sometimes preempted for milliseconds, which one span
/// among a few hundred carries into a sum; and a dispatch of two workgroups takes one
/// time or twice it as they land on one thread or two, between which a median jumps),
/// and its timed calls.
fn shares(spans_by_op: BTreeMap<String, (u64, Vec<u64>)>) -> Vec<(String, f64, u64)> {
    let estimates: Vec<(String, f64, u64)> = spans_by_op
        .into_iter()
        .map(|(op, (calls, mut spans))| {
            assert!(!spans.is_empty(), "{op}: no timed call");
            spans.sort_unstable();
            let cut = spans.len() / 10;
            let kept = &spans[cut..spans.len() - cut];
            let mean = kept.iter().sum::<u64>() as f64 / kept.len() as f64;
            (op, calls as f64 * mean, spans.len() as u64)
        })
        .collect();
    let total: f64 = estimates.iter().map(|e| e.1).sum();
    estimates
        .into_iter()
        .map(|(op, ns, timed)| (op, 100.0 * ns / total, timed))
        .collect()
}

/// Profiles with every dispatch timed and sampled, in interleaved chunks of `chunk`
/// tokens (`chunks` of each), so that what drifts on the machine over the run falls on
/// both alike; returns each mode's spans by op (calls, valid spans), the step's first
/// dispatch left out.
fn interleaved(chunks: u32, chunk: u32) -> [BTreeMap<String, (u64, Vec<u64>)>; 2] {
    let device = |timing| {
        Gpu::new(&GpuOptions {
            timing,
            ..Default::default()
        })
        .expect("device")
    };
    let gpus = [
        device(TimingRequest::Exactly(TimingMode::Dispatch)),
        device(TimingRequest::Sampled {
            stride: AUTO_SAMPLING_STRIDE,
        }),
    ];
    let w = common::weights(Preset::Tiny, WeightFormat::Q8_0);
    let opts = ProfileOptions {
        tokens: chunk,
        first_token: 1,
        warmup: gpuscope_model::Warmup::Steps(2),
        in_flight: 2,
        ..Default::default()
    };
    let mut out: [BTreeMap<String, (u64, Vec<u64>)>; 2] = Default::default();
    for c in 0..chunks {
        for k in 0..2 {
            let m = (c as usize + k) % 2;
            let p = profile_decode(&gpus[m], &w, &opts)
                .expect("profile")
                .profile;
            assert_eq!(p.timing.mode, TimingMode::Dispatch);
            for d in p.dispatches.iter().filter(|d| d.index > 0) {
                let e = out[m].entry(d.op.clone()).or_default();
                e.0 += 1;
                if let Some(ns) = d.valid_gpu_ns() {
                    e.1.push(ns);
                }
            }
        }
    }
    out
}

/// Each op's sampled and full share, or what disagrees by more than 5 points.
fn judge(full: &[(String, f64, u64)], sampled: &[(String, f64, u64)]) -> Result<(), String> {
    assert_eq!(full.len(), sampled.len(), "{full:?} vs {sampled:?}");
    let mut off = Vec::new();
    for (op, full_pct, full_timed) in full {
        let (_, pct, timed) = sampled
            .iter()
            .find(|(o, _, _)| o == op)
            .unwrap_or_else(|| panic!("{op} has no sampled time"));
        println!(
            "{op:32} full {full_pct:5.1}% ({full_timed} calls)  sampled {pct:5.1}% ({timed} calls)"
        );
        // Sampling times one dispatch in the stride: about that fraction of the calls.
        assert!(
            *timed * u64::from(AUTO_SAMPLING_STRIDE) <= full_timed * 2 && *timed > 0,
            "{op}: {timed} sampled calls of {full_timed}"
        );
        if (pct - full_pct).abs() > 5.0 {
            off.push(format!(
                "{op}: {pct:.1}% of GPU time sampled, {full_pct:.1}% with every dispatch timed"
            ));
        }
    }
    if off.is_empty() {
        Ok(())
    } else {
        Err(off.join("; "))
    }
}

#[test]
fn sampled_timing_gives_every_op_the_share_full_timing_gives() {
    if common::gpu().is_none() {
        return;
    }
    // Up to three independent measurements; the first that agrees passes. Why: with every
    // dispatch timed, a dispatch of two workgroups on lavapipe takes one time or twice it
    // as they land on one worker thread or two, and on a loaded 2-core CI machine the mix
    // of the two shifted a whole measurement (one CI run: rope's share 23.3% full, 17.8%
    // sampled; six local runs 16.9-20.0% full, 17.8-18.8% sampled). An attribution bug
    // (a span booked to the wrong op, a stride that skips an op) is off in every attempt.
    let mut misses = Vec::new();
    for attempt in 1..=3 {
        // 16 chunks of 64 tokens per mode: each dispatch of a step is sampled 64 times.
        let [full, sampled] = interleaved(16, 4 * AUTO_SAMPLING_STRIDE);
        println!("attempt {attempt}");
        match judge(&shares(full), &shares(sampled)) {
            Ok(()) => return,
            Err(e) => misses.push(format!("attempt {attempt}: {e}")),
        }
    }
    panic!("{}", misses.join("\n"));
}
