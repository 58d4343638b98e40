//! ggml's K-quants: 256-element super-blocks of 8 (q4_K, q5_K) or 16 (q6_K) sub-blocks,
//! each sub-block with its own quantized scale (and, for q4_K / q5_K, minimum).
//!
//! Layouts (little-endian, `ggml-common.h`):
//!
//! - `block_q4_K` (144 bytes): `f16 d`, `f16 dmin`, `u8 scales[12]`, `u8 qs[128]`. Sub-block
//!   `j` (elements 32j..32j+32) has a 6-bit scale `sc` and min `m` packed in `scales` as
//!   `get_scale_min_k4` reads them; x = d·sc·q − dmin·m. Byte `l` of the `c`-th 32-byte
//!   run of `qs` holds element 64c + l (low nibble, sub-block 2c) and 64c + 32 + l (high
//!   nibble, sub-block 2c + 1).
//! - `block_q5_K` (176 bytes): as q4_K plus `u8 qh[32]` before `qs`; bit 2c of `qh[l]` is
//!   the fifth bit of element 64c + l, bit 2c + 1 that of element 64c + 32 + l.
//! - `block_q6_K` (210 bytes): `u8 ql[128]`, `u8 qh[64]`, `i8 scales[16]`, `f16 d`; one
//!   8-bit scale per 16 elements, x = d·sc·(q − 32) with q 6 bits: in half `h` (128
//!   elements; `ql` bytes 64h.., `qh` bytes 32h..), for l in 0..32, element 128h + l is the
//!   low nibble of `ql[l]`, + 32 the low nibble of `ql[l + 32]`, + 64 the high nibble of
//!   `ql[l]`, + 96 the high nibble of `ql[l + 32]`, their top two bits in `qh[l]` at bits
//!   0, 2, 4, 6.
//!
//! Dequantization is ggml's `dequantize_row_q{4,5,6}_K`, operation for operation. The
//! quantizers are ggml's `quantize_row_q{4,5,6}_K_ref` (with `make_qkx2_quants` and
//! `make_qx_quants`), transcribed in f32 with the same evaluation order and no fused
//! multiply-adds, so they are byte-identical with ggml's reference built without FP
//! contraction (no importance matrix: that is `quantize_q*_K` with `quant_weights`).
//! Checked against ggml's functions compiled with `gcc -O2 -ffp-contract=off` on 320
//! super-blocks (scales 1e-6..300; constant, zero and one-signed blocks): identical bytes;
//! `tests/kquants.rs` keeps one such comparison as hashes.

use half::f16;

/// Elements per super-block (ggml's `QK_K`).
pub(super) const QK_K: usize = 256;
pub(super) const Q4_K_BYTES: usize = 144;
pub(super) const Q5_K_BYTES: usize = 176;
pub(super) const Q6_K_BYTES: usize = 210;

/// ggml's `GROUP_MAX_EPS`: a group with a smaller largest magnitude is all zeros.
const GROUP_MAX_EPS: f32 = 1e-15;

fn f16_bits(v: f32) -> [u8; 2] {
    f16::from_f32(v).to_le_bytes()
}

fn f16_at(b: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

/// ggml's `nearest_int`: adding 1.5·2^23 leaves round(x) (ties to even) in the low mantissa
/// bits. ggml asserts |x| ≤ 4194303 in debug builds only; outside that range (or for NaN)
/// the result is as meaningless as ggml's, but never a panic.
fn nearest_int(x: f32) -> i32 {
    let v = x + 12582912.0;
    (v.to_bits() as i32 & 0x007f_ffff) - 0x0040_0000
}

/// ggml's `get_scale_min_k4`: the 6-bit scale and min of sub-block `j` (0..8).
pub(super) fn get_scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// ggml's `make_qkx2_quants` with `use_mad = false`: levels `l[i]` in 0..=nmax and
/// (scale, the_min) such that x ≈ scale·l − the_min, searching `nstep + 1` candidate
/// scales around nmax/(max − min) for the least weighted squared error.
#[allow(clippy::too_many_arguments)]
fn make_qkx2_quants(
    nmax: i32,
    x: &[f32],
    weights: &[f32],
    l: &mut [u8],
    laux: &mut [u8],
    rmin: f32,
    rdelta: f32,
    nstep: i32,
) -> (f32, f32) {
    let n = x.len();
    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x[0];
    for i in 1..n {
        if x[i] < min {
            min = x[i];
        }
        if x[i] > max {
            max = x[i];
        }
        let w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        l[..n].fill(0);
        return (0.0, -min);
    }
    let mut iscale = nmax as f32 / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0.0f32;
    for i in 0..n {
        let q = nearest_int(iscale * (x[i] - min));
        l[i] = q.clamp(0, nmax) as u8;
        let diff = scale * f32::from(l[i]) + min - x[i];
        best_error += weights[i] * (diff * diff);
    }
    for is in 0..=nstep {
        iscale = (rmin + rdelta * is as f32 + nmax as f32) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0.0f32, 0.0f32, 0.0f32);
        for i in 0..n {
            let q = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
            laux[i] = q as u8;
            let (w, q) = (weights[i], q as f32);
            sum_l += w * q;
            sum_l2 += w * q * q;
            sum_xl += w * q * x[i];
        }
        let d = sum_w * sum_l2 - sum_l * sum_l;
        if d > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / d;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / d;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut cur_error = 0.0f32;
            for i in 0..n {
                let diff = this_scale * f32::from(laux[i]) + this_min - x[i];
                cur_error += weights[i] * (diff * diff);
            }
            if cur_error < best_error {
                l[..n].copy_from_slice(&laux[..n]);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}

/// ggml's `make_qx_quants` with `rmse_type = 1` and no importance weights: levels
/// `l[i]` = q + nmax with q in −nmax..nmax, and the scale, fitted by least squares
/// weighted by x² over 19 candidate scales around −nmax/max.
fn make_qx_quants(nmax: i32, x: &[f32], l: &mut [i8]) -> f32 {
    let (mut max, mut amax) = (0.0f32, 0.0f32);
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        l.fill(0);
        return 0.0;
    }
    let level = |iscale: f32, v: f32| nearest_int(iscale * v).clamp(-nmax, nmax - 1);
    let mut iscale = -(nmax as f32) / max;
    let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
    for (li, &v) in l.iter_mut().zip(x) {
        let q = level(iscale, v);
        *li = (q + nmax) as i8;
        let w = v * v;
        sumlx += w * v * q as f32;
        suml2 += w * q as f32 * q as f32;
    }
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in -9i32..=9 {
        if is == 0 {
            continue;
        }
        iscale = -(nmax as f32 + 0.1 * is as f32) / max;
        sumlx = 0.0;
        suml2 = 0.0;
        for &v in x {
            let q = level(iscale, v) as f32;
            let w = v * v;
            sumlx += w * v * q;
            suml2 += w * q * q;
        }
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for (li, &v) in l.iter_mut().zip(x) {
                *li = (nmax + level(iscale, v)) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// The sub-block fit shared by q4_K and q5_K: levels in `l` (0..=nmax), then `d`, `dmin`
/// and the 12 packed scale bytes, then the levels requantized against the stored scales.
/// Returns the 16 bytes of `d`, `dmin`, `scales`.
fn quantize_scales_mins(
    x: &[f32],
    nmax: i32,
    rmin: f32,
    nstep: i32,
    l: &mut [u8; QK_K],
) -> [u8; 16] {
    let mut laux = [0u8; 32];
    let mut weights = [0f32; 32];
    let mut mins = [0f32; QK_K / 32];
    let mut scales = [0f32; QK_K / 32];
    let (mut max_scale, mut max_min) = (0.0f32, 0.0f32);
    for j in 0..QK_K / 32 {
        let xs = &x[32 * j..32 * j + 32];
        let mut sum_x2 = 0.0f32;
        for v in xs {
            sum_x2 += v * v;
        }
        let av_x = (sum_x2 / 32.0).sqrt();
        for (w, v) in weights.iter_mut().zip(xs) {
            *w = av_x + v.abs();
        }
        let (s, m) = make_qkx2_quants(
            nmax,
            xs,
            &weights,
            &mut l[32 * j..32 * j + 32],
            &mut laux,
            rmin,
            0.1,
            nstep,
        );
        scales[j] = s;
        mins[j] = m;
        if s > max_scale {
            max_scale = s;
        }
        if m > max_min {
            max_min = m;
        }
    }
    let inv_scale = if max_scale > 0.0 {
        63.0 / max_scale
    } else {
        0.0
    };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    let mut out = [0u8; 16];
    let (dm, sc) = out.split_at_mut(4);
    for j in 0..QK_K / 32 {
        // C's `uint8_t ls = nearest_int(...)` keeps the low byte, then MIN(63, ls).
        let ls = (nearest_int(inv_scale * scales[j]) as u8).min(63);
        let lm = (nearest_int(inv_min * mins[j]) as u8).min(63);
        if j < 4 {
            sc[j] = ls;
            sc[j + 4] = lm;
        } else {
            sc[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
            sc[j - 4] |= (ls >> 4) << 6;
            sc[j] |= (lm >> 4) << 6;
        }
    }
    dm[..2].copy_from_slice(&f16_bits(max_scale / 63.0));
    dm[2..].copy_from_slice(&f16_bits(max_min / 63.0));
    let d_all = f16_at(&out, 0);
    let dmin_all = f16_at(&out, 2);
    for j in 0..QK_K / 32 {
        let (s, m) = get_scale_min_k4(j, &out[4..]);
        let d = d_all * f32::from(s);
        if d == 0.0 {
            // ggml keeps make_qkx2_quants' levels for such a sub-block.
            continue;
        }
        let dm = dmin_all * f32::from(m);
        for ii in 0..32 {
            let q = nearest_int((x[32 * j + ii] + dm) / d);
            l[32 * j + ii] = q.clamp(0, nmax) as u8;
        }
    }
    out
}

/// `quantize_row_q4_K_ref` for one super-block.
pub(super) fn quantize_block_q4_k(x: &[f32], out: &mut Vec<u8>) {
    let mut l = [0u8; QK_K];
    out.extend_from_slice(&quantize_scales_mins(x, 15, -1.0, 20, &mut l));
    for j in (0..QK_K).step_by(64) {
        out.extend((0..32).map(|i| l[j + i] | (l[j + i + 32] << 4)));
    }
}

/// `quantize_row_q5_K_ref` for one super-block.
pub(super) fn quantize_block_q5_k(x: &[f32], out: &mut Vec<u8>) {
    let mut l = [0u8; QK_K];
    out.extend_from_slice(&quantize_scales_mins(x, 31, -0.5, 15, &mut l));
    let mut qh = [0u8; QK_K / 8];
    let mut ql = [0u8; QK_K / 2];
    let (mut m1, mut m2) = (1u8, 2u8);
    for (c, n) in (0..QK_K).step_by(64).enumerate() {
        for j in 0..32 {
            let mut l1 = l[n + j];
            if l1 > 15 {
                l1 -= 16;
                qh[j] |= m1;
            }
            let mut l2 = l[n + j + 32];
            if l2 > 15 {
                l2 -= 16;
                qh[j] |= m2;
            }
            ql[32 * c + j] = l1 | (l2 << 4);
        }
        m1 <<= 2;
        m2 <<= 2;
    }
    out.extend_from_slice(&qh);
    out.extend_from_slice(&ql);
}

/// `quantize_row_q6_K_ref` for one super-block.
pub(super) fn quantize_block_q6_k(x: &[f32], out: &mut Vec<u8>) {
    let mut l = [0i8; QK_K];
    let mut scales = [0f32; QK_K / 16];
    let (mut max_scale, mut max_abs_scale) = (0.0f32, 0.0f32);
    for ib in 0..QK_K / 16 {
        let s = make_qx_quants(32, &x[16 * ib..16 * ib + 16], &mut l[16 * ib..16 * ib + 16]);
        scales[ib] = s;
        if s.abs() > max_abs_scale {
            max_abs_scale = s.abs();
            max_scale = s;
        }
    }
    if max_abs_scale < GROUP_MAX_EPS {
        // memset to zero; d = +0.0 is all zero bits as well.
        out.extend_from_slice(&[0u8; Q6_K_BYTES]);
        return;
    }
    let iscale = -128.0f32 / max_scale;
    let d = f16::from_f32(1.0 / iscale);
    let mut sc = [0i8; QK_K / 16];
    for (s, v) in sc.iter_mut().zip(&scales) {
        // MIN(127, ·) then C's conversion to int8_t (the value is ≥ −128 here).
        *s = nearest_int(iscale * v).min(127) as i8;
    }
    for j in 0..QK_K / 16 {
        let dj = d.to_f32() * f32::from(sc[j]);
        if dj == 0.0 {
            continue;
        }
        for ii in 0..16 {
            let q = nearest_int(x[16 * j + ii] / dj).clamp(-32, 31);
            l[16 * j + ii] = (q + 32) as i8;
        }
    }
    let l: [u8; QK_K] = l.map(|v| v as u8);
    let mut ql = [0u8; QK_K / 2];
    let mut qh = [0u8; QK_K / 4];
    for (h, j) in (0..QK_K).step_by(128).enumerate() {
        for i in 0..32 {
            let (q1, q2, q3, q4) = (l[j + i], l[j + i + 32], l[j + i + 64], l[j + i + 96]);
            ql[64 * h + i] = (q1 & 0xF) | ((q3 & 0xF) << 4);
            ql[64 * h + i + 32] = (q2 & 0xF) | ((q4 & 0xF) << 4);
            qh[32 * h + i] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
        }
    }
    out.extend_from_slice(&ql);
    out.extend_from_slice(&qh);
    out.extend(sc.iter().map(|&s| s as u8));
    out.extend_from_slice(&d.to_le_bytes());
}

/// `dequantize_row_q4_K` for one super-block of 144 bytes.
pub(super) fn dequantize_block_q4_k(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let min = f16_at(b, 2);
    let scales = &b[4..16];
    let qs = &b[16..Q4_K_BYTES];
    for c in 0..4 {
        let (sc, m) = get_scale_min_k4(2 * c, scales);
        let (d1, m1) = (d * f32::from(sc), min * f32::from(m));
        let (sc, m) = get_scale_min_k4(2 * c + 1, scales);
        let (d2, m2) = (d * f32::from(sc), min * f32::from(m));
        let q = &qs[32 * c..32 * c + 32];
        let y = &mut y[64 * c..64 * c + 64];
        for l in 0..32 {
            y[l] = d1 * f32::from(q[l] & 0xF) - m1;
            y[l + 32] = d2 * f32::from(q[l] >> 4) - m2;
        }
    }
}

/// `dequantize_row_q5_K` for one super-block of 176 bytes.
pub(super) fn dequantize_block_q5_k(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let min = f16_at(b, 2);
    let scales = &b[4..16];
    let qh = &b[16..48];
    let qs = &b[48..Q5_K_BYTES];
    for c in 0..4 {
        let (sc, m) = get_scale_min_k4(2 * c, scales);
        let (d1, m1) = (d * f32::from(sc), min * f32::from(m));
        let (sc, m) = get_scale_min_k4(2 * c + 1, scales);
        let (d2, m2) = (d * f32::from(sc), min * f32::from(m));
        let (u1, u2) = (1u8 << (2 * c), 2u8 << (2 * c));
        let ql = &qs[32 * c..32 * c + 32];
        let y = &mut y[64 * c..64 * c + 64];
        for l in 0..32 {
            let hi1 = if qh[l] & u1 != 0 { 16 } else { 0 };
            let hi2 = if qh[l] & u2 != 0 { 16 } else { 0 };
            y[l] = d1 * f32::from((ql[l] & 0xF) + hi1) - m1;
            y[l + 32] = d2 * f32::from((ql[l] >> 4) + hi2) - m2;
        }
    }
}

/// `dequantize_row_q6_K` for one super-block of 210 bytes: x = (d·sc)·q, in that order.
pub(super) fn dequantize_block_q6_k(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 208);
    for h in 0..2 {
        let ql = &b[64 * h..64 * h + 64];
        let qh = &b[128 + 32 * h..128 + 32 * h + 32];
        let sc = &b[192 + 8 * h..192 + 8 * h + 8];
        let y = &mut y[128 * h..128 * h + 128];
        for l in 0..32 {
            let is = l / 16;
            let q1 = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) as i32 - 32;
            let q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) as i32 - 32;
            let q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i32 - 32;
            let q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i32 - 32;
            let s = |k: usize| d * f32::from(sc[is + k] as i8);
            y[l] = s(0) * q1 as f32;
            y[l + 32] = s(2) * q2 as f32;
            y[l + 64] = s(4) * q3 as f32;
            y[l + 96] = s(6) * q4 as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_int_rounds_half_to_even() {
        let cases = [
            (0.5, 0),
            (1.5, 2),
            (2.5, 2),
            (-0.5, 0),
            (-1.5, -2),
            (3.49, 3),
            (-3.51, -4),
            (0.0, 0),
        ];
        for (x, want) in cases {
            assert_eq!(nearest_int(x), want, "nearest_int({x})");
        }
    }

    #[test]
    fn scale_min_k4_unpacks_what_the_quantizer_packs() {
        // 6-bit (scale, min) pairs, packed as quantize_scales_mins packs them.
        let mut sc = [0u8; 12];
        let pairs: Vec<(u8, u8)> = (0..8u8).map(|j| ((j * 9 + 1) % 64, 63 - 5 * j)).collect();
        for (j, &(ls, lm)) in pairs.iter().enumerate() {
            if j < 4 {
                sc[j] = ls;
                sc[j + 4] = lm;
            } else {
                sc[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
                sc[j - 4] |= (ls >> 4) << 6;
                sc[j] |= (lm >> 4) << 6;
            }
        }
        for (j, &p) in pairs.iter().enumerate() {
            assert_eq!(get_scale_min_k4(j, &sc), p, "sub-block {j}");
        }
    }
}
