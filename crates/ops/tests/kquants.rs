//! The K formats (q4_K, q5_K, q6_K) and bf16: hand-built blocks decoded as ggml's
//! formulas say, quantizer error bounds, and gemv / embedding on the GPU against the CPU
//! oracle over 256-element-block shapes.
//!
//! The hand-built blocks spell their bytes out literally, so a layout mistake shared by
//! the quantizer and the dequantizer (which would round-trip fine) still fails here.

use gpuscope_ops::embedding::Embedding;
use gpuscope_ops::gemv::{Gemv, GemvTuning, GemvVariant, WORKGROUP_SIZE};
use gpuscope_ops::quant::{QuantError, WeightFormat};

use crate::common;

use WeightFormat::{BF16, Q4_K, Q5_K, Q6_K};

/// The formats this file is about.
const NEW_FORMATS: [WeightFormat; 4] = [BF16, Q4_K, Q5_K, Q6_K];
const K_FORMATS: [WeightFormat; 3] = [Q4_K, Q5_K, Q6_K];

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

use crate::common::{activations, f32_bytes, read_f32, run, weights};

fn dequantize(format: WeightFormat, bytes: &[u8], n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; n];
    format.dequantize_row(bytes, &mut out);
    out
}

use crate::quant_gemv_embedding::{abs_dots, assert_close, GemvCase};

// ---------------------------------------------------------------------------------------
// Formats: table, hand-built blocks
// ---------------------------------------------------------------------------------------

#[test]
fn k_formats_are_256_element_blocks_with_ggml_sizes() {
    assert_eq!(Q4_K.row_bytes(512), Ok(2 * 144));
    assert_eq!(Q5_K.row_bytes(2304), Ok(9 * 176));
    assert_eq!(Q6_K.row_bytes(256), Ok(210));
    assert_eq!(BF16.row_bytes(3), Ok(6));
    // SmolLM2's dim: 2.25 blocks.
    assert_eq!(
        Q4_K.row_bytes(576),
        Err(QuantError::RaggedRow {
            format: Q4_K,
            cols: 576,
            block_elems: 256
        })
    );
    for f in NEW_FORMATS {
        assert_eq!(WeightFormat::from_ggml_type_id(f.ggml_type_id()), Some(f));
        assert_eq!(f.name().to_uppercase().parse::<WeightFormat>(), Ok(f));
        assert_eq!(f.is_quantized(), f != BF16);
    }
    assert_eq!(WeightFormat::from_ggml_type_id(11), None); // q3_K: no kernels
}

/// d = 0.5, dmin = 0.25 and these 6-bit scales and mins per sub-block. Sub-blocks 4..7
/// have values ≥ 16, so their top two bits land in bytes 0..7.
const SC: [u8; 8] = [1, 2, 3, 4, 17, 33, 50, 63];
const MN: [u8; 8] = [0, 5, 10, 63, 16, 1, 32, 48];

/// The 16-byte head of a q4_K / q5_K block for d, dmin, SC, MN, packed by hand:
/// bytes 0..3 = SC[0..4] | (SC[4..8] >> 4) << 6, bytes 4..7 = MN[0..4] | (MN[4..8] >> 4) << 6,
/// bytes 8..11 = (SC[4..8] & 15) | (MN[4..8] & 15) << 4.
fn k_head() -> Vec<u8> {
    let mut b = vec![0x00, 0x38, 0x00, 0x34]; // f16 0.5, f16 0.25
    b.extend([1 | 1 << 6, 2 | 2 << 6, 3 | 3 << 6, 4 | 3 << 6]);
    b.extend([1 << 6, 5, 10 | 2 << 6, 63 | 3 << 6]);
    b.extend([0x01, 0x11, 0x02, 0x0F]);
    b
}

/// qs[i] = i: in run c, byte l is 32c + l, so element 64c + l (sub-block 2c) has q = l % 16
/// and element 64c + 32 + l (sub-block 2c + 1) has q = 2c + l / 16; x = 0.5·sc·q − 0.25·m.
#[test]
fn q4_k_block_by_hand() {
    let mut b = k_head();
    b.extend(0..128u8);
    assert_eq!(b.len(), 144);
    let y = dequantize(Q4_K, &b, 256);
    for (e, got) in y.iter().enumerate() {
        let (c, l, hi) = (e / 64, e % 32, (e / 32) % 2);
        let j = 2 * c + hi;
        let q = if hi == 0 { l % 16 } else { 2 * c + l / 16 };
        let want = 0.5 * f32::from(SC[j]) * q as f32 - 0.25 * f32::from(MN[j]);
        assert_eq!(*got, want, "element {e}");
    }
    // Spot checks worked out by hand.
    assert_eq!(y[0], 0.0); // sub-block 0, q 0, sc 1, m 0
    assert_eq!(y[130], 13.0); // sub-block 4: q 2 → 0.5·17·2 − 0.25·16
    assert_eq!(y[255], 208.5); // sub-block 7: q 7 → 0.5·63·7 − 0.25·48
}

/// As q4_K, plus qh[l] = 37·l (mod 256): bit j of qh[l] adds 16 to element l of sub-block j.
#[test]
fn q5_k_block_by_hand() {
    let mut b = k_head();
    let qh: Vec<u8> = (0..32u8).map(|l| l.wrapping_mul(37)).collect();
    b.extend(&qh);
    b.extend(0..128u8);
    assert_eq!(b.len(), 176);
    let y = dequantize(Q5_K, &b, 256);
    for (e, got) in y.iter().enumerate() {
        let (c, l, hi) = (e / 64, e % 32, (e / 32) % 2);
        let j = 2 * c + hi;
        let low = if hi == 0 { l % 16 } else { 2 * c + l / 16 };
        let q = low + 16 * ((qh[l] as usize >> j) & 1);
        let want = 0.5 * f32::from(SC[j]) * q as f32 - 0.25 * f32::from(MN[j]);
        assert_eq!(*got, want, "element {e}");
    }
    assert_eq!(y[1], 8.5); // qh[1] = 0b100101: bit 0 set, q = 1 + 16, sc 1, m 0
    assert_eq!(y[33], -1.25); // sub-block 1, bit 1 of qh[1] clear, q 0: −0.25·5
    assert_eq!(y[255], 208.5); // qh[31] = 123: bit 7 clear
}

/// d = 0.25, scales as below (both extremes of i8 included), ql[i] = i, qh[i] = 53·i:
/// in half h, l in 0..32, group g: q = nibble (low for g < 2, of ql[64h + 32(g%2) + l]) |
/// bits 2g..2g+1 of qh[32h + l] << 4, x = (0.25·sc[8h + l/16 + 2g])·(q − 32).
#[test]
fn q6_k_block_by_hand() {
    let sc: [i8; 16] = [
        1, -2, 3, -4, 5, -6, 7, -8, 127, -128, 10, 20, -30, 40, 50, -60,
    ];
    let mut b: Vec<u8> = (0..128u8).collect();
    let qh: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(53)).collect();
    b.extend(&qh);
    b.extend(sc.iter().map(|&s| s as u8));
    b.extend([0x00, 0x34]); // f16 0.25
    assert_eq!(b.len(), 210);
    let y = dequantize(Q6_K, &b, 256);
    for (e, got) in y.iter().enumerate() {
        let (h, g, l) = (e / 128, (e % 128) / 32, e % 32);
        let byte = (64 * h + 32 * (g % 2) + l) as u8;
        let nib = if g < 2 { byte & 15 } else { byte >> 4 };
        let q = (nib | ((qh[32 * h + l] >> (2 * g)) & 3) << 4) as i32 - 32;
        let want = 0.25 * f32::from(sc[8 * h + l / 16 + 2 * g]) * q as f32;
        assert_eq!(*got, want, "element {e}");
    }
    assert_eq!(y[0], -8.0); // q 0 − 32, sc 1
                            // Element 255: h 1, g 3, l 31: high nibble of ql[127] = 7, qh[63] = 11 has bits 6-7
                            // clear, so q = 7 − 32; scale 8 + 1 + 6 = 15 (−60): 0.25·−60·−25.
    assert_eq!(y[255], 375.0);
}

/// bf16 is the high half of an f32; encoding rounds to nearest, ties to even (as ggml's
/// `ggml_compute_fp32_to_bf16`), keeps infinities, and keeps NaN a (quiet) NaN.
#[test]
fn bf16_by_hand() {
    let x = [
        1.0f32,
        -2.5,
        1.0 + 2f32.powi(-8),                  // a tie: stays at the even 1.0
        1.0 + 3.0 * 2f32.powi(-8),            // a tie: up to the even 1 + 2^-6
        1.0 + 2f32.powi(-8) + 2f32.powi(-20), // past the tie: up
        f32::INFINITY,
        f32::MAX, // rounds up to infinity
        f32::NAN,
    ];
    let b = BF16.quantize_row(&x);
    let bits: Vec<u16> = b
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(
        &bits[..7],
        &[0x3F80, 0xC020, 0x3F80, 0x3F82, 0x3F81, 0x7F80, 0x7F80]
    );
    assert!(bits[7] & 0x7F80 == 0x7F80 && bits[7] & 0x7F != 0 && bits[7] & 0x40 != 0);
    let y = dequantize(BF16, &b, x.len());
    assert_eq!(&y[..4], &[1.0, -2.5, 1.0, 1.0 + 2f32.powi(-6)]);
    assert_eq!(y[5], f32::INFINITY);
    assert!(y[7].is_nan());
    // Decoding is a shift: 0x0001 is the smallest f32 subnormal's upper half.
    assert_eq!(
        dequantize(BF16, &[0x01, 0x00], 1)[0],
        f32::from_bits(0x0001_0000)
    );
}

// ---------------------------------------------------------------------------------------
// Quantizers: hand-derived cases, error bounds
// ---------------------------------------------------------------------------------------

/// x = e % 16 in every 32-element sub-block: make_qkx2_quants fits scale 1, min 0 with no
/// error, so every 6-bit scale is 63, every min 0, d = f16(1/63) = 0x2410, dmin = 0, and
/// the levels are x itself.
#[test]
fn q4_k_quantizes_an_exact_ramp_by_hand() {
    let x: Vec<f32> = (0..256).map(|e| (e % 16) as f32).collect();
    let got = Q4_K.quantize_row(&x);
    let mut want = vec![0x10, 0x24, 0x00, 0x00];
    // Scales 63 everywhere: bytes 0..3 = 63 | (63 >> 4) << 6; mins 0: bytes 4..7 = 0;
    // bytes 8..11 = 63 & 15.
    want.extend([0xFF; 4]);
    want.extend([0x00; 4]);
    want.extend([0x0F; 4]);
    for _ in 0..4 {
        want.extend((0..32u8).map(|l| (l % 16) * 0x11));
    }
    assert_eq!(got, want);
    let d = half::f16::from_bits(0x2410).to_f32() * 63.0;
    let y = dequantize(Q4_K, &got, 256);
    for (e, v) in y.iter().enumerate() {
        assert_eq!(*v, d * (e % 16) as f32, "element {e}");
    }
}

/// x = e % 32: as for q4_K with 5-bit levels; levels above 15 set their qh bit.
#[test]
fn q5_k_quantizes_an_exact_ramp_by_hand() {
    let x: Vec<f32> = (0..256).map(|e| (e % 32) as f32).collect();
    let got = Q5_K.quantize_row(&x);
    let mut want = vec![0x10, 0x24, 0x00, 0x00];
    want.extend([0xFF; 4]);
    want.extend([0x00; 4]);
    want.extend([0x0F; 4]);
    want.extend((0..32u8).map(|l| if l > 15 { 0xFF } else { 0x00 }));
    for _ in 0..4 {
        want.extend((0..32u8).map(|l| (l % 16) * 0x11));
    }
    assert_eq!(got, want);
}

/// x = 4·(e % 16) − 32 in every 16-element sub-block: amax 32 is negative, so
/// make_qx_quants' first guess, iscale = −32/−32 = 1, gives levels x exactly and no other
/// candidate fits better; every scale is 1, so max_scale = 1, iscale = −128, the stored
/// d = f16(−1/128) = 0xA000 and every 8-bit scale is −128 (d·sc = 1).
#[test]
fn q6_k_quantizes_an_exact_ramp_by_hand() {
    let x: Vec<f32> = (0..256).map(|e| 4.0 * (e % 16) as f32 - 32.0).collect();
    let got = Q6_K.quantize_row(&x);
    // Level L = x + 32 = 4·(l % 16) for every element of column l.
    let level = |l: u8| 4 * (l % 16);
    let mut want = Vec::new();
    for _ in 0..2 {
        // ql for both halves of the 64-byte run: low and high nibble hold the same level.
        want.extend((0..64u8).map(|l| (level(l % 32) & 15) * 0x11));
    }
    for _ in 0..2 {
        want.extend((0..32u8).map(|l| (level(l) >> 4) * 0x55));
    }
    want.extend([0x80; 16]);
    want.extend([0x00, 0xA0]);
    assert_eq!(got.len(), 210);
    assert_eq!(got, want);
    assert_eq!(dequantize(Q6_K, &got, 256), x);
}

/// Bytes from ggml's own reference quantizers: `quantize_row_q{4,5,6}_K_ref` from
/// ggml-quants.c, compiled with `gcc -O2 -ffp-contract=off`, fed this exactly computable
/// input (4 super-blocks: uneven amplitudes per sub-block, outliers, one all-positive
/// block), gave these FNV-1a hashes of the output. (Checked the same way, once, on
/// 320 super-blocks of Gaussian weights at scales 1e-6..300 with constant, zero and
/// one-signed blocks: byte-identical.)
#[test]
fn k_quantizers_are_byte_identical_with_ggml_reference() {
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
            x
        })
        .collect();
    let fnv = |b: &[u8]| {
        b.iter().fold(0xcbf29ce484222325u64, |h, &v| {
            (h ^ u64::from(v)).wrapping_mul(0x100000001b3)
        })
    };
    for (f, want) in [
        (Q4_K, 0xec0d0fe7c24884ed),
        (Q5_K, 0x5ee2146b44732390),
        (Q6_K, 0x777c8a4d9448f5a8),
    ] {
        let got = f.quantize_row(&x);
        assert_eq!(
            fnv(&got),
            want,
            "{f}: bytes differ from ggml's reference (first bytes {:02x?})",
            &got[..4]
        );
    }
}

/// The (d, m) of each sub-block as stored, decoded here independently of the crate:
/// returns per element (step, lowest value, highest value) of its sub-block's grid.
fn k_grid(format: WeightFormat, block: &[u8]) -> Vec<(f32, f32, f32)> {
    let f16 = |at: usize| half::f16::from_le_bytes([block[at], block[at + 1]]).to_f32();
    match format {
        Q4_K | Q5_K => {
            let (d, dmin) = (f16(0), f16(2));
            let s = &block[4..16];
            let nmax = if format == Q4_K { 15.0 } else { 31.0 };
            (0..256)
                .map(|e| {
                    let j = e / 32;
                    let (sc, m) = if j < 4 {
                        (s[j] & 63, s[j + 4] & 63)
                    } else {
                        (
                            (s[j + 4] & 15) | (s[j - 4] >> 6) << 4,
                            (s[j + 4] >> 4) | (s[j] >> 6) << 4,
                        )
                    };
                    let (step, lo) = (d * f32::from(sc), -(dmin * f32::from(m)));
                    (step, lo, lo + nmax * step)
                })
                .collect()
        }
        Q6_K => {
            let d = f16(208);
            (0..256)
                .map(|e| {
                    let step = d * f32::from(block[192 + e / 16] as i8);
                    let (a, b) = (-32.0 * step, 31.0 * step);
                    (step.abs(), a.min(b), a.max(b))
                })
                .collect()
        }
        _ => unreachable!(),
    }
}

/// Each element is within half a step of its value, where it falls inside its
/// sub-block's grid of stored (quantized) scale and min, else at the nearest end (the
/// 6- and 8-bit scales may shrink a grid a little); and the overall RMS error is what
/// 4, 5 and 6 bits should give on Gaussian-like data.
#[test]
fn k_round_trip_error_within_bounds() {
    let mut rng = common::rng(101);
    for scale in [1e-3f32, 0.02, 1.0, 300.0] {
        let mut x: Vec<f32> = weights(&mut rng, 256 * 16)
            .iter()
            .map(|v| v / 0.02 * scale)
            .collect();
        // Blocks of one sign, and one constant block (max == min).
        x[..256].iter_mut().for_each(|v| *v = v.abs() + scale * 3.0);
        x[256..512].iter_mut().for_each(|v| *v = -v.abs());
        x[512..768].fill(scale);
        for f in K_FORMATS {
            let bytes = f.quantize_row(&x);
            assert_eq!(bytes.len() as u64, f.row_bytes(x.len() as u64).unwrap());
            let back = dequantize(f, &bytes, x.len());
            let bb = f.block_bytes() as usize;
            let (mut se, mut sx) = (0.0f64, 0.0f64);
            for (b, (xs, ys)) in x.chunks(256).zip(back.chunks(256)).enumerate() {
                let grid = k_grid(f, &bytes[b * bb..][..bb]);
                for (e, ((v, r), (step, lo, hi))) in xs.iter().zip(ys).zip(grid).enumerate() {
                    let outside = (lo - v).max(v - hi).max(0.0);
                    let amax = xs.iter().fold(0.0f32, |a, v| a.max(v.abs()));
                    let bound = step * 0.5 + outside + amax * 1e-5;
                    assert!(
                        (v - r).abs() <= bound,
                        "{f} scale {scale}: block {b} element {e}: {v} -> {r}, |err| {} > {bound} (grid {lo}..{hi} step {step})",
                        (v - r).abs()
                    );
                    se += f64::from(v - r).powi(2);
                    sx += f64::from(*v).powi(2);
                }
            }
            let rel = (se / sx).sqrt();
            let max_rel = match f {
                Q4_K => 0.12,
                Q5_K => 0.06,
                _ => 0.03,
            };
            assert!(
                rel < max_rel,
                "{f} scale {scale}: relative RMS error {rel:.4} ≥ {max_rel}"
            );
        }
    }
}

#[test]
fn bf16_round_trip_within_half_an_ulp() {
    let mut rng = common::rng(102);
    let x: Vec<f32> = activations(&mut rng, 4096)
        .iter()
        .map(|v| v * 37.0)
        .collect();
    let back = dequantize(BF16, &BF16.quantize_row(&x), x.len());
    for (v, r) in x.iter().zip(&back) {
        assert!((v - r).abs() <= v.abs() * 2f32.powi(-8), "{v} -> {r}");
        // A bf16 value is itself exactly.
        assert_eq!(BF16.quantize_row(&[*r]), BF16.quantize_row(&[*v]));
    }
}

/// Zeros quantize to blocks that decode to zeros (no NaN from a zero scale).
#[test]
fn k_zero_blocks_stay_zero() {
    for f in K_FORMATS {
        let bytes = f.quantize_row(&[0.0; 512]);
        assert!(dequantize(f, &bytes, 512).iter().all(|v| *v == 0.0), "{f}");
    }
}

// ---------------------------------------------------------------------------------------
// gemv
// ---------------------------------------------------------------------------------------

/// Every new format × cols {256, 512, 1536, 2304} × rows {1, 7, 64, 300}. 2304 (9 blocks)
/// puts every other q6_K row on a mid-word start.
#[test]
fn gemv_new_formats_match_oracle() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(110);
    for format in NEW_FORMATS {
        for cols in [256, 512, 1536, 2304] {
            for rows in [1, 7, 64, 300] {
                GemvCase::new(&mut rng, format, rows, cols).check(gpu, None);
            }
        }
    }
}

/// Every lane count × rows per lane on 37 × 768 (96 units of 8 elements: wide lane counts
/// leave lanes idle, narrow ones loop over several super-blocks).
#[test]
fn gemv_k_formats_every_tuning() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(111);
    for format in K_FORMATS {
        let case = GemvCase::new(&mut rng, format, 37, 768);
        for tuning in common::tunings(GemvVariant::Shared, WORKGROUP_SIZE) {
            case.check(gpu, Some(tuning));
        }
    }
}

/// The default tuning where it gives lanes several rows (lm_head-like row counts).
#[test]
fn gemv_k_formats_default_tuning_on_large_shapes() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(112);
    for format in K_FORMATS {
        for (rows, cols) in [(4099, 512), (33000, 256)] {
            let case = GemvCase::new(&mut rng, format, rows, cols);
            assert!(case.gemv.default_tuning().rows_per_thread > 1);
            case.check(gpu, None);
        }
    }
}

/// 70001 rows at one row per workgroup need the 2-D grid. q6_K, whose odd rows start
/// mid-word, with one block per row (14.7 MB).
#[test]
fn gemv_q6_k_more_than_65535_workgroups() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(113);
    let case = GemvCase::new(&mut rng, Q6_K, 70_001, 256);
    let one_row = GemvTuning {
        variant: GemvVariant::Shared,
        threads_per_row: WORKGROUP_SIZE,
        rows_per_thread: 1,
    };
    let wb = gpu.create_buffer_init("w", &case.w).unwrap();
    let xb = gpu.create_buffer_init("x", &f32_bytes(&case.x)).unwrap();
    let yb = gpu.create_buffer("y", 70_001 * 4).unwrap();
    let d = case
        .gemv
        .dispatch_with(gpu, &wb, &xb, &yb, one_row)
        .unwrap();
    assert!(
        d.workgroups[1] > 1,
        "expected a 2-D grid, got {:?}",
        d.workgroups
    );
    case.check(gpu, Some(one_row));
    case.check(gpu, None);
}

/// Row chunks through `out_offset`, accumulating into y (the fused residual), leave the
/// elements around them alone.
#[test]
fn gemv_k_formats_chunks_accumulate() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(114);
    const SENTINEL: f32 = -7777.0;
    for format in NEW_FORMATS {
        let (rows, cols, lead) = (64u32, 512u32, 3u32);
        let full = GemvCase::new(&mut rng, format, rows, cols);
        let rb = format.row_bytes(u64::from(cols)).unwrap() as usize;
        let y_len = (lead + rows + 2) as usize;
        let mut y0 = vec![SENTINEL; y_len];
        let base = activations(&mut rng, rows as usize);
        y0[lead as usize..][..rows as usize].copy_from_slice(&base);
        let xb = gpu.create_buffer_init("x", &f32_bytes(&full.x)).unwrap();
        let yb = gpu.create_buffer_init("y", &f32_bytes(&y0)).unwrap();
        let mut dispatches = Vec::new();
        let mut keep = Vec::new();
        let mut want = y0.clone();
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
            dispatches.push(g.dispatch_accumulate(gpu, &wb, &xb, &yb).unwrap());
            g.cpu(bytes, &full.x, &mut want);
            keep.push(wb);
        }
        // The oracle wrote W·x; the kernel adds it to what was there.
        let range = lead as usize..(lead + rows) as usize;
        for (w, b) in want[range.clone()].iter_mut().zip(&base) {
            *w += b;
        }
        run(gpu, dispatches);
        let got = read_f32(gpu, &yb);
        for i in (0..y_len).filter(|i| !range.contains(i)) {
            assert_eq!(
                got[i].to_bits(),
                SENTINEL.to_bits(),
                "gemv_{format}: y[{i}] overwritten"
            );
        }
        let scale: Vec<f32> = abs_dots(format, &full.w, rows as usize, cols as usize, &full.x)
            .iter()
            .zip(&base)
            .map(|(s, b)| s + b.abs())
            .collect();
        assert_close(
            &format!("gemv_{format} chunks"),
            format,
            &got[range.clone()],
            &want[range],
            &scale,
        );
    }
}

#[test]
fn gemv_k_formats_reject_ragged_rows() {
    let Some(gpu) = common::gpu() else { return };
    let g = Gemv {
        rows: 4,
        cols: 576,
        format: Q4_K,
        out_offset: 0,
        layout: gpuscope_ops::gemv::WeightLayout::Gguf,
    };
    let w = gpu.create_buffer("w", 4 * 3 * 144).unwrap();
    let x = gpu.create_buffer("x", 576 * 4).unwrap();
    let y = gpu.create_buffer("y", 16).unwrap();
    let err = g.dispatch(gpu, &w, &x, &y).unwrap_err().to_string();
    assert!(
        err.contains("gemv_q4_k") && err.contains("256-element"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// embedding
// ---------------------------------------------------------------------------------------

/// Per new format, rows [30, 50) of a 50-row table: tokens inside give the oracle's row,
/// bit for bit for bf16 and q6_K ((d·sc)·q: two rounded products in ggml's order); q4_K
/// and q5_K's d·sc·q − dmin·m may be fused into one FMA on the GPU, which skips the
/// rounding of the product (≤ |d·sc·q|·2^-24, with |d·sc·q| ≤ |x| + dmin·m ≲ 2·amax) and
/// may move the final rounding by an ulp of the result: 8·amax·2^-24 covers both. Tokens
/// outside leave the output alone.
#[test]
fn embedding_new_formats_match_oracle() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = common::rng(120);
    const SENTINEL: f32 = -7777.0;
    for format in NEW_FORMATS {
        for dim in [256u32, 768, 2304] {
            let (table_rows, start) = (50u32, 30u32);
            let table = format.quantize_row(&weights(&mut rng, (table_rows * dim) as usize));
            let rb = format.row_bytes(u64::from(dim)).unwrap() as usize;
            let chunk = &table[start as usize * rb..];
            let e = Embedding {
                rows: table_rows - start,
                dim,
                format,
                row_start: start,
            };
            let tb = gpu.create_buffer_init("table chunk", chunk).unwrap();
            let token = gpu.create_buffer("token", 4).unwrap();
            let out = gpu.create_buffer("out", u64::from(dim) * 4).unwrap();
            let d = e.dispatch(gpu, &tb, &token, &out).unwrap();
            assert_eq!(e.op_name(), format!("embedding_{format}"));
            for t in [30u32, 31, 42, 49, 0, 29, 50, u32::MAX] {
                gpu.write_buffer(&out, 0, &f32_bytes(&vec![SENTINEL; dim as usize]));
                gpu.write_buffer(&token, 0, &t.to_le_bytes());
                run(gpu, vec![d.clone()]);
                let got = read_f32(gpu, &out);
                let mut want = vec![SENTINEL; dim as usize];
                e.cpu(chunk, t, &mut want);
                let amax = want.iter().fold(0.0f32, |a, v| a.max(v.abs()));
                for (c, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        g.is_finite(),
                        "embedding_{format} dim {dim} token {t}: out[{c}] = {g}"
                    );
                    let ok = match format {
                        Q4_K | Q5_K => (g - w).abs() <= 8.0 * amax * 2f32.powi(-24),
                        _ => g.to_bits() == w.to_bits(),
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

// ---------------------------------------------------------------------------------------
// The checks themselves
// ---------------------------------------------------------------------------------------

/// A NaN from the GPU fails the comparison even where the oracle says NaN too.
#[test]
#[should_panic(expected = "is not finite")]
fn gpu_nan_fails_the_check() {
    assert_close("nan", Q6_K, &[1.0, f32::NAN], &[1.0, f32::NAN], &[1.0, 1.0]);
}

#[test]
#[should_panic(expected = "is not finite")]
fn gpu_infinity_fails_the_check() {
    assert_close("inf", Q4_K, &[f32::INFINITY], &[1.0], &[1.0]);
}
