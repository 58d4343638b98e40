//! Steady-state decoding creates nothing and syncs at most once per token.

use gpuscope_model::{DecoderOptions, GpuDecoder, Preset};
use gpuscope_ops::WeightFormat;

use crate::common::{gpu, weights};

#[test]
fn steady_state_creates_nothing_and_submits_once() {
    // A device of its own: counters are per device, and other tests share theirs.
    if gpu().is_none() {
        return;
    }
    let own = gpuscope_runtime::Gpu::new(&Default::default()).unwrap();
    let gpu = &own;
    let w = weights(Preset::Tiny, WeightFormat::Q8_0);
    let mut d = GpuDecoder::new(
        gpu,
        &w,
        DecoderOptions {
            max_ctx: 6,
            read_logits: false,
        },
    )
    .unwrap();
    let dispatches = d.graph().dispatch_count() as u64;
    // One pass per section with pass timing, one per step otherwise.
    let passes = gpuscope_runtime::passes_per_step(d.graph(), gpu.timing()) as u64;
    // Every fusion (the default): per layer rms_norm+qkv+rope, attention, o (+ residual),
    // rms_norm+gate_up+silu_mul, down (+ residual) = 5; plus embedding, and the head's
    // rms_norm+output and argmax.
    assert_eq!(dispatches, 5 * w.config.n_layers as u64 + 3);
    assert_eq!(
        d.graph().sections.len() as u64,
        w.config.n_layers as u64 + 2
    );
    let before = gpu.counters();
    for i in 0..6 {
        let step = d.step(gpu, (i == 0).then_some(1)).unwrap();
        let c = step.output.counters;
        assert_eq!(c.dispatches, dispatches, "token {i}");
        assert_eq!(c.passes, passes, "token {i}");
        assert_eq!(c.submits, 1, "token {i}");
        assert!(c.syncs <= 1, "token {i}: {} syncs", c.syncs);
        assert!(
            c.barriers > 0 && c.barriers < dispatches,
            "token {i}: {} barriers",
            c.barriers
        );
        assert_eq!(
            c.resources_created(),
            0,
            "token {i} created resources: {c:?}"
        );
        // The 16-byte step buffer always, the 4-byte input token only when one is fed.
        assert_eq!(c.bytes_uploaded, if i == 0 { 20 } else { 16 }, "token {i}");
    }
    let total = gpu.counters().since(&before);
    assert_eq!(total.dispatches, 6 * dispatches);
}

#[test]
fn barrier_count_follows_buffer_hazards() {
    let Some(gpu) = gpu() else { return };
    let w = weights(Preset::Tiny, WeightFormat::F32);
    let d = GpuDecoder::new(
        gpu,
        &w,
        DecoderOptions {
            max_ctx: 2,
            read_logits: false,
        },
    )
    .unwrap();
    // In a layer every dispatch reads what the one before it wrote (the first one starts
    // the pass), so each but the first waits on a barrier.
    let layer = &d.graph().sections[1];
    assert_eq!(layer.dispatches.len(), 5);
    assert_eq!(layer.barriers(), 4);
}

/// Each fusion, switched off alone, adds the dispatches (and barriers) it saves: norm 2
/// per layer and 1 in the head, rope 1, silu 1, residual 2 (the adds), attention 2
/// (scores, softmax, values instead of one kernel). With none, a layer is 13 dispatches.
#[test]
fn each_fusion_saves_its_dispatches_and_barriers() {
    use gpuscope_model::{Fusion, Fusions, KernelPlan};
    let Some(gpu) = gpu() else { return };
    let w = weights(Preset::Tiny, WeightFormat::Q8_0);
    let layers = w.config.n_layers as usize;
    let build = |fusions: Fusions| {
        let plan = KernelPlan {
            fusions,
            ..KernelPlan::for_adapter(gpu)
        };
        let d = GpuDecoder::with_plan(
            gpu,
            &w,
            DecoderOptions {
                max_ctx: 4,
                read_logits: false,
            },
            plan,
        )
        .unwrap();
        assert_eq!(d.settings()["fuse"], fusions.describe());
        (d.graph().dispatch_count(), d.graph().barriers() as usize)
    };
    let (all_d, all_b) = build(Fusions::all());
    for (fusion, per_layer, head) in [
        (Fusion::Norm, 2, 1),
        (Fusion::Rope, 1, 0),
        (Fusion::Silu, 1, 0),
        (Fusion::Residual, 2, 0),
        (Fusion::Attention, 2, 0),
    ] {
        let (d, b) = build(Fusions::all().without(fusion));
        let more = per_layer * layers + head;
        assert_eq!(d, all_d + more, "{fusion:?}: dispatches");
        assert_eq!(b, all_b + more, "{fusion:?}: barriers");
    }
    let (none_d, _) = build(Fusions::none());
    assert_eq!(none_d, 13 * layers + 4);
}

/// Gemma 3's post norms fold into the next gemv where it runs the dp4a frame: two
/// `rms_norm+add` dispatches a layer fewer, but the last layer's (the head takes no fold),
/// and the logits stay those of the graph without the fold (the int8 rounding of x may
/// differ in a step where the two residuals differ in their last bits: NMSE, not bits).
#[test]
fn post_norms_fold_into_the_next_dp4a_gemv() {
    use gpuscope_model::{Fusion, Fusions, KernelPlan};
    use gpuscope_ops::gemv::GemvVariant;
    let Some(gpu) = gpu() else { return };
    GemvVariant::Dp4a
        .supported(gpu)
        .expect("the post-norm fold needs the dp4a frame");
    let w = weights(Preset::TinyGemma3, WeightFormat::Q8_0);
    let layers = w.config.n_layers as usize;
    let decode = |fusions: Fusions| {
        let plan = KernelPlan {
            fusions,
            gemv: GemvVariant::Dp4a,
            gemv_large: Some(GemvVariant::Dp4a),
            ..KernelPlan::for_adapter(gpu)
        };
        let opts = DecoderOptions {
            max_ctx: 8,
            read_logits: true,
        };
        let mut d = GpuDecoder::with_plan(gpu, &w, opts, plan).unwrap();
        let folded = d
            .graph()
            .dispatches()
            .filter(|x| x.op.starts_with("rms_norm+add+rms_norm+gemv_"))
            .count();
        let count = d.graph().dispatch_count();
        let logits: Vec<f32> = (1..=6)
            .flat_map(|token| d.step(gpu, Some(token)).unwrap().logits.unwrap())
            .collect();
        (count, folded, logits)
    };
    let (with, folded, logits) = decode(Fusions::all());
    let (without, none, want) = decode(Fusions::all().without(Fusion::PostNorm));
    assert_eq!(folded, 2 * layers - 1);
    assert_eq!(none, 0);
    assert_eq!(without, with + 2 * layers - 1);
    let err: f64 = logits
        .iter()
        .zip(&want)
        .map(|(a, b)| f64::from(a - b).powi(2))
        .sum();
    let norm: f64 = want.iter().map(|b| f64::from(*b).powi(2)).sum();
    assert!(err / norm < 1e-4, "logits NMSE {:e}", err / norm);
}
