//! Weight formats (bit-exact with ggml), gemv and embedding: GPU against the CPU oracle for
//! every format × a spread of shapes.

use gpuscope_ops::embedding::Embedding;
use gpuscope_ops::gemv::{Gemv, GemvTuning, GemvVariant, MAX_ROWS_PER_THREAD, WORKGROUP_SIZE};
use gpuscope_ops::quant::{QuantError, WeightFormat};
use gpuscope_runtime::Gpu;
use half::f16;
use rand::rngs::StdRng;

use crate::common;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

use crate::common::{activations, f32_bytes, read_f32, run, weights};

/// GPU-vs-oracle tolerance relative to Σ|w·x| of the row. Both sides use the same
/// dequantized weights, so the difference is f32 summation order only: the oracle sums
/// columns left to right (error up to ~n·2^-24·Σ|w·x|, ~√n·2^-24 typically: 2e-6 for
/// n = 1536), the GPU per lane then as a tree, and the quantized kernels scale by d once
/// per block. q4_1 also rewrites Σ(q·d + m)·x as d·Σq·x + m·Σx, whose two terms can each
/// exceed Σ|w·x| when a block's minimum is large, so it gets more room, as do q4_K and
/// q5_K, rewritten the same way per sub-block (d·sc·Σq·x − dmin·m·Σx).
pub(crate) fn rel_tol(format: WeightFormat) -> f32 {
    match format {
        WeightFormat::F32
        | WeightFormat::F16
        | WeightFormat::BF16
        | WeightFormat::Q8_0
        | WeightFormat::Q4_0
        | WeightFormat::Q6_K => 3e-5,
        WeightFormat::Q4_1
        | WeightFormat::Q5_1
        | WeightFormat::Q5_0
        | WeightFormat::Q4_K
        | WeightFormat::Q5_K => 1e-4,
    }
}

/// Σ_c |W[r,c]·x[c]| for every row, from the dequantized weights.
pub(crate) fn abs_dots(
    format: WeightFormat,
    w: &[u8],
    rows: usize,
    cols: usize,
    x: &[f32],
) -> Vec<f32> {
    let rb = format.row_bytes(cols as u64).unwrap() as usize;
    let mut row = vec![0.0f32; cols];
    (0..rows)
        .map(|r| {
            format.dequantize_row(&w[r * rb..][..rb], &mut row);
            row.iter().zip(x).map(|(a, b)| (a * b).abs()).sum()
        })
        .collect()
}

pub(crate) fn assert_close(
    what: &str,
    format: WeightFormat,
    got: &[f32],
    want: &[f32],
    scale: &[f32],
) {
    let tol = rel_tol(format);
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (r, ((g, w), s)) in got.iter().zip(want).zip(scale).enumerate() {
        // A NaN or infinity fails outright, not only through a comparison NaN makes false.
        assert!(
            g.is_finite(),
            "{what}: row {r}: gpu value {g} is not finite (oracle {w})"
        );
        assert!(
            *s > 0.0,
            "{what}: row {r} has Σ|w·x| = 0: the test input is degenerate"
        );
        let err = (g - w).abs();
        assert!(
            err <= tol * s,
            "{what}: row {r}: gpu {g} vs oracle {w}: |err| {err:e} > {tol:e} · Σ|w·x| {s:e}"
        );
    }
}

pub(crate) struct GemvCase {
    pub(crate) gemv: Gemv,
    pub(crate) w: Vec<u8>,
    pub(crate) x: Vec<f32>,
}

impl GemvCase {
    pub(crate) fn new(rng: &mut StdRng, format: WeightFormat, rows: u32, cols: u32) -> GemvCase {
        let w = format.quantize_row(&weights(rng, rows as usize * cols as usize));
        let x = activations(rng, cols as usize);
        GemvCase {
            gemv: Gemv {
                rows,
                cols,
                format,
                out_offset: 0,
                layout: gpuscope_ops::gemv::WeightLayout::Gguf,
            },
            w,
            x,
        }
    }

    fn name(&self) -> String {
        format!(
            "{} {}x{}",
            self.gemv.op_name(),
            self.gemv.rows,
            self.gemv.cols
        )
    }

    /// Runs on the GPU with `tuning` (None = the default) and checks against the oracle.
    pub(crate) fn check(&self, gpu: &Gpu, tuning: Option<GemvTuning>) {
        let g = self.gemv;
        // `w` holds the GGUF bytes; the buffer (and the oracle) get them in g's layout.
        let stored = g.layout.pack(g.format, &self.w);
        let wb = gpu.create_buffer_init("w", &stored).unwrap();
        let xb = gpu.create_buffer_init("x", &f32_bytes(&self.x)).unwrap();
        let yb = gpu.create_buffer("y", u64::from(g.rows) * 4).unwrap();
        let d = match tuning {
            None => g.dispatch(gpu, &wb, &xb, &yb),
            Some(t) => g.dispatch_with(gpu, &wb, &xb, &yb, t),
        }
        .unwrap_or_else(|e| panic!("{}: {e}", self.name()));
        run(gpu, vec![d]);
        let got = read_f32(gpu, &yb);
        let mut want = vec![0.0f32; g.rows as usize];
        // The dp4a kernels compute with x quantized to int8 blocks: so does their oracle.
        let x = match tuning {
            Some(t) if t.variant.quantizes_x() => gpuscope_ops::gemv::q8_blocks(&self.x),
            _ => self.x.clone(),
        };
        g.cpu(&stored, &x, &mut want);
        let scale = abs_dots(g.format, &self.w, g.rows as usize, g.cols as usize, &self.x);
        let what = format!("{} ({tuning:?})", self.name());
        assert_close(&what, g.format, &got[..g.rows as usize], &want, &scale);
    }
}

// ---------------------------------------------------------------------------------------
// Formats
// ---------------------------------------------------------------------------------------

#[test]
fn format_table_matches_ggml() {
    use WeightFormat::*;
    let expect = [
        (F32, "f32", 1, 4, 0),
        (F16, "f16", 1, 2, 1),
        (Q8_0, "q8_0", 32, 34, 8),
        (Q4_0, "q4_0", 32, 18, 2),
        (Q4_1, "q4_1", 32, 20, 3),
        (BF16, "bf16", 1, 2, 30),
        (Q4_K, "q4_k", 256, 144, 12),
        (Q5_K, "q5_k", 256, 176, 13),
        (Q6_K, "q6_k", 256, 210, 14),
        (Q5_0, "q5_0", 32, 22, 6),
        (Q5_1, "q5_1", 32, 24, 7),
    ];
    assert_eq!(WeightFormat::ALL.len(), expect.len());
    for (f, name, be, bb, id) in expect {
        assert_eq!(
            (f.name(), f.block_elems(), f.block_bytes(), f.ggml_type_id()),
            (name, be, bb, id)
        );
        assert_eq!(name.parse::<WeightFormat>(), Ok(f));
    }
    assert_eq!(Q4_1.row_bytes(576), Ok(18 * 20));
    assert_eq!(
        Q8_0.row_bytes(100),
        Err(QuantError::RaggedRow {
            format: Q8_0,
            cols: 100,
            block_elems: 32
        })
    );
}

/// x[j] = j − 16: amax = 16 at j = 0 (negative), so d = −16/−8 = 2 and q = ⌊x/2 + 8.5⌋,
/// i.e. q_j = ⌊(j + 1)/2⌋, with j = 31 clamped from 16 to 15.
#[test]
fn q4_0_block_by_hand() {
    let x: Vec<f32> = (0..32).map(|j| j as f32 - 16.0).collect();
    let mut want = vec![0x00, 0x40]; // f16 2.0
    want.extend([
        0x80, 0x91, 0x91, 0xA2, 0xA2, 0xB3, 0xB3, 0xC4, 0xC4, 0xD5, 0xD5, 0xE6, 0xE6, 0xF7, 0xF7,
        0xF8,
    ]);
    let got = WeightFormat::Q4_0.quantize_row(&x);
    assert_eq!(got, want);
    let mut back = [0.0f32; 32];
    WeightFormat::Q4_0.dequantize_row(&got, &mut back);
    for (j, v) in back.iter().enumerate() {
        let q = j.div_ceil(2).min(15) as f32;
        assert_eq!(*v, (q - 8.0) * 2.0, "element {j}");
    }
}

/// amax = 127, so d = 1 and q = roundf(x): ties go away from zero (−0.5 → −1, 2.5 → 3),
/// unlike round-half-even.
#[test]
fn q8_0_block_by_hand() {
    let mut x: Vec<f32> = (0..32).map(|j| j as f32 - 16.0).collect();
    x[0] = 127.0;
    x[1] = -0.5;
    x[2] = 2.5;
    x[3] = -100.4;
    let got = WeightFormat::Q8_0.quantize_row(&x);
    let mut want = vec![0x00, 0x3C]; // f16 1.0
    let q: Vec<i8> = (0..32)
        .map(|j| match j {
            0 => 127,
            1 => -1,
            2 => 3,
            3 => -100,
            j => j as i8 - 16,
        })
        .collect();
    want.extend(q.iter().map(|&v| v as u8));
    assert_eq!(got, want);
}

/// min = −1, max = 14: d = 1, m = −1, q = (int8_t)(x + 1 + 0.5): q_j = j mod 16, except
/// x[2] = −0.5 (q = 1, the 0.5 rounds up) and x[18] = 1.49 (q = 2, truncation).
#[test]
fn q4_1_block_by_hand() {
    let mut x: Vec<f32> = (0..32).map(|j| (j % 16) as f32 - 1.0).collect();
    x[2] = -0.5;
    x[18] = 1.49;
    let got = WeightFormat::Q4_1.quantize_row(&x);
    let mut want = vec![0x00, 0x3C, 0x00, 0xBC]; // f16 1.0, f16 −1.0
    want.extend((0..16u8).map(|j| j | (j << 4)));
    want[4 + 2] = 0x21;
    assert_eq!(got, want);
}

#[test]
fn float_formats_are_little_endian_ieee() {
    let x = [1.0f32, -2.5, 65504.0, 1e-3];
    let f16b = WeightFormat::F16.quantize_row(&x);
    assert_eq!(&f16b[..6], &[0x00, 0x3C, 0x00, 0xC1, 0xFF, 0x7B]);
    let f32b = WeightFormat::F32.quantize_row(&x);
    assert_eq!(f32b, f32_bytes(&x));
    let mut back = [0.0f32; 4];
    WeightFormat::F32.dequantize_row(&f32b, &mut back);
    assert_eq!(back, x);
    WeightFormat::F16.dequantize_row(&f16b, &mut back);
    assert_eq!(back[3], f16::from_f32(1e-3).to_f32());
}

/// A block of zeros has d = 0; ggml's `id = d ? 1/d : 0` keeps it from becoming NaN.
/// 256 elements: a whole number of blocks of every format, the K formats included.
#[test]
fn zero_block_round_trips_to_zero() {
    for f in WeightFormat::ALL {
        let bytes = f.quantize_row(&[0.0; 256]);
        let mut back = [1.0f32; 256];
        f.dequantize_row(&bytes, &mut back);
        assert!(back.iter().all(|v| *v == 0.0), "{f}: {back:?}");
    }
}

/// Per-element error bounds, from how each quantizer rounds. d is the block's f32 scale;
/// storing d or m as f16 adds `f16_err` (2^-11 relative, or 2^-25 absolute once the value
/// is an f16 subnormal, below 2^-14: a q8_0 block of weights under 0.008 has one), scaled
/// by the largest |q| that multiplies it:
/// q8_0 |e| ≤ d/2 + 127·f16_err(d); q4_0 |e| ≤ |d| (the clamp at 15 of −max) + 8·f16_err(d);
/// q4_1 |e| ≤ d/2 + 15·f16_err(d) + f16_err(min); f16 f16_err(x); bf16 |x|·2^-8 (half
/// an ulp of an 8-bit significand); f32 exact. The K formats' bounds are per sub-block,
/// with quantized scales: see `kquants.rs`.
#[test]
fn round_trip_error_within_format_bounds() {
    let mut rng = common::rng(1);
    let f16_err = |v: f32| (v.abs() * 2f32.powi(-11)).max(2f32.powi(-25));
    let bf16_err = |v: f32| v.abs() * 2f32.powi(-8);
    for scale in [1e-3f32, 0.02, 1.0, 300.0] {
        let mut x: Vec<f32> = weights(&mut rng, 32 * 64)
            .iter()
            .map(|v| v / 0.02 * scale)
            .collect();
        // One block entirely positive and offset: q4_1's m matters there.
        x[..32].iter_mut().for_each(|v| *v = v.abs() + scale * 3.0);
        for f in WeightFormat::ALL {
            if f.block_elems() > 32 {
                continue;
            }
            let bytes = f.quantize_row(&x);
            assert_eq!(bytes.len() as u64, f.row_bytes(x.len() as u64).unwrap());
            let mut back = vec![0.0f32; x.len()];
            f.dequantize_row(&bytes, &mut back);
            for (b, (xs, bs)) in x.chunks(32).zip(back.chunks(32)).enumerate() {
                let amax = xs.iter().fold(0.0f32, |a, v| a.max(v.abs()));
                let min = xs.iter().copied().fold(f32::MAX, f32::min);
                let max = xs.iter().copied().fold(f32::MIN, f32::max);
                for (j, (v, r)) in xs.iter().zip(bs).enumerate() {
                    let bound = match f {
                        WeightFormat::F32 => 0.0,
                        WeightFormat::F16 => f16_err(*v),
                        WeightFormat::BF16 => bf16_err(*v),
                        WeightFormat::Q4_K | WeightFormat::Q5_K | WeightFormat::Q6_K => {
                            unreachable!("skipped above")
                        }
                        WeightFormat::Q8_0 => {
                            let d = amax / 127.0;
                            d * 0.5 + 127.0 * f16_err(d)
                        }
                        WeightFormat::Q4_0 => {
                            let d = amax / 8.0;
                            d + 8.0 * f16_err(d)
                        }
                        WeightFormat::Q4_1 => {
                            let d = (max - min) / 15.0;
                            d * 0.5 + 15.0 * f16_err(d) + f16_err(min)
                        }
                        WeightFormat::Q5_0 => {
                            let d = amax / 16.0;
                            d + 16.0 * f16_err(d)
                        }
                        WeightFormat::Q5_1 => {
                            let d = (max - min) / 31.0;
                            d * 0.5 + 31.0 * f16_err(d) + f16_err(min)
                        }
                    };
                    // 1e-6 relative slack for the f32 arithmetic of the quantizer itself.
                    let bound = bound * (1.0 + 1e-5) + amax * 1e-6;
                    assert!(
                        (v - r).abs() <= bound,
                        "{f} scale {scale}: block {b} element {j}: {v} -> {r}, |err| {} > {bound}",
                        (v - r).abs()
                    );
                }
            }
        }
    }
}

/// q8_0 is a fixed point of itself: re-quantizing dequantized values gives the same bytes
/// (amax' = 127·d₁₆, so d' rounds back to d₁₆ and every q is recovered exactly).
#[test]
fn q8_0_requantize_is_stable() {
    let mut rng = common::rng(2);
    let x = weights(&mut rng, 32 * 32);
    let bytes = WeightFormat::Q8_0.quantize_row(&x);
    let mut back = vec![0.0f32; x.len()];
    WeightFormat::Q8_0.dequantize_row(&bytes, &mut back);
    assert_eq!(WeightFormat::Q8_0.quantize_row(&back), bytes);
}

// ---------------------------------------------------------------------------------------
// gemv
// ---------------------------------------------------------------------------------------

#[test]
fn gemv_names_and_cost() {
    let g = Gemv {
        rows: 576,
        cols: 1536,
        format: WeightFormat::Q4_1,
        out_offset: 0,
        layout: gpuscope_ops::gemv::WeightLayout::Gguf,
    };
    assert_eq!(g.op_name(), "gemv_q4_1");
    let c = g.cost();
    assert_eq!(c.flops, 2 * 576 * 1536);
    assert_eq!(c.bytes, 576 * (1536 / 32) * 20 + 1536 * 4 + 576 * 4);
    for f in WeightFormat::ALL {
        let g = Gemv { format: f, ..g };
        assert_eq!(g.op_name(), format!("gemv_{}", f.name()));
    }
}

#[test]
fn gemv_cpu_oracle_by_hand() {
    // 2×32 q8_0 with d = 1: rows are exactly representable, dot products are integers.
    let mut w: Vec<f32> = (0..32).map(|j| (j % 5) as f32).collect();
    w[0] = 127.0;
    w.extend((0..32).map(|j| -((j % 3) as f32)));
    w[32] = -127.0;
    let bytes = WeightFormat::Q8_0.quantize_row(&w);
    let x: Vec<f32> = (0..32)
        .map(|j| if j % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let g = Gemv {
        rows: 2,
        cols: 32,
        format: WeightFormat::Q8_0,
        out_offset: 1,
        layout: gpuscope_ops::gemv::WeightLayout::Gguf,
    };
    let mut y = [9.0f32; 4];
    g.cpu(&bytes, &x, &mut y);
    let want = |r: &[f32]| r.iter().zip(&x).map(|(a, b)| a * b).sum::<f32>();
    assert_eq!(y, [9.0, want(&w[..32]), want(&w[32..]), 9.0]);
}

/// Every format × cols {32, 64, 576, 1536} × rows {1, 7, 64, 576}, plus odd cols for the
/// float formats (f16 rows then start mid-word). Widths that are not a whole number of a
/// format's blocks are skipped (the K formats' 256: `kquants.rs` has their shapes).
#[test]
fn gemv_matches_oracle_all_formats_and_shapes() {
    let Some(gpu) = common::gpu() else { return };
    eprintln!("gemv on {:?}", gpu.adapter_info());
    let mut rng = common::rng(10);
    for format in WeightFormat::ALL {
        let mut shapes: Vec<(u32, u32)> = Vec::new();
        for cols in [32, 64, 576, 1536] {
            if cols % format.block_elems() != 0 {
                continue;
            }
            for rows in [1, 7, 64, 576] {
                shapes.push((rows, cols));
            }
        }
        if !format.is_quantized() {
            shapes.extend([(7, 33), (5, 1), (64, 577)]);
        }
        for (rows, cols) in shapes {
            GemvCase::new(&mut rng, format, rows, cols).check(gpu, None);
        }
    }
}

/// Every lane count the reduction supports and every rows-per-lane. 576 columns are 72
/// units for the block formats (8 elements each), so wide lane counts leave some lanes
/// idle and narrow ones loop; 37 rows leave the last workgroup's row groups partly past
/// the end. Odd widths for the float formats put f16 rows mid-word on every other row.
#[test]
fn gemv_every_tuning() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(11);
    for format in WeightFormat::ALL {
        if 576 % format.block_elems() != 0 {
            continue; // K formats: kquants.rs sweeps their tunings.
        }
        let mut cases = vec![GemvCase::new(&mut rng, format, 37, 576)];
        if !format.is_quantized() {
            cases.push(GemvCase::new(&mut rng, format, 37, 33));
        }
        for case in &cases {
            for tuning in common::tunings(GemvVariant::Shared, WORKGROUP_SIZE) {
                case.check(gpu, Some(tuning));
            }
        }
    }
}

/// The default tuning of lm_head-like and square shapes (several rows per lane, fewer
/// lanes) against the oracle, not only the small shapes above.
#[test]
fn gemv_default_tuning_on_large_shapes() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(14);
    for format in WeightFormat::ALL {
        for (rows, cols) in [(4099, 64), (8200, 96), (33000, 32)] {
            if cols % format.block_elems() != 0 {
                continue; // K formats: kquants.rs
            }
            let case = GemvCase::new(&mut rng, format, rows, cols);
            assert!(case.gemv.default_tuning().rows_per_thread > 1);
            case.check(gpu, None);
        }
    }
}

#[test]
fn gemv_rejects_bad_threads_per_row_and_small_buffers() {
    let Some(gpu) = common::gpu() else { return };
    let g = Gemv {
        rows: 4,
        cols: 64,
        format: WeightFormat::Q4_0,
        out_offset: 2,
        layout: gpuscope_ops::gemv::WeightLayout::Gguf,
    };
    let w = gpu.create_buffer("w", g.weight_bytes()).unwrap();
    let x = gpu.create_buffer("x", 64 * 4).unwrap();
    let y = gpu.create_buffer("y", 6 * 4).unwrap();
    assert!(g.dispatch(gpu, &w, &x, &y).is_ok());
    let tuned = |threads_per_row, rows_per_thread| GemvTuning {
        variant: GemvVariant::Shared,
        threads_per_row,
        rows_per_thread,
    };
    assert!(g.dispatch_with(gpu, &w, &x, &y, tuned(3, 1)).is_err());
    assert!(g.dispatch_with(gpu, &w, &x, &y, tuned(512, 1)).is_err());
    assert!(g.dispatch_with(gpu, &w, &x, &y, tuned(32, 0)).is_err());
    assert!(g
        .dispatch_with(gpu, &w, &x, &y, tuned(32, MAX_ROWS_PER_THREAD + 1))
        .is_err());
    let short_y = gpu.create_buffer("y", 5 * 4).unwrap();
    let err = g.dispatch(gpu, &w, &x, &short_y).unwrap_err().to_string();
    assert!(
        err.contains("gemv_q4_0") && err.contains("needs 24"),
        "{err}"
    );
    let ragged = Gemv { cols: 48, ..g };
    assert!(ragged.dispatch(gpu, &w, &x, &y).is_err());
}

/// More than 65535 workgroups (one row each) needs the 2-D grid; 70001 rows gives a grid
/// of 2 × 35001 with one spare workgroup that must write nothing. q4_0 with 32 columns
/// keeps it to 1.3 MB of weights, cheap on the software adapter.
#[test]
fn gemv_more_than_65535_workgroups_uses_2d_grid() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(12);
    let case = GemvCase::new(&mut rng, WeightFormat::Q4_0, 70_001, 32);
    let wb = gpu.create_buffer_init("w", &case.w).unwrap();
    let xb = gpu.create_buffer_init("x", &f32_bytes(&case.x)).unwrap();
    let one_row = GemvTuning {
        variant: GemvVariant::Shared,
        threads_per_row: WORKGROUP_SIZE,
        rows_per_thread: 1,
    };
    let d = case
        .gemv
        .dispatch_with(
            gpu,
            &wb,
            &xb,
            &gpu.create_buffer("y", 70_001 * 4).unwrap(),
            one_row,
        )
        .unwrap();
    assert!(
        d.workgroups[1] > 1,
        "expected a 2-D grid, got {:?}",
        d.workgroups
    );
    case.check(gpu, Some(one_row));
    // And the default lane count, which fits a 1-D grid.
    case.check(gpu, None);
}

/// A matrix split into row chunks (as an lm_head larger than one binding is) writes one
/// output vector through `out_offset`; elements outside the chunks stay untouched.
#[test]
fn gemv_out_offset_chunks_write_one_vector() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(13);
    const SENTINEL: f32 = -7777.0;
    for format in WeightFormat::ALL {
        let (rows, cols, lead) = (64u32, 576u32, 3u32);
        if cols % format.block_elems() != 0 {
            continue; // K formats: kquants.rs
        }
        let full = GemvCase::new(&mut rng, format, rows, cols);
        let rb = format.row_bytes(u64::from(cols)).unwrap() as usize;
        let xb = gpu.create_buffer_init("x", &f32_bytes(&full.x)).unwrap();
        let y_len = (lead + rows + 2) as usize;
        let yb = gpu
            .create_buffer_init("y", &f32_bytes(&vec![SENTINEL; y_len]))
            .unwrap();
        // Chunks of 40 and 24 rows, written after `lead` untouched elements.
        let mut dispatches = Vec::new();
        let mut wbs = Vec::new();
        let mut want = vec![SENTINEL; y_len];
        for (start, n) in [(0u32, 40u32), (40, 24)] {
            let g = Gemv {
                rows: n,
                cols,
                format,
                out_offset: lead + start,
                layout: gpuscope_ops::gemv::WeightLayout::Gguf,
            };
            let bytes = &full.w[start as usize * rb..][..n as usize * rb];
            let wb = gpu.create_buffer_init("w chunk", bytes).unwrap();
            dispatches.push(g.dispatch(gpu, &wb, &xb, &yb).unwrap());
            g.cpu(bytes, &full.x, &mut want);
            wbs.push(wb);
        }
        run(gpu, dispatches);
        let got = read_f32(gpu, &yb);
        let what = format!("gemv_{format} chunks");
        let range = lead as usize..(lead + rows) as usize;
        for i in (0..y_len).filter(|i| !range.contains(i)) {
            assert_eq!(
                got[i].to_bits(),
                SENTINEL.to_bits(),
                "{what}: y[{i}] was overwritten"
            );
        }
        let scale = abs_dots(format, &full.w, rows as usize, cols as usize, &full.x);
        assert_close(&what, format, &got[range.clone()], &want[range], &scale);
    }
}

// ---------------------------------------------------------------------------------------
// embedding
// ---------------------------------------------------------------------------------------

#[test]
fn embedding_names_and_cost() {
    let e = Embedding {
        rows: 49152,
        dim: 576,
        format: WeightFormat::Q8_0,
        row_start: 0,
    };
    assert_eq!(e.op_name(), "embedding_q8_0");
    assert_eq!(e.cost().bytes, 18 * 34 + 4 + 576 * 4);
    assert!(e.holds(49151) && !e.holds(49152));
    let chunk = Embedding {
        row_start: 100,
        rows: 10,
        ..e
    };
    assert!(!chunk.holds(99) && chunk.holds(100) && chunk.holds(109) && !chunk.holds(110));
}

/// Per format, a chunk of rows [30, 50) of a 50-row table: tokens inside give the
/// dequantized row bit for bit (q4_1's `q·d + m` may be fused into an FMA on the GPU, so it
/// gets one rounding of slack), tokens outside leave the output as it was.
#[test]
fn embedding_matches_oracle_and_skips_other_chunks() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(20);
    const SENTINEL: f32 = -7777.0;
    for format in WeightFormat::ALL {
        for dim in [64u32, 576] {
            if dim % format.block_elems() != 0 {
                continue; // K formats: kquants.rs
            }
            let (table_rows, start) = (50u32, 30u32);
            let table = format.quantize_row(&weights(&mut rng, (table_rows * dim) as usize));
            let rb = format.row_bytes(u64::from(dim)).unwrap() as usize;
            let chunk_bytes = &table[start as usize * rb..];
            let e = Embedding {
                rows: table_rows - start,
                dim,
                format,
                row_start: start,
            };
            let tb = gpu.create_buffer_init("table chunk", chunk_bytes).unwrap();
            let token = gpu.create_buffer("token", 4).unwrap();
            let out = gpu.create_buffer("out", u64::from(dim) * 4).unwrap();
            // Built once, run per token: the token id is only ever written to its buffer.
            let d = e.dispatch(gpu, &tb, &token, &out).unwrap();
            for t in [30u32, 31, 42, 49, 0, 29, 50, 1000, u32::MAX] {
                gpu.write_buffer(&out, 0, &f32_bytes(&vec![SENTINEL; dim as usize]));
                gpu.write_buffer(&token, 0, &t.to_le_bytes());
                run(gpu, vec![d.clone()]);
                let got = read_f32(gpu, &out);
                let mut want = vec![SENTINEL; dim as usize];
                e.cpu(chunk_bytes, t, &mut want);
                assert_eq!(e.holds(t), (30..50).contains(&t));
                // |q·d| ≤ 2·amax and |m| ≤ amax, so one rounding of q·d is ≤ amax·2^-23.
                let amax = want.iter().fold(0.0f32, |a, v| a.max(v.abs()));
                for (c, (g, w)) in got.iter().zip(&want).enumerate() {
                    let ok = if format == WeightFormat::Q4_1 {
                        (g - w).abs() <= amax * 2f32.powi(-23)
                    } else {
                        g.to_bits() == w.to_bits()
                    };
                    assert!(
                        ok,
                        "embedding_{format} dim {dim} token {t}: out[{c}] = {g}, oracle {w}"
                    );
                }
            }
        }
    }
}

#[test]
fn gemv_accumulate_adds_into_y() {
    // The fused residual: y_before + W·x, for every format.
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(77);
    for format in WeightFormat::ALL {
        let (rows, cols) = (96u32, 576u32);
        if cols % format.block_elems() != 0 {
            continue; // K formats: kquants.rs
        }
        let w = format.quantize_row(&weights(&mut rng, (rows * cols) as usize));
        let x = activations(&mut rng, cols as usize);
        let y0 = activations(&mut rng, rows as usize);
        let op = Gemv {
            rows,
            cols,
            format,
            out_offset: 0,
            layout: gpuscope_ops::gemv::WeightLayout::Gguf,
        };
        let mut want = vec![0f32; rows as usize];
        op.cpu(&w, &x, &mut want);
        for (v, b) in want.iter_mut().zip(&y0) {
            *v += b;
        }
        let wb = gpu.create_buffer_init("w", &w).unwrap();
        let xb = gpu.create_buffer_init("x", &f32_bytes(&x)).unwrap();
        let yb = gpu.create_buffer_init("y", &f32_bytes(&y0)).unwrap();
        let d = op.dispatch_accumulate(gpu, &wb, &xb, &yb).unwrap();
        assert!(d.reads.contains(&yb.id()) && d.writes.contains(&yb.id()));
        assert_eq!(d.cost.bytes, op.cost().bytes + u64::from(rows) * 4);
        run(gpu, vec![d]);
        let got = read_f32(gpu, &yb);
        let scale: Vec<f32> = abs_dots(format, &w, rows as usize, cols as usize, &x)
            .iter()
            .zip(&y0)
            .map(|(s, b)| s + b.abs())
            .collect();
        assert_close(
            "gemv accumulate",
            format,
            &got[..rows as usize],
            &want,
            &scale,
        );
    }
}

/// ggml's `quantize_row_q5_0_ref` / `quantize_row_q5_1_ref`, compiled from
/// `ggml-quants.c` (gcc, `-O0 -ffp-contract=off`, f16 through `_Float16`, which rounds to
/// nearest even as `GGML_FP32_TO_FP16`) on this input (uneven amplitudes per block,
/// outliers, an all-positive stretch, an all-zero block), gave these FNV-1a hashes.
#[test]
fn q5_quantizers_are_byte_identical_with_ggml_reference() {
    const N: usize = 1024;
    let x: Vec<f32> = (0..N as u32)
        .map(|i| {
            let v = i.wrapping_mul(2654435761);
            let u = (v >> 8) as f32 * (1.0f32 / 16777216.0) - 0.5;
            let amp = (1 + (i / 32) % 5) as f32 * 0.01;
            let mut x = u * amp;
            if i % 97 == 0 {
                x *= 8.0;
            }
            if i / 256 == 2 {
                x = x * x + 0.003;
            }
            if i / 32 == 5 {
                x = 0.0;
            }
            x
        })
        .collect();
    let fnv = |b: &[u8]| {
        b.iter().fold(0xcbf29ce484222325u64, |h, &v| {
            (h ^ u64::from(v)).wrapping_mul(0x100000001b3)
        })
    };
    for (f, want, len) in [
        (WeightFormat::Q5_0, 0x20e1d5ed10b56a07u64, 704),
        (WeightFormat::Q5_1, 0x65e699590c836300, 768),
    ] {
        let got = f.quantize_row(&x);
        assert_eq!(got.len(), len);
        assert_eq!(fnv(&got), want, "{f}: bytes differ from ggml's reference");
    }
}

/// One q5_0 and one q5_1 block written by hand: every element's fifth bit from `qh`
/// (element j's is bit j), nibbles as q4_0 / q4_1.
#[test]
fn q5_dequantize_known_blocks() {
    let d = half::f16::from_f32(0.5).to_le_bytes();
    let m = half::f16::from_f32(-2.0).to_le_bytes();
    // Element j = (j * 7) % 32: nibble j*7 % 16, fifth bit (j*7 % 32) / 16.
    let q: Vec<u32> = (0..32).map(|j| (j * 7) % 32).collect();
    let mut qs = [0u8; 16];
    let mut qh = 0u32;
    for j in 0..16 {
        qs[j] = (q[j] & 15) as u8 | (((q[j + 16] & 15) as u8) << 4);
        qh |= (q[j] >> 4) << j | (q[j + 16] >> 4) << (j + 16);
    }
    let q5_0: Vec<u8> = [&d[..], &qh.to_le_bytes(), &qs].concat();
    let q5_1: Vec<u8> = [&d[..], &m, &qh.to_le_bytes(), &qs].concat();
    let mut out = [0f32; 32];
    WeightFormat::Q5_0.dequantize_row(&q5_0, &mut out);
    for j in 0..32 {
        assert_eq!(out[j], (q[j] as f32 - 16.0) * 0.5, "q5_0 element {j}");
    }
    WeightFormat::Q5_1.dequantize_row(&q5_1, &mut out);
    for j in 0..32 {
        assert_eq!(out[j], q[j] as f32 * 0.5 - 2.0, "q5_1 element {j}");
    }
}
