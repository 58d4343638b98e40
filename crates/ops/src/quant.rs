//! Weight formats as stored in GGUF files, with quantizers bit-exact with ggml's reference.
//!
//! Bytes are laid out exactly as in a GGUF tensor: a row of `cols` elements is
//! `cols / block_elems()` blocks of `block_bytes()` bytes, rows concatenated. The GPU kernels
//! read those bytes as uploaded, so this module is the one definition of the layout:
//!
//! | format | block | bytes | layout (little-endian)                                  |
//! |--------|-------|-------|---------------------------------------------------------|
//! | f32    | 1     | 4     | `f32`                                                   |
//! | f16    | 1     | 2     | IEEE binary16                                           |
//! | q8_0   | 32    | 34    | `f16 d`, `i8 qs[32]`; x = qs·d                           |
//! | q4_0   | 32    | 18    | `f16 d`, `u8 qs[16]`; x = (nibble − 8)·d                  |
//! | q4_1   | 32    | 20    | `f16 d`, `f16 m`, `u8 qs[16]`; x = nibble·d + m           |
//! | q5_0   | 32    | 22    | `f16 d`, `u32 qh`, `u8 qs[16]`; x = (q − 16)·d, q = nibble + 16·bit |
//! | q5_1   | 32    | 24    | `f16 d`, `f16 m`, `u32 qh`, `u8 qs[16]`; x = q·d + m       |
//! | bf16   | 1     | 2     | the high half of an f32                                 |
//! | q4_k   | 256   | 144   | `f16 d`, `f16 dmin`, `u8 scales[12]`, `u8 qs[128]`        |
//! | q5_k   | 256   | 176   | `f16 d`, `f16 dmin`, `u8 scales[12]`, `u8 qh[32]`, `u8 qs[128]` |
//! | q6_k   | 256   | 210   | `u8 ql[128]`, `u8 qh[64]`, `i8 scales[16]`, `f16 d`         |
//!
//! In the 4-bit formats byte `j` of `qs` holds element `j` in its low nibble and element
//! `j + 16` in its high nibble (ggml's `block_q4_0` / `block_q4_1`); the 5-bit formats
//! add each element's fifth bit, element `j`'s as bit `j` of `qh` (ggml's `block_q5_0` /
//! `block_q5_1`). The K formats
//! (256-element super-blocks with per-sub-block scales) are described in `quant/k.rs`.
//!
//! The quantizers follow ggml's `quantize_row_*_ref` in `ggml-quants.c` (the functions
//! ggml uses "for deterministic creation of model files") operation for operation, in f32,
//! with no fused multiply-adds, so a row quantized here is byte-identical to one quantized
//! by ggml's reference built without FP contraction. bf16 rounds as ggml's
//! `ggml_compute_fp32_to_bf16` (to nearest even; NaN kept quiet; no flush of subnormals).

use std::fmt;
use std::str::FromStr;

use half::f16;

mod k;

/// Errors from format names and shapes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantError {
    #[error(
        "unknown weight format {0:?} (known: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k)"
    )]
    UnknownFormat(String),
    #[error(
        "{format}: a row of {cols} elements is not a whole number of {block_elems}-element blocks"
    )]
    RaggedRow {
        format: WeightFormat,
        cols: u64,
        block_elems: u64,
    },
}

/// A tensor's storage format. The discriminants are not ggml's ids: see [`Self::ggml_type_id`].
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WeightFormat {
    F32,
    F16,
    Q8_0,
    Q4_0,
    Q4_1,
    BF16,
    Q4_K,
    Q5_K,
    Q6_K,
    Q5_0,
    Q5_1,
}

impl WeightFormat {
    /// Every format, in declaration order (tests and sweeps iterate over it).
    pub const ALL: [WeightFormat; 11] = [
        Self::F32,
        Self::F16,
        Self::Q8_0,
        Self::Q4_0,
        Self::Q4_1,
        Self::BF16,
        Self::Q4_K,
        Self::Q5_K,
        Self::Q6_K,
        Self::Q5_0,
        Self::Q5_1,
    ];

    /// ggml's lower-case name, as in `gemv_q4_1`.
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Q8_0 => "q8_0",
            Self::Q4_0 => "q4_0",
            Self::Q4_1 => "q4_1",
            Self::BF16 => "bf16",
            Self::Q4_K => "q4_k",
            Self::Q5_K => "q5_k",
            Self::Q6_K => "q6_k",
            Self::Q5_0 => "q5_0",
            Self::Q5_1 => "q5_1",
        }
    }

    /// Parses a name as printed by [`Self::name`] (case-insensitive).
    pub fn parse(s: &str) -> Result<Self, QuantError> {
        Self::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| QuantError::UnknownFormat(s.to_string()))
    }

    /// The format with ggml type id `id` (the `ggml_type` enum stored in GGUF tensor infos),
    /// or `None` for types gpuscope has no kernels for.
    pub fn from_ggml_type_id(id: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.ggml_type_id() == id)
    }

    /// ggml's `ggml_type` value: F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7,
    /// Q8_0 = 8, Q4_K = 12,
    /// Q5_K = 13, Q6_K = 14, BF16 = 30.
    pub fn ggml_type_id(self) -> u32 {
        match self {
            Self::F32 => 0,
            Self::F16 => 1,
            Self::Q8_0 => 8,
            Self::Q4_0 => 2,
            Self::Q4_1 => 3,
            Self::Q4_K => 12,
            Self::Q5_K => 13,
            Self::Q6_K => 14,
            Self::Q5_0 => 6,
            Self::Q5_1 => 7,
            Self::BF16 => 30,
        }
    }

    /// Elements per block (ggml's `QK*`; 1 for the float formats).
    pub fn block_elems(self) -> u32 {
        match self {
            Self::F32 | Self::F16 | Self::BF16 => 1,
            Self::Q8_0 | Self::Q4_0 | Self::Q4_1 | Self::Q5_0 | Self::Q5_1 => 32,
            Self::Q4_K | Self::Q5_K | Self::Q6_K => k::QK_K as u32,
        }
    }

    /// Bytes per block (`sizeof(block_q*)` in ggml).
    pub fn block_bytes(self) -> u32 {
        match self {
            Self::F32 => 4,
            Self::F16 => 2,
            Self::Q8_0 => 34,
            Self::Q4_0 => 18,
            Self::Q4_1 => 20,
            Self::BF16 => 2,
            Self::Q4_K => k::Q4_K_BYTES as u32,
            Self::Q5_K => k::Q5_K_BYTES as u32,
            Self::Q6_K => k::Q6_K_BYTES as u32,
            Self::Q5_0 => 22,
            Self::Q5_1 => 24,
        }
    }

    /// Whether the format is block-quantized (as opposed to plain floats).
    pub fn is_quantized(self) -> bool {
        self.block_elems() > 1
    }

    /// Bytes of one row of `cols` elements; `cols` must be a whole number of blocks.
    pub fn row_bytes(self, cols: u64) -> Result<u64, QuantError> {
        let be = u64::from(self.block_elems());
        if !cols.is_multiple_of(be) {
            return Err(QuantError::RaggedRow {
                format: self,
                cols,
                block_elems: be,
            });
        }
        Ok(cols / be * u64::from(self.block_bytes()))
    }

    /// Quantizes `x` (a whole number of blocks; several rows may be passed at once, since
    /// rows are just concatenated blocks) into GGUF bytes.
    ///
    /// # Panics
    /// If `x.len()` is not a multiple of [`Self::block_elems`].
    pub fn quantize_row(self, x: &[f32]) -> Vec<u8> {
        let n = self
            .row_bytes(x.len() as u64)
            .unwrap_or_else(|e| panic!("quantize_row: {e}"));
        let mut out = Vec::with_capacity(n as usize);
        match self {
            Self::F32 => x
                .iter()
                .for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
            Self::F16 => x
                .iter()
                .for_each(|v| out.extend_from_slice(&f16::from_f32(*v).to_le_bytes())),
            Self::Q8_0 => x
                .chunks_exact(32)
                .for_each(|b| quantize_block_q8_0(b, &mut out)),
            Self::Q4_0 => x
                .chunks_exact(32)
                .for_each(|b| quantize_block_q4_0(b, &mut out)),
            Self::Q4_1 => x
                .chunks_exact(32)
                .for_each(|b| quantize_block_q4_1(b, &mut out)),
            Self::BF16 => x
                .iter()
                .for_each(|v| out.extend_from_slice(&f32_to_bf16(*v).to_le_bytes())),
            Self::Q4_K => x
                .chunks_exact(k::QK_K)
                .for_each(|b| k::quantize_block_q4_k(b, &mut out)),
            Self::Q5_K => x
                .chunks_exact(k::QK_K)
                .for_each(|b| k::quantize_block_q5_k(b, &mut out)),
            Self::Q6_K => x
                .chunks_exact(k::QK_K)
                .for_each(|b| k::quantize_block_q6_k(b, &mut out)),
            Self::Q5_0 => x
                .chunks_exact(32)
                .for_each(|b| quantize_block_q5_0(b, &mut out)),
            Self::Q5_1 => x
                .chunks_exact(32)
                .for_each(|b| quantize_block_q5_1(b, &mut out)),
        }
        debug_assert_eq!(out.len() as u64, n);
        out
    }

    /// Dequantizes GGUF bytes into `out` (ggml's `dequantize_row_*`, same arithmetic).
    ///
    /// # Panics
    /// If `bytes.len()` is not exactly the size of `out.len()` elements in this format.
    /// Whether [`Self::widen_to_q8_0`] takes this format: q4_0 and q5_0, whose blocks
    /// are a scale and signed quants of at most 5 bits with no offset, so a q8_0 block
    /// with the same scale holds them exactly (and q8_0 itself).
    pub fn widens_to_q8_0(self) -> bool {
        matches!(self, Self::Q4_0 | Self::Q5_0 | Self::Q8_0)
    }

    /// The same weights as q8_0 blocks: each block's f16 scale kept, each quant stored as
    /// the int8 it stands for (`q - 8`, `q - 16`), so every weight dequantizes to the
    /// same f32 (`d · q`). For stacking matrices of these formats into one (q/k/v where
    /// `attn_v` has another format: `gpu_weights.rs`).
    ///
    /// # Panics
    /// If the format does not widen ([`Self::widens_to_q8_0`]) or `bytes` is not whole
    /// blocks.
    pub fn widen_to_q8_0(self, bytes: &[u8]) -> Vec<u8> {
        assert!(
            self.widens_to_q8_0(),
            "{} does not widen to q8_0",
            self.name()
        );
        let bb = self.block_bytes() as usize;
        assert_eq!(
            bytes.len() % bb,
            0,
            "widen_to_q8_0: not whole {} blocks",
            self.name()
        );
        let mut out = Vec::with_capacity(bytes.len() / bb * 34);
        for b in bytes.chunks_exact(bb) {
            out.extend_from_slice(&b[..2]);
            let mut q = [0i8; 32];
            match self {
                Self::Q8_0 => q.iter_mut().zip(&b[2..]).for_each(|(q, &v)| *q = v as i8),
                Self::Q4_0 => {
                    for j in 0..16 {
                        q[j] = (b[2 + j] & 0x0F) as i8 - 8;
                        q[j + 16] = (b[2 + j] >> 4) as i8 - 8;
                    }
                }
                _ => {
                    let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
                    for j in 0..16 {
                        let lo = (b[6 + j] & 0x0F) | ((((qh >> j) & 1) as u8) << 4);
                        let hi = (b[6 + j] >> 4) | ((((qh >> (j + 16)) & 1) as u8) << 4);
                        q[j] = lo as i8 - 16;
                        q[j + 16] = hi as i8 - 16;
                    }
                }
            }
            out.extend(q.iter().map(|&v| v as u8));
        }
        out
    }

    pub fn dequantize_row(self, bytes: &[u8], out: &mut [f32]) {
        let n = self
            .row_bytes(out.len() as u64)
            .unwrap_or_else(|e| panic!("dequantize_row: {e}"));
        assert_eq!(
            bytes.len() as u64,
            n,
            "dequantize_row: {} bytes given for {} {} elements ({n} bytes)",
            bytes.len(),
            out.len(),
            self.name()
        );
        let bb = self.block_bytes() as usize;
        let be = self.block_elems() as usize;
        for (b, o) in bytes.chunks_exact(bb).zip(out.chunks_exact_mut(be)) {
            match self {
                Self::F32 => o[0] = f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                Self::F16 => o[0] = f16_at(b, 0),
                Self::Q8_0 => {
                    let d = f16_at(b, 0);
                    for (j, v) in o.iter_mut().enumerate() {
                        *v = f32::from(b[2 + j] as i8) * d;
                    }
                }
                Self::Q4_0 => {
                    let d = f16_at(b, 0);
                    for j in 0..16 {
                        let q = b[2 + j];
                        o[j] = ((q & 0x0F) as i32 - 8) as f32 * d;
                        o[j + 16] = ((q >> 4) as i32 - 8) as f32 * d;
                    }
                }
                Self::Q4_1 => {
                    let d = f16_at(b, 0);
                    let m = f16_at(b, 2);
                    for j in 0..16 {
                        let q = b[4 + j];
                        o[j] = f32::from(q & 0x0F) * d + m;
                        o[j + 16] = f32::from(q >> 4) * d + m;
                    }
                }
                Self::BF16 => o[0] = bf16_to_f32(u16::from_le_bytes([b[0], b[1]])),
                Self::Q4_K => k::dequantize_block_q4_k(b, o),
                Self::Q5_K => k::dequantize_block_q5_k(b, o),
                Self::Q6_K => k::dequantize_block_q6_k(b, o),
                Self::Q5_0 => dequantize_block_q5(b, o, None),
                Self::Q5_1 => dequantize_block_q5(b, o, Some(f16_at(b, 2))),
            }
        }
    }
}

impl fmt::Display for WeightFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for WeightFormat {
    type Err = QuantError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

fn f16_at(b: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

/// ggml's `ggml_compute_bf16_to_fp32`: the bits are the high half of the f32.
fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// ggml's `ggml_compute_fp32_to_bf16`: round to nearest, ties to even; a NaN keeps its
/// top bits and is made quiet; subnormals are rounded like any value (current ggml no
/// longer flushes them to zero).
fn f32_to_bf16(v: f32) -> u16 {
    let u = v.to_bits();
    if u & 0x7fff_ffff > 0x7f80_0000 {
        return ((u >> 16) | 64) as u16;
    }
    (u.wrapping_add(0x7fff + ((u >> 16) & 1)) >> 16) as u16
}

/// Same as C's `x ? 1.0f/x : 0.0f` (a zero block stays zero instead of becoming NaN).
fn recip_or_zero(d: f32) -> f32 {
    if d != 0.0 {
        1.0 / d
    } else {
        0.0
    }
}

/// `quantize_row_q8_0_ref`: d = amax/127, qs = roundf(x/d) (ties away from zero, as
/// Rust's `f32::round`).
fn quantize_block_q8_0(x: &[f32], out: &mut Vec<u8>) {
    let amax = x.iter().fold(0.0f32, |a, v| a.max(v.abs()));
    let d = amax / 127.0;
    let id = recip_or_zero(d);
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    // The rounded value is within [-127, 127], so the `as i8` conversion is C's.
    out.extend(x.iter().map(|v| (v * id).round() as i8 as u8));
}

/// `quantize_row_q4_0_ref`: max = the value with the largest magnitude (sign kept, first
/// one on ties), d = max/−8, q = min(15, (int8_t)(x·id + 8.5)).
fn quantize_block_q4_0(x: &[f32], out: &mut Vec<u8>) {
    let (mut amax, mut max) = (0.0f32, 0.0f32);
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    let d = max / -8.0;
    let id = recip_or_zero(d);
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    // `as i8` truncates toward zero like C's cast for in-range values (x·id + 8.5 is in
    // [0.5, 16.5] here); the MIN happens on the signed value, as in C.
    let q = |v: f32| ((v * id + 8.5) as i8).min(15) as u8;
    for j in 0..16 {
        out.push(q(x[j]) | (q(x[j + 16]) << 4));
    }
}

/// `quantize_row_q4_1_ref`: d = (max−min)/15, m = min, q = min(15, (int8_t)((x−min)·id + 0.5)).
fn quantize_block_q4_1(x: &[f32], out: &mut Vec<u8>) {
    let (mut min, mut max) = (f32::MAX, -f32::MAX);
    for &v in x {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
    }
    let d = (max - min) / 15.0;
    let id = recip_or_zero(d);
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    out.extend_from_slice(&f16::from_f32(min).to_le_bytes());
    let q = |v: f32| (((v - min) * id + 0.5) as i8).min(15) as u8;
    for j in 0..16 {
        out.push(q(x[j]) | (q(x[j + 16]) << 4));
    }
}

/// `dequantize_row_q5_0` / `_q5_1` for one block: q = nibble | (bit << 4); q5_0 gives
/// (q − 16)·d, q5_1 (`m` given) q·d + m.
fn dequantize_block_q5(b: &[u8], o: &mut [f32], m: Option<f32>) {
    let d = f16_at(b, 0);
    let at = if m.is_some() { 4 } else { 2 };
    let qh = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let qs = &b[at + 4..at + 20];
    for j in 0..16 {
        let q0 = i32::from(qs[j] & 0x0F) | (((qh >> j) & 1) << 4) as i32;
        let q1 = i32::from(qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4) as i32;
        match m {
            None => {
                o[j] = (q0 - 16) as f32 * d;
                o[j + 16] = (q1 - 16) as f32 * d;
            }
            Some(m) => {
                o[j] = q0 as f32 * d + m;
                o[j + 16] = q1 as f32 * d + m;
            }
        }
    }
}

/// The 16 nibble bytes and the fifth-bit word of a 5-bit block from its 32 quants.
fn pack_q5(q: &[u8; 32]) -> ([u8; 16], u32) {
    let (mut qs, mut qh) = ([0u8; 16], 0u32);
    for j in 0..16 {
        qs[j] = (q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4);
        qh |= u32::from((q[j] & 0x10) >> 4) << j;
        qh |= u32::from((q[j + 16] & 0x10) >> 4) << (j + 16);
    }
    (qs, qh)
}

/// `quantize_row_q5_0_ref`: as q4_0 with 32 levels: d = max/−16,
/// q = min(31, (int8_t)(x·id + 16.5)).
fn quantize_block_q5_0(x: &[f32], out: &mut Vec<u8>) {
    let (mut amax, mut max) = (0.0f32, 0.0f32);
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    let d = max / -16.0;
    let id = recip_or_zero(d);
    let mut q = [0u8; 32];
    for (qj, &v) in q.iter_mut().zip(x) {
        *qj = ((v * id + 16.5) as i8).min(31) as u8;
    }
    let (qs, qh) = pack_q5(&q);
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    out.extend_from_slice(&qh.to_le_bytes());
    out.extend_from_slice(&qs);
}

/// `quantize_row_q5_1_ref`: d = (max−min)/31, m = min, q = (uint8_t)((x−min)·id + 0.5).
fn quantize_block_q5_1(x: &[f32], out: &mut Vec<u8>) {
    let (mut min, mut max) = (f32::MAX, -f32::MAX);
    for &v in x {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
    }
    let d = (max - min) / 31.0;
    let id = recip_or_zero(d);
    let mut q = [0u8; 32];
    for (qj, &v) in q.iter_mut().zip(x) {
        *qj = ((v - min) * id + 0.5) as u8;
    }
    let (qs, qh) = pack_q5(&q);
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    out.extend_from_slice(&f16::from_f32(min).to_le_bytes());
    out.extend_from_slice(&qh.to_le_bytes());
    out.extend_from_slice(&qs);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in WeightFormat::ALL {
            assert_eq!(f.name().parse::<WeightFormat>().unwrap(), f);
            assert_eq!(WeightFormat::from_ggml_type_id(f.ggml_type_id()), Some(f));
        }
        assert!(matches!(
            WeightFormat::parse("q3_k"),
            Err(QuantError::UnknownFormat(_))
        ));
    }

    /// Widened to q8_0, q4_0 and q5_0 blocks dequantize to the very same f32s, for every
    /// quant value (a ramp over all of them) and random rows.
    #[test]
    fn widening_to_q8_0_keeps_every_weight() {
        let ramp: Vec<f32> = (0..256).map(|i| (i as f32 - 128.0) * 0.37).collect();
        let mut state = 12345u32;
        let random: Vec<f32> = (0..1024)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect();
        for format in [WeightFormat::Q4_0, WeightFormat::Q5_0, WeightFormat::Q8_0] {
            for x in [&ramp, &random] {
                let bytes = format.quantize_row(x);
                let wide = format.widen_to_q8_0(&bytes);
                assert_eq!(wide.len(), x.len() / 32 * 34, "{format}");
                let (mut a, mut b) = (vec![0f32; x.len()], vec![0f32; x.len()]);
                format.dequantize_row(&bytes, &mut a);
                WeightFormat::Q8_0.dequantize_row(&wide, &mut b);
                assert!(
                    a.iter().zip(&b).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{format}: a weight changed"
                );
            }
        }
        assert!(!WeightFormat::Q4_1.widens_to_q8_0());
        assert!(!WeightFormat::Q4_K.widens_to_q8_0());
    }

    #[test]
    fn row_bytes_rejects_partial_blocks() {
        assert_eq!(WeightFormat::Q4_0.row_bytes(64), Ok(36));
        assert!(WeightFormat::Q4_0.row_bytes(48).is_err());
        assert_eq!(WeightFormat::F16.row_bytes(3), Ok(6));
    }
}
