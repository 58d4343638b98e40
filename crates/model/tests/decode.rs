//! Greedy decoding on the GPU gives the CPU reference's tokens and logits.

use gpuscope_model::{CpuDecoder, DecoderOptions, GpuDecoder, Preset};
use gpuscope_ops::WeightFormat;

use crate::common::{gpu, weights};

/// Decodes `tokens` greedily on both backends, each feeding itself, and compares.
fn gpu_matches_cpu(preset: Preset, format: WeightFormat, tokens: u32) {
    let Some(gpu) = gpu() else { return };
    let w = weights(preset, format);
    let mut g = GpuDecoder::new(
        gpu,
        &w,
        DecoderOptions {
            max_ctx: tokens,
            read_logits: true,
        },
    )
    .unwrap();
    let mut c = CpuDecoder::new(&w, tokens).unwrap();
    let (mut g_in, mut c_in) = (3u32, 3u32);
    let mut distinct = std::collections::HashSet::new();
    for i in 0..tokens {
        let gs = g.step(gpu, (i == 0).then_some(g_in)).unwrap();
        let cs = c.step(c_in).unwrap();
        let gl = gs.logits.unwrap();
        assert!(
            gl.iter().all(|v| v.is_finite()),
            "{format:?} step {i}: non-finite GPU logit"
        );
        let scale = cs.logits.iter().fold(0f32, |m, v| m.max(v.abs()));
        let worst = gl
            .iter()
            .zip(&cs.logits)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(
            worst <= 2e-3 * scale + 1e-4,
            "{} {format:?} step {i}: logits differ by {worst} (max |logit| {scale})",
            preset.name()
        );
        assert_eq!(
            gs.token,
            cs.token,
            "{} {format:?} step {i}: greedy tokens differ",
            preset.name()
        );
        distinct.insert(gs.token);
        g_in = gs.token;
        c_in = cs.token;
    }
    assert!(
        distinct.len() > 1,
        "decoding produced a single repeated token; the check would be too weak"
    );
}

#[test]
fn tiny_preset_every_format_gpu_matches_cpu() {
    for format in WeightFormat::ALL {
        gpu_matches_cpu(Preset::Tiny, format, 16);
    }
}

#[test]
fn smollm2_shape_q4_1_gpu_matches_cpu_for_16_tokens() {
    gpu_matches_cpu(Preset::Smollm2_135m, WeightFormat::Q4_1, 16);
}

#[test]
fn forced_tokens_give_the_same_logits() {
    // Feeding the same input tokens (not each backend's own argmax) isolates numerics
    // from greedy choices.
    let Some(gpu) = gpu() else { return };
    let w = weights(Preset::Tiny, WeightFormat::Q4_0);
    let mut g = GpuDecoder::new(
        gpu,
        &w,
        DecoderOptions {
            max_ctx: 8,
            read_logits: true,
        },
    )
    .unwrap();
    let mut c = CpuDecoder::new(&w, 8).unwrap();
    for (i, t) in [5u32, 17, 300, 2, 2, 511, 0, 42].into_iter().enumerate() {
        let gl = g.step(gpu, Some(t)).unwrap().logits.unwrap();
        let cl = c.step(t).unwrap().logits;
        let scale = cl.iter().fold(0f32, |m, v| m.max(v.abs()));
        let worst = gl
            .iter()
            .zip(&cl)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(
            worst <= 2e-3 * scale + 1e-4,
            "step {i}: logits differ by {worst}"
        );
    }
}

#[test]
fn out_of_vocabulary_token_is_an_error_not_a_panic() {
    let Some(gpu) = gpu() else { return };
    let w = weights(Preset::Tiny, WeightFormat::F32);
    let mut g = GpuDecoder::new(
        gpu,
        &w,
        DecoderOptions {
            max_ctx: 2,
            read_logits: false,
        },
    )
    .unwrap();
    let err = g.step(gpu, Some(w.config.vocab)).err().expect("must fail");
    assert!(err.to_string().contains("outside the vocabulary"), "{err}");
}

#[test]
fn full_context_is_an_error() {
    let Some(gpu) = gpu() else { return };
    let w = weights(Preset::Tiny, WeightFormat::F16);
    let mut g = GpuDecoder::new(
        gpu,
        &w,
        DecoderOptions {
            max_ctx: 2,
            read_logits: false,
        },
    )
    .unwrap();
    g.step(gpu, Some(1)).unwrap();
    g.step(gpu, None).unwrap();
    let err = g.step(gpu, None).err().expect("third token must not fit");
    assert!(err.to_string().contains("KV cache is full"), "{err}");
}

#[test]
fn two_tokens_in_flight_give_the_same_tokens_as_one_at_a_time() {
    // The GPU feeds its own argmax to the next token, so token N+1 may be submitted
    // before N's readback; the result must not change.
    let Some(gpu) = gpu() else { return };
    let w = weights(Preset::Tiny, WeightFormat::Q8_0);
    let opts = DecoderOptions {
        max_ctx: 12,
        read_logits: false,
    };
    let mut serial = GpuDecoder::new(gpu, &w, opts.clone()).unwrap();
    let expected: Vec<u32> = (0..12)
        .map(|i| serial.step(gpu, (i == 0).then_some(4)).unwrap().token)
        .collect();
    let mut piped = GpuDecoder::new(gpu, &w, opts).unwrap();
    let mut got = Vec::new();
    let mut pending = std::collections::VecDeque::new();
    for i in 0..12 {
        pending.push_back(piped.submit(gpu, (i == 0).then_some(4)).unwrap());
        if pending.len() == 2 {
            got.push(
                piped
                    .finish(gpu, pending.pop_front().unwrap())
                    .unwrap()
                    .token,
            );
        }
    }
    while let Some(p) = pending.pop_front() {
        got.push(piped.finish(gpu, p).unwrap().token);
    }
    assert_eq!(got, expected);
    // A third submission while two are in flight is refused, not a hang.
    let a = piped.submit(gpu, None);
    assert!(a.is_err(), "context is full at 12");
}

#[test]
fn mixed_formats_in_one_layer_still_match_cpu() {
    // Real quantized files keep attn_v (and sometimes ffn_down) in another format than
    // attn_q: the q/k/v gemv must not be stacked then, only written side by side.
    let Some(gpu) = gpu() else { return };
    let mut w = weights(Preset::Tiny, WeightFormat::Q4_0);
    let c = w.config.clone();
    for (i, layer) in w.layers.iter_mut().enumerate() {
        layer.wv = gpuscope_model::synthetic::random_tensor(
            9,
            &format!("blk.{i}.attn_v.weight"),
            WeightFormat::Q8_0,
            c.kv_dim(),
            c.dim,
            0.05,
        );
        layer.w_up = gpuscope_model::synthetic::random_tensor(
            9,
            &format!("blk.{i}.ffn_up.weight"),
            WeightFormat::F16,
            c.ffn_dim,
            c.dim,
            0.05,
        );
    }
    let mut g = GpuDecoder::new(
        gpu,
        &w,
        DecoderOptions {
            max_ctx: 6,
            read_logits: true,
        },
    )
    .unwrap();
    let mut cpu = CpuDecoder::new(&w, 6).unwrap();
    for t in [3u32, 40, 7, 300, 1, 2] {
        let gl = g.step(gpu, Some(t)).unwrap().logits.unwrap();
        let cl = cpu.step(t).unwrap().logits;
        let scale = cl.iter().fold(0f32, |m, v| m.max(v.abs()));
        let worst = gl
            .iter()
            .zip(&cl)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(
            worst <= 2e-3 * scale + 1e-4,
            "token {t}: logits differ by {worst}"
        );
    }
}
