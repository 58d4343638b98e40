//! Prompt processing in batches gives the same next-token logits, and the same greedy
//! continuation, as feeding the prompt one token at a time.

use gpuscope_model::{
    synthetic_weights, DecoderOptions, GpuDecoder, KernelPlan, ModelWeights, Preset,
};
use gpuscope_ops::gemv::{GemmKind, GemvVariant, WeightLayout};
use gpuscope_ops::WeightFormat;

use crate::common::{gpu, weights};

/// Max |a - b| and the scale of `b`.
fn diff(a: &[f32], b: &[f32]) -> (f32, f32) {
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    (
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max),
        scale,
    )
}

/// Runs `prompt` token by token on one decoder and in chunks of `max_batch` on another,
/// then generates `gen` tokens from each; logits after the prompt must agree within
/// `rel` of their scale and the generated tokens must be the same.
fn prefill_matches_per_token(
    w: &ModelWeights,
    prompt: &[u32],
    max_batch: u32,
    gen: u32,
    rel: f32,
    what: &str,
) {
    prefill_matches_per_token_in(w, prompt, max_batch, gen, rel, what, WeightLayout::Gguf);
}

/// [`prefill_matches_per_token`] with the batched decoder's weights in `layout` (the
/// per-token one keeps GGUF bytes).
fn prefill_matches_per_token_in(
    w: &ModelWeights,
    prompt: &[u32],
    max_batch: u32,
    gen: u32,
    rel: f32,
    what: &str,
    layout: WeightLayout,
) {
    let Some(gpu) = gpu() else { return };
    // The lanes frames' batched kernels: the CPU-style gemv (`rows`, lavapipe's default)
    // has its own tests (`rows_plan_*`).
    let mut plan = KernelPlan::for_adapter(gpu);
    if plan.gemv == GemvVariant::Rows {
        plan.gemv = GemvVariant::Shared;
    }
    plan.weights = layout;
    // Float gemvs and the float batched gemv on both sides: dp4a decode steps and the
    // gemms round x (to int8, or to f16 with the weights on coopmat), which moved
    // SmolLM2's logits by 0.46% (coopmat prefill) and 1.9% (dp4a decode) of the largest
    // on an H100, past this comparison's tolerance; `gemm_prefills_stay_near_the_float_prefill`
    // checks the gemms against this path, `check` the dp4a gemvs against their executors.
    plan.gemv_large = None;
    plan.prefill = None;
    prefill_matches_per_token_with(gpu, w, prompt, max_batch, gen, rel, what, plan);
}

/// [`prefill_matches_per_token`] with both decoders on `plan`.
#[allow(clippy::too_many_arguments)]
fn prefill_matches_per_token_with(
    gpu: &gpuscope_runtime::Gpu,
    w: &ModelWeights,
    prompt: &[u32],
    max_batch: u32,
    gen: u32,
    rel: f32,
    what: &str,
    plan: KernelPlan,
) {
    let max_ctx = prompt.len() as u32 + gen + 1;
    let opts = DecoderOptions {
        max_ctx,
        read_logits: true,
    };
    let mut one = GpuDecoder::with_plan(gpu, w, opts.clone(), plan).unwrap();
    let mut batched = GpuDecoder::with_plan(gpu, w, opts, plan).unwrap();
    batched.enable_prefill(gpu, max_batch).unwrap();
    assert!(
        batched.prefill_graph().is_some(),
        "{what}: no batched graph"
    );
    assert!(batched.prefill_method().starts_with("batched prefill"));
    let mut one_last = None;
    for &t in prompt {
        one_last = Some(one.step(gpu, Some(t)).unwrap());
    }
    let mut b_last = None;
    for chunk in prompt.chunks(max_batch as usize) {
        b_last = Some(batched.prefill(gpu, chunk).unwrap());
    }
    let (one_last, b_last) = (one_last.unwrap(), b_last.unwrap());
    assert_eq!(batched.position(), prompt.len() as u32);
    let (ol, bl) = (one_last.logits.unwrap(), b_last.logits.unwrap());
    assert!(
        bl.iter().all(|v| v.is_finite()),
        "{what}: non-finite prefill logits"
    );
    let (d, scale) = diff(&bl, &ol);
    assert!(
        d <= rel * scale + 1e-4,
        "{what}: prefill logits differ by {d} (max |logit| {scale})"
    );
    assert_eq!(
        b_last.token, one_last.token,
        "{what}: next token after the prompt differs"
    );
    let (mut a, mut b) = (vec![one_last.token], vec![b_last.token]);
    for i in 0..gen {
        let os = one.step(gpu, None).unwrap();
        let bs = batched.step(gpu, None).unwrap();
        let (d, scale) = diff(bs.logits.as_ref().unwrap(), os.logits.as_ref().unwrap());
        assert!(
            d <= rel * scale + 1e-4,
            "{what}: generated step {i}: logits differ by {d} (max |logit| {scale})"
        );
        a.push(os.token);
        b.push(bs.token);
    }
    assert_eq!(b, a, "{what}: generation after prefill differs");
}

const PROMPT: [u32; 11] = [5, 17, 300, 2, 2, 511, 0, 42, 9, 100, 7];

#[test]
fn tiny_preset_every_format_prefill_matches_per_token() {
    for format in WeightFormat::ALL {
        let w = weights(Preset::Tiny, format);
        // One batch of 11 (a full chunk of 8 and a partial one) ...
        prefill_matches_per_token(&w, &PROMPT, 16, 6, 2e-3, &format!("{format:?} batch 16"));
        // ... and chunks of 4, 4, 3 (later chunks start past position 0).
        prefill_matches_per_token(&w, &PROMPT, 4, 6, 2e-3, &format!("{format:?} batch 4"));
    }
}

/// Each architecture's batched prefill (q/k/v biases, q/k head norms, post norms,
/// GeGLU, NeoX rope, the windowed layers' own rope base and cache, embeddings × √dim)
/// against its decode steps, in chunks of 3. With the tiny presets' window of 4 (Gemma
/// 3, Mistral) the graph takes positions 0 to 3 (the second chunk splits there) and
/// decode steps the rest (a batch would wrap the ring cache).
#[test]
fn tiny_architectures_prefill_matches_per_token() {
    for preset in [
        Preset::TinyGemma3,
        Preset::TinyQwen2,
        Preset::TinyQwen3,
        Preset::TinyMistral,
        Preset::TinyPhi3,
    ] {
        let w = synthetic_weights(&preset.config(), WeightFormat::Q8_0, 7, preset.name());
        prefill_matches_per_token(&w, &PROMPT, 3, 2, 2e-3, preset.name());
    }
}

/// The batched kernels over packed weights (q4_0, q4_1, q8_0; the tied head's packed
/// copy), in chunks of 4, 4 and 3.
#[test]
fn packed_weights_prefill_matches_per_token() {
    for format in [WeightFormat::Q4_0, WeightFormat::Q4_1, WeightFormat::Q8_0] {
        let w = weights(Preset::Tiny, format);
        let what = format!("{format:?} packed batch 4");
        prefill_matches_per_token_in(&w, &PROMPT, 4, 6, 2e-3, &what, WeightLayout::Packed);
    }
}

#[test]
fn prefill_refuses_bad_calls() {
    let Some(gpu) = gpu() else { return };
    let w = weights(Preset::Tiny, WeightFormat::Q8_0);
    let mut g = GpuDecoder::new(
        gpu,
        &w,
        DecoderOptions {
            max_ctx: 6,
            read_logits: false,
        },
    )
    .unwrap();
    assert!(
        g.prefill(gpu, &[1, 2]).is_err(),
        "prefill before enable_prefill"
    );
    g.enable_prefill(gpu, 4).unwrap();
    assert!(g.prefill(gpu, &[]).is_err());
    assert!(
        g.prefill(gpu, &[1, 2, 3, 4, 5]).is_err(),
        "more than max_batch"
    );
    assert!(
        g.prefill(gpu, &[u32::MAX]).is_err(),
        "outside the vocabulary"
    );
    g.prefill(gpu, &[1, 2, 3, 4]).unwrap();
    assert!(g.prefill(gpu, &[1, 2, 3]).is_err(), "past max_ctx");
    assert_eq!(g.position(), 4);
}

/// SmolLM2's shape and real q4_1 weights (the synthetic SmolLM2-shaped test this
/// replaced ran the same graph on random weights).
#[test]
fn real_model_prefill_matches_per_token() {
    let Some(m) = crate::real_model::model() else {
        return;
    };
    if gpu().is_none() {
        return;
    }
    let tk = crate::real_model::tokenizer(m);
    let prompt = tk
        .encode_prompt("The capital of France is a city that many people visit")
        .unwrap();
    assert!(
        prompt.len() > 9,
        "the prompt should span more than one 8-row gemv chunk"
    );
    // Three generated steps check that decoding continues from the prefilled cache
    // (each step is ~1 s of lavapipe here; the tiny presets generate more).
    prefill_matches_per_token(&m.weights, &prompt, 64, 3, 2e-3, "SmolLM2 Q4_1");
}

/// With the CPU-style gemv (`rows`) over weights the wide rows frame cannot read (GGUF
/// bytes here) a prompt goes through decode steps: same position, same next token and
/// logits as stepping it by hand, and the method says so.
#[test]
fn rows_plan_prefills_through_decode_steps() {
    let Some(gpu) = gpu() else { return };
    let w = weights(Preset::Tiny, WeightFormat::Q4_1);
    let opts = DecoderOptions {
        max_ctx: 16,
        read_logits: true,
    };
    let plan = KernelPlan {
        gemv_large: None,
        gemv: GemvVariant::Rows,
        weights: WeightLayout::Gguf,
        ..KernelPlan::for_adapter(gpu)
    };
    let mut one = GpuDecoder::with_plan(gpu, &w, opts.clone(), plan).unwrap();
    let mut stepped = GpuDecoder::with_plan(gpu, &w, opts, plan).unwrap();
    stepped.enable_prefill(gpu, 4).unwrap();
    assert!(stepped.prefill_graph().is_none());
    assert_eq!(stepped.prefill_max_batch(), 4);
    assert!(
        stepped.prefill_method().contains("decode step per token"),
        "{}",
        stepped.prefill_method()
    );
    assert!(
        stepped.prefill(gpu, &PROMPT[..5]).is_err(),
        "5 > max batch 4"
    );
    let mut last = None;
    for chunk in PROMPT.chunks(4) {
        last = Some(stepped.prefill(gpu, chunk).unwrap());
    }
    let mut want = None;
    for &t in &PROMPT {
        want = Some(one.step(gpu, Some(t)).unwrap());
    }
    let (last, want) = (last.unwrap(), want.unwrap());
    assert_eq!(stepped.position(), PROMPT.len() as u32);
    assert_eq!(last.token, want.token);
    assert_eq!(
        last.logits, want.logits,
        "the same graph must give the same bits"
    );
    // Generation continues from the GPU's own argmax.
    assert_eq!(
        stepped.step(gpu, None).unwrap().token,
        one.step(gpu, None).unwrap().token
    );
}

/// With the CPU-style gemv (`rows`) over packed q4_0 / q4_1 / q8_0 on adapters with the
/// wide rows frame (SHADER_INT64, 8-lane subgroups: lavapipe in CI) the prompt goes
/// through the batched graph, its gemvs through the wide rows frame's batched form and
/// attention through the `subgroup` kernel's: after chunks of 4, 4 and 3, and one of 11,
/// the logits agree with decode steps' and so does what is generated after them.
#[test]
fn rows_plan_prefills_through_the_wide_rows_frame() {
    let Some(gpu) = gpu() else { return };
    let plan = KernelPlan {
        gemv: GemvVariant::Rows,
        gemv_large: None,
        weights: WeightLayout::Packed,
        prefill: None,
        ..KernelPlan::for_adapter(gpu)
    };
    let info = gpu.adapter_info();
    let wide = gpu.features().contains(
        gpuscope_runtime::wgpu::Features::SHADER_INT64 | gpuscope_runtime::wgpu::Features::SUBGROUP,
    ) && info.subgroup_min_size == 8
        && info.subgroup_max_size == 8;
    if !wide {
        eprintln!("SKIPPED: \"{}\" has no wide rows frame", info.name);
        return;
    }
    for format in [WeightFormat::Q4_0, WeightFormat::Q4_1, WeightFormat::Q8_0] {
        let w = weights(Preset::Tiny, format);
        let mut d = GpuDecoder::with_plan(
            gpu,
            &w,
            DecoderOptions {
                max_ctx: 16,
                read_logits: false,
            },
            plan,
        )
        .unwrap();
        d.enable_prefill(gpu, 4).unwrap();
        let graph = d.prefill_graph().expect("a batched graph");
        let shaders: Vec<&str> = graph
            .sections
            .iter()
            .flat_map(|s| s.dispatches.iter().map(|d| d.pipeline.shader()))
            .collect();
        assert!(
            shaders.iter().any(|s| s.ends_with(".packed.wide")),
            "{format:?}: {shaders:?}"
        );
        assert!(
            shaders.contains(&"attention_batched.subgroup"),
            "{format:?}: {shaders:?}"
        );
        // Chunks of 4, 4 and 3 (later chunks start past position 0) for each format;
        // one batch of 11 for the first (~5 s a case on lavapipe).
        let batches: &[u32] = if format == WeightFormat::Q4_0 {
            &[4, 16]
        } else {
            &[4]
        };
        for &max_batch in batches {
            let what = format!("{format:?} rows plan, batch {max_batch}");
            prefill_matches_per_token_with(gpu, &w, &PROMPT, max_batch, 6, 2e-3, &what, plan);
        }
    }
}

/// Prompt processing through each gemm this adapter runs (dp4a: int8 x; coopmat: f16 on
/// cooperative matrices; 64x64 tiles) against the float batched gemv, same prompt and
/// weights: the logits after the prompt differ by the rounding of x (and, for coopmat,
/// of the weights), far below a wrong kernel's (each gemm is checked against its oracle
/// in the ops tests).
#[test]
fn gemm_prefills_stay_near_the_float_prefill() {
    let Some(gpu) = gpu() else { return };
    let kinds: Vec<GemmKind> = GemmKind::ALL
        .into_iter()
        .filter(|k| match k.supported(gpu) {
            Ok(()) => true,
            Err(why) => {
                eprintln!("SKIPPED the {} gemm: {why}", k.name());
                false
            }
        })
        .collect();
    for format in [WeightFormat::Q4_0, WeightFormat::Q4_1, WeightFormat::Q8_0] {
        let w = weights(Preset::Tiny, format);
        let opts = DecoderOptions {
            max_ctx: PROMPT.len() as u32 + 1,
            read_logits: true,
        };
        let mut float_plan = KernelPlan::for_adapter(gpu);
        float_plan.gemv = GemvVariant::Shared;
        float_plan.gemv_large = None;
        float_plan.prefill = None;
        let mut logits = Vec::new();
        let plans = std::iter::once(float_plan).chain(kinds.iter().map(|&k| KernelPlan {
            prefill: Some(k),
            ..float_plan
        }));
        for plan in plans {
            let mut d = GpuDecoder::with_plan(gpu, &w, opts.clone(), plan).unwrap();
            d.enable_prefill(gpu, 16).unwrap();
            let shaders: Vec<&str> = d
                .prefill_graph()
                .unwrap()
                .dispatches()
                .map(|x| x.pipeline.shader())
                .collect();
            for kind in GemmKind::ALL {
                let prefix = format!("gemm_{}_", kind.name());
                let gemms = shaders.iter().filter(|s| s.starts_with(&prefix)).count();
                assert_eq!(
                    gemms > 0,
                    plan.prefill == Some(kind),
                    "{format:?} {:?}: {gemms} {prefix} dispatches",
                    plan.prefill
                );
            }
            // dp4a quantizes x once per input the gemms share: q/k/v, the attention
            // output, gate/up, the FFN's hidden (4 per layer); the others never.
            let quantizes = shaders.iter().filter(|s| **s == "quantize_x_q8").count();
            if plan.prefill == Some(GemmKind::Dp4a) {
                assert!(
                    quantizes > 0 && quantizes <= 4 * w.config.n_layers as usize,
                    "{format:?}: {quantizes} quantize dispatches"
                );
            } else {
                assert_eq!(quantizes, 0);
            }
            let method = match plan.prefill {
                Some(k) => format!("{} gemm", k.name()),
                None => "batched gemv".into(),
            };
            assert!(d.settings()["prefill"].starts_with(&method));
            logits.push(d.prefill(gpu, &PROMPT).unwrap().logits.unwrap());
        }
        let f = &logits[0];
        for (kind, q) in kinds.iter().zip(&logits[1..]) {
            let kind = kind.name();
            assert!(
                q.iter().all(|v| v.is_finite()),
                "{format:?} {kind}: non-finite logits"
            );
            let err: f64 = f.iter().zip(q).map(|(a, b)| ((a - b) as f64).powi(2)).sum();
            let norm: f64 = f.iter().map(|a| (*a as f64).powi(2)).sum();
            assert!(
                err > 0.0,
                "{format:?}: the {kind} prefill equals the float one: did it run?"
            );
            assert!(
                err / norm < 1e-3,
                "{format:?}: NMSE {:e} between the {kind} and float prefills",
                err / norm
            );
        }
    }
}

/// Decode steps queued behind the prompt's last batch (`prompt_ahead`, what `run` does)
/// give the tokens of a prompt read back first and decoded after; a caller that stops at
/// the prompt's token leaves them to be finished, and an explicit first token is refused.
#[test]
fn decode_steps_queued_behind_the_prompt_continue_it() {
    use gpuscope_model::{GenerateOptions, Generator};
    let Some(gpu) = gpu() else { return };
    let w = weights(Preset::Tiny, WeightFormat::Q8_0);
    let prompt = [5u32, 17, 300, 2, 9];
    let steps = 6u32;
    let decoder = |gpu| {
        GpuDecoder::new(
            gpu,
            &w,
            DecoderOptions {
                max_ctx: prompt.len() as u32 + steps + 1,
                read_logits: false,
            },
        )
        .unwrap()
    };
    let generate = |ahead: bool| -> (u32, Vec<(u32, u32)>) {
        let mut gen = Generator::from_decoder(
            gpu,
            decoder(gpu),
            GenerateOptions::default(),
            prompt.len() as u32,
        )
        .unwrap();
        let done = if ahead {
            let done = gen.prompt_ahead(&prompt, steps, |_| Ok(())).unwrap();
            // Two steps (the most in flight) went behind the prompt.
            assert_eq!(gen.decoder().position(), prompt.len() as u32 + 2);
            done
        } else {
            gen.prompt(&prompt, |_| Ok(())).unwrap()
        };
        assert!(done.method.contains("batched"), "{}", done.method);
        let mut out = Vec::new();
        gen.decode(None, steps, |s| {
            out.push((s.position, s.token));
            Ok(gpuscope_model::Flow::Continue)
        })
        .unwrap();
        (done.next, out)
    };
    let (next, by_steps) = generate(false);
    let (next_ahead, ahead) = generate(true);
    assert_eq!(next_ahead, next);
    assert_eq!(ahead, by_steps);
    let positions: Vec<u32> = ahead.iter().map(|&(p, _)| p).collect();
    assert_eq!(positions, (5..11).collect::<Vec<u32>>());

    // Stopping at the prompt's token: the queued steps end with the generator.
    let mut gen =
        Generator::from_decoder(gpu, decoder(gpu), GenerateOptions::default(), 5).unwrap();
    assert_eq!(gen.prompt_ahead(&prompt, 1, |_| Ok(())).unwrap().next, next);
    assert_eq!(
        gen.decoder().position(),
        6,
        "one step asked for, one queued"
    );
    drop(gen);
    // A first token of the caller's own would not follow the queued steps.
    let mut gen =
        Generator::from_decoder(gpu, decoder(gpu), GenerateOptions::default(), 5).unwrap();
    gen.prompt_ahead(&prompt, steps, |_| Ok(())).unwrap();
    assert!(gen
        .decode(Some(3), 2, |_| Ok(gpuscope_model::Flow::Continue))
        .is_err());
}

/// The automatic warm-up decodes for at least its minimum time even when the steps
/// settle sooner (a GPU's clocks can hold a steady, slow plateau before they ramp), and
/// never past its step limit. (Without the minimum, tiny's steps settle in a few dozen
/// steps, well under a second, on lavapipe.)
#[test]
fn an_automatic_warm_up_lasts_its_minimum_time() {
    use gpuscope_model::{GenerateOptions, Generator};
    use std::time::Duration;
    let Some(gpu) = gpu() else { return };
    let w = weights(Preset::Tiny, WeightFormat::Q8_0);
    let max_ctx = 200;
    let decoder = GpuDecoder::new(
        gpu,
        &w,
        DecoderOptions {
            max_ctx,
            read_logits: false,
        },
    )
    .unwrap();
    let mut gen = Generator::from_decoder(gpu, decoder, GenerateOptions::default(), 1).unwrap();
    // The first steps pay the one-time costs (shaders compiled with a cold cache).
    gen.warm_up(4, 1).unwrap();
    let min = Duration::from_secs(1);
    let done = gen
        .warm_up_until_settled(1, min, Duration::from_secs(30), max_ctx)
        .unwrap();
    assert!(
        done.wall_ns >= min.as_nanos() as u64 || done.steps == max_ctx,
        "{done:?} stopped before {min:?} and its step limit"
    );
    assert!(done.steps <= max_ctx, "{done:?}");
}
