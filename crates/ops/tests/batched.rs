//! Batched (prompt-processing) kernels: GPU against their CPU oracles (the single-row
//! oracles applied per row), with rows past `n_rows` left untouched.

use gpuscope_ops::add::AddBatched;
use gpuscope_ops::attention::{AttnBatched, AttnFused};
use gpuscope_ops::embedding::{Embedding, EmbeddingBatched};
use gpuscope_ops::gelu_mul::GeluMulBatched;
use gpuscope_ops::gemv::{GemmKind, GemmOut, Gemv, GemvBatched, QuantizeX, WeightLayout};
use gpuscope_ops::head_norm::{HeadNorm, HeadNormBatched};
use gpuscope_ops::rms_norm::{RmsNorm, RmsNormBatched};
use gpuscope_ops::rope::{Rope, RopeBatched};
use gpuscope_ops::silu_mul::SiluMulBatched;
use gpuscope_ops::WeightFormat;
use gpuscope_runtime::{Gpu, GpuBuffer};

use crate::common::{activations, f32_bytes, gpu, read_f32, rng, run, weights};

const SENTINEL: f32 = 12345.0;

fn params(gpu: &Gpu, pos0: u32, n_rows: u32) -> GpuBuffer {
    gpu.create_buffer_init("params", bytemuck::cast_slice(&[pos0, n_rows, 0, 0]))
        .unwrap()
}

fn filled(gpu: &Gpu, label: &str, v: &[f32]) -> GpuBuffer {
    gpu.create_buffer_init(label, &f32_bytes(v)).unwrap()
}

/// |got - want| ≤ rel · max|want| + 1e-5 everywhere (summation order differs).
fn assert_close(what: &str, got: &[f32], want: &[f32], rel: f32) {
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * scale + 1e-5,
            "{what}: element {i}: gpu {g} vs oracle {w} (scale {scale})"
        );
    }
}

/// y before a batched product: values to add to when it accumulates, else sentinels the
/// kernel must overwrite (or leave, past the batch).
fn initial_y(len: u32, accumulate: bool) -> Vec<f32> {
    (0..len)
        .map(|i| {
            if accumulate {
                (i % 7) as f32 * 0.1
            } else {
                SENTINEL
            }
        })
        .collect()
}

/// A gemm's y against its oracle: the written part (rows below `n_rows`, columns
/// `out_offset..out_offset + rows`) within `rel` of its own largest value, everything
/// else bit for bit (so that untouched sentinels cannot loosen the tolerance).
fn assert_gemm_close(
    what: &str,
    got: &[f32],
    want: &[f32],
    (y_stride, n_rows, out_offset, rows): (u32, u32, u32, u32),
    rel: f32,
) {
    let written = |i: usize| {
        let (row, col) = (i as u32 / y_stride, i as u32 % y_stride);
        row < n_rows && (out_offset..out_offset + rows).contains(&col)
    };
    let scale = (0..want.len())
        .filter(|&i| written(i))
        .fold(0f32, |m, i| m.max(want[i].abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if written(i) {
            assert!(
                (g - w).abs() <= rel * scale + 1e-5,
                "{what}: element {i}: gpu {g} vs oracle {w} (scale {scale})"
            );
        } else {
            assert_eq!(
                g.to_bits(),
                w.to_bits(),
                "{what}: element {i} is not the kernel's to write"
            );
        }
    }
}

#[test]
fn gemv_batched_every_format_matches_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(11);
    let (rows, cols, max_batch, out_offset) = (40u32, 256u32, 11u32, 3u32);
    let y_stride = rows + out_offset + 2;
    for format in WeightFormat::ALL {
        let w = format.quantize_row(&weights(&mut r, (rows * cols) as usize));
        let x = activations(&mut r, (max_batch * cols) as usize);
        let op = GemvBatched {
            gemv: Gemv {
                rows,
                cols,
                format,
                out_offset,
                layout: gpuscope_ops::gemv::WeightLayout::Gguf,
            },
            max_batch,
            y_stride,
        };
        for (n_rows, accumulate) in [
            (max_batch, false),
            (5, true),
            (1, false),
            (8, true),
            (9, false),
        ] {
            let y0 = initial_y(max_batch * y_stride, accumulate);
            let (wb, xb, yb, pb) = (
                gpu.create_buffer_init("w", &w).unwrap(),
                filled(gpu, "x", &x),
                filled(gpu, "y", &y0),
                params(gpu, 0, n_rows),
            );
            run(
                gpu,
                vec![op.dispatch(gpu, &wb, &xb, &yb, &pb, accumulate).unwrap()],
            );
            let mut want = y0.clone();
            op.cpu(&w, &x, &mut want, n_rows, accumulate);
            assert_close(
                &format!("{format:?} n_rows {n_rows} accumulate {accumulate}"),
                &read_f32(gpu, &yb),
                &want,
                1e-4,
            );
        }
    }
}

/// The batched wide rows frame (CPU adapters with SHADER_INT64 and 8-lane subgroups:
/// lavapipe in CI) against the oracle: packed q4_0 / q4_1 / q8_0, one and nine block
/// pairs per row, a partial last row group (37 rows at 64 a workgroup), partial batch
/// chunks, accumulation, a row chunk (`out_offset`), rows past `n_rows` and columns
/// outside the matrix's untouched; a width of an odd number of blocks is refused.
#[test]
fn gemv_batched_wide_rows_frame_matches_oracle() {
    let Some(gpu) = gpu() else { return };
    let info = gpu.adapter_info();
    let offered = gpu.features().contains(
        gpuscope_runtime::wgpu::Features::SHADER_INT64 | gpuscope_runtime::wgpu::Features::SUBGROUP,
    ) && info.subgroup_min_size == 8
        && info.subgroup_max_size == 8;
    let mut r = rng(12);
    let (rows, max_batch, out_offset) = (37u32, 19u32, 3u32);
    let y_stride = rows + out_offset + 2;
    for format in [WeightFormat::Q4_0, WeightFormat::Q4_1, WeightFormat::Q8_0] {
        for cols in [64u32, 576, 96] {
            let gguf = format.quantize_row(&weights(&mut r, (rows * cols) as usize));
            let w = WeightLayout::Packed.pack(format, &gguf);
            let x = activations(&mut r, (max_batch * cols) as usize);
            let op = GemvBatched {
                gemv: Gemv {
                    rows,
                    cols,
                    format,
                    out_offset,
                    layout: WeightLayout::Packed,
                },
                max_batch,
                y_stride,
            };
            assert_eq!(
                op.runs_wide(gpu),
                offered && cols % 64 == 0,
                "{format:?} {cols}"
            );
            let (wb, xb) = (
                gpu.create_buffer_init("w", &w).unwrap(),
                filled(gpu, "x", &x),
            );
            if !op.runs_wide(gpu) {
                let yb = filled(gpu, "y", &initial_y(max_batch * y_stride, false));
                let err = op
                    .dispatch_wide(gpu, &wb, &xb, &yb, &params(gpu, 0, 1), false)
                    .unwrap_err();
                assert!(err.to_string().contains("wide rows frame"), "{err}");
                continue;
            }
            for (n_rows, accumulate) in [
                (max_batch, false),
                (5, true),
                (1, false),
                (8, true),
                (17, false),
            ] {
                let y0 = initial_y(max_batch * y_stride, accumulate);
                let (yb, pb) = (filled(gpu, "y", &y0), params(gpu, 0, n_rows));
                let d = op
                    .dispatch_wide(gpu, &wb, &xb, &yb, &pb, accumulate)
                    .unwrap();
                assert!(
                    d.pipeline.shader().ends_with(".packed.wide"),
                    "{}",
                    d.pipeline.shader()
                );
                run(gpu, vec![d]);
                let mut want = y0.clone();
                op.cpu(&w, &x, &mut want, n_rows, accumulate);
                assert_gemm_close(
                    &format!("{format:?} {cols} columns, n_rows {n_rows}, accumulate {accumulate}"),
                    &read_f32(gpu, &yb),
                    &want,
                    (y_stride, n_rows, out_offset, rows),
                    1e-4,
                );
            }
        }
    }
}

/// The gemms (prompt processing: dp4a with int8 x, coopmat on f16 cooperative matrices
/// where the adapter has them): q4_0, q4_1 and q8_0 in both layouts against their oracles
/// (x quantized per row and block; x rounded to f16), with partial tiles in both
/// directions (70 weight rows, 67 and fewer batch rows: tiles are 64x64), a width that
/// is an odd number of blocks (the kernels walk K two or four blocks at a time), row
/// chunks (`out_offset`), accumulation, and rows past `n_rows` untouched.
#[test]
fn gemms_match_their_oracles() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(12);
    // lavapipe (CI) runs dp4a; coopmat only where wgpu offers cooperative matrices
    // (NVIDIA through VK_KHR_cooperative_matrix), so the device runs of this binary
    // are what test it (BENCHMARKS.md).
    let kinds: Vec<GemmKind> = GemmKind::ALL
        .into_iter()
        .filter(|k| match k.supported(gpu) {
            Ok(()) => true,
            Err(why) => {
                assert_ne!(*k, GemmKind::Dp4a, "{why}");
                eprintln!("skipping the {} gemm: {why}", k.name());
                false
            }
        })
        .collect();
    for kind in kinds {
        // 4100 rows: coopmat's 128-wide tiles (COOPMAT_WIDE_ROWS), the last one partial;
        // 128 and 4096 rows: whole tiles (64- and 128-wide), whose results coopmat stores
        // without workgroup memory. Each shape with one format, each format at least once
        // (each distinct gemm is a pipeline compiled: see common::each_choice).
        let shapes = [
            (70u32, 96u32),
            (8, 576),
            (130, 224),
            (4100, 64),
            (128, 96),
            (4096, 64),
        ];
        let formats = [WeightFormat::Q4_0, WeightFormat::Q4_1, WeightFormat::Q8_0];
        let mut cases = crate::common::each_choice(&shapes, &formats);
        // GGUF bytes only: q4_K and q5_K, rows of two super-blocks; q5_0, rows of an odd
        // number of 22-byte blocks (blocks starting both ways); q5_1.
        cases.extend([
            ((130, 512), WeightFormat::Q4_K),
            ((70, 512), WeightFormat::Q5_K),
            ((70, 224), WeightFormat::Q5_0),
            ((8, 96), WeightFormat::Q5_1),
        ]);
        for ((rows, cols), format) in cases {
            // Batches past 128 rows where the rows take 128-wide tiles, so that some are whole.
            let max_batch = if rows >= 4096 { 131u32 } else { 67 };
            let out_offset = 3u32;
            let y_stride = rows + out_offset + 2;
            {
                let gguf = format.quantize_row(&weights(&mut r, (rows * cols) as usize));
                let x = activations(&mut r, (max_batch * cols) as usize);
                for layout in WeightLayout::ALL.into_iter().filter(|l| l.supports(format)) {
                    let w = layout.pack(format, &gguf);
                    let op = GemvBatched {
                        gemv: Gemv {
                            rows,
                            cols,
                            format,
                            out_offset,
                            layout,
                        },
                        max_batch,
                        y_stride,
                    };
                    assert!(op.runs_gemm(kind, gpu));
                    // The 32-element formats every batch; the others (the loaders they
                    // add to the same frame) a partial tile, accumulating: each
                    // (format, accumulate) is a pipeline compiled.
                    let batches: &[(u32, bool)] = if formats.contains(&format) {
                        &[
                            (max_batch, false),
                            (5, true),
                            (64, false),
                            (65, true),
                            (128, true),
                        ]
                    } else {
                        &[(65, true)]
                    };
                    for &(n_rows, accumulate) in batches.iter().filter(|(n, _)| *n <= max_batch) {
                        let what = format!(
                            "{} {format:?} {layout:?} {rows}x{cols} n_rows {n_rows} accumulate {accumulate}",
                            kind.name()
                        );
                        let y0 = initial_y(max_batch * y_stride, accumulate);
                        let (wb, xb, yb, pb) = (
                            gpu.create_buffer_init("w", &w).unwrap(),
                            filled(gpu, "x", &x),
                            filled(gpu, "y", &y0),
                            params(gpu, 0, n_rows),
                        );
                        let mut want = y0.clone();
                        match kind {
                            GemmKind::Dp4a => {
                                let quantize = op.quantize_x();
                                let xqb = gpu.create_buffer("xq", quantize.buffer_bytes()).unwrap();
                                let q = quantize.dispatch(gpu, &xb, &xqb, &pb).unwrap();
                                let d = op
                                    .dispatch_gemm(
                                        kind,
                                        gpu,
                                        &wb,
                                        &xqb,
                                        &yb,
                                        &pb,
                                        gemm_out(accumulate),
                                    )
                                    .unwrap();
                                assert!(d.pipeline.shader().starts_with("gemm_dp4a_"));
                                run(gpu, vec![q, d]);
                                // The quantized rows: the oracle's words (a quant may differ
                                // by one where the GPU's 1/d rounds otherwise).
                                let words: Vec<u32> =
                                    bytemuck::pod_collect_to_vec(&gpu.read_buffer(&xqb).unwrap());
                                let want_words = quantize.cpu(&x, n_rows);
                                let got = QuantizeX::dequantize(&words[..want_words.len()]);
                                let want_xq = QuantizeX::dequantize(&want_words);
                                for (i, (g, w)) in got.iter().zip(&want_xq).enumerate() {
                                    let d = f32::from_bits(want_words[i / 32 * 12 + 8]);
                                    assert!(
                                        (g - w).abs() <= d * 1.001,
                                        "xq element {i}: {g} vs {w}"
                                    );
                                }
                                op.cpu_q8(&w, &x, &mut want, n_rows, accumulate);
                                assert_gemm_close(
                                    &what,
                                    &read_f32(gpu, &yb),
                                    &want,
                                    (y_stride, n_rows, out_offset, rows),
                                    1e-4,
                                );
                            }
                            GemmKind::Coopmat => {
                                let d = op
                                    .dispatch_gemm(
                                        kind,
                                        gpu,
                                        &wb,
                                        &xb,
                                        &yb,
                                        &pb,
                                        gemm_out(accumulate),
                                    )
                                    .unwrap();
                                assert!(d.pipeline.shader().starts_with("gemm_coopmat_"));
                                assert_eq!(
                                    d.pipeline.shader().ends_with(".t128"),
                                    rows >= gpuscope_ops::gemv::COOPMAT_WIDE_ROWS,
                                    "{what}: {}",
                                    d.pipeline.shader()
                                );
                                run(gpu, vec![d]);
                                op.cpu_f16(&w, &x, &mut want, n_rows, accumulate);
                                // The weights' rounding to f16 is not in the oracle.
                                assert_gemm_close(
                                    &what,
                                    &read_f32(gpu, &yb),
                                    &want,
                                    (y_stride, n_rows, out_offset, rows),
                                    2e-3,
                                );
                            }
                        }
                    }
                }
            }
        }
        // Formats without a gemm form are refused by name.
        let op = GemvBatched {
            gemv: Gemv {
                rows: 4,
                cols: 256,
                format: WeightFormat::Q6_K,
                out_offset: 0,
                layout: WeightLayout::Gguf,
            },
            max_batch: 4,
            y_stride: 4,
        };
        assert!(!op.runs_gemm(kind, gpu));
        let b = gpu.create_buffer("b", 1 << 14).unwrap();
        let err = op
            .dispatch_gemm(kind, gpu, &b, &b, &b, &b, GemmOut::Store)
            .unwrap_err()
            .to_string();
        assert!(err.contains("q6_k"), "{err}");
    }
}

fn gemm_out(accumulate: bool) -> GemmOut {
    if accumulate {
        GemmOut::Accumulate
    } else {
        GemmOut::Store
    }
}

/// A packed q4_0 matrix of `rows × cols` batched over `max_batch` rows, its products at
/// `out_offset` of y rows `y_stride` apart (the coopmat gemm's K-parts and silu tests).
fn q4_0_op(
    (rows, cols): (u32, u32),
    max_batch: u32,
    (out_offset, y_stride): (u32, u32),
) -> GemvBatched {
    GemvBatched {
        gemv: Gemv {
            rows,
            cols,
            format: WeightFormat::Q4_0,
            out_offset,
            layout: WeightLayout::Packed,
        },
        max_batch,
        y_stride,
    }
}

/// Random weights for `op` (quantized and packed) and x for its whole batch.
fn q4_0_inputs(r: &mut rand::rngs::StdRng, op: &GemvBatched) -> (Vec<u8>, Vec<f32>) {
    let (rows, cols) = (op.gemv.rows, op.gemv.cols);
    let gguf = WeightFormat::Q4_0.quantize_row(&weights(r, (rows * cols) as usize));
    let w = WeightLayout::Packed.pack(WeightFormat::Q4_0, &gguf);
    (w, activations(r, (op.max_batch * cols) as usize))
}

/// A coopmat gemm run: its grid, y before (`initial_y`) and after.
struct GemmRun {
    workgroups: [u32; 3],
    y0: Vec<f32>,
    y: Vec<f32>,
}

/// Runs `op`'s coopmat gemm over `n_rows` rows of x with output `out`, into a y of as
/// many copies of `max_batch × y_stride` floats as `out` has parts.
fn run_coopmat_gemm(
    gpu: &Gpu,
    op: &GemvBatched,
    (w, x): (&[u8], &[f32]),
    n_rows: u32,
    out: GemmOut,
) -> GemmRun {
    let y0 = initial_y(out.parts() * op.max_batch * op.y_stride, false);
    let (wb, xb, yb, pb) = (
        gpu.create_buffer_init("w", w).unwrap(),
        filled(gpu, "x", x),
        filled(gpu, "y", &y0),
        params(gpu, 0, n_rows),
    );
    let d = op
        .dispatch_gemm(GemmKind::Coopmat, gpu, &wb, &xb, &yb, &pb, out)
        .unwrap();
    let workgroups = d.workgroups;
    run(gpu, vec![d]);
    GemmRun {
        workgroups,
        y0,
        y: read_f32(gpu, &yb),
    }
}

/// K in parts: part p of y holds the product over the p-th columns, each part's rows
/// apart (`max_batch × y_stride` floats), for 64- and 128-wide tiles, whole and partial;
/// the dp4a gemm and column counts that are not whole 64-column steps a part are refused.
#[test]
fn gemm_in_k_parts_matches_its_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(31);
    let kind = GemmKind::Coopmat;
    let shape = |rows, cols, max_batch| q4_0_op((rows, cols), max_batch, (2, rows + 2));
    let b = gpu.create_buffer("b", 1 << 20).unwrap();
    let refused = |op: GemvBatched, kind, parts| {
        op.dispatch_gemm(kind, gpu, &b, &b, &b, &b, GemmOut::Parts(parts))
            .unwrap_err()
            .to_string()
    };
    let err = refused(shape(64, 192, 4), kind, 2);
    assert!(err.contains("whole 64-column steps"), "{err}");
    let err = refused(shape(64, 256, 4), GemmKind::Dp4a, 2);
    assert!(err.contains("coopmat"), "{err}");
    if kind.supported(gpu).is_err() {
        eprintln!("no cooperative matrices on this adapter: the refusals checked, not the kernel");
        return;
    }
    for (rows, cols, max_batch, n_rows, parts) in [
        (70u32, 256u32, 67u32, 67u32, 2u32),
        (4096, 512, 131, 128, 2),
        (4096, 512, 131, 131, 4),
    ] {
        let op = shape(rows, cols, max_batch);
        let (w, x) = q4_0_inputs(&mut r, &op);
        let part = (max_batch * op.y_stride) as usize;
        let ran = run_coopmat_gemm(gpu, &op, (&w, &x), n_rows, GemmOut::Parts(parts));
        assert_eq!(ran.workgroups[2], parts);
        let (got, mut want) = (ran.y, ran.y0);
        for p in 0..parts {
            let at = p as usize * part;
            op.cpu_f16_part(&w, &x, &mut want[at..], n_rows, false, (p, parts));
            assert_gemm_close(
                &format!("{rows}x{cols} n_rows {n_rows} part {p} of {parts}"),
                &got[at..at + part],
                &want[at..at + part],
                (op.y_stride, n_rows, 2, rows),
                2e-3,
            );
        }
    }
}

/// silu(gate) · up from the gate/up matrix: y gets the activation's columns, for 64- and
/// 128-wide tiles, up rows right after the gate rows or padded apart, partial tiles and
/// batches; the dp4a gemm and a matrix whose rows are not up_row + ffn are refused.
#[test]
fn gemm_silu_up_matches_its_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(32);
    let kind = GemmKind::Coopmat;
    let shape = |rows, max_batch, ffn| q4_0_op((rows, 128), max_batch, (1, ffn + 3));
    let b = gpu.create_buffer("b", 1 << 20).unwrap();
    let refused = |op: GemvBatched, kind, ffn, up_row| {
        op.dispatch_gemm(kind, gpu, &b, &b, &b, &b, GemmOut::SiluMul { ffn, up_row })
            .unwrap_err()
            .to_string()
    };
    let err = refused(shape(130, 4, 64), kind, 64, 64);
    assert!(err.contains("up_row + ffn"), "{err}");
    let err = refused(shape(128, 4, 64), GemmKind::Dp4a, 64, 64);
    assert!(err.contains("coopmat"), "{err}");
    if kind.supported(gpu).is_err() {
        eprintln!("no cooperative matrices on this adapter: the refusals checked, not the kernel");
        return;
    }
    for (ffn, up_row, max_batch, n_rows) in [
        (64u32, 64u32, 67u32, 67u32),
        (70, 72, 67, 5),
        (2080, 2080, 131, 128),
        (2048, 2048, 131, 131),
    ] {
        let op = shape(up_row + ffn, max_batch, ffn);
        let (w, x) = q4_0_inputs(&mut r, &op);
        let silu = GemmOut::SiluMul { ffn, up_row };
        let ran = run_coopmat_gemm(gpu, &op, (&w, &x), n_rows, silu);
        assert_eq!(
            ran.workgroups[0],
            (2 * ffn).div_ceil(op.gemm_tile(kind, gpu))
        );
        let mut want = ran.y0;
        op.cpu_f16_silu(&w, &x, &mut want, n_rows, (ffn, up_row));
        assert_gemm_close(
            &format!("silu(gate) · up, ffn {ffn}, up rows from {up_row}, n_rows {n_rows}"),
            &ran.y,
            &want,
            (op.y_stride, n_rows, 1, ffn),
            2e-3,
        );
    }
}

/// The coopmat gemm's CPU executor (what `check` and `replay` run for its dispatches)
/// follows its constants: K in parts writes each part's sum into its copy of y, and
/// silu(gate) · up writes the activation's columns, as the oracles the GPU tests compare
/// against. No GPU needed.
#[test]
fn the_coopmat_gemm_executor_follows_k_parts_and_silu_up() {
    use gpuscope_ops::exec::{executor, BindingData, Call, Output};
    let mut r = rng(33);
    let (rows, cols, max_batch, n_rows) = (96u32, 256u32, 5u32, 4u32);
    let op = |y_stride| q4_0_op((rows, cols), max_batch, (0, y_stride));
    let (w, x) = q4_0_inputs(&mut r, &op(rows));
    let shader = gpuscope_ops::gemv::gemm_shader(
        GemmKind::Coopmat,
        64,
        WeightFormat::Q4_0,
        WeightLayout::Packed,
    )
    .unwrap()
    .name;
    let run = |y_stride: u32, y_floats: u32, extra: &[(&str, f64)]| -> Vec<f32> {
        let mut constants: Vec<(String, f64)> = [
            ("ROWS", f64::from(rows)),
            ("COLS", f64::from(cols)),
            ("OUT_OFFSET", 0.0),
            ("ACCUMULATE", 0.0),
            ("Y_STRIDE", f64::from(y_stride)),
            ("MAX_BATCH", f64::from(max_batch)),
            (
                "SCALES_AT",
                f64::from(WeightLayout::scales_at(WeightFormat::Q4_0, rows, cols)),
            ),
        ]
        .iter()
        .chain(extra)
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
        constants.sort_by(|a, b| a.0.cmp(&b.0));
        let (xb, yb, pb): (Vec<u8>, Vec<u8>, Vec<u8>) = (
            bytemuck::cast_slice(&x).to_vec(),
            vec![0; 4 * y_floats as usize],
            bytemuck::cast_slice(&[0u32, n_rows, 0, 0]).to_vec(),
        );
        let bindings = [&w, &xb, &yb, &pb]
            .into_iter()
            .map(|bytes| BindingData { bytes, wide: None })
            .collect();
        let mut call = Call::<f32>::new(shader, &constants, bindings);
        executor(shader).unwrap().run(&mut call).unwrap();
        match call.into_outputs().pop() {
            Some((2, Output::Floats(y))) => y,
            other => panic!("{shader}: y not written: {other:?}"),
        }
    };
    let part = (max_batch * rows) as usize;
    let got = run(rows, 2 * max_batch * rows, &[("K_PARTS", 2.0)]);
    for p in 0..2u32 {
        let mut want = vec![0.0; part];
        op(rows).cpu_f16_part(&w, &x, &mut want, n_rows, false, (p, 2));
        let at = p as usize * part;
        assert_close(&format!("K part {p}"), &got[at..at + part], &want, 1e-6);
    }
    let (ffn, up_row) = (40u32, 56u32);
    let got = run(
        ffn,
        max_batch * ffn,
        &[
            ("SILU_UP", 1.0),
            ("FFN", f64::from(ffn)),
            ("UP_ROW", f64::from(up_row)),
        ],
    );
    let mut want = vec![0.0; (max_batch * ffn) as usize];
    op(ffn).cpu_f16_silu(&w, &x, &mut want, n_rows, (ffn, up_row));
    assert_close("silu(gate) · up", &got, &want, 1e-6);
    assert!(want[..(n_rows * ffn) as usize].iter().any(|&v| v != 0.0));
}

/// The coopmat gemm's shaders (both tiles) are valid WGSL for naga with cooperative
/// matrices and f16, uniform where the cooperative operations need it, and translate to
/// SPIR-V once their constants are set (wgpu's Vulkan path), on any machine: the adapters
/// that run them (tensor cores) are not in CI.
#[test]
fn gemm_coopmat_shaders_translate_to_spirv() {
    use gpuscope_ops::gemv::gemm_shaders;
    let shaders = gemm_shaders(GemmKind::Coopmat);
    assert_eq!(
        shaders.len(),
        20,
        "q4_0, q4_1, q8_0 in two layouts, q4_K, q5_K, q5_0 and q5_1 in GGUF bytes, two tiles"
    );
    for s in shaders {
        assert_coopmat_translates(
            s,
            &[
                ("ROWS", 70.0),
                ("COLS", 96.0),
                ("OUT_OFFSET", 3.0),
                ("ACCUMULATE", 1.0),
                ("Y_STRIDE", 75.0),
                ("MAX_BATCH", 67.0),
                ("SCALES_AT", 420.0),
            ],
        );
    }
}

/// The coopmat attention's shaders (every head size it is composed for) are valid WGSL
/// for naga with cooperative matrices, f16 and subgroups, and translate to SPIR-V, on any
/// machine: the adapters that run them are not in CI.
#[test]
fn attention_coopmat_shaders_translate_to_spirv() {
    let shaders = gpuscope_ops::attention::coopmat_shaders();
    assert_eq!(shaders.len(), 8, "head sizes 16, 32, ..., 128");
    // `ops test` judges them with the looser limits of kernels that round their inputs.
    assert!(!gpuscope_ops::attention::rounds_to_f16("attention_batched"));
    for s in shaders {
        assert!(gpuscope_ops::attention::rounds_to_f16(s.name), "{}", s.name);
        assert_coopmat_translates(
            s,
            &[
                ("N_HEADS", 32.0),
                ("N_KV_HEADS", 8.0),
                ("MAX_CTX", 300.0),
                ("SCALE", 0.125),
                ("Q_STRIDE", 6144.0),
                ("OUT_STRIDE", 4096.0),
                ("MAX_BATCH", 67.0),
            ],
        );
    }
}

/// `s` validates with cooperative matrices, f16 and subgroups, and translates to SPIR-V
/// with those of `constants` it declares set.
fn assert_coopmat_translates(s: &gpuscope_runtime::ShaderSource, constants: &[(&str, f64)]) {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(s.wgsl)
        .unwrap_or_else(|e| panic!("{}: {}", s.name, e.emit_to_string(s.wgsl)));
    let caps = Capabilities::COOPERATIVE_MATRIX
        | Capabilities::SHADER_FLOAT16
        | Capabilities::SHADER_FLOAT16_IN_FLOAT32
        | Capabilities::SUBGROUP;
    let info = Validator::new(ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{}: {}", s.name, e.emit_to_string(s.wgsl)));
    let mut set = naga::back::PipelineConstants::default();
    for (name, v) in constants {
        if s.wgsl.contains(&format!("override {name}")) {
            set.insert(name.to_string(), *v);
        }
    }
    let (module, info) =
        naga::back::pipeline_constants::process_overrides(&module, &info, None, &set)
            .unwrap_or_else(|e| panic!("{}: {e}", s.name));
    let words = naga::back::spv::write_vec(&module, &info, &Default::default(), None)
        .unwrap_or_else(|e| panic!("{}: {e}", s.name));
    assert!(
        words.len() > 100,
        "{}: {} SPIR-V words",
        s.name,
        words.len()
    );
}

/// Both forms of the batched rms_norm: rows of 300 floats (vec4s) and of 301 (scalars).
#[test]
fn rms_norm_batched_matches_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(12);
    let max_batch = 6u32;
    for (n, shader) in [(300u32, "rms_norm_batched.vec4"), (301, "rms_norm_batched")] {
        let x = activations(&mut r, (n * max_batch) as usize);
        let w = activations(&mut r, n as usize);
        for (last_only, n_rows) in [(false, 6), (false, 4), (true, 4), (true, 1)] {
            let op = RmsNormBatched {
                norm: RmsNorm { n, eps: 1e-5 },
                max_batch,
                last_only,
            };
            let out0 = vec![SENTINEL; (n * max_batch) as usize];
            let (xb, wb, ob, pb) = (
                filled(gpu, "x", &x),
                filled(gpu, "w", &w),
                filled(gpu, "out", &out0),
                params(gpu, 0, n_rows),
            );
            let d = op.dispatch(gpu, &xb, &wb, &ob, &pb).unwrap();
            assert_eq!(d.pipeline.shader(), shader);
            run(gpu, vec![d]);
            let mut want = out0.clone();
            op.cpu(&x, &w, &mut want, n_rows);
            assert_close(
                &format!("n {n} last_only {last_only} n_rows {n_rows}"),
                &read_f32(gpu, &ob),
                &want,
                1e-5,
            );
        }
    }
}

#[test]
fn silu_mul_batched_matches_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(13);
    let op = SiluMulBatched {
        n: 300,
        max_batch: 5,
        in_stride: 700,
        up_offset: 320,
    };
    let gu = activations(&mut r, 700 * 5);
    let out0 = vec![SENTINEL; 300 * 5];
    let (gb, ob, pb) = (
        filled(gpu, "gu", &gu),
        filled(gpu, "out", &out0),
        params(gpu, 0, 3),
    );
    run(gpu, vec![op.dispatch(gpu, &gb, &ob, &pb).unwrap()]);
    let mut want = out0.clone();
    op.cpu(&gu, &mut want, 3);
    assert_close("silu_mul batched", &read_f32(gpu, &ob), &want, 1e-5);
}

#[test]
fn gelu_mul_batched_matches_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(17);
    let op = GeluMulBatched {
        n: 300,
        max_batch: 5,
        in_stride: 700,
        up_offset: 320,
    };
    // Large |gate| too: the kernel clamps tanh's argument.
    let gu: Vec<f32> = activations(&mut r, 700 * 5)
        .into_iter()
        .enumerate()
        .map(|(i, v)| if i % 50 == 0 { v * 40.0 } else { v })
        .collect();
    let out0 = vec![SENTINEL; 300 * 5];
    let (gb, ob, pb) = (
        filled(gpu, "gu", &gu),
        filled(gpu, "out", &out0),
        params(gpu, 0, 3),
    );
    run(gpu, vec![op.dispatch(gpu, &gb, &ob, &pb).unwrap()]);
    let mut want = out0.clone();
    op.cpu(&gu, &mut want, 3);
    assert_close("gelu_mul batched", &read_f32(gpu, &ob), &want, 1e-5);
}

/// Rows of x added to rows of acc, and one bias row added to every row (q/k/v biases),
/// each with acc rows wider than what is added.
#[test]
fn add_batched_rows_and_bias_match_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(18);
    let (n, max_batch, acc_stride) = (300u32, 5u32, 310u32);
    let acc0 = activations(&mut r, (acc_stride * max_batch) as usize);
    for x_stride in [n, 0] {
        let op = AddBatched {
            n,
            max_batch,
            acc_stride,
            x_stride,
        };
        let x = activations(&mut r, (n * max_batch) as usize);
        let (ab, xb, pb) = (
            filled(gpu, "acc", &acc0),
            filled(gpu, "x", &x),
            params(gpu, 0, 3),
        );
        run(gpu, vec![op.dispatch(gpu, &ab, &xb, &pb).unwrap()]);
        let mut want = acc0.clone();
        op.cpu(&mut want, &x, 3);
        assert_ne!(want, acc0, "x_stride {x_stride}: the oracle added nothing");
        assert_close(
            &format!("add batched x_stride {x_stride}"),
            &read_f32(gpu, &ab),
            &want,
            0.0,
        );
    }
}

/// Each q and k head of each row normalized, with rows wider than their heads (the
/// q/k/v matrix's v part and padding left alone), rows past the batch untouched.
#[test]
fn head_norm_batched_matches_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(19);
    let norm = HeadNorm {
        n_heads: 4,
        n_kv_heads: 1,
        head_dim: 256,
        q_off: 0,
        k_off: 1024,
        eps: 1e-6,
    };
    let op = HeadNormBatched {
        norm,
        max_batch: 4,
        row_stride: 1024 + 2 * 256 + 8,
    };
    let qkv = activations(&mut r, (op.row_stride * 4) as usize);
    let (qw, kw) = (activations(&mut r, 256), activations(&mut r, 256));
    let (xb, qb, kb, pb) = (
        filled(gpu, "qkv", &qkv),
        filled(gpu, "q_norm", &qw),
        filled(gpu, "k_norm", &kw),
        params(gpu, 0, 3),
    );
    run(gpu, vec![op.dispatch(gpu, &xb, &qb, &kb, &pb).unwrap()]);
    let mut want = qkv.clone();
    op.cpu(&mut want, &qw, &kw, 3);
    assert_close("head_norm batched", &read_f32(gpu, &xb), &want, 1e-5);
}

#[test]
fn rope_batched_matches_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(14);
    let rope = Rope {
        n_heads: 4,
        n_kv_heads: 2,
        head_dim: 16,
        rope_dims: 16,
        base: 10000.0,
        max_ctx: 12,
        neox: false,
        ring: false,
    };
    let (q, kv) = (64u32, 32u32);
    // One qkv, and q/k/v as the sum of three parts (a gemm's K parts): the parts' sums
    // rotated, the q sum written over the first part, the other parts untouched. Rows of
    // a multiple of 4 floats take the vec4 kernel, others the scalar one; half the dims
    // rotated, the rest copied.
    for (qkv_parts, pad, rope_dims) in [(1u32, 4u32, 16u32), (3, 4, 16), (1, 4, 8), (3, 2, 16)] {
        let op = RopeBatched {
            rope: Rope { rope_dims, ..rope },
            max_batch: 6,
            qkv_stride: q + 2 * kv + pad,
            offsets: (0, q, q + kv),
            qkv_parts,
        };
        assert_eq!(op.takes_vec4(), pad == 4);
        let qkv = activations(&mut r, (qkv_parts * op.qkv_stride * 6) as usize);
        let cache0: Vec<f32> = activations(&mut r, (kv * 12) as usize);
        let [wq, _, wv] = rope_batched_checked(
            gpu,
            &op,
            (&qkv, &cache0),
            (3, 5),
            &format!("rope batched, {qkv_parts} parts, row pad {pad}, {rope_dims} dims rotated"),
        );
        if qkv_parts > 1 {
            let part = op.part_stride() as usize;
            assert_eq!(
                wq[part..],
                qkv[part..],
                "parts after the first are read only"
            );
            let (v0, v) = (op.offsets.2 as usize, kv as usize);
            let sum: f32 = (0..3).map(|p| qkv[p * part + v0]).sum();
            assert!(
                (wv[3 * v] - sum).abs() < 1e-6,
                "v of position 3: the parts' sum"
            );
        }
    }
}

/// NeoX rope into a ring cache (a sliding window's): positions past the ring's rows
/// land at `pos % rows`.
#[test]
fn rope_batched_neox_into_a_ring_matches_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(20);
    let rope = Rope {
        n_heads: 2,
        n_kv_heads: 1,
        head_dim: 16,
        rope_dims: 16,
        base: 10000.0,
        max_ctx: 4,
        neox: true,
        ring: true,
    };
    let op = RopeBatched {
        rope,
        max_batch: 3,
        qkv_stride: 32 + 2 * 16,
        offsets: (0, 32, 48),
        qkv_parts: 1,
    };
    let qkv = activations(&mut r, (op.qkv_stride * 3) as usize);
    let cache0: Vec<f32> = activations(&mut r, 16 * 4);
    let [_, _, wv] = rope_batched_checked(gpu, &op, (&qkv, &cache0), (6, 3), "ring rope");
    // Rows 2, 3 and 0 of the ring written; row 1 kept.
    assert_eq!(wv[16..32], cache0[16..32]);
    assert_ne!(wv[..16], cache0[..16]);
}

/// Runs `op` over `qkv` with both caches starting as `cache0`, rows `n_rows` from
/// position `pos0`, checks qkv and the caches against its oracle (v exactly where it is
/// copied from one part) and returns the oracle's [qkv, k cache, v cache].
fn rope_batched_checked(
    gpu: &Gpu,
    op: &RopeBatched,
    (qkv, cache0): (&[f32], &[f32]),
    (pos0, n_rows): (u32, u32),
    what: &str,
) -> [Vec<f32>; 3] {
    let (qb, kb, vb, pb) = (
        filled(gpu, "qkv", qkv),
        filled(gpu, "k", cache0),
        filled(gpu, "v", cache0),
        params(gpu, pos0, n_rows),
    );
    run(gpu, vec![op.dispatch(gpu, &pb, &qb, &kb, &vb).unwrap()]);
    let (mut wq, mut wk, mut wv) = (qkv.to_vec(), cache0.to_vec(), cache0.to_vec());
    op.cpu(pos0, n_rows, &mut wq, &mut wk, &mut wv);
    let v_tolerance = if op.qkv_parts == 1 { 0.0 } else { 1e-6 };
    assert_close(&format!("{what}: qkv"), &read_f32(gpu, &qb), &wq, 1e-5);
    assert_close(&format!("{what}: k cache"), &read_f32(gpu, &kb), &wk, 1e-5);
    assert_close(
        &format!("{what}: v cache"),
        &read_f32(gpu, &vb),
        &wv,
        v_tolerance,
    );
    [wq, wk, wv]
}

#[test]
fn attention_batched_is_causal_and_matches_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(15);
    // Grouped heads of 16 dims; Gemma 3's 4 heads of 256 dims over one KV head; SmolLM2's
    // three query heads per KV head; a head per KV head; seven (Qwen2.5 0.5B).
    for (n_heads, n_kv_heads, head_dim) in
        [(4, 2, 16), (4, 1, 256), (6, 2, 64), (2, 2, 32), (7, 1, 32)]
    {
        let op = attention_op((n_heads, n_kv_heads, head_dim), 6, false);
        let q = activations(&mut r, (op.q_stride * 6) as usize);
        let kv = (n_kv_heads * head_dim * 300) as usize;
        let (k, v) = (activations(&mut r, kv), activations(&mut r, kv));
        // Rows past the batch's last position hold garbage the causal mask must skip;
        // partial tiles of four rows (6, 1) and contexts past one chunk of 256.
        for (pos0, n_rows) in [(0, 6), (290, 4), (250, 1)] {
            let (shader, got, want) = run_attention(gpu, &op, (pos0, n_rows), [&q, &k, &v]);
            assert_eq!(shader, "attention_batched");
            if let Some(e) = attention_rows_error(
                &format!("attention head_dim {head_dim} pos0 {pos0} n_rows {n_rows}"),
                &op,
                n_rows,
                &got,
                &want,
                1e-4,
            ) {
                panic!("{e}");
            }
        }
    }
}

/// A batched attention over a 300-row cache, q rows 40 floats longer than the heads and
/// out rows 4 (padding the kernels must leave alone).
fn attention_op(
    (n_heads, n_kv_heads, head_dim): (u32, u32, u32),
    max_batch: u32,
    coopmat: bool,
) -> AttnBatched {
    let hq = n_heads * head_dim;
    AttnBatched {
        attn: AttnFused {
            n_heads,
            n_kv_heads,
            head_dim,
            max_ctx: 300,
        },
        max_batch,
        q_stride: hq + 40,
        out_stride: hq + 4,
        coopmat,
    }
}

/// Runs `op` on rows `n_rows` from `pos0` over out rows of SENTINEL: the kernel's name,
/// its output and the oracle's.
fn run_attention(
    gpu: &Gpu,
    op: &AttnBatched,
    (pos0, n_rows): (u32, u32),
    [q, k, v]: [&[f32]; 3],
) -> (String, Vec<f32>, Vec<f32>) {
    let out0 = vec![SENTINEL; (op.out_stride * op.max_batch) as usize];
    let (pb, qb, kb, vb, ob) = (
        params(gpu, pos0, n_rows),
        filled(gpu, "q", q),
        filled(gpu, "k", k),
        filled(gpu, "v", v),
        filled(gpu, "out", &out0),
    );
    let d = op.dispatch(gpu, &pb, &qb, &kb, &vb, &ob).unwrap();
    let shader = d.pipeline.shader().to_string();
    run(gpu, vec![d]);
    let mut want = out0;
    op.cpu(pos0, n_rows, q, k, v, &mut want);
    (shader, read_f32(gpu, &ob), want)
}

/// A batched attention's output against its oracle's: the heads of rows below `n_rows`
/// within `rel` of the largest of them, everything else (each row's padding, the rows
/// past the batch) still SENTINEL. The error, if not.
fn attention_rows_error(
    what: &str,
    op: &AttnBatched,
    n_rows: u32,
    got: &[f32],
    want: &[f32],
    rel: f32,
) -> Option<String> {
    let hq = (op.attn.n_heads * op.attn.head_dim) as usize;
    let stride = op.out_stride as usize;
    let heads = |i: usize| i / stride < n_rows as usize && i % stride < hq;
    let scale = (0..want.len())
        .filter(|&i| heads(i))
        .fold(0f32, |m, i| m.max(want[i].abs()));
    let mut wrong = Vec::new();
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if heads(i) {
            if (g - w).abs() > rel * scale + 1e-5 {
                wrong.push(format!(
                    "row {} dim {}: gpu {g} vs oracle {w}",
                    i / stride,
                    i % stride
                ));
            }
        } else if *g != SENTINEL {
            wrong.push(format!(
                "row {} col {} (padding or past the batch) written: {g}",
                i / stride,
                i % stride
            ));
        }
    }
    (!wrong.is_empty()).then(|| {
        format!(
            "{what}: {} elements wrong (scale {scale}), first: {}",
            wrong.len(),
            wrong[..wrong.len().min(6)].join("; ")
        )
    })
}

/// The prompt's attention on cooperative matrices (`coopmat.wgsl`, tensor cores) against
/// the exact oracle, within its f16 rounding of q, k, v and the weights: head sizes 16 to
/// 128 (96: Phi-3's, not a power of two), grouped and single KV heads, two tiles of 64
/// rows and a part of one, contexts clamped at the cache's end (rows from position 290 of
/// 300), one row; keys of a normal spread and keys growing along the cache (the kernel's
/// rescaled outputs). Rows past the batch keep their contents. Only where wgpu offers
/// cooperative matrices (NVIDIA): the device runs of this binary are what test it.
#[test]
fn attention_coopmat_matches_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(17);
    let max_batch = 70u32;
    // Every shape and batch is run before failing, so that one run shows which fail.
    let mut failures = Vec::new();
    for (n_heads, n_kv_heads, head_dim) in
        [(4, 2, 16), (6, 2, 64), (7, 1, 32), (8, 2, 128), (3, 1, 96)]
    {
        let op = attention_op((n_heads, n_kv_heads, head_dim), max_batch, true);
        if let Err(why) = op.coopmat_supported(gpu) {
            eprintln!("skipping the coopmat attention: {why}");
            return;
        }
        let q = activations(&mut r, (op.q_stride * max_batch) as usize);
        let kv = (n_kv_heads * head_dim * 300) as usize;
        let (k, v) = (activations(&mut r, kv), activations(&mut r, kv));
        // Keys growing along the cache (key j times 1 + j / 40): later tiles' scores pass
        // the first tile's by more than the kernel's LAG, so rows rescale their outputs.
        // Scores that large magnify the f16 rounding of q, k and v (a numpy model of the
        // kernel's rounding puts keys times 1 + j / 10 at 5e-3 of the oracle), so these
        // keys and values are given as f16 values: what is left is q's and the weights'.
        let row = (n_kv_heads * head_dim) as usize;
        let as_f16 = |x: f32| half::f16::from_f32(x).to_f32();
        let growing: Vec<f32> = k
            .iter()
            .enumerate()
            .map(|(i, x)| as_f16(x * (1.0 + (i / row) as f32 / 40.0)))
            .collect();
        let v_f16: Vec<f32> = v.iter().map(|&x| as_f16(x)).collect();
        for (keys, k, v) in [("", &k, &v), (", keys growing", &growing, &v_f16)] {
            for (pos0, n_rows) in [(0, 70), (290, 5), (100, 1), (0, 64)] {
                let (shader, got, want) = run_attention(gpu, &op, (pos0, n_rows), [&q, k, v]);
                assert_eq!(shader, format!("attention_coopmat.d{head_dim}"));
                failures.extend(attention_rows_error(
                    &format!(
                        "coopmat attention head_dim {head_dim} pos0 {pos0} n_rows {n_rows}{keys}"
                    ),
                    &op,
                    n_rows,
                    &got,
                    &want,
                    4e-3,
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn embedding_batched_every_format_matches_oracle() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(16);
    let (rows, dim, max_batch) = (20u32, 256u32, 7u32);
    for (i, format) in WeightFormat::ALL.into_iter().enumerate() {
        // Every other format scaled (Gemma's embeddings times √dim).
        let scale = if i % 2 == 0 { 1.0 } else { 640f32.sqrt() };
        let table = format.quantize_row(&weights(&mut r, (rows * dim) as usize));
        // A chunk of the table starting at token 100: other tokens are left alone.
        let emb = Embedding {
            rows,
            dim,
            format,
            row_start: 100,
        };
        let op = EmbeddingBatched { emb, max_batch };
        let tokens = [100u32, 119, 5, 107, 107, 250, 101];
        let n_rows = 6;
        let out0 = vec![SENTINEL; (dim * max_batch) as usize];
        let (tb, kb, ob, pb) = (
            gpu.create_buffer_init("table", &table).unwrap(),
            gpu.create_buffer_init("tokens", bytemuck::cast_slice(&tokens))
                .unwrap(),
            filled(gpu, "out", &out0),
            params(gpu, 0, n_rows),
        );
        let d = op.dispatch_scaled(gpu, &tb, &kb, &ob, &pb, scale).unwrap();
        run(gpu, vec![d]);
        let mut want = out0.clone();
        op.cpu_scaled(&table, &tokens[..n_rows as usize], &mut want, scale);
        assert_close(
            &format!("embedding batched {format:?} scale {scale}"),
            &read_f32(gpu, &ob),
            &want,
            0.0,
        );
    }
}

/// The executors of the batched kernels every architecture's prefill added (what
/// `check` and `replay` run for them) against the GPU: each dispatch run once, its
/// executor run on the bindings as they were before, every output the executor writes
/// compared with the GPU's.
#[test]
fn architecture_batched_kernels_match_their_executors() {
    use gpuscope_ops::exec::{executor, BindingData, Call, Output};
    use gpuscope_runtime::{Dispatch, Graph, Section};
    let Some(gpu) = gpu() else { return };
    let mut r = rng(21);
    let mut buf = |label: &str, n: usize| filled(gpu, label, &activations(&mut r, n));
    let pb = params(gpu, 6, 3);
    let (qkv, stride) = (buf("qkv", 4 * 64), 64u32);
    let (acc, x, bias) = (buf("acc", 4 * 40), buf("x", 4 * 40), buf("bias", 40));
    let (qn, kn) = (buf("q_norm", 16), buf("k_norm", 16));
    let gu = buf("gate_up", 4 * 70);
    let out = buf("out", 4 * 30);
    let (kc, vc) = (buf("k_cache", 16 * 4), buf("v_cache", 16 * 4));
    let rope = Rope {
        n_heads: 2,
        n_kv_heads: 1,
        head_dim: 16,
        rope_dims: 16,
        base: 10000.0,
        max_ctx: 4,
        neox: true,
        ring: true,
    };
    let dispatches: Vec<Dispatch> = vec![
        AddBatched {
            n: 40,
            max_batch: 4,
            acc_stride: 40,
            x_stride: 40,
        }
        .dispatch(gpu, &acc, &x, &pb)
        .unwrap(),
        AddBatched {
            n: 40,
            max_batch: 4,
            acc_stride: 40,
            x_stride: 0,
        }
        .dispatch(gpu, &acc, &bias, &pb)
        .unwrap(),
        GeluMulBatched {
            n: 30,
            max_batch: 4,
            in_stride: 70,
            up_offset: 35,
        }
        .dispatch(gpu, &gu, &out, &pb)
        .unwrap(),
        HeadNormBatched {
            norm: HeadNorm {
                n_heads: 2,
                n_kv_heads: 1,
                head_dim: 16,
                q_off: 0,
                k_off: 32,
                eps: 1e-6,
            },
            max_batch: 4,
            row_stride: stride,
        }
        .dispatch(gpu, &qkv, &qn, &kn, &pb)
        .unwrap(),
        RopeBatched {
            rope,
            max_batch: 4,
            qkv_stride: stride,
            offsets: (0, 32, 48),
            qkv_parts: 1,
        }
        .dispatch(gpu, &pb, &qkv, &kc, &vc)
        .unwrap(),
    ];
    for d in dispatches {
        let shader = d.pipeline.shader().to_string();
        let before: Vec<Vec<u8>> = d
            .bind_group
            .bindings()
            .iter()
            .map(|b| gpu.read_buffer(b).unwrap())
            .collect();
        gpu.run_once(&Graph {
            sections: vec![Section::new("test", None, vec![d.clone()])],
        })
        .unwrap();
        let bindings = before
            .iter()
            .map(|bytes| BindingData { bytes, wide: None })
            .collect();
        let mut call = Call::<f32>::new(&shader, d.pipeline.constants(), bindings);
        executor(&shader).unwrap().run(&mut call).unwrap();
        let outputs = call.into_outputs();
        assert!(!outputs.is_empty(), "{shader}: the executor wrote nothing");
        for (b, o) in outputs {
            let Output::Floats(want) = o else {
                panic!("{shader}: binding {b} written as words");
            };
            let got = read_f32(gpu, &d.bind_group.bindings()[b as usize]);
            assert_close(&format!("{shader} binding {b}"), &got, &want, 1e-5);
        }
    }
}
