//! The regression gate on real profiles: repeated profiles of one build never fail
//! `diff --max-regress 5% --max-counter-increase 0`, and a planted 10% slowdown (extra
//! GPU work in one gemv, see `PlantedSlowdown`) fails it every time.
//!
//! Every trial profiles three runs of the tiny preset: base, base again (A/A) and
//! planted. Each run is made of chunks of tokens, and the chunks of the three are made
//! in turn (rotating who goes first), so that the load of a shared machine, which
//! drifts over seconds, falls on the three alike; within a chunk, each token is an
//! ordinary `profile_decode` token. The planted amount is calibrated on the adapter to
//! ~10% of the token time first, from the GPU time one extra pass adds to `ffn_down`,
//! then from the wall-time change that first guess makes. One step is kept in flight,
//! so the planted GPU work adds to the wall time instead of overlapping encoding.
//! Run with `cargo test -p gpuscope-model --test gate -- --nocapture` to see the counts
//! and sizes; BENCHMARKS.md records them.

use gpuscope_model::{profile_decode, PlantedSlowdown, Preset, ProfileOptions};
use gpuscope_ops::WeightFormat;
use gpuscope_runtime::{Gpu, GpuOptions};
use gpuscope_trace::analysis::gate::Subject;
use gpuscope_trace::analysis::{diff, gate, DiffOptions, GateOptions};
use gpuscope_trace::Profile;

#[path = "common.rs"]
mod common;

use common::{gpu, weights};

const TRIALS: usize = 20;
/// Chunks per run and recorded tokens per chunk: 512 tokens per run (interleaved chunks
/// spread a loaded machine's drift over both runs; more tokens narrow the estimate).
const CHUNKS: usize = 64;
const TOKENS_PER_CHUNK: u32 = 8;
/// The slowdown to plant, as a fraction of the token time.
const PLANTED: f64 = 0.10;
/// Extra passes of the calibration run.
const PROBE_PASSES: u32 = 8;

fn limits() -> GateOptions {
    GateOptions {
        max_regress: Some(0.05),
        max_regress_op: Vec::new(),
        max_counter_increase: Some(0),
    }
}

/// Appends `p`'s tokens and events to `run`, numbering its tokens after `run`'s.
fn append(run: &mut Profile, p: Profile) {
    let offset = run.tokens.len() as u32;
    run.tokens.extend(p.tokens.into_iter().map(|mut t| {
        t.index += offset;
        t
    }));
    run.dispatches.extend(p.dispatches.into_iter().map(|mut d| {
        d.token += offset;
        d
    }));
    run.passes.extend(p.passes.into_iter().map(|mut s| {
        s.token += offset;
        s
    }));
}

/// One profile per condition (a planted slowdown or none), made chunk by chunk in turn.
fn interleaved(gpu: &Gpu, conditions: &[Option<&PlantedSlowdown>]) -> Vec<Profile> {
    let w = weights(Preset::Tiny, WeightFormat::Q8_0);
    let mut runs: Vec<Option<Profile>> = vec![None; conditions.len()];
    for chunk in 0..CHUNKS {
        for k in 0..conditions.len() {
            let c = (chunk + k) % conditions.len();
            let opts = ProfileOptions {
                tokens: TOKENS_PER_CHUNK,
                first_token: 1,
                overhead: false,
                warmup: 1,
                // One step in flight: the planted GPU work then adds to the wall time in full,
                // instead of overlapping the next step's encoding by a varying amount
                // (with 2 in flight on lavapipe, planted trials spread from +4% to +19%).
                in_flight: 1,
                prompt: Vec::new(),
                planted_slowdown: conditions[c].cloned(),
                ..Default::default()
            };
            let run = profile_decode(gpu, &w, &opts).expect("profile");
            assert!(run.error.is_none(), "{:?}", run.error);
            match &mut runs[c] {
                Some(r) => append(r, run.profile),
                slot => *slot = Some(run.profile),
            }
        }
    }
    runs.into_iter().map(Option::unwrap).collect()
}

/// Extra passes that add `PLANTED` of the token time: the GPU time `PROBE_PASSES` added
/// to the `ffn_down` dispatches (their Hodges-Lehmann shifts) against the base run's
/// median token time.
fn calibrate(base: &Profile, probe: &Profile) -> (u32, f64) {
    let d = diff(base, probe, &DiffOptions::default()).unwrap();
    let added_ns: i64 = d
        .labels
        .iter()
        .filter(|l| l.label.ends_with(".ffn_down"))
        .map(|l| l.time.shift_ns.expect("ffn_down timed"))
        .sum();
    let token_ns = d.headline.wall.base.expect("timed tokens").median_ns as f64;
    let per_pass = added_ns as f64 / PROBE_PASSES as f64;
    assert!(
        per_pass > 0.0,
        "{PROBE_PASSES} extra passes added {added_ns} ns to ffn_down: the knob adds no GPU work"
    );
    let passes = (PLANTED * token_ns / per_pass).round().max(1.0) as u32;
    (passes, per_pass / token_ns)
}

/// The relative change of the wall time per token, and whether the gate failed.
/// Only the timing can fail it: the planted work changes no counter and no output.
fn judge(base: &Profile, new: &Profile) -> (f64, bool) {
    let d = diff(base, new, &DiffOptions::default()).unwrap();
    let change = d.headline.wall.change.expect("timed tokens");
    let g = gate(&d, &limits()).unwrap();
    let by_counters: Vec<_> = g
        .failures()
        .filter(|c| matches!(c.subject, Subject::Counter(_)))
        .collect();
    assert!(by_counters.is_empty(), "counters changed: {by_counters:?}");
    let ids = |p: &Profile| p.tokens.iter().map(|t| t.token_id).collect::<Vec<_>>();
    assert_eq!(ids(base), ids(new), "the generated tokens changed");
    (change, !g.passed())
}

fn percent(v: &[f64]) -> String {
    let cells: Vec<String> = v.iter().map(|c| format!("{:+.1}", c * 100.0)).collect();
    format!("[{}] %", cells.join(" "))
}

#[test]
fn gate_never_fails_a_a_runs_and_always_fails_a_planted_ten_percent_slowdown() {
    // A device of its own: other tests' work on the shared queue would land inside
    // these timings.
    if gpu().is_none() {
        return;
    }
    let gpu = Gpu::new(&GpuOptions::default()).expect("a second device on the adapter");
    let probe = PlantedSlowdown {
        target: "ffn_down".into(),
        extra_passes: PROBE_PASSES,
    };
    let runs = interleaved(&gpu, &[None, Some(&probe)]);
    let (first_guess, per_pass) = calibrate(&runs[0], &runs[1]);
    // Second stage: the GPU time a pass adds is not all of what the wall time per token
    // (the gate's statistic) gains, so the first guess is measured the gate's way and
    // scaled to PLANTED (measured on lavapipe: the first guess alone gave +9.1% median).
    let guess = PlantedSlowdown {
        target: "ffn_down".into(),
        extra_passes: first_guess,
    };
    let runs = interleaved(&gpu, &[None, Some(&guess)]);
    let (guess_change, _) = judge(&runs[0], &runs[1]);
    let passes = if guess_change > 0.0 {
        (first_guess as f64 * PLANTED / guess_change)
            .round()
            .max(1.0) as u32
    } else {
        first_guess
    };
    let planted = PlantedSlowdown {
        target: "ffn_down".into(),
        extra_passes: passes,
    };

    let (mut aa, mut pl) = (Vec::new(), Vec::new());
    let (mut aa_failed, mut pl_failed) = (0, 0);
    for _ in 0..TRIALS {
        let runs = interleaved(&gpu, &[None, None, Some(&planted)]);
        let (change, failed) = judge(&runs[0], &runs[1]);
        aa.push(change);
        aa_failed += usize::from(failed);
        let (change, failed) = judge(&runs[0], &runs[2]);
        pl.push(change);
        pl_failed += usize::from(failed);
    }
    let mut sizes = pl.clone();
    sizes.sort_by(f64::total_cmp);
    println!(
        "gate (--max-regress 5% --max-counter-increase 0) on {} ({} tokens per run):\n  \
         A/A: {aa_failed} of {TRIALS} failed; changes {}\n  \
         planted {} (calibrated: one pass = {:.1}% of the token's GPU time, {first_guess} passes \
         measured {:+.1}% of the wall time; measured median {:+.1}%): \
         {pl_failed} of {TRIALS} failed; changes {}",
        gpu.adapter_desc().name,
        CHUNKS as u32 * TOKENS_PER_CHUNK,
        percent(&aa),
        planted,
        per_pass * 100.0,
        guess_change * 100.0,
        sizes[TRIALS / 2] * 100.0,
        percent(&pl),
    );
    assert_eq!(aa_failed, 0, "A/A runs failed the gate: {}", percent(&aa));
    assert_eq!(
        pl_failed,
        TRIALS,
        "planted slowdowns passed the gate: {}",
        percent(&pl)
    );
}
