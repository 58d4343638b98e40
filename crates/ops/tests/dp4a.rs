//! The `dp4a` gemv (int8 activations, integer dot products): against its oracle (the gemv
//! over x quantized by `q8_blocks`) at the decoder's shapes, every lane count and rows per
//! lane, a partial last workgroup; near the float gemv (the quantization error of x is
//! small, not a wrong kernel); and refusals for what it has no kernel for.

use gpuscope_ops::gemv::{
    q8_blocks, q8_blocks_following, rounds_activations, Gemv, GemvTuning, GemvVariant, WeightLayout,
};
use gpuscope_ops::quant::WeightFormat;

use crate::common::{self, f32_bytes, read_f32, run};
use crate::quant_gemv_embedding::GemvCase;

/// Every format dp4a has a kernel for (packed q4_0 / q4_1 / q8_0, GGUF q5_0 / q5_1 /
/// q4_K / q5_K).
const FORMATS: [WeightFormat; 7] = [
    WeightFormat::Q4_0,
    WeightFormat::Q4_1,
    WeightFormat::Q8_0,
    WeightFormat::Q5_0,
    WeightFormat::Q5_1,
    WeightFormat::Q4_K,
    WeightFormat::Q5_K,
];

/// The layout dp4a reads `format` in.
fn layout(format: WeightFormat) -> WeightLayout {
    GemvVariant::Dp4a.layout_for(format).expect("a dp4a format")
}

/// Whether this adapter runs dp4a; on lavapipe (subgroups of 8 with AVX2) it must.
fn dp4a(gpu: &gpuscope_runtime::Gpu) -> bool {
    match GemvVariant::Dp4a.supported(gpu) {
        Ok(()) => true,
        Err(why) => {
            assert!(
                !gpu.adapter_info().name.contains("llvmpipe") || std::env::var_os("CI").is_none(),
                "lavapipe in CI must run dp4a: {why}"
            );
            eprintln!("SKIPPED: {why}");
            false
        }
    }
}

#[test]
fn q8_blocks_quantizes_each_block_to_127_steps_of_its_max() {
    let x: Vec<f32> = (0..64).map(|i| (i as f32 - 20.0) * 0.37).collect();
    let q = q8_blocks(&x);
    for (b, (xs, qs)) in x.chunks(32).zip(q.chunks(32)).enumerate() {
        let amax = xs.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        for (&v, &h) in xs.iter().zip(qs) {
            assert!(
                (v - h).abs() <= d * 0.5 * 1.0001,
                "block {b}: {v} -> {h} (d {d})"
            );
            let steps = h / d;
            assert!(
                (steps - steps.round()).abs() < 1e-3,
                "{h} is not a multiple of {d}"
            );
        }
        // The largest element is exact.
        let i = xs.iter().position(|v| v.abs() == amax).unwrap();
        assert!((qs[i] - xs[i]).abs() <= amax * 1e-6);
    }
    assert_eq!(q8_blocks(&[0.0; 32]), vec![0.0; 32]);
}

/// The chained reference's int8 rounding follows the GPU's where the GPU's quant is a
/// neighbouring step of its own x / d, and only there.
#[test]
fn q8_blocks_following_takes_a_neighbouring_step_and_nothing_further() {
    let mut x = vec![0.0f32; 32];
    x[0] = 127.0; // d = 1
    x[1] = 10.49; // rounds to 10
    x[2] = -3.2; // rounds to -3
    x[3] = 5.0;
    let mut gpu = x.clone();
    gpu[1] = 10.51; // the GPU's x a little apart: it rounds to 11, a neighbour of 10.49
    gpu[2] = -5.0; // -5 is two steps from -3.2: not followed
    gpu[3] = 5.0000005;
    let followed = q8_blocks_following(&x, &gpu);
    assert_eq!(followed[1], 11.0, "a neighbouring step is followed");
    assert_eq!(followed[2], -3.0, "a step two away is not");
    assert_eq!(followed[3], 5.0);
    assert_eq!(&followed[..1], &q8_blocks(&x)[..1]);
    // With the GPU's x equal to its own, it is q8_blocks.
    assert_eq!(q8_blocks_following(&x, &x), q8_blocks(&x));
    // Each block keeps its own scale: the second block's max is 0.5.
    let mut two = x.clone();
    two.extend((0..32).map(|i| if i == 0 { 0.5 } else { 0.0 }));
    let mut gpu2 = gpu.clone();
    gpu2.extend(std::iter::repeat_n(0.0, 32));
    gpu2[32] = 0.5;
    assert_eq!(q8_blocks_following(&two, &gpu2)[32], 0.5);
}

#[test]
fn dp4a_matches_its_oracle_at_decoder_shapes_and_every_tuning() {
    let Some(gpu) = common::gpu() else { return };
    if !dp4a(gpu) {
        return;
    }
    let mut rng = common::rng(400);
    for format in FORMATS {
        // The frame (lanes, rows per lane, split rows, wide workgroups) is the same for
        // every format: the first three take every shape and tuning; the others, whose own
        // code is only load_block and block_idot, a partial workgroup and a wide split
        // row set (each shape and tuning is a pipeline LLVM compiles on lavapipe).
        let every = FORMATS[..3].contains(&format);
        // SmolLM2's widths and rows, a partial workgroup, Llama-8B's 4096 and 14336 (the
        // K formats at the widths of whole super-blocks).
        for (rows, cols) in [
            (1u32, 32u32),
            (37, 96),
            (960, 576),
            (37, 256),
            (70, 1536),
            (33, 4096),
            (9, 14336),
        ] {
            let few = matches!((rows, cols), (37, 96) | (37, 256) | (33, 4096));
            if !cols.is_multiple_of(format.block_elems()) || !(every || few) {
                continue;
            }
            let mut case = GemvCase::new(&mut rng, format, rows, cols);
            case.gemv.layout = layout(format);
            case.check(gpu, Some(case.gemv.tuning(GemvVariant::Dp4a, gpu)));
        }
        let cols = if format.block_elems() == 256 {
            512
        } else {
            160
        };
        let mut case = GemvCase::new(&mut rng, format, 37, cols);
        case.gemv.layout = layout(format);
        let max = GemvVariant::Dp4a.max_threads_per_row(gpu);
        let tunings = common::tunings(GemvVariant::Dp4a, max);
        // The others: the first and the last pair (one lane, one row; the most lanes).
        let ends = [tunings[0], tunings[tunings.len() - 1]];
        for &tuning in if every { &tunings[..] } else { &ends[..] } {
            case.check(gpu, Some(tuning));
        }
    }
}

/// The dp4a result against the float gemv over the same weights: NMSE of the order of the
/// quantization noise of x (~1e-5 for these activations), far below a wrong kernel's ~1.
#[test]
fn dp4a_stays_near_the_float_gemv() {
    let Some(gpu) = common::gpu() else { return };
    if !dp4a(gpu) {
        return;
    }
    let mut rng = common::rng(401);
    for format in FORMATS {
        let (rows, cols) = (64u32, 2048u32);
        let case = GemvCase::new(&mut rng, format, rows, cols);
        let g = Gemv {
            layout: layout(format),
            ..case.gemv
        };
        let stored = g.layout.pack(format, &case.w);
        let wb = gpu.create_buffer_init("w", &stored).unwrap();
        let xb = gpu.create_buffer_init("x", &f32_bytes(&case.x)).unwrap();
        let yb = gpu.create_buffer("y", u64::from(rows) * 4).unwrap();
        let t = g.tuning(GemvVariant::Dp4a, gpu);
        let d = g.dispatch_with(gpu, &wb, &xb, &yb, t).unwrap();
        // `check` widens its chained limits by this name (int8 activations).
        assert!(
            rounds_activations(d.pipeline.shader()),
            "{}",
            d.pipeline.shader()
        );
        let float = g
            .dispatch_with(gpu, &wb, &xb, &yb, g.tuning(GemvVariant::Shared, gpu))
            .unwrap();
        assert!(!rounds_activations(float.pipeline.shader()));
        run(gpu, vec![d]);
        let got = read_f32(gpu, &yb);
        let mut exact = vec![0.0f64; rows as usize];
        let x64: Vec<f64> = case.x.iter().map(|&v| v as f64).collect();
        g.cpu(&stored, &x64, &mut exact);
        let err: f64 = got
            .iter()
            .zip(&exact)
            .map(|(&a, &b)| (a as f64 - b).powi(2))
            .sum();
        let norm: f64 = exact.iter().map(|b| b * b).sum();
        let nmse = err / norm;
        assert!(
            nmse > 0.0,
            "{format:?}: dp4a equals the float gemv bit for bit: was x quantized?"
        );
        assert!(
            nmse < 1e-3,
            "{format:?}: NMSE {nmse:e} against the float gemv"
        );
    }
}

#[test]
fn dp4a_refuses_formats_and_layouts_it_has_no_kernel_for() {
    let Some(gpu) = common::gpu() else { return };
    if !dp4a(gpu) {
        return;
    }
    for (format, layout) in [
        (WeightFormat::Q4_0, WeightLayout::Gguf),
        (WeightFormat::Q8_0, WeightLayout::Gguf),
        (WeightFormat::F16, WeightLayout::Gguf),
        (WeightFormat::Q6_K, WeightLayout::Gguf),
    ] {
        let g = Gemv {
            rows: 4,
            cols: 256,
            format,
            out_offset: 0,
            layout,
        };
        let b = gpu.create_buffer("b", 1 << 16).unwrap();
        let t = GemvTuning {
            variant: GemvVariant::Dp4a,
            threads_per_row: 4,
            rows_per_thread: 1,
        };
        let err = g.dispatch_with(gpu, &b, &b, &b, t).unwrap_err().to_string();
        assert!(
            err.contains("no kernel for"),
            "{format:?} {layout:?}: {err}"
        );
        assert!(!GemvVariant::Dp4a.runs(format, layout));
    }
}
