//! A profile run: events recorded, JSON round-trips, the report renders from it.

use gpuscope_model::{profile_decode, Preset, ProfileOptions};
use gpuscope_ops::WeightFormat;
use gpuscope_trace::TimingMode;

use crate::common::{gpu, weights};

/// A device of the test's own: a profile is the recorder's, and tests running beside
/// this one on the shared device would record steps into it.
fn own_gpu() -> Option<gpuscope_runtime::Gpu> {
    gpu()?;
    Some(gpuscope_runtime::Gpu::new(&Default::default()).unwrap())
}

#[test]
fn profile_records_every_dispatch_and_round_trips() {
    let Some(own) = own_gpu() else { return };
    let gpu = &own;
    let w = weights(Preset::Tiny, WeightFormat::Q4_1);
    let opts = ProfileOptions {
        tokens: 4,
        first_token: 9,
        overhead: true,
        warmup: gpuscope_model::Warmup::Steps(2),
        in_flight: 2,
        prompt: Vec::new(),
        ..Default::default()
    };
    let run = profile_decode(gpu, &w, &opts).unwrap();
    assert!(run.error.is_none());
    let p = run.profile;
    let per_token = p.workload.graph_dispatches_per_token as usize;
    assert_eq!(p.tokens.len(), 4);
    assert_eq!(p.dispatches.len(), 4 * per_token);
    assert_eq!(
        p.passes.len(),
        4 * p.workload.graph_passes_per_token as usize
    );
    assert!(p.setup.buffers_created > 0 && p.setup.pipelines_created > 0);
    if p.timing.mode == TimingMode::Dispatch {
        let timed = p.dispatches.iter().filter(|d| d.gpu.is_some()).count();
        let flagged = p
            .dispatches
            .iter()
            .filter(|d| d.timestamp_issue.is_some())
            .count();
        match &p.timing.sampling {
            // Where `auto` samples (NVIDIA), a token's timed dispatches are every
            // stride-th, rotating over the recorder's steps (warm-up steps included, so
            // the phase is not the recorded token's index).
            Some(s) => {
                let stride = s.stride.max(1);
                for t in &p.tokens {
                    let timed: Vec<u32> = p
                        .dispatches
                        .iter()
                        .filter(|d| d.token == t.index)
                        .filter(|d| d.gpu.is_some() || d.timestamp_issue.is_some())
                        .map(|d| d.index)
                        .collect();
                    // A token may fall between samples when the stride passes its count.
                    if let Some(first) = timed.first() {
                        let want: Vec<u32> = (0..per_token as u32)
                            .filter(|i| i % stride == first % stride)
                            .collect();
                        assert_eq!(timed, want, "token {}: stride {stride}", t.index);
                    }
                }
            }
            // Every dispatch timed: so is every token (sampled timing writes no pass
            // spans, so its tokens have no GPU-busy time).
            None => {
                assert_eq!(timed + flagged, p.dispatches.len());
                assert!(p.tokens.iter().all(|t| t.gpu_busy_ns.is_some()));
            }
        }
        assert!(timed > 0, "no dispatch got a valid GPU span");
    }
    let o = p.overhead.as_ref().expect("overhead was asked for");
    assert!(o.tok_per_s_off > 0.0 && o.tok_per_s_profiled > 0.0);
    // Attention's declared bytes grow with the context.
    let scores: Vec<u64> = p
        .dispatches
        .iter()
        .filter(|d| d.op == "attention" && d.layer == Some(0))
        .map(|d| d.bytes)
        .collect();
    assert!(scores.windows(2).all(|w| w[1] > w[0]), "{scores:?}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    gpuscope_trace::io::save_profile(&path, &p).unwrap();
    let back = gpuscope_trace::io::load_profile(&path).unwrap();
    assert_eq!(back, p);
    let report = gpuscope_report::render::render_text(&back);
    for needle in ["Adapter", "gemv_q4_1", "L1", "Bottleneck", "barriers"] {
        assert!(report.contains(needle), "report lacks {needle}:\n{report}");
    }
}

#[test]
fn a_prompt_is_timed_apart_and_generation_continues_from_its_cache() {
    let Some(own) = own_gpu() else { return };
    let gpu = &own;
    let w = weights(Preset::Tiny, WeightFormat::Q8_0);
    let prompt = vec![5u32, 17, 300, 2];
    let opts = ProfileOptions {
        tokens: 3,
        first_token: 1,
        overhead: false,
        warmup: gpuscope_model::Warmup::Steps(1),
        in_flight: 2,
        prompt: prompt.clone(),
        ..Default::default()
    };
    let p = profile_decode(gpu, &w, &opts).unwrap().profile;
    let pr = p.prompt.as_ref().expect("prompt record");
    assert_eq!(pr.tokens, 4);
    assert!(pr.wall_ns > 0);
    let positions: Vec<u32> = p.tokens.iter().map(|t| t.position).collect();
    assert_eq!(
        positions,
        vec![4, 5, 6],
        "generation continues after the prompt"
    );
    // The same tokens as feeding the prompt and then greedy decoding by hand.
    let mut d = gpuscope_model::GpuDecoder::new(
        gpu,
        &w,
        gpuscope_model::DecoderOptions {
            max_ctx: 7,
            read_logits: false,
        },
    )
    .unwrap();
    for &t in &prompt {
        d.step(gpu, Some(t)).unwrap();
    }
    let expected: Vec<u32> = (0..3).map(|_| d.step(gpu, None).unwrap().token).collect();
    let got: Vec<u32> = p.tokens.iter().map(|t| t.token_id).collect();
    assert_eq!(got, expected);
    let report = gpuscope_report::render::render_text(&p);
    assert!(report.contains("prompt: 4 tokens"), "{report}");
}
