//! The Vulkan layer's recording as a profile: a program on two GPUs (llama.cpp's `-sm
//! layer`) gives one GPU track per queue, each step on its own, each device's spans on
//! its own clock.

use gpuscope_trace::fixtures::data;
use gpuscope_trace::recording::read_records;

#[test]
fn two_devices_give_two_gpu_tracks_on_their_own_clocks() {
    let path = data("two_gpus.jsonl");
    let text = std::fs::read(&path).unwrap();
    let p = read_records(&text[..], &path).unwrap().to_profile();
    assert_eq!(p.gpu_tracks.len(), 2, "{:?}", p.gpu_tracks);
    assert!(p.gpu_tracks[0].contains("GPU A") && p.gpu_tracks[1].contains("GPU B"));
    let tracks: Vec<u32> = p.tokens.iter().map(|t| t.gpu_track).collect();
    assert_eq!(tracks, [0, 1]);
    // Each device's spans count from its own first tick: device B's ticks (5e6) are
    // not clamped against device A's (9e12).
    let spans: Vec<(u32, u64, u64)> = p
        .dispatches
        .iter()
        .map(|d| (d.token, d.gpu.unwrap().start_ns, d.gpu.unwrap().end_ns))
        .collect();
    assert_eq!(
        spans,
        [
            (0, 0, 10_000),
            (0, 11_000, 21_000),
            (1, 0, 12_000),
            (1, 13_000, 25_000)
        ]
    );
    assert_eq!(p.workload.layers, 4, "ffn_down-0..3 name four layers");
}

/// The other architectures' ops land on llama.cpp's families: gpuscope's per-head q/k
/// norm on rms_norm (llama.cpp's `rms_norm_f32` over the heads), its GeGLU on gelu_mul
/// (llama.cpp's `geglu_f32`), its q5 gemvs on their format.
#[test]
fn other_architectures_ops_share_llama_cpp_families() {
    use gpuscope_trace::recording::op_family;
    for (ours, theirs, family) in [
        ("head_norm", "rms_norm_f32", "rms_norm"),
        ("gelu_mul", "geglu_f32", "gelu_mul"),
        ("gemv_q5_0", "mul_mat_vec_q5_0_f32_f32", "gemv_q5_0"),
        ("gemv_q5_1", "mul_mat_vec_q5_1_f32_f32", "gemv_q5_1"),
    ] {
        assert_eq!(op_family(ours), family, "{ours}");
        assert_eq!(op_family(theirs), family, "{theirs}");
    }
}

/// Sampled: a token's few timed dispatches are not its busy time (summed, they made
/// attach's report say the GPU was busy 0.0% of an 8B token); the report estimates it.
#[test]
fn a_sampled_recording_leaves_busy_time_to_the_estimate() {
    let path = data("two_gpus.jsonl");
    let text = String::from_utf8(std::fs::read(&path).unwrap()).unwrap();
    let full = read_records(text.as_bytes(), &path).unwrap().to_profile();
    assert!(full.tokens.iter().all(|t| t.gpu_busy_ns.is_some()));
    let sampled = text.replacen("\"stride\":1", "\"stride\":16", 1);
    let p = read_records(sampled.as_bytes(), &path)
        .unwrap()
        .to_profile();
    assert_eq!(p.timing.sampling.as_ref().map(|s| s.stride), Some(16));
    assert!(p.tokens.iter().all(|t| t.gpu_busy_ns.is_none()));
}
