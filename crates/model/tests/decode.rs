//! Greedy decoding on the GPU gives the CPU reference's tokens and logits.

use std::collections::BTreeMap;

use gpuscope_model::{CpuDecoder, DecoderOptions, GpuDecoder, Preset};
use gpuscope_ops::WeightFormat;

use crate::common::{gpu, weights};

/// The GPU's logits match the CPU's within 2e-3 of the largest CPU logit (+1e-4).
fn assert_logits_close(what: &str, gpu: &[f32], cpu: &[f32]) {
    assert!(
        gpu.iter().all(|v| v.is_finite()),
        "{what}: non-finite GPU logit"
    );
    let scale = cpu.iter().fold(0f32, |m, v| m.max(v.abs()));
    let worst = gpu
        .iter()
        .zip(cpu)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(
        worst <= 2e-3 * scale + 1e-4,
        "{what}: logits differ by {worst} (max |logit| {scale})"
    );
}

/// Decodes `tokens` greedily on both backends, each feeding itself, and compares. The
/// adapter's own plan, but with float gemvs for large matrices: where that plan runs
/// `dp4a` (GPUs), x is quantized to int8 and the float CPU decoder is not its oracle (on
/// an H100 SmolLM2's dp4a head moved step 0's logits by 0.5% of the largest); check.rs
/// and the ops tests check dp4a against its own oracle.
fn gpu_matches_cpu(preset: Preset, format: WeightFormat, tokens: u32) {
    let Some(gpu) = gpu() else { return };
    let w = weights(preset, format);
    let plan = gpuscope_model::KernelPlan {
        gemv_large: None,
        ..gpuscope_model::KernelPlan::for_adapter(gpu)
    };
    let mut g = GpuDecoder::with_plan(
        gpu,
        &w,
        DecoderOptions {
            max_ctx: tokens,
            read_logits: true,
        },
        plan,
    )
    .unwrap();
    let mut c = CpuDecoder::new(&w, tokens).unwrap();
    let (mut g_in, mut c_in) = (3u32, 3u32);
    let mut distinct = std::collections::HashSet::new();
    for i in 0..tokens {
        let gs = g.step(gpu, (i == 0).then_some(g_in)).unwrap();
        let cs = c.step(c_in).unwrap();
        assert_logits_close(
            &format!("{} {format:?} step {i}", preset.name()),
            &gs.logits.unwrap(),
            &cs.logits,
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
        assert_logits_close(&format!("step {i}"), &gl, &cl);
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

/// The tiny preset in `base` with every layer's attn_v in q8_0 and ffn_up in f16, as real
/// quantized files mix formats within a layer: its GPU decoder (with the q/k/v gemvs it
/// built) and the CPU reference's logits over six tokens.
fn mixed_formats_decode(base: WeightFormat) -> (usize, BTreeMap<String, String>) {
    let gpu = gpu().expect("checked by the caller");
    let mut w = weights(Preset::Tiny, base);
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
    let qkv = g
        .graph()
        .dispatches()
        .filter(|d| d.label == "L0.attn_qkv")
        .count();
    let mut cpu = CpuDecoder::new(&w, 6).unwrap();
    for t in [3u32, 40, 7, 300, 1, 2] {
        let gl = g.step(gpu, Some(t)).unwrap().logits.unwrap();
        let cl = cpu.step(t).unwrap().logits;
        assert_logits_close(&format!("{base} token {t}"), &gl, &cl);
    }
    (qkv, g.settings().clone())
}

/// q and k in q4_1 (no exact q8_0 form), v in q8_0: q and k stacked, v beside them.
#[test]
fn mixed_formats_in_one_layer_still_match_cpu() {
    if gpu().is_none() {
        return;
    }
    let (qkv, settings) = mixed_formats_decode(WeightFormat::Q4_1);
    assert_eq!(qkv, 2, "q and k stacked, v apart");
    assert!(!settings.contains_key("weights.widened"), "{settings:?}");
}

/// q and k in q4_0, v in q8_0: q4_0 widens to q8_0 exactly, so the three are one q8_0
/// matrix, one gemv, and the settings name the widened stacks.
#[test]
fn q4_0_and_q8_0_parts_stack_as_one_q8_0_matrix() {
    if gpu().is_none() {
        return;
    }
    let (qkv, settings) = mixed_formats_decode(WeightFormat::Q4_0);
    assert_eq!(qkv, 1, "q, k and v as one q8_0 matrix");
    let widened = settings
        .get("weights.widened")
        .expect("named in the settings");
    assert!(
        widened.starts_with("L0.attn_qkv, L1.attn_qkv (2 matrices)"),
        "{widened}"
    );
}

/// Every gemv and attention variant this adapter runs, with every fusion and with none,
/// over GGUF and packed weights (the tiny preset's tied head then gets a packed copy),
/// decodes the CPU reference's tokens and logits (tiny preset: q4_1, whose fused norm
/// path rewrites sums the most, and f16, whose x is read as scalars).
#[test]
fn every_kernel_variant_and_fusion_set_matches_cpu() {
    use gpuscope_model::{Fusion, Fusions, KernelPlan};
    use gpuscope_ops::attention::AttnVariant;
    use gpuscope_ops::gemv::{GemvVariant, WeightLayout};
    let Some(gpu) = gpu() else { return };
    for format in [WeightFormat::Q4_1, WeightFormat::F16] {
        let w = weights(Preset::Tiny, format);
        let c = &w.config;
        let attn = gpuscope_ops::attention::AttnFused {
            n_heads: c.n_heads,
            n_kv_heads: c.n_kv_heads,
            head_dim: c.head_dim,
            max_ctx: 6,
        };
        for gemv in GemvVariant::ALL {
            // dp4a computes with int8 activations, so the float CPU decoder is not its
            // oracle: check.rs runs it dispatch by dispatch against its executors.
            if gemv.supported(gpu).is_err() || gemv.quantizes_x() {
                continue;
            }
            for attention in AttnVariant::ALL {
                if attention.supported(gpu, &attn).is_err() {
                    continue;
                }
                // Packed weights only where the format has them (q4_1 here; f16 would
                // run on GGUF bytes, the same case again).
                let layouts: &[WeightLayout] = if WeightLayout::Packed.supports(format) {
                    &WeightLayout::ALL
                } else {
                    &[WeightLayout::Gguf]
                };
                for (fusions, &weights_layout) in [Fusions::all(), Fusions::none()]
                    .into_iter()
                    .flat_map(|f| layouts.iter().map(move |l| (f, l)))
                {
                    let plan = KernelPlan {
                        gemv_large: None,
                        gemv,
                        gemv_shape: None,
                        weights: weights_layout,
                        attention: Some(attention),
                        fusions,
                        prefill: None,
                        dp4a_k_quants: false,
                        tuned: false,
                    };
                    let what = format!("{format:?} {plan:?}");
                    let mut g = GpuDecoder::with_plan(
                        gpu,
                        &w,
                        DecoderOptions {
                            max_ctx: 6,
                            read_logits: true,
                        },
                        plan,
                    )
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(g.settings()["gemv"].split(',').next(), Some(gemv.name()));
                    // Without the attention fusion the decoder runs scores, softmax and
                    // values, and says so rather than naming the variant it does not run.
                    let attention_shown = if fusions.has(Fusion::Attention) {
                        attention.name()
                    } else {
                        "unfused (scores, softmax, values)"
                    };
                    assert_eq!(g.settings()["attention"], attention_shown);
                    assert_eq!(g.settings()["weights"], weights_layout.name());
                    let mut cpu = CpuDecoder::new(&w, 6).unwrap();
                    for t in [3u32, 40, 7, 300, 1, 2] {
                        let gs = g.step(gpu, Some(t)).unwrap();
                        let cs = cpu.step(t).unwrap();
                        let at = format!("{what} token {t}");
                        assert_logits_close(&at, &gs.logits.unwrap(), &cs.logits);
                        assert_eq!(gs.token, cs.token, "{what} token {t}");
                    }
                }
            }
        }
    }
}
