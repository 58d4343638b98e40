//! rms_norm, rope, attention, softmax, silu_mul, add, argmax: GPU against the CPU oracle.
//!
//! Shapes come from SmolLM2-135M (dim 576, 9 heads, 3 kv heads, head_dim 64, ffn 1536,
//! vocab 49152) and Llama-3-8B (32 heads, 8 kv heads, head_dim 128, dim 4096, ffn 14336,
//! vocab 128256), plus odd sizes that do not fill a workgroup. Inputs are random with
//! realistic scales; regions a kernel must not read hold NaN or huge values, and regions
//! it must not write hold random values that are compared too.

use gpuscope_ops::add::Add;
use gpuscope_ops::argmax::{self, Argmax};
use gpuscope_ops::attention::{AttnScores, AttnValues};
use gpuscope_ops::rms_norm::RmsNorm;
use gpuscope_ops::rope::Rope;
use gpuscope_ops::silu_mul::SiluMul;
use gpuscope_ops::softmax::Softmax;
use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, GpuError, Graph, Section};
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};

use crate::common;

// ---------------------------------------------------------------------------------------
// Helpers

fn randn(rng: &mut StdRng, n: usize, mean: f32, std: f32) -> Vec<f32> {
    let d = Normal::new(mean, std).unwrap();
    (0..n).map(|_| d.sample(rng)).collect()
}

fn upload(gpu: &Gpu, label: &str, data: &[f32]) -> GpuBuffer {
    gpu.create_buffer_init(label, bytemuck::cast_slice(data))
        .unwrap()
}

fn download(gpu: &Gpu, buf: &GpuBuffer) -> Vec<f32> {
    bytemuck::cast_slice(&gpu.read_buffer(buf).unwrap()).to_vec()
}

/// The step buffer as the decoder fills it: `[pos, n_ctx = pos + 1, 0, 0]`.
fn step_buffer(gpu: &Gpu, pos: u32) -> GpuBuffer {
    let step = gpu
        .create_buffer("step", gpuscope_runtime::STEP_BUFFER_BYTES)
        .unwrap();
    set_step(gpu, &step, pos);
    step
}

fn set_step(gpu: &Gpu, step: &GpuBuffer, pos: u32) {
    gpu.write_buffer(step, 0, bytemuck::cast_slice(&[pos, pos + 1, 0, 0]));
}

fn run(gpu: &Gpu, d: Dispatch) {
    let graph = Graph {
        sections: vec![Section::new("test", None, vec![d])],
    };
    gpu.run_once(&graph).unwrap();
}

/// `|gpu - cpu| <= atol + rtol·|cpu|` everywhere; any NaN or Inf in `gpu` fails.
/// Reports the worst element, so a failure says where to look.
#[track_caller]
fn assert_close(what: &str, gpu: &[f32], cpu: &[f32], atol: f32, rtol: f32) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: length");
    if let Some(i) = gpu.iter().position(|v| !v.is_finite()) {
        panic!("{what}: GPU value {} at index {i} (CPU {})", gpu[i], cpu[i]);
    }
    let mut worst = (0usize, 0.0f32);
    for (i, (&g, &c)) in gpu.iter().zip(cpu).enumerate() {
        let excess = (g - c).abs() - (atol + rtol * c.abs());
        if excess > worst.1 {
            worst = (i, excess);
        }
    }
    let i = worst.0;
    assert!(
        worst.1 <= 0.0,
        "{what}: index {i}: GPU {} vs CPU {} (|diff| {:e} > {atol:e} + {rtol:e}·|cpu|)",
        gpu[i],
        cpu[i],
        (gpu[i] - cpu[i]).abs()
    );
}

fn max_abs(v: &[f32]) -> f32 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// Attention shapes: (n_heads, n_kv_heads, head_dim).
type Heads = (u32, u32, u32);
const SMOLLM2: Heads = (9, 3, 64);
const LLAMA8B: Heads = (32, 8, 128);
/// Multi-head (group 1) and the largest group the kernels take (8).
const MHA: Heads = (4, 4, 32);
const GROUP8: Heads = (8, 1, 64);

// ---------------------------------------------------------------------------------------
// CPU oracles against hand-computed values (run without a GPU)

#[test]
fn cpu_oracles_known_values() {
    let mut out = [0.0; 2];
    RmsNorm { n: 2, eps: 0.0 }.cpu(&[3.0, 4.0], &[1.0, 2.0], &mut out);
    // mean(x²) = 12.5
    assert!(
        (out[0] - 3.0 / 12.5f32.sqrt()).abs() < 1e-6
            && (out[1] - 8.0 / 12.5f32.sqrt()).abs() < 1e-6
    );

    // pos 1, pair 0 turns by exactly 1 rad; pair 1 (beyond rope_dims) stays.
    let rope = Rope {
        n_heads: 1,
        n_kv_heads: 1,
        head_dim: 4,
        rope_dims: 2,
        base: 10000.0,
        max_ctx: 2,
        neox: false,
        ring: false,
    };
    let mut q = [1.0, 0.0, 5.0, 6.0];
    let (mut kc, mut vc) = ([0.0; 8], [0.0; 8]);
    rope.cpu(
        1,
        &mut q,
        &[0.0, 1.0, 7.0, 8.0],
        &[1.0, 2.0, 3.0, 4.0],
        &mut kc,
        &mut vc,
    );
    assert_eq!(q, [1f32.cos(), 1f32.sin(), 5.0, 6.0]);
    assert_eq!(
        kc,
        [0.0, 0.0, 0.0, 0.0, -(1f32.sin()), 1f32.cos(), 7.0, 8.0]
    );
    assert_eq!(vc, [0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0]);

    let mut d = [1000.0, 1000.0, 7.0];
    Softmax {
        rows: 1,
        row_stride: 3,
    }
    .cpu(2, &mut d);
    assert_eq!(d, [0.5, 0.5, 7.0]);

    let am = Argmax { n: 5 };
    assert_eq!(am.cpu(&[f32::NAN, 1.0, 3.0, 3.0, f32::NAN]), 2);
    assert_eq!(am.cpu(&[f32::NAN; 5]), argmax::NONE);
    assert_eq!(am.cpu(&[f32::NEG_INFINITY; 5]), 0);

    let mut o = [0.0];
    SiluMul { n: 1 }.cpu(&[0.0], &[5.0], &mut o);
    assert_eq!(o, [0.0]);

    let (q, k) = (
        [1.0, 2.0, 3.0, 4.0],
        [1.0, 1.0, 1.0, 1.0, 0.5, 0.0, 0.0, 0.0],
    );
    let mut s = [9.0; 3];
    AttnScores {
        n_heads: 1,
        n_kv_heads: 1,
        head_dim: 4,
        max_ctx: 3,
    }
    .cpu(2, &q, &k, &mut s);
    assert_eq!(s, [5.0, 0.25, 9.0]);
    let mut out = [0.0; 4];
    AttnValues {
        n_heads: 1,
        n_kv_heads: 1,
        head_dim: 4,
        max_ctx: 3,
    }
    .cpu(2, &[0.5, 0.5, 9.0], &k, &mut out);
    assert_eq!(out, [0.75, 0.5, 0.5, 0.5]);
}

#[test]
fn costs_scale_with_context() {
    let s = AttnScores {
        n_heads: 32,
        n_kv_heads: 8,
        head_dim: 128,
        max_ctx: 4096,
    };
    // Recorded at build time for n_ctx = 1; the decoder replaces it per token.
    assert_eq!(s.cost(), s.cost_at(1));
    // The K rows dominate: 100 rows of 8 kv heads × 128 floats.
    assert!(s.cost_at(100).bytes - s.cost_at(99).bytes == 4 * (8 * 128 + 32));
    assert_eq!(s.cost_at(100).flops, 2 * 32 * 100 * 128);
    let v = AttnValues {
        n_heads: 32,
        n_kv_heads: 8,
        head_dim: 128,
        max_ctx: 4096,
    };
    assert_eq!(v.cost_at(100).flops, s.cost_at(100).flops);
    assert_eq!(Add { n: 10 }.cost().bytes, 120);
}

// ---------------------------------------------------------------------------------------
// rms_norm

#[test]
fn rms_norm_matches_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(1);
    // 1 and 1000 leave threads idle; 576 and 4096 are real hidden sizes; up to 2048
    // (8 per thread) the kernel loads everything before its reduction, past it loops.
    for (n, eps, scale) in [
        (1, 1e-5, 1.0),
        (576, 1e-5, 2.0),
        (1000, 1e-6, 0.05),
        (2048, 1e-6, 1.0),
        (2049, 1e-6, 1.0),
        (4096, 1e-5, 30.0),
    ] {
        let x = randn(&mut rng, n, 0.0, scale);
        let w = randn(&mut rng, n, 1.0, 0.3);
        let op = RmsNorm { n: n as u32, eps };
        let (xb, wb) = (upload(gpu, "x", &x), upload(gpu, "w", &w));
        let ob = gpu.create_buffer("out", 4 * n as u64).unwrap();
        run(gpu, op.dispatch(gpu, &xb, &wb, &ob).unwrap());
        let mut want = vec![0.0; n];
        op.cpu(&x, &w, &mut want);
        // Summation order differs (tree vs sequential) and inverseSqrt may be 2 ulp off.
        assert_close(
            &format!("rms_norm n={n}"),
            &download(gpu, &ob),
            &want,
            1e-6 * max_abs(&want),
            2e-5,
        );
    }
}

// ---------------------------------------------------------------------------------------
// rope

#[test]
fn rope_matches_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(2);
    let max_ctx = 128;
    let shapes = [
        (SMOLLM2, 64, 10000.0),
        (LLAMA8B, 128, 500000.0),
        // Partial rotation: dims 32..64 must come through untouched.
        ((4, 2, 64), 32, 10000.0),
    ];
    for ((n_heads, n_kv_heads, head_dim), rope_dims, base) in shapes {
        let op = Rope {
            n_heads,
            n_kv_heads,
            head_dim,
            rope_dims,
            base,
            max_ctx,
            neox: false,
            ring: false,
        };
        let nq = (n_heads * head_dim) as usize;
        let row = op.kv_row() as usize;
        for pos in [0, 1, 2, 17, 100] {
            let what = format!("rope {op:?} pos={pos}");
            let q = randn(&mut rng, nq, 0.0, 2.0);
            let k = randn(&mut rng, row, 0.0, 2.0);
            let v = randn(&mut rng, row, 0.0, 2.0);
            // Other cache rows hold earlier tokens: they must survive.
            let kc = randn(&mut rng, row * max_ctx as usize, 0.0, 1.0);
            let vc = randn(&mut rng, row * max_ctx as usize, 0.0, 1.0);
            let step = step_buffer(gpu, pos);
            let bufs = [
                ("q", &q),
                ("k", &k),
                ("v", &v),
                ("k_cache", &kc),
                ("v_cache", &vc),
            ]
            .map(|(l, d)| upload(gpu, l, d));
            let [qb, kb, vb, kcb, vcb] = &bufs;
            let d = op.dispatch(gpu, &step, qb, kb, vb, kcb, vcb).unwrap();
            assert_eq!(
                d.writes,
                vec![qb.id(), kcb.id(), vcb.id()],
                "{what}: writes"
            );
            run(gpu, d);

            let (mut wq, mut wkc, mut wvc) = (q.clone(), kc.clone(), vc.clone());
            op.cpu(pos, &mut wq, &k, &v, &mut wkc, &mut wvc);
            // See rope's module docs: the error grows with pos · freq; 1e-4 · |x| holds
            // for pos <= 100 with inputs of a few units.
            let gq = download(gpu, qb);
            assert_close(&format!("{what}: q"), &gq, &wq, 1e-4, 1e-4);
            assert_close(
                &format!("{what}: k_cache"),
                &download(gpu, kcb),
                &wkc,
                1e-4,
                1e-4,
            );
            // Copies are exact.
            assert_eq!(download(gpu, vcb), wvc, "{what}: v_cache");
            for h in 0..n_heads as usize {
                let tail = h * head_dim as usize + rope_dims as usize..(h + 1) * head_dim as usize;
                assert_eq!(
                    gq[tail.clone()],
                    q[tail],
                    "{what}: q dims beyond rope_dims changed"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// attention

/// Random cache of `max_ctx` rows whose rows `>= n_ctx` are NaN: reading one poisons
/// the result.
fn cache(rng: &mut StdRng, row: usize, max_ctx: usize, n_ctx: usize) -> Vec<f32> {
    let mut c = randn(rng, row * max_ctx, 0.0, 1.0);
    c[row * n_ctx..].fill(f32::NAN);
    c
}

/// (heads, max_ctx, the n_ctx values to try).
fn attention_cases() -> Vec<(Heads, u32, Vec<u32>)> {
    vec![
        (SMOLLM2, 128, vec![1, 2, 17, 100]),
        (LLAMA8B, 128, vec![1, 17, 100, 128]),
        (MHA, 64, vec![1, 2, 64]),
        (GROUP8, 64, vec![1, 17]),
        // 32 kv heads cap the scores grid at 32 blocks of 32 rows (head_dim 128), so
        // 1500 rows take the kernel's stride loop.
        ((32, 32, 128), 1536, vec![1500]),
    ]
}

#[test]
fn attn_scores_match_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(3);
    for ((n_heads, n_kv_heads, head_dim), max_ctx, n_ctxs) in attention_cases() {
        let op = AttnScores {
            n_heads,
            n_kv_heads,
            head_dim,
            max_ctx,
        };
        let row = (n_kv_heads * head_dim) as usize;
        for n_ctx in n_ctxs {
            let what = format!("attn_scores {op:?} n_ctx={n_ctx}");
            let q = randn(&mut rng, (n_heads * head_dim) as usize, 0.0, 1.0);
            let k = cache(&mut rng, row, max_ctx as usize, n_ctx as usize);
            // Entries t >= n_ctx must not be written.
            let scores = randn(&mut rng, (n_heads * max_ctx) as usize, 0.0, 1.0);
            let step = step_buffer(gpu, n_ctx - 1);
            let (qb, kb, sb) = (
                upload(gpu, "q", &q),
                upload(gpu, "k_cache", &k),
                upload(gpu, "scores", &scores),
            );
            run(gpu, op.dispatch(gpu, &step, &qb, &kb, &sb).unwrap());
            let mut want = scores.clone();
            op.cpu(n_ctx, &q, &k, &mut want);
            // Dots of head_dim products of unit-scale values: summation order differs.
            assert_close(&what, &download(gpu, &sb), &want, 1e-5, 1e-4);
        }
    }
}

#[test]
fn attn_values_match_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(4);
    for ((n_heads, n_kv_heads, head_dim), max_ctx, n_ctxs) in attention_cases() {
        let op = AttnValues {
            n_heads,
            n_kv_heads,
            head_dim,
            max_ctx,
        };
        let row = (n_kv_heads * head_dim) as usize;
        for n_ctx in n_ctxs {
            let what = format!("attn_values {op:?} n_ctx={n_ctx}");
            // Real probabilities over the first n_ctx entries; NaN beyond.
            let mut probs = randn(&mut rng, (n_heads * max_ctx) as usize, 0.0, 2.0);
            Softmax {
                rows: n_heads,
                row_stride: max_ctx,
            }
            .cpu(n_ctx, &mut probs);
            for h in 0..n_heads as usize {
                probs[h * max_ctx as usize + n_ctx as usize..(h + 1) * max_ctx as usize]
                    .fill(f32::NAN);
            }
            let v = cache(&mut rng, row, max_ctx as usize, n_ctx as usize);
            let out = randn(&mut rng, (n_heads * head_dim) as usize, 0.0, 1.0);
            let step = step_buffer(gpu, n_ctx - 1);
            let (pb, vb, ob) = (
                upload(gpu, "probs", &probs),
                upload(gpu, "v_cache", &v),
                upload(gpu, "out", &out),
            );
            run(gpu, op.dispatch(gpu, &step, &pb, &vb, &ob).unwrap());
            let mut want = vec![0.0; out.len()];
            op.cpu(n_ctx, &probs, &v, &mut want);
            assert_close(&what, &download(gpu, &ob), &want, 1e-5, 1e-4);
        }
    }
}

/// The three attention ops and the fused rope chained as the decoder runs them, over
/// several tokens with one set of dispatches: only the step buffer changes.
#[test]
fn attention_chain_over_tokens() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(5);
    let (n_heads, n_kv_heads, head_dim) = SMOLLM2;
    let max_ctx = 32;
    let rope = Rope {
        n_heads,
        n_kv_heads,
        head_dim,
        rope_dims: head_dim,
        base: 10000.0,
        max_ctx,
        neox: false,
        ring: false,
    };
    let scores = AttnScores {
        n_heads,
        n_kv_heads,
        head_dim,
        max_ctx,
    };
    let softmax = Softmax {
        rows: n_heads,
        row_stride: max_ctx,
    };
    let values = AttnValues {
        n_heads,
        n_kv_heads,
        head_dim,
        max_ctx,
    };
    let (nq, row) = ((n_heads * head_dim) as usize, rope.kv_row() as usize);
    let cache_len = row * max_ctx as usize;

    let step = step_buffer(gpu, 0);
    let [qb, kb, vb] = [("q", nq), ("k", row), ("v", row)]
        .map(|(l, n)| gpu.create_buffer(l, 4 * n as u64).unwrap());
    let [kcb, vcb] =
        ["k_cache", "v_cache"].map(|l| gpu.create_buffer(l, 4 * cache_len as u64).unwrap());
    let sb = gpu
        .create_buffer("scores", 4 * (n_heads * max_ctx) as u64)
        .unwrap();
    let ob = gpu.create_buffer("attn_out", 4 * nq as u64).unwrap();
    let graph = Graph {
        sections: vec![Section::new(
            "L0",
            Some(0),
            vec![
                rope.dispatch(gpu, &step, &qb, &kb, &vb, &kcb, &vcb)
                    .unwrap(),
                scores.dispatch(gpu, &step, &qb, &kcb, &sb).unwrap(),
                softmax.dispatch(gpu, &step, &sb).unwrap(),
                values.dispatch(gpu, &step, &sb, &vcb, &ob).unwrap(),
            ],
        )],
    };
    let (mut kc, mut vc) = (vec![0.0; cache_len], vec![0.0; cache_len]);
    for pos in 0..20u32 {
        let mut q = randn(&mut rng, nq, 0.0, 2.0);
        let k = randn(&mut rng, row, 0.0, 2.0);
        let v = randn(&mut rng, row, 0.0, 2.0);
        gpu.write_buffer(&qb, 0, bytemuck::cast_slice(&q));
        gpu.write_buffer(&kb, 0, bytemuck::cast_slice(&k));
        gpu.write_buffer(&vb, 0, bytemuck::cast_slice(&v));
        set_step(gpu, &step, pos);
        gpu.run_once(&graph).unwrap();

        rope.cpu(pos, &mut q, &k, &v, &mut kc, &mut vc);
        let mut s = vec![0.0; (n_heads * max_ctx) as usize];
        scores.cpu(pos + 1, &q, &kc, &mut s);
        softmax.cpu(pos + 1, &mut s);
        let mut want = vec![0.0; nq];
        values.cpu(pos + 1, &s, &vc, &mut want);
        assert_close(
            &format!("attention chain pos={pos}"),
            &download(gpu, &ob),
            &want,
            1e-4,
            1e-3,
        );
    }
}

// ---------------------------------------------------------------------------------------
// softmax

#[test]
fn softmax_matches_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(6);
    let cases: [(u32, u32, &[u32], f32); 6] = [
        (9, 128, &[1, 2, 17, 100], 0.0),
        (32, 128, &[1, 17, 100, 128], 0.0),
        // Logits far beyond exp's range: only exp(x - max) survives this.
        (9, 128, &[17, 100], 200.0),
        (1, 2048, &[1500], -50.0),
        // Rows longer than one pass of the workgroup's unrolled loop (2048).
        (2, 4096, &[3000, 4096], 0.0),
        // More rows than one grid dimension holds: the 2-D grid path.
        (70_000, 2, &[2], 0.0),
    ];
    for (rows, row_stride, n_ctxs, offset) in cases {
        let op = Softmax { rows, row_stride };
        for &n_ctx in n_ctxs {
            let what = format!("softmax {op:?} n_ctx={n_ctx} offset={offset}");
            let mut data = randn(&mut rng, (rows * row_stride) as usize, offset, 3.0);
            // Entries beyond n_ctx are huge: reading one would wreck the max.
            for r in 0..rows as usize {
                data[r * row_stride as usize + n_ctx as usize..(r + 1) * row_stride as usize]
                    .fill(1e30);
            }
            let step = step_buffer(gpu, n_ctx - 1);
            let db = upload(gpu, "scores", &data);
            run(gpu, op.dispatch(gpu, &step, &db).unwrap());
            let mut want = data.clone();
            op.cpu(n_ctx, &mut want);
            // exp may be a few ulp off, times the value's magnitude in ulp.
            assert_close(&what, &download(gpu, &db), &want, 1e-7, 1e-4);
        }
    }
}

// ---------------------------------------------------------------------------------------
// silu_mul, add

#[test]
fn silu_mul_matches_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(7);
    for n in [1usize, 1000, 1536, 14336] {
        let mut gate = randn(&mut rng, n, 0.0, 3.0);
        // Gates beyond exp's range must give -0 (very negative) and g·up (very positive).
        if n > 4 {
            gate[..4].copy_from_slice(&[-100.0, 100.0, -88.5, 0.0]);
        }
        let up = randn(&mut rng, n, 0.0, 1.0);
        let op = SiluMul { n: n as u32 };
        let (gb, ub) = (upload(gpu, "gate", &gate), upload(gpu, "up", &up));
        let ob = gpu.create_buffer("out", 4 * n as u64).unwrap();
        run(gpu, op.dispatch(gpu, &gb, &ub, &ob).unwrap());
        let mut want = vec![0.0; n];
        op.cpu(&gate, &up, &mut want);
        assert_close(
            &format!("silu_mul n={n}"),
            &download(gpu, &ob),
            &want,
            1e-7,
            1e-5,
        );
    }
}

#[test]
fn add_matches_cpu_exactly() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(8);
    for n in [1usize, 576, 4097, 70_000] {
        let acc = randn(&mut rng, n, 0.0, 5.0);
        let x = randn(&mut rng, n, 0.0, 1.0);
        let op = Add { n: n as u32 };
        let (ab, xb) = (upload(gpu, "acc", &acc), upload(gpu, "x", &x));
        let d = op.dispatch(gpu, &ab, &xb).unwrap();
        assert_eq!(
            (d.reads.clone(), d.writes.clone()),
            (vec![ab.id(), xb.id()], vec![ab.id()])
        );
        run(gpu, d);
        let mut want = acc.clone();
        op.cpu(&mut want, &x);
        // One IEEE add per element: bit-identical.
        assert_eq!(download(gpu, &ab), want, "add n={n}");
    }
}

// ---------------------------------------------------------------------------------------
// argmax

/// The one-workgroup argmax below `SPLIT_FROM` logits, the split one (partials, then
/// their merge) from it: both against the CPU oracle, and the split's partials against
/// theirs.
#[test]
fn argmax_matches_cpu() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(9);
    let out = gpu.create_buffer("token", 4).unwrap();
    let check = |what: &str, logits: &[f32], expect: Option<u32>| {
        let op = Argmax {
            n: logits.len() as u32,
        };
        let lb = upload(gpu, "logits", logits);
        let g = 4 * op.partials() as u64;
        let (values, indices) = (
            gpu.create_buffer("argmax_values", g).unwrap(),
            gpu.create_buffer("argmax_indices", g).unwrap(),
        );
        let parts = argmax::Partials {
            values: &values,
            indices: &indices,
        };
        // A stale value that no case expects.
        gpu.write_buffer(&out, 0, bytemuck::cast_slice(&[12345u32]));
        let ds = op.dispatches(gpu, &lb, Some(parts), &out).unwrap();
        assert_eq!(ds.len(), if op.splits() { 2 } else { 1 }, "{what}");
        common::run(gpu, ds);
        let got: u32 = bytemuck::cast_slice(&gpu.read_buffer(&out).unwrap())[0];
        let want = op.cpu(logits);
        if let Some(e) = expect {
            assert_eq!(want, e, "{what}: CPU oracle");
        }
        assert_eq!(got, want, "{what}: GPU vs CPU (n={})", logits.len());
        if op.splits() {
            let (want_v, want_i) = op.cpu_partials(logits);
            let got_i: Vec<u32> =
                bytemuck::cast_slice(&gpu.read_buffer(&indices).unwrap()).to_vec();
            let got_v: Vec<f32> = bytemuck::cast_slice(&gpu.read_buffer(&values).unwrap()).to_vec();
            assert_eq!(got_i, want_i, "{what}: partial indices");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got_v), bits(&want_v), "{what}: partial values");
            assert_eq!(
                Argmax::cpu_merge(&want_v, &want_i),
                want,
                "{what}: merge oracle"
            );
        }
    };
    assert!(!Argmax { n: 1000 }.splits() && Argmax { n: 49152 }.splits());
    for n in [
        1usize, 1000, 16383, 16384, 49152, 128256, 262144, 262145, 600_000,
    ] {
        let logits = randn(&mut rng, n, 0.0, 3.0);
        check(&format!("random n={n}"), &logits, None);
        // The max in the last element.
        let mut l = logits.clone();
        l[n - 1] = 100.0;
        check(&format!("last n={n}"), &l, Some(n as u32 - 1));
        // The max in the first element.
        let mut l = logits.clone();
        l[0] = 100.0;
        check(&format!("first n={n}"), &l, Some(0));
    }
    let n = 49152;
    let logits = randn(&mut rng, n, 0.0, 3.0);
    // Ties: the smallest index wins, whether the tied entries fall to one thread
    // (stride 256 apart) or to different ones.
    let mut l = logits.clone();
    for i in [40000, 777, 777 + 256, 3] {
        l[i] = 50.0;
    }
    check("ties", &l, Some(3));
    let mut l = logits.clone();
    for i in [n - 1, n - 257, 5000] {
        l[i] = 50.0;
    }
    check("ties near the end", &l, Some(5000));
    // NaN never wins, wherever it is.
    let mut l = logits.clone();
    l[0] = f32::NAN;
    l[n - 1] = f32::NAN;
    l[100] = 60.0;
    l[300] = f32::NAN;
    check("NaN", &l, Some(100));
    check("all NaN", &vec![f32::NAN; 1000], Some(argmax::NONE));
    // Split: whole chunks of NaN, ties across chunks, all NaN.
    let mut l = logits.clone();
    l[..4096].fill(f32::NAN);
    l[2048 * 7 + 5] = 70.0;
    l[2048 * 3 + 100] = 70.0;
    check(
        "split: NaN chunks, a tie across chunks",
        &l,
        Some(2048 * 3 + 100),
    );
    check("split: all NaN", &vec![f32::NAN; 20000], Some(argmax::NONE));
    check("split: all -inf", &vec![f32::NEG_INFINITY; 20000], Some(0));
    check("all -inf", &vec![f32::NEG_INFINITY; 1000], Some(0));
    check("all equal", &vec![1.5; 1000], Some(0));
    let mut l = vec![f32::NAN; 1000];
    l[999] = f32::NEG_INFINITY;
    check("one -inf among NaN", &l, Some(999));
}

// ---------------------------------------------------------------------------------------
// Errors instead of wrong numbers

#[test]
fn bad_shapes_and_short_buffers_are_errors() {
    let Some(gpu) = common::gpu() else { return };
    let small = gpu.create_buffer("small", 16).unwrap();
    let big = gpu.create_buffer("big", 1 << 16).unwrap();
    let step = step_buffer(gpu, 0);
    let err = RmsNorm { n: 576, eps: 1e-5 }
        .dispatch(gpu, &small, &big, &big)
        .unwrap_err();
    assert!(
        matches!(&err, GpuError::Invalid(m) if m.contains("\"small\"")),
        "{err}"
    );
    // 16 heads over 1 kv head is a group of 16: more than the kernels hold.
    let err = AttnScores {
        n_heads: 16,
        n_kv_heads: 1,
        head_dim: 64,
        max_ctx: 8,
    }
    .dispatch(gpu, &step, &big, &big, &big)
    .unwrap_err();
    assert!(matches!(err, GpuError::Invalid(_)), "{err}");
    let err = Add { n: 4 }.dispatch(gpu, &small, &small).unwrap_err();
    assert!(matches!(err, GpuError::Invalid(_)), "{err}");
    let err = Rope {
        n_heads: 1,
        n_kv_heads: 1,
        head_dim: 64,
        rope_dims: 65,
        base: 1e4,
        max_ctx: 1,
        neox: false,
        ring: false,
    }
    .dispatch(gpu, &step, &big, &big, &big, &big, &big)
    .unwrap_err();
    assert!(matches!(err, GpuError::Invalid(_)), "{err}");
}

#[test]
fn rope_qkv_matches_rope_on_separate_buffers() {
    // The fused form reads q, k, v from one buffer (a fused q/k/v gemv's output) at
    // element offsets, with a gap before k as alignment padding may leave.
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(21);
    let (n_heads, n_kv_heads, head_dim) = SMOLLM2;
    let max_ctx = 32;
    let op = Rope {
        n_heads,
        n_kv_heads,
        head_dim,
        rope_dims: head_dim,
        base: 100000.0,
        max_ctx,
        neox: false,
        ring: false,
    };
    let nq = (n_heads * head_dim) as usize;
    let row = op.kv_row() as usize;
    let (q_off, k_off) = (0usize, nq + 64);
    let v_off = k_off + row;
    let mut qkv = randn(&mut rng, v_off + row, 0.0, 2.0);
    let pos = 9;
    let kc = randn(&mut rng, row * max_ctx as usize, 0.0, 1.0);
    let vc = randn(&mut rng, row * max_ctx as usize, 0.0, 1.0);
    let step = step_buffer(gpu, pos);
    let qkv_b = upload(gpu, "qkv", &qkv);
    let (kcb, vcb) = (upload(gpu, "k_cache", &kc), upload(gpu, "v_cache", &vc));
    let d = op
        .dispatch_qkv(
            gpu,
            &step,
            &qkv_b,
            (q_off as u32, k_off as u32, v_off as u32),
            &kcb,
            &vcb,
        )
        .unwrap();
    run(gpu, d);
    let (mut wkc, mut wvc) = (kc.clone(), vc.clone());
    let (k, v) = (
        qkv[k_off..k_off + row].to_vec(),
        qkv[v_off..v_off + row].to_vec(),
    );
    op.cpu(pos, &mut qkv[q_off..q_off + nq], &k, &v, &mut wkc, &mut wvc);
    let got = download(gpu, &qkv_b);
    assert_close("rope_qkv: q", &got[..nq], &qkv[..nq], 1e-4, 1e-4);
    assert_eq!(
        got[nq..],
        qkv[nq..],
        "rope_qkv must not touch k, v or the gap"
    );
    assert_close("rope_qkv: k_cache", &download(gpu, &kcb), &wkc, 1e-4, 1e-4);
    assert_eq!(download(gpu, &vcb), wvc, "rope_qkv: v_cache");
}

/// Every fused attention variant this adapter runs against the three-op oracle:
/// `workgroup` (n_ctx past 256 takes its chunked online-softmax path), `subgroup` (lanes
/// over head dims), `groups` (groups of lanes over positions), `split` (split-K partials merged by a second dispatch; at a max_ctx of
/// 600 the chunks are 128 positions, 5 splits, the last partly filled, and n_ctx 257
/// leaves the last two empty; 300 gives 64-position chunks, 64 the smallest, 32). Rows
/// past n_ctx hold NaN (a read of one poisons the head).
#[test]
fn fused_attention_variants_match_the_three_op_oracle() {
    use gpuscope_ops::attention::{AttnFused, AttnVariant};
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(32);
    let cases: Vec<(Heads, u32, Vec<u32>)> = vec![
        (SMOLLM2, 600, vec![1, 2, 17, 256, 257, 600]),
        (LLAMA8B, 300, vec![1, 100, 300]),
        (MHA, 64, vec![1, 3, 64]),
        // Lavapipe runs `groups` only at head_dim 32 (8-lane subgroups): several steps of
        // every group, a last step partly past n_ctx, and 37 positions over 10 groups.
        (MHA, 1200, vec![2, 37, 513, 1200]),
        (GROUP8, 64, vec![5]),
        // Two query heads per KV head (the subgroup kernel's HPW = 2).
        ((6, 3, 64), 64, vec![1, 40]),
        // Gemma 3 270M's heads of 256: four threads per key row (64 positions a chunk),
        // a chunk partly filled, several chunks.
        ((4, 1, 256), 300, vec![1, 65, 300]),
    ];
    for variant in AttnVariant::ALL {
        for ((n_heads, n_kv_heads, head_dim), max_ctx, n_ctxs) in cases.clone() {
            let op = AttnFused {
                n_heads,
                n_kv_heads,
                head_dim,
                max_ctx,
            };
            if let Err(why) = variant.supported(gpu, &op) {
                eprintln!("skipping attention {} for {op:?}: {why}", variant.name());
                continue;
            }
            if variant == AttnVariant::Split {
                // Each case's context spreads over several workgroups per head.
                let want = (max_ctx / 8).next_power_of_two().max(32);
                assert_eq!(op.split_chunk(), want, "{op:?}");
                assert!(op.splits() >= 2, "{op:?}");
            }
            let row = (n_kv_heads * head_dim) as usize;
            for n_ctx in n_ctxs {
                let what = format!("{op:?} {} n_ctx={n_ctx}", variant.name());
                let q = randn(&mut rng, (n_heads * head_dim) as usize, 0.0, 1.0);
                let kc = cache(&mut rng, row, max_ctx as usize, n_ctx as usize)
                    .iter()
                    .map(|v| v * 3.0)
                    .collect::<Vec<_>>();
                let vc = cache(&mut rng, row, max_ctx as usize, n_ctx as usize);
                let step = step_buffer(gpu, n_ctx - 1);
                let (qb, kb, vb) = (
                    upload(gpu, "q", &q),
                    upload(gpu, "k_cache", &kc),
                    upload(gpu, "v_cache", &vc),
                );
                let out = upload(gpu, "out", &vec![f32::NAN; q.len()]);
                let scratch = gpu
                    .create_buffer("scratch", op.split_scratch_bytes())
                    .unwrap();
                let ds = op
                    .dispatch_variant(gpu, variant, [&step, &qb, &kb, &vb, &out], Some(&scratch))
                    .unwrap();
                assert_eq!(ds.len(), if variant == AttnVariant::Split { 2 } else { 1 });
                common::run(gpu, ds);
                let mut want = vec![0f32; q.len()];
                op.cpu(n_ctx, &q, &kc, &vc, &mut want);
                assert_close(&what, &download(gpu, &out), &want, 1e-5, 1e-4);
                // The subgroup kernel's other K/V form: vec4<f32> loads where the variant
                // takes vec4<u64> ones (lavapipe), and vec4<u64> where it could.
                if variant == AttnVariant::Subgroup {
                    let wide = op.subgroup_wide(gpu);
                    let vpl = head_dim / 4 / gpu.adapter_info().subgroup_min_size;
                    let int64 = gpu
                        .features()
                        .contains(gpuscope_runtime::wgpu::Features::SHADER_INT64);
                    if wide || (int64 && matches!(vpl, 2 | 4)) {
                        let out2 = upload(gpu, "out", &vec![f32::NAN; q.len()]);
                        let d = op
                            .dispatch_subgroup(gpu, !wide, [&step, &qb, &kb, &vb, &out2])
                            .unwrap();
                        assert_eq!(d.pipeline.shader().ends_with(".wide"), !wide);
                        common::run(gpu, vec![d]);
                        let what = format!("{what} (the other K/V form)");
                        assert_close(&what, &download(gpu, &out2), &want, 1e-5, 1e-4);
                    }
                }
            }
        }
    }
}
