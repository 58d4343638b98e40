//! gemv variants (`shared`, `subgroup`, `rows`, `blocks`; GGUF and packed weight layouts) and fused forms (rms_norm folded in; rope +
//! KV-cache store, silu·mul or residual add as the epilogue) against their CPU oracles, for
//! every weight format over awkward shapes: one row, row counts that leave a workgroup
//! partly past the end, widths of one block and odd widths where the format allows.

use gpuscope_ops::gemv::{
    Gemv, GemvBuffers, GemvEpilogue, GemvFused, GemvTuning, GemvVariant, Partials, PostNorm,
    WeightLayout, MAX_ROWS_PER_THREAD,
};
use gpuscope_ops::quant::WeightFormat;
use gpuscope_ops::rms_norm::RmsNorm;
use gpuscope_ops::rope::Rope;
use gpuscope_runtime::Gpu;

use crate::common::{self, activations, f32_bytes, read_f32, run, weights};
use crate::quant_gemv_embedding::{abs_dots, rel_tol, GemvCase};

/// The variants this adapter can run.
fn variants(gpu: &Gpu) -> Vec<GemvVariant> {
    GemvVariant::ALL
        .into_iter()
        .filter(|v| v.supported(gpu).is_ok())
        .collect()
}

/// Those of them with a kernel for `format` in `layout`.
fn variants_for(gpu: &Gpu, format: WeightFormat, layout: WeightLayout) -> Vec<GemvVariant> {
    variants(gpu)
        .into_iter()
        .filter(|v| v.runs(format, layout))
        .collect()
}

/// Widths to test per format: one block, a few blocks, SmolLM2's 576 (K formats: their
/// 256-element super-blocks), and for the float formats odd widths.
fn widths(format: WeightFormat) -> Vec<u32> {
    match format.block_elems() {
        256 => vec![256, 768],
        32 => vec![32, 576],
        _ => vec![32, 576, 33, 1],
    }
}

#[test]
fn every_variant_matches_the_oracle_for_every_format() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(300);
    for variant in variants(gpu) {
        for format in WeightFormat::ALL {
            if !variant.runs(format, WeightLayout::Gguf) {
                continue;
            }
            for (cols, rows) in common::each_choice(&widths(format), &[1, 13, 70]) {
                let case = GemvCase::new(&mut rng, format, rows, cols);
                let tuning = case.gemv.tuning(variant, gpu);
                assert_eq!(tuning.variant, variant);
                case.check(gpu, Some(tuning));
            }
        }
    }
}

/// `rows` with every rows-per-lane and `subgroup` with every lane count up to the
/// subgroup size and every rows-per-lane (each at least once), on 37 rows (the last workgroup is partly past the end).
#[test]
fn rows_and_subgroup_every_tuning() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(301);
    let vs = variants(gpu);
    for format in [
        WeightFormat::Q4_1,
        WeightFormat::Q5_0,
        WeightFormat::Q5_1,
        WeightFormat::Q4_K,
        WeightFormat::Q5_K,
        WeightFormat::Q6_K,
        WeightFormat::F16,
    ] {
        let cols = if format.block_elems() == 256 { 512 } else { 96 };
        let case = GemvCase::new(&mut rng, format, 37, cols);
        let rows_per_thread: Vec<u32> = (1..=MAX_ROWS_PER_THREAD).collect();
        if vs.contains(&GemvVariant::Rows) {
            for &rows_per_thread in &rows_per_thread {
                case.check(
                    gpu,
                    Some(GemvTuning {
                        variant: GemvVariant::Rows,
                        threads_per_row: 1,
                        rows_per_thread,
                    }),
                );
            }
        }
        if vs.contains(&GemvVariant::Subgroup) {
            let max = gpu.adapter_info().subgroup_min_size;
            for tuning in common::tunings(GemvVariant::Subgroup, max) {
                case.check(gpu, Some(tuning));
            }
        }
    }
}

/// The formats with a packed layout.
const PACKABLE: [WeightFormat; 3] = [WeightFormat::Q4_0, WeightFormat::Q4_1, WeightFormat::Q8_0];

/// Packed weights (quants then scales) through every variant: one row, a partial last
/// workgroup, one block and 18 blocks per row; and `blocks` with every lane count its
/// reduction allows and every rows-per-lane.
#[test]
fn packed_layout_every_variant_matches_the_oracle() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(302);
    for format in PACKABLE {
        for (cols, rows) in common::each_choice(&[32, 576], &[1, 13, 70]) {
            let mut case = GemvCase::new(&mut rng, format, rows, cols);
            case.gemv.layout = WeightLayout::Packed;
            for variant in variants_for(gpu, format, WeightLayout::Packed) {
                case.check(gpu, Some(case.gemv.tuning(variant, gpu)));
            }
        }
        let mut case = GemvCase::new(&mut rng, format, 37, 96);
        for layout in WeightLayout::ALL {
            case.gemv.layout = layout;
            let max = GemvVariant::Blocks.max_threads_per_row(gpu);
            for rows_per_thread in 1..=MAX_ROWS_PER_THREAD {
                let mut tpr = 1;
                while tpr <= max {
                    let t = case.gemv.tuning_with(
                        GemvVariant::Blocks,
                        Some((tpr, rows_per_thread)),
                        gpu,
                    );
                    assert_eq!(
                        (t.threads_per_row, t.rows_per_thread),
                        (tpr, rows_per_thread)
                    );
                    case.check(gpu, Some(t));
                    tpr *= 4;
                }
            }
        }
    }
}

/// The fused forms over a packed `rows × cols` matrix, each with its y length: rms_norm
/// with the residual add (21 rows at offset 2), rope with the KV stores (40 rows, the
/// q | k | v of `ROPE_3X1`), silu·mul (13 gate / up pairs, up from row 16).
fn packed_fused_ops(format: WeightFormat, cols: u32) -> [(GemvFused, usize); 3] {
    let packed = |rows, out_offset| Gemv {
        layout: WeightLayout::Packed,
        ..matrix(format, rows, cols, out_offset)
    };
    [
        (
            GemvFused {
                gemv: packed(21, 2),
                norm: Some(1e-5),
                post_norm: None,
                partials: 0,
                epilogue: GemvEpilogue::Accumulate,
            },
            26,
        ),
        (
            GemvFused {
                gemv: packed(40, 0),
                norm: Some(1e-5),
                post_norm: None,
                partials: 0,
                epilogue: GemvEpilogue::RopeKv(ROPE_3X1),
            },
            24,
        ),
        (
            GemvFused {
                gemv: packed(29, 0),
                norm: None,
                post_norm: None,
                partials: 0,
                epilogue: GemvEpilogue::SiluMul { n: 13, up_row: 16 },
            },
            16,
        ),
    ]
}

/// Three query heads and one KV head of 8 dims (q | k | v: 40 rows).
const ROPE_3X1: Rope = Rope {
    n_heads: 3,
    n_kv_heads: 1,
    head_dim: 8,
    rope_dims: 6,
    base: 10000.0,
    max_ctx: 5,
    neox: false,
    ring: false,
};

/// The `rows` frame over 32-byte loads (`.wide` shaders: packed q4_0 / q4_1 / q8_0 on
/// adapters with SHADER_INT64 and subgroups of its 8 lanes, for rows of an even number of
/// blocks) against the oracle: every fused form and rows-per-lane, partial last
/// workgroups, one and nine block pairs per row; rows of an odd number of blocks keep the
/// 4-byte frame. On lavapipe (CI) the wide frame must be the one that runs.
#[test]
fn wide_rows_frame_matches_the_oracle() {
    let Some(gpu) = common::gpu() else { return };
    let info = gpu.adapter_info();
    let wide_offered = gpu.features().contains(
        gpuscope_runtime::wgpu::Features::SHADER_INT64 | gpuscope_runtime::wgpu::Features::SUBGROUP,
    ) && info.subgroup_min_size == gpuscope_ops::gemv::ROWS_WORKGROUP_SIZE
        && info.subgroup_max_size == gpuscope_ops::gemv::ROWS_WORKGROUP_SIZE;
    if info.device_type == gpuscope_runtime::wgpu::DeviceType::Cpu && info.name.contains("llvmpipe")
    {
        assert!(
            wide_offered,
            "lavapipe offers SHADER_INT64 and 8-lane subgroups"
        );
    }
    let mut rng = common::rng(316);
    for format in PACKABLE {
        for cols in [64, 576, 96] {
            let plain = GemvFused::plain(Gemv {
                layout: WeightLayout::Packed,
                ..matrix(format, 37, cols, 0)
            });
            let mut ops = vec![(plain, 37)];
            ops.extend(packed_fused_ops(format, cols));
            for (op, y_len) in ops {
                let case = FusedCase::new(&mut rng, op);
                for rows_per_thread in 1..=MAX_ROWS_PER_THREAD {
                    let tuning = GemvTuning {
                        variant: GemvVariant::Rows,
                        threads_per_row: 1,
                        rows_per_thread,
                    };
                    if op.fit_tuning(tuning) != tuning {
                        continue; // the pair epilogues take whole pairs per lane
                    }
                    let shader = case.check_tuned(gpu, tuning, y_len, 3);
                    assert_eq!(
                        shader.ends_with(".wide"),
                        wide_offered && cols % 64 == 0,
                        "{shader} ({cols} columns)"
                    );
                }
            }
        }
    }
}

/// The dp4a frame's epilogue hooks (`epilogue_dp4a_*.wgsl`: the residual add's rows and
/// rope's position and angles computed before the dot products) at every rows-per-lane
/// and lane count: the accumulate's prefetch of 1 to 4 rows (clamped at the last row),
/// rope's second pair (4 rows a lane), the pair past the rope dimensions and the v rows
/// (left as they are), at two positions; with 64 and 4096 columns (the wide workgroups).
#[test]
fn dp4a_epilogue_hooks_match_the_oracle_at_every_spread() {
    let Some(gpu) = common::gpu() else { return };
    if GemvVariant::Dp4a.supported(gpu).is_err() {
        return;
    }
    let mut rng = common::rng(318);
    for format in PACKABLE {
        for cols in [64, 4096] {
            for (op, y_len) in packed_fused_ops(format, cols) {
                let case = FusedCase::new(&mut rng, op);
                let rows_per_thread: Vec<u32> = (1..=MAX_ROWS_PER_THREAD).collect();
                for (threads_per_row, rows_per_thread) in
                    common::each_choice(&[4, 8], &rows_per_thread)
                {
                    let tuning = op.fit_tuning(GemvTuning {
                        variant: GemvVariant::Dp4a,
                        threads_per_row,
                        rows_per_thread,
                    });
                    // (The pair epilogues take whole pairs per lane: fit_tuning rounds.)
                    for pos in [0, 3] {
                        let shader = case.check_tuned(gpu, tuning, y_len, pos);
                        assert!(shader.contains(".dp4a."), "{shader}");
                    }
                }
            }
        }
    }
}

/// The fused forms over packed weights: rms_norm with the residual add, rope with the KV
/// stores, silu·mul, every variant.
#[test]
fn packed_layout_fused_forms_match_the_oracle() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(314);
    // 4096 and 8192 columns: dp4a's wide workgroups, its rows split over two row groups
    // (`Gemv::dp4a_split`), 1024 threads at 8192 where the adapter allows them.
    for (variant, cols) in variants(gpu)
        .into_iter()
        .flat_map(|v| [(v, 64), (v, 4096), (v, 8192)])
    {
        for format in PACKABLE {
            let ops = packed_fused_ops(format, cols);
            for (op, y_len) in ops {
                FusedCase::new(&mut rng, op).check(gpu, variant, y_len, 3);
            }
        }
    }
}

/// A post norm folded into the dp4a frame (Gemma 3's post-attention and post-FFN norms
/// before the next gemv): x_out = x + rms_norm(d) ∘ pw, and the gemv with its own norm on
/// x_out, for every dp4a format, with the store, gelu·mul and rope epilogues, at 640
/// columns (Gemma 3 270M: x not a whole number of phase-1 steps; 768 for the K-quants)
/// and 4096 (the wide workgroups, rows split over two row groups).
#[test]
fn post_norm_folded_into_dp4a_matches_rms_norm_add_then_the_gemv() {
    let Some(gpu) = common::gpu() else { return };
    if GemvVariant::Dp4a.supported(gpu).is_err() {
        panic!("this adapter has no dp4a frame: the folded post norm is untested");
    }
    let mut rng = common::rng(316);
    let rope = Rope {
        n_heads: 2,
        n_kv_heads: 1,
        head_dim: 8,
        rope_dims: 8,
        base: 10000.0,
        max_ctx: 4,
        neox: false,
        ring: false,
    };
    let epilogues = [
        (GemvEpilogue::Store, 40u32, 44usize),
        (GemvEpilogue::GeluMul { n: 13, up_row: 16 }, 29, 16),
        (GemvEpilogue::RopeKv(rope), 32, 16),
    ];
    let formats: Vec<WeightFormat> = WeightFormat::ALL
        .into_iter()
        .filter(|&f| GemvVariant::Dp4a.layout_for(f).is_some() && f.block_elems() == 32)
        .chain([WeightFormat::Q4_K, WeightFormat::Q5_K])
        .collect();
    for (i, format) in formats.into_iter().enumerate() {
        let layout = GemvVariant::Dp4a.layout_for(format).unwrap();
        // K-quant rows are whole 256-element super-blocks (Gemma's 640-wide matrices
        // are q5_0 or q8_0 in its files).
        let first = if format.block_elems() == 256 {
            768
        } else {
            640
        };
        for cols in [first, 4096] {
            let (epilogue, rows, y_len) = epilogues[i % epilogues.len()];
            let op = GemvFused {
                gemv: Gemv {
                    layout,
                    ..matrix(format, rows, cols, 0)
                },
                norm: Some(1e-6),
                post_norm: Some(1e-6),
                partials: 0,
                epilogue,
            };
            FusedCase::new(&mut rng, op).check(gpu, GemvVariant::Dp4a, y_len, 2);
        }
    }
}

/// The attention's partial output projections added to x in the dp4a frame's input
/// (`attn_output`): x_out = x + Σ partials, and the gemv with its own norm on x_out,
/// for every dp4a format, with the silu·mul (gate/up, where the decoder folds them) and
/// store epilogues, at 576 columns (SmolLM2, 9 heads) and 4096 (the wide workgroups).
#[test]
fn partials_folded_into_dp4a_match_their_sum_then_the_gemv() {
    let Some(gpu) = common::gpu() else { return };
    if GemvVariant::Dp4a.supported(gpu).is_err() {
        panic!("this adapter has no dp4a frame: the folded partials are untested");
    }
    let mut rng = common::rng(317);
    let epilogues = [
        (GemvEpilogue::SiluMul { n: 13, up_row: 16 }, 29, 16),
        (GemvEpilogue::Store, 40u32, 44usize),
    ];
    let formats: Vec<WeightFormat> = WeightFormat::ALL
        .into_iter()
        .filter(|&f| GemvVariant::Dp4a.layout_for(f).is_some() && f.block_elems() == 32)
        .collect();
    for (i, format) in formats.into_iter().enumerate() {
        let layout = GemvVariant::Dp4a.layout_for(format).unwrap();
        for (cols, partials) in [(576, 9), (4096, 2)] {
            let (epilogue, rows, y_len) = epilogues[i % epilogues.len()];
            let op = GemvFused {
                gemv: Gemv {
                    layout,
                    ..matrix(format, rows, cols, 0)
                },
                norm: Some(1e-5),
                post_norm: None,
                partials,
                epilogue,
            };
            assert!(
                op.op_name().starts_with("add+rms_norm+gemv_"),
                "{}",
                op.op_name()
            );
            FusedCase::new(&mut rng, op).check(gpu, GemvVariant::Dp4a, y_len, 2);
        }
    }
}

/// The fold is refused where its kernel does not exist: another frame, no norm, or x_out
/// on x's own buffer.
#[test]
fn post_norm_fold_needs_dp4a_a_norm_and_its_own_output() {
    let Some(gpu) = common::gpu() else { return };
    let g = Gemv {
        layout: WeightLayout::Packed,
        ..matrix(WeightFormat::Q4_0, 4, 64, 0)
    };
    let b = |label| gpu.create_buffer(label, 4096).unwrap();
    let (w, x, y, nw, d, pw, out) = (b("w"), b("x"), b("y"), b("nw"), b("d"), b("pw"), b("out"));
    let buffers = |x_out| GemvBuffers {
        norm_weight: Some(&nw),
        post: Some(PostNorm {
            d: &d,
            weight: &pw,
            x_out,
        }),
        ..GemvBuffers::new(&w, &x, &y)
    };
    let op = GemvFused {
        gemv: g,
        norm: Some(1e-6),
        post_norm: Some(1e-6),
        partials: 0,
        epilogue: GemvEpilogue::Store,
    };
    assert_eq!(op.op_name(), "rms_norm+add+rms_norm+gemv_q4_0");
    let dp4a = op.fit_tuning(g.tuning(GemvVariant::Dp4a, gpu));
    let err = op
        .dispatch(
            gpu,
            GemvTuning {
                variant: GemvVariant::Subgroup,
                ..dp4a
            },
            &buffers(&out),
        )
        .expect_err("the fold runs in the dp4a frame only");
    assert!(
        err.to_string()
            .contains("post norm folds into the dp4a frame"),
        "{err}"
    );
    let err = GemvFused { norm: None, ..op }
        .dispatch(gpu, dp4a, &buffers(&out))
        .expect_err("the fold needs the gemv's own norm");
    assert!(err.to_string().contains("without a norm"), "{err}");
    let err = op
        .dispatch(gpu, dp4a, &buffers(&x))
        .expect_err("x_out must not be x");
    assert!(err.to_string().contains("x's own buffer"), "{err}");
    op.dispatch(gpu, dp4a, &buffers(&out))
        .expect("a valid fold");
}

#[test]
fn packing_is_a_byte_permutation_and_rejects_other_formats() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(315);
    for format in PACKABLE {
        let (rows, cols) = (3u32, 96u32);
        let gguf = format.quantize_row(&weights(&mut rng, (rows * cols) as usize));
        let packed = WeightLayout::Packed.pack(format, &gguf);
        let blocks = (rows * cols / 32) as usize;
        assert_eq!(packed.len(), gguf.len().next_multiple_of(32));
        assert_eq!(WeightLayout::Packed.unpack(format, &packed, blocks), gguf);
        // The first block's quants lead the buffer; its scale leads the scales region.
        let qb = if format == WeightFormat::Q8_0 { 32 } else { 16 };
        let sb = format.block_bytes() as usize - qb;
        assert_eq!(packed[..qb], gguf[sb..sb + qb]);
        let at = WeightLayout::scales_at(format, rows, cols) as usize * 16;
        assert_eq!(at, blocks * qb);
        assert_eq!(packed[at..at + sb], gguf[..sb]);
    }
    let f16 = Gemv {
        layout: WeightLayout::Packed,
        ..matrix(WeightFormat::F16, 2, 32, 0)
    };
    assert!(!WeightLayout::Packed.supports(WeightFormat::F16));
    let b = gpu.create_buffer("w", 1024).unwrap();
    let err = f16
        .dispatch(gpu, &b, &b, &b)
        .expect_err("f16 has no packed layout");
    assert!(err.to_string().contains("no packed weight layout"), "{err}");
}

#[test]
fn variant_tunings_out_of_range_are_errors() {
    let Some(gpu) = common::gpu() else { return };
    let g = Gemv {
        rows: 4,
        cols: 64,
        format: WeightFormat::Q4_0,
        out_offset: 0,
        layout: WeightLayout::Gguf,
    };
    let w = gpu.create_buffer("w", g.weight_bytes()).unwrap();
    let x = gpu.create_buffer("x", 64 * 4).unwrap();
    let y = gpu.create_buffer("y", 4 * 4).unwrap();
    let rows_with_lanes = GemvTuning {
        variant: GemvVariant::Rows,
        threads_per_row: 2,
        rows_per_thread: 1,
    };
    assert!(g.dispatch_with(gpu, &w, &x, &y, rows_with_lanes).is_err());
    if GemvVariant::Subgroup.supported(gpu).is_ok() {
        let too_wide = GemvTuning {
            variant: GemvVariant::Subgroup,
            threads_per_row: gpu.adapter_info().subgroup_min_size * 2,
            rows_per_thread: 1,
        };
        let err = g.dispatch_with(gpu, &w, &x, &y, too_wide).unwrap_err();
        assert!(err.to_string().contains("threads_per_row"), "{err}");
    }
    // A pair epilogue refuses an odd number of rows per lane.
    let silu = GemvFused {
        gemv: Gemv { rows: 4, ..g },
        norm: None,
        post_norm: None,
        partials: 0,
        epilogue: GemvEpilogue::SiluMul { n: 2, up_row: 2 },
    };
    let odd = GemvTuning {
        variant: GemvVariant::Shared,
        threads_per_row: 4,
        rows_per_thread: 1,
    };
    let err = silu
        .dispatch(gpu, odd, &GemvBuffers::new(&w, &x, &y))
        .unwrap_err();
    assert!(err.to_string().contains("pairs"), "{err}");
    assert_eq!(silu.fit_tuning(odd).rows_per_thread, 2);
}

// ---------------------------------------------------------------------------------------
// Fused forms
// ---------------------------------------------------------------------------------------

/// One fused case: weights of `rows × cols`, the residual stream x (not normalized: the
/// fused norm does that), the norm weight.
struct FusedCase {
    op: GemvFused,
    w: Vec<u8>,
    x: Vec<f32>,
    nw: Vec<f32>,
    /// The folded post norm's d and weight (with `op.post_norm`).
    post: Option<(Vec<f32>, Vec<f32>)>,
    /// The partials added to x (`op.partials` vectors of `cols`).
    partials: Option<Vec<f32>>,
}

impl FusedCase {
    fn new(rng: &mut rand::rngs::StdRng, op: GemvFused) -> FusedCase {
        let g = op.gemv;
        let w = g
            .format
            .quantize_row(&weights(rng, (g.rows * g.cols) as usize));
        let n = g.cols as usize;
        // `offset + scale · v` for unit-scale activations v.
        let mut around = |offset: f32, scale: f32| -> Vec<f32> {
            activations(rng, n)
                .into_iter()
                .map(|v| offset + scale * v)
                .collect()
        };
        // A residual stream a few times larger than unit scale, and norm weights near 1.
        let x = around(0.0, 3.0);
        let nw = around(1.0, 0.1);
        // A projection's output of another scale than x, and Gemma-like (1 + w) weights.
        let post = op.post_norm.map(|_| (around(0.0, 0.2), around(1.0, 0.5)));
        // The heads' partial projections, each smaller than x.
        let partials =
            (op.partials > 0).then(|| (0..op.partials).flat_map(|_| around(0.0, 0.3)).collect());
        FusedCase {
            op,
            w,
            x,
            nw,
            post,
            partials,
        }
    }

    /// The residual the gemv starts from: x, or x after the folded post norm, or x plus
    /// the partials.
    fn residual(&self) -> Vec<f32> {
        if let Some(parts) = &self.partials {
            return self.op.partials_input(&self.x, parts);
        }
        let post = self.post.as_ref().map(|(d, pw)| (&d[..], &pw[..]));
        self.op.post_input(&self.x, post)
    }

    /// The input the weights see (the residual, or the residual rms-normed).
    fn input(&self) -> Vec<f32> {
        let g = self.op.gemv;
        let x = self.residual();
        match self.op.norm {
            Some(eps) => {
                let mut out = vec![0f32; g.cols as usize];
                RmsNorm { n: g.cols, eps }.cpu(&x, &self.nw, &mut out);
                out
            }
            None => x,
        }
    }

    /// Σ|w·x'| per matrix row, for the tolerance.
    fn row_scales(&self) -> Vec<f32> {
        let g = self.op.gemv;
        abs_dots(
            g.format,
            &self.w,
            g.rows as usize,
            g.cols as usize,
            &self.input(),
        )
    }

    /// The matrix rows before the epilogue (oracle).
    fn raw_rows(&self) -> Vec<f32> {
        let g = self.op.gemv;
        let mut rows = vec![0f32; g.rows as usize];
        Gemv {
            out_offset: 0,
            layout: WeightLayout::Gguf,
            ..g
        }
        .cpu(&self.w, &self.input(), &mut rows);
        rows
    }

    /// Runs the fused op with `variant` and compares y (and the caches) with the oracle.
    fn check(&self, gpu: &Gpu, variant: GemvVariant, y_len: usize, pos: u32) {
        let g = self.op.gemv;
        // dp4a has kernels for packed q4_0 / q4_1 / q8_0 only (its cases come through
        // packed_layout_fused_forms_match_the_oracle).
        if !variant.runs(g.format, g.layout) {
            return;
        }
        self.check_tuned(gpu, self.op.fit_tuning(g.tuning(variant, gpu)), y_len, pos);
    }

    /// [`Self::check`] with this tuning; returns the shader that ran.
    fn check_tuned(&self, gpu: &Gpu, tuning: GemvTuning, y_len: usize, pos: u32) -> String {
        let g = self.op.gemv;
        let variant = tuning.variant;
        let what = format!(
            "{} {}x{} [{}, {} weights]",
            self.op.op_name(),
            g.rows,
            g.cols,
            variant.name(),
            g.layout.name()
        );
        // `w` holds the GGUF bytes; the buffer (and the oracle) get them in g's layout.
        let stored = g.layout.pack(g.format, &self.w);
        let wb = gpu.create_buffer_init("w", &stored).unwrap();
        let xb = gpu.create_buffer_init("x", &f32_bytes(&self.x)).unwrap();
        let nwb = gpu.create_buffer_init("nw", &f32_bytes(&self.nw)).unwrap();
        let y0: Vec<f32> = (0..y_len).map(|i| 0.25 * (i % 7) as f32 - 0.5).collect();
        let yb = gpu.create_buffer_init("y", &f32_bytes(&y0)).unwrap();
        let (kv_len, rope) = match self.op.epilogue {
            GemvEpilogue::RopeKv(r) => ((r.kv_row() * u64::from(r.max_ctx)) as usize, Some(r)),
            _ => (4, None),
        };
        let cache0: Vec<f32> = (0..kv_len).map(|i| (i % 5) as f32).collect();
        let kb = gpu
            .create_buffer_init("k_cache", &f32_bytes(&cache0))
            .unwrap();
        let vb = gpu
            .create_buffer_init("v_cache", &f32_bytes(&cache0))
            .unwrap();
        let step = gpu
            .create_buffer_init("step", bytemuck::cast_slice(&[pos, pos + 1, 0, 0]))
            .unwrap();
        let post_bufs = self.post.as_ref().map(|(d, pw)| {
            let cols = d.len();
            (
                gpu.create_buffer_init("d", &f32_bytes(d)).unwrap(),
                gpu.create_buffer_init("post_w", &f32_bytes(pw)).unwrap(),
                gpu.create_buffer_init("x_out", &f32_bytes(&vec![f32::NAN; cols]))
                    .unwrap(),
            )
        });
        let partial_bufs = self.partials.as_ref().map(|parts| {
            let cols = g.cols as usize;
            (
                gpu.create_buffer_init("partials", &f32_bytes(parts))
                    .unwrap(),
                gpu.create_buffer_init("x_out", &f32_bytes(&vec![f32::NAN; cols]))
                    .unwrap(),
            )
        });
        let buffers = GemvBuffers {
            w: &wb,
            x: &xb,
            y: &yb,
            norm_weight: self.op.norm.map(|_| &nwb),
            kv: rope.map(|_| (&step, &kb, &vb)),
            post: post_bufs
                .as_ref()
                .map(|(d, weight, x_out)| PostNorm { d, weight, x_out }),
            partials: partial_bufs
                .as_ref()
                .map(|(parts, x_out)| Partials { parts, x_out }),
            down: None,
        };
        let d = self
            .op
            .dispatch(gpu, tuning, &buffers)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(d.op, self.op.op_name());
        let shader = d.pipeline.shader().to_string();
        if variant == GemvVariant::Dp4a {
            let split = g.dp4a_split(gpu);
            let constant = |name: &str| {
                d.pipeline
                    .constants()
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| *v as u32)
            };
            assert_eq!(constant("KSPLIT"), Some(split.k_split), "{what}");
            assert_eq!(constant("WG_SIZE"), Some(split.workgroup), "{what}");
            if g.cols >= gpuscope_ops::gemv::DP4A_WIDE_COLS
                && gpu.limits().max_compute_invocations_per_workgroup >= 512
            {
                assert_eq!(split.k_split, 2, "{what}: the wide rows are split");
            }
        }
        run(gpu, vec![d]);
        let (mut want, mut want_k, mut want_v) = (y0.clone(), cache0.clone(), cache0.clone());
        let residual = self.residual();
        if let Some((_, x_out)) = &partial_bufs {
            // x plus the partials in order, as the oracle adds them: the same f32 sums.
            compare(
                &format!("{what} x_out"),
                &read_f32(gpu, x_out),
                &residual,
                |_| 1.0,
                1e-6,
            );
        }
        if let Some((_, _, x_out)) = &post_bufs {
            // x + (d · s) ∘ pw: one rounding from the oracle's, at most (s's sum order).
            compare(
                &format!("{what} x_out"),
                &read_f32(gpu, x_out),
                &residual,
                |_| 1.0,
                1e-5,
            );
        }
        self.op.cpu_variant(
            gpuscope_ops::gemv::XRounding::of(variant),
            &stored,
            &residual,
            Some(&self.nw),
            &mut want,
            rope.map(|_| (pos, &mut want_k[..], &mut want_v[..])),
        );
        let tol = rel_tol(g.format) * 2.0;
        let scales = self.row_scales();
        let raw = self.raw_rows();
        compare(
            &what,
            &read_f32(gpu, &yb)[..y_len],
            &want,
            |i| self.scale_of_y(i, &scales, &raw),
            tol,
        );
        if rope.is_some() {
            for (name, buf, want) in [("k_cache", &kb, &want_k), ("v_cache", &vb, &want_v)] {
                compare(
                    &format!("{what} {name}"),
                    &read_f32(gpu, buf)[..kv_len],
                    want,
                    |i| self.scale_of_cache(i, &scales, pos),
                    tol,
                );
            }
        }
        shader
    }

    /// The error scale of y[i]: the row's Σ|w·x'| (both rows of a rotated pair; for
    /// silu·mul and gelu·mul, gate's scaled by |up| · 1.2 (over silu's and gelu's steepest
    /// slopes, 1.1 and 1.13) plus up's scaled by |act(gate)| ≤ |gate|, from the oracle's
    /// rows `raw`).
    fn scale_of_y(&self, i: usize, scales: &[f32], raw: &[f32]) -> f32 {
        let off = self.op.gemv.out_offset as usize;
        match self.op.epilogue {
            GemvEpilogue::SiluMul { n, up_row } | GemvEpilogue::GeluMul { n, up_row } => {
                let j = i.wrapping_sub(off);
                if j >= n as usize {
                    return 0.0;
                }
                let u = up_row as usize + j;
                1.2 * raw[u].abs() * scales[j] + raw[j].abs() * scales[u] + 1e-6
            }
            GemvEpilogue::RopeKv(_) => {
                let r = i.wrapping_sub(off);
                if r >= scales.len() {
                    return 0.0;
                }
                let p = r & !1;
                scales[p] + scales[p + 1]
            }
            _ => {
                let r = i.wrapping_sub(off);
                scales.get(r).copied().unwrap_or(0.0)
            }
        }
    }

    fn scale_of_cache(&self, i: usize, scales: &[f32], pos: u32) -> f32 {
        let GemvEpilogue::RopeKv(rope) = self.op.epilogue else {
            return 0.0;
        };
        let kv = rope.kv_row() as usize;
        let at = pos as usize * kv;
        if !(at..at + kv).contains(&i) {
            return 0.0;
        }
        let e = (i - at) & !1;
        let q = (rope.n_heads * rope.head_dim) as usize;
        let off = self.op.gemv.out_offset as usize;
        // The cache element's global row: k rows follow q, v rows follow k; only this
        // part's rows are written.
        let mut total = 0.0;
        for g in [q + e, q + kv + e] {
            if let Some(r) = g.checked_sub(off).filter(|r| r + 1 < scales.len()) {
                total += scales[r] + scales[r + 1];
            }
        }
        total
    }
}

/// Elements with scale 0 must match exactly (untouched); the others within `tol · scale`.
fn compare(what: &str, got: &[f32], want: &[f32], scale: impl Fn(usize) -> f32, tol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.is_finite(),
            "{what}: [{i}] = {g} is not finite (oracle {w})"
        );
        let s = scale(i);
        if s == 0.0 {
            assert_eq!(
                g.to_bits(),
                w.to_bits(),
                "{what}: [{i}] changed: {g} vs {w}"
            );
        } else {
            // Rope's GPU sin/cos and pow add ~1e-6 relative at small positions.
            let err = (g - w).abs();
            assert!(
                err <= tol * s + 1e-5 * w.abs(),
                "{what}: [{i}] gpu {g} vs oracle {w}: |err| {err:e} > {tol:e} · {s:e}"
            );
        }
    }
}

fn matrix(format: WeightFormat, rows: u32, cols: u32, out_offset: u32) -> Gemv {
    Gemv {
        rows,
        cols,
        format,
        out_offset,
        layout: WeightLayout::Gguf,
    }
}

/// Width per format for the fused cases: whole blocks (the K formats' 256).
fn fused_width(format: WeightFormat) -> u32 {
    if format.block_elems() == 256 {
        256
    } else {
        96
    }
}

#[test]
fn norm_folded_into_gemv_matches_rms_norm_then_gemv() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(310);
    for variant in variants(gpu) {
        for format in WeightFormat::ALL {
            // Odd widths for the float formats: f16 and bf16 rows then start mid-word and
            // the last unit has one column (each x element still read once per row).
            let widths = if format.is_quantized() {
                vec![fused_width(format)]
            } else {
                vec![fused_width(format), 33]
            };
            for cols in widths {
                for (rows, epilogue) in [(1, GemvEpilogue::Store), (21, GemvEpilogue::Accumulate)] {
                    let op = GemvFused {
                        gemv: matrix(format, rows, cols, 2),
                        norm: Some(1e-5),
                        post_norm: None,
                        partials: 0,
                        epilogue,
                    };
                    FusedCase::new(&mut rng, op).check(gpu, variant, rows as usize + 5, 0);
                }
            }
        }
    }
}

/// Tiny attention shapes: 3 q heads, 1 kv head of 8 dims, 6 of them rotating (so the
/// last pair of each head is left alone). The stacked q|k|v matrix (40 rows) in one
/// dispatch, and a v part alone at its offset (as when attn_v has another format).
#[test]
fn rope_epilogue_matches_gemv_then_rope_and_cache_stores() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(311);
    let rope = Rope {
        n_heads: 3,
        n_kv_heads: 1,
        head_dim: 8,
        rope_dims: 6,
        base: 10000.0,
        max_ctx: 5,
        neox: false,
        ring: false,
    };
    let (q, kv) = (24u32, 8u32);
    // The stacked form with and without the folded norm, the v part with it; each format
    // in one of them, in turn (the epilogue is the same code for every format, whose own
    // part every_variant_matches_the_oracle_for_every_format covers; each distinct form is
    // a pipeline compiled: see common::each_choice).
    let forms = [(None, 0u32), (Some(1e-5), 0), (Some(1e-5), q + kv)];
    for variant in variants(gpu) {
        for (format, (norm, out_offset)) in common::each_choice(&WeightFormat::ALL, &forms) {
            let cols = fused_width(format);
            let (rows, pos) = if out_offset == 0 {
                (q + 2 * kv, 3)
            } else {
                (kv, 4)
            };
            let op = GemvFused {
                gemv: matrix(format, rows, cols, out_offset),
                norm,
                post_norm: None,
                partials: 0,
                epilogue: GemvEpilogue::RopeKv(rope),
            };
            FusedCase::new(&mut rng, op).check(gpu, variant, q as usize, pos);
        }
    }
}

/// Past the end of the cache nothing is stored (the q rows are still rotated).
#[test]
fn rope_epilogue_outside_the_cache_stores_nothing() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(312);
    let rope = Rope {
        n_heads: 2,
        n_kv_heads: 2,
        head_dim: 4,
        rope_dims: 4,
        base: 10000.0,
        max_ctx: 2,
        neox: false,
        ring: false,
    };
    let op = GemvFused {
        gemv: matrix(WeightFormat::Q8_0, 24, 64, 0),
        norm: None,
        post_norm: None,
        partials: 0,
        epilogue: GemvEpilogue::RopeKv(rope),
    };
    for variant in variants(gpu) {
        FusedCase::new(&mut rng, op).check(gpu, variant, 8, 2);
    }
}

/// gate rows 0..n, up rows from an aligned start after a gap of zero rows (as the decoder
/// stacks them); n odd and small so the last lane has a partial pair group. silu·mul in
/// every format, gelu·mul in three.
#[test]
fn gated_epilogues_match_gemv_then_the_activation() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(313);
    // Each format in one of the three stackings, in turn (as the rope epilogue's test).
    let forms = [(1u32, 4u32, None), (13, 16, Some(1e-5)), (40, 40, None)];
    for variant in variants(gpu) {
        for (format, (n, up_row, norm)) in common::each_choice(&WeightFormat::ALL, &forms) {
            let op = GemvFused {
                gemv: matrix(format, up_row + n, fused_width(format), 0),
                norm,
                post_norm: None,
                partials: 0,
                epilogue: GemvEpilogue::SiluMul { n, up_row },
            };
            FusedCase::new(&mut rng, op).check(gpu, variant, n as usize + 3, 0);
        }
        // GeGLU (Gemma 3) in the same frames: q8_0 and q4_K, its files' gate/up formats,
        // and q4_0 (a dp4a format).
        for format in [WeightFormat::Q8_0, WeightFormat::Q4_K, WeightFormat::Q4_0] {
            let op = GemvFused {
                gemv: matrix(format, 29, fused_width(format), 0),
                norm: Some(1e-5),
                post_norm: None,
                partials: 0,
                epilogue: GemvEpilogue::GeluMul { n: 13, up_row: 16 },
            };
            FusedCase::new(&mut rng, op).check(gpu, variant, 16, 0);
        }
    }
}

#[test]
fn fused_op_names_and_costs() {
    let g = matrix(WeightFormat::Q4_1, 64, 576, 0);
    let rope = Rope {
        n_heads: 1,
        n_kv_heads: 1,
        head_dim: 32,
        rope_dims: 32,
        base: 1e4,
        max_ctx: 8,
        neox: false,
        ring: false,
    };
    let plain = GemvFused::plain(g);
    let normed = GemvFused {
        norm: Some(1e-5),
        post_norm: None,
        partials: 0,
        ..plain
    };
    let roped = GemvFused {
        epilogue: GemvEpilogue::RopeKv(rope),
        ..normed
    };
    let silu = GemvFused {
        epilogue: GemvEpilogue::SiluMul { n: 16, up_row: 32 },
        ..normed
    };
    assert_eq!(plain.op_name(), "gemv_q4_1");
    assert_eq!(normed.op_name(), "rms_norm+gemv_q4_1");
    assert_eq!(roped.op_name(), "rms_norm+gemv_q4_1+rope");
    assert_eq!(silu.op_name(), "rms_norm+gemv_q4_1+silu_mul");
    let gelu = GemvFused {
        epilogue: GemvEpilogue::GeluMul { n: 16, up_row: 32 },
        ..normed
    };
    assert_eq!(gelu.op_name(), "rms_norm+gemv_q4_1+gelu_mul");
    assert_eq!(gelu.cost(), silu.cost());
    assert_eq!(plain.cost(), g.cost());
    assert_eq!(normed.cost().bytes, g.cost().bytes + 576 * 4);
    // silu·mul reads the 32 gate and up rows, not the 16 padding rows, and writes 16.
    let row_bytes = g.weight_bytes() / 64;
    assert_eq!(silu.cost().bytes, 32 * row_bytes + 2 * 576 * 4 + 16 * 4);
}

#[test]
fn fused_forms_check_their_buffers() {
    let Some(gpu) = common::gpu() else { return };
    let g = matrix(WeightFormat::Q8_0, 8, 64, 0);
    let w = gpu.create_buffer("w", g.weight_bytes()).unwrap();
    let x = gpu.create_buffer("x", 64 * 4).unwrap();
    let y = gpu.create_buffer("y", 8 * 4).unwrap();
    let t = g.tuning(GemvVariant::Shared, gpu);
    let normed = GemvFused {
        norm: Some(1e-5),
        post_norm: None,
        partials: 0,
        ..GemvFused::plain(g)
    };
    let err = normed
        .dispatch(gpu, t, &GemvBuffers::new(&w, &x, &y))
        .unwrap_err();
    assert!(err.to_string().contains("norm weight"), "{err}");
    let rope = GemvFused {
        epilogue: GemvEpilogue::RopeKv(Rope {
            n_heads: 1,
            n_kv_heads: 1,
            head_dim: 4,
            rope_dims: 4,
            base: 1e4,
            max_ctx: 4,
            neox: false,
            ring: false,
        }),
        ..GemvFused::plain(Gemv { out_offset: 1, ..g })
    };
    let err = rope
        .dispatch(gpu, rope.fit_tuning(t), &GemvBuffers::new(&w, &x, &y))
        .unwrap_err();
    assert!(err.to_string().contains("pairs"), "{err}");
}

/// Attention with the output projection (`attention+gemv`, the `attn_output` fusion):
/// each head's partial of W_o · attention against its oracle (attention, then the dp4a
/// gemv over that head's output alone), for every format the kernel has, with a context
/// shorter than the cache (rows past it hold NaN: they must weigh nothing). head_dim 32,
/// so that `groups` runs on 8-lane subgroups (lavapipe) too. The GPU's attention output
/// and the oracle's differ by f32 rounding, so a quantized element can land one int8
/// step apart: the partials are held to the int8 limits of `check` (docs/check.md).
#[test]
fn attention_output_partials_match_their_oracle() {
    use gpuscope_ops::attention::{AttnFused, AttnOutput};
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(318);
    let attn = AttnFused {
        n_heads: 4,
        n_kv_heads: 2,
        head_dim: 32,
        max_ctx: 16,
    };
    let (dim, n_ctx) = (96u32, 11u32);
    let cache_len = (attn.n_kv_heads * attn.head_dim * attn.max_ctx) as usize;
    let valid = (attn.n_kv_heads * attn.head_dim * n_ctx) as usize;
    let cache = |rng: &mut rand::rngs::StdRng| -> Vec<f32> {
        let mut v = activations(rng, cache_len);
        v[valid..].fill(f32::NAN);
        v
    };
    let (k, v) = (cache(&mut rng), cache(&mut rng));
    let q = activations(&mut rng, (attn.n_heads * attn.head_dim) as usize);
    let formats = [
        WeightFormat::Q4_0,
        WeightFormat::Q4_1,
        WeightFormat::Q8_0,
        WeightFormat::Q5_0,
    ];
    for format in formats {
        let layout = GemvVariant::Dp4a.layout_for(format).unwrap();
        let op = AttnOutput {
            attn,
            o: Gemv {
                layout,
                ..matrix(format, dim, attn.n_heads * attn.head_dim, 0)
            },
        };
        op.supported(gpu)
            .unwrap_or_else(|why| panic!("attention+gemv does not run here: {why}"));
        let gguf = format.quantize_row(&weights(&mut rng, (dim * op.o.cols) as usize));
        let w = layout.pack(format, &gguf);
        let buf = |label, v: &[f32]| gpu.create_buffer_init(label, &f32_bytes(v)).unwrap();
        let (wb, qb, kb, vb) = (
            gpu.create_buffer_init("w", &w).unwrap(),
            buf("q", &q),
            buf("k_cache", &k),
            buf("v_cache", &v),
        );
        let parts = buf("partials", &vec![f32::NAN; (attn.n_heads * dim) as usize]);
        let step = gpu
            .create_buffer_init("step", bytemuck::cast_slice(&[n_ctx - 1, n_ctx, 0, 0]))
            .unwrap();
        let d = op.dispatch(gpu, &wb, &step, &qb, &kb, &vb, &parts).unwrap();
        assert_eq!(d.op, format!("attention+gemv_{}", format.name()));
        assert!(gpuscope_ops::gemv::rounds_activations(d.pipeline.shader()));
        run(gpu, vec![d]);
        let got = read_f32(gpu, &parts);
        let mut want = vec![0.0f32; got.len()];
        op.cpu(n_ctx, &w, &q, &k, &v, &mut want);
        let rms = (want.iter().map(|x| x * x).sum::<f32>() / want.len() as f32).sqrt();
        let (mut err2, mut max) = (0.0f32, 0.0f32);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(g.is_finite(), "{format:?}: partial {i} is {g}");
            err2 += (g - w) * (g - w);
            max = max.max((g - w).abs());
        }
        let nmse = err2 / want.iter().map(|x| x * x).sum::<f32>();
        assert!(
            nmse < 1e-5 && max < 2e-2 * rms,
            "{format:?}: NMSE {nmse:e}, max err {max} (rms {rms})"
        );
    }
}

/// gate/up with the down projection folded in (`+silu_mul+gemv_<fmt>`, the `down`
/// fusion): each workgroup's partial of W_down · h against the oracle (gate/up, silu·mul,
/// then each 32-column block of W_down times its block of h), with rms_norm folded in,
/// with and without the attention's partials added to x first (then x_out holds x plus
/// them), for the three packed formats. FFN width 96 (three workgroups, three partials),
/// dim 64.
#[test]
fn down_projection_partials_match_their_oracle() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(431);
    let (dim, n) = (64u32, 96u32);
    let up_row = n;
    for format in [WeightFormat::Q4_0, WeightFormat::Q4_1, WeightFormat::Q8_0] {
        for attn_parts in [0u32, 3] {
            let layout = GemvVariant::Dp4a.layout_for(format).unwrap();
            let gate_up = Gemv {
                layout,
                ..matrix(format, up_row + n, dim, 0)
            };
            let op = GemvFused {
                gemv: gate_up,
                norm: Some(1e-5),
                post_norm: None,
                partials: attn_parts,
                epilogue: GemvEpilogue::SiluDown { n, up_row, dim },
            };
            let tuning = op.fit_tuning(gate_up.tuning(GemvVariant::Dp4a, gpu));
            op.down_supported(gpu, tuning).unwrap_or_else(|why| {
                panic!("the folded down projection does not run here: {why}")
            });
            let pack = |rows: u32, cols: u32, rng: &mut rand::rngs::StdRng| {
                layout.pack(
                    format,
                    &format.quantize_row(&weights(rng, (rows * cols) as usize)),
                )
            };
            let (w, wd) = (pack(up_row + n, dim, &mut rng), pack(dim, n, &mut rng));
            let x = activations(&mut rng, dim as usize);
            let nw = activations(&mut rng, dim as usize);
            let parts = activations(&mut rng, (attn_parts.max(1) * dim) as usize);
            let buf = |label, v: &[f32]| gpu.create_buffer_init(label, &f32_bytes(v)).unwrap();
            let (wb, wdb, xb, nwb, pb) = (
                gpu.create_buffer_init("w", &w).unwrap(),
                gpu.create_buffer_init("w_down", &wd).unwrap(),
                buf("x", &x),
                buf("norm", &nw),
                buf("attn_partials", &parts),
            );
            let yb = buf("ffn_partials", &vec![f32::NAN; (n / 32 * dim) as usize]);
            let x_out = buf("x_out", &vec![f32::NAN; dim as usize]);
            let io = GemvBuffers {
                norm_weight: Some(&nwb),
                down: Some(&wdb),
                partials: (attn_parts > 0).then_some(Partials {
                    parts: &pb,
                    x_out: &x_out,
                }),
                ..GemvBuffers::new(&wb, &xb, &yb)
            };
            let d = op.dispatch(gpu, tuning, &io).unwrap();
            assert!(
                d.op.ends_with(&format!("+silu_mul+gemv_{}", format.name())),
                "{}",
                d.op
            );
            run(gpu, vec![d]);
            let input = op.partials_input(&x, &parts);
            if attn_parts > 0 {
                assert_eq!(read_f32(gpu, &x_out), input, "{format:?}: x_out");
            }
            let got = read_f32(gpu, &yb);
            let mut want = vec![0.0f32; got.len()];
            let rounding = gpuscope_ops::gemv::XRounding::of(GemvVariant::Dp4a);
            op.cpu_down(rounding, (&w, &wd), &input, Some(&nw), &mut want);
            let sum2 = want.iter().map(|v| v * v).sum::<f32>();
            let err2: f32 = got.iter().zip(&want).map(|(g, w)| (g - w) * (g - w)).sum();
            assert!(
                got.iter().all(|g| g.is_finite()) && err2 / sum2 < 1e-7,
                "{format:?} with {attn_parts} partials: NMSE {:e}\ngot  {:?}\nwant {:?}",
                err2 / sum2,
                &got[..8],
                &want[..8]
            );
        }
    }
}
