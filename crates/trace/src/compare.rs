//! Comparing one tensor with its reference: the error measures `gpuscope check` and
//! `gpuscope ops test` report, the thresholds that decide pass or fail, and the
//! word-by-word diff `gpuscope replay` uses for recorded outputs.
//!
//! # Measures (found = the path under test, expected = the reference)
//!
//! - `nmse` = Σ(found − expected)² / Σ expected², over the elements where both are
//!   numbers (llama.cpp's test-backend-ops criterion); 0 when both are all zero,
//!   infinite when only the reference is.
//! - `max_abs` = max |found − expected|; `max_rel` = max |found − expected| / |expected|
//!   over non-zero expected values (large near zeros, so it is shown, not judged).
//! - `max_err` = `max_abs` / rms(expected): the worst element in units of the tensor's
//!   own scale. NMSE averages over the tensor, so one wrong element in 49152 logits hardly
//!   moves it; `max_err` catches it.
//! - NaN / Inf counts in both, and `nonfinite_mismatch`: elements where one side is a
//!   number and the other is not (or NaN against ±Inf). Both NaN counts as agreeing.
//! - u32 tensors (token ids, argmax) are compared exactly: `mismatched` words.
//!
//! # Thresholds
//!
//! [`Limits`] hold a maximum NMSE and `max_err`. Two sets apply: **local** (the reference
//! op run on the tested path's own inputs: only the kernel's own rounding separates them)
//! and **chained** (each path fed its own previous outputs: error accumulates through the
//! layers). Defaults ([`Thresholds::default`]) are for f32 kernels against an f32 or f64
//! reference:
//!
//! | set | NMSE | max_err | why |
//! |---|---|---|---|
//! | local, every op | 1e-7 | 1e-3 | llama.cpp's default NMSE; f32 sums in another order differ by ~1e-12 |
//! | local, `rope` | 1e-6 | 1e-2 | GPU `pow`/`sin`/`cos` are allowed ulps of error that grow with the position (see `ops/src/rope/mod.rs`) |
//! | chained | 1e-3 | 0.5 | 30 layers of f32 rounding on a real model stay near 1e-6; a wrong kernel gives ~1 |
//! | chained, int8 activations, against a second GPU | 5e-2 | 2 | see below |
//! | local, a dispatch that rounds activations to int8 | 1e-5 | 2e-2 | see below |
//!
//! **Int8 activations** ([`Thresholds::for_int8_activations`]): where the tested path
//! rounds activations to int8 (the `dp4a` gemvs), two paths that differ in a last bit
//! (f32 against f64, or a GPU's reciprocal against the CPU's) now and then round an
//! element of x to the neighbouring step. Locally that is one step of one element in a
//! dot product: on an H100, SmolLM2-135M Q4_1 with every matrix on dp4a, local NMSE up to
//! 1.2e-7 and max err 2.8e-3 (lavapipe, whose division is exact: ~1e-13), hence 1e-5 and
//! 2e-2 for those dispatches (an int8 kernel that is wrong gives ~1).
//!
//! Chained, against the CPU (`check`'s default reference), the reference follows the
//! tested GPU's int8 rounding wherever the GPU's quant of an element is one of the two
//! steps around the reference's own `x / d` (`gpuscope_ops::gemv::q8_blocks_following`):
//! otherwise each flip moves the two paths apart by a whole step and the flips compound
//! through the layers, so that the comparison measured the quantization's noise rather
//! than the kernels (the real Gemma 3 270M file with q4_K / q5_K on dp4a: chained max err
//! 2.95 × rms at layer 4; followed: chained NMSE ≤ 5.1e-13, as the float path). The
//! default chained limits apply. Against a second GPU, which rounds on its own, the flips
//! stay: chained limits of 5e-2 and 2 ([`INT8_CHAINED`]; measured without following:
//! Llama-8B-shaped q4_0 on an H100 over 3 tokens chained NMSE up to 5.5e-4, max err 0.36;
//! SmolLM2 over 16 tokens 1.2e-2 at the logits and 0.85), which catch gross errors only.
//! Limits given with `--threshold` are kept.
//!
//! `--threshold` overrides them: `nmse=`, `max=`, `chained.nmse=`, `chained.max=`, or per
//! op family `OP=NMSE`, `OP.nmse=`, `OP.max=` (OP matches an op name or its prefix before
//! `_`: `gemv` matches `gemv_q4_1`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One element of a comparison, as printed for the worst ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Element {
    pub index: u64,
    pub found: f64,
    pub expected: f64,
}

/// How far a tensor is from its reference (see the module docs).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TensorError {
    /// `f32` or `u32`.
    pub dtype: String,
    pub n: u64,
    pub nmse: f64,
    pub max_abs: f64,
    pub max_rel: f64,
    pub max_err: f64,
    pub rms_expected: f64,
    /// NaN / ±Inf in the tested tensor.
    pub nan: u64,
    pub inf: u64,
    /// NaN / ±Inf in the reference.
    pub expected_nan: u64,
    pub expected_inf: u64,
    /// Elements where exactly one side is a number, or NaN meets ±Inf.
    pub nonfinite_mismatch: u64,
    /// Elements (f32) or words (u32) that are not identical.
    pub mismatched: u64,
    /// The largest differences, worst first (non-finite disagreements first of all).
    pub worst: Vec<Element>,
}

/// Elements kept in [`TensorError::worst`].
pub const WORST_KEPT: usize = 5;

fn push_worst(worst: &mut Vec<(f64, Element)>, score: f64, e: Element) {
    if worst.len() == WORST_KEPT && worst.last().is_some_and(|w| w.0 >= score) {
        return;
    }
    let at = worst.partition_point(|w| w.0 >= score);
    worst.insert(at, (score, e));
    worst.truncate(WORST_KEPT);
}

/// Compares an f32 tensor with its reference (f64 so an f64 reference loses nothing).
/// The shorter length is compared; a length difference is the caller's error to report.
pub fn tensor_error(found: &[f32], expected: &[f64]) -> TensorError {
    let mut e = TensorError {
        dtype: "f32".into(),
        n: found.len().min(expected.len()) as u64,
        ..Default::default()
    };
    let (mut err2, mut ref2, mut finite_pairs) = (0.0f64, 0.0f64, 0u64);
    let mut worst: Vec<(f64, Element)> = Vec::new();
    for (i, (&f, &x)) in found.iter().zip(expected).enumerate() {
        let f = f as f64;
        e.nan += f.is_nan() as u64;
        e.inf += f.is_infinite() as u64;
        e.expected_nan += x.is_nan() as u64;
        e.expected_inf += x.is_infinite() as u64;
        let element = Element {
            index: i as u64,
            found: f,
            expected: x,
        };
        if !(f.is_finite() && x.is_finite()) {
            let agree = (f.is_nan() && x.is_nan()) || f == x;
            if !agree {
                e.nonfinite_mismatch += 1;
                e.mismatched += 1;
                push_worst(&mut worst, f64::INFINITY, element);
            }
            continue;
        }
        finite_pairs += 1;
        let d = (f - x).abs();
        if d != 0.0 {
            e.mismatched += 1;
        }
        err2 += d * d;
        ref2 += x * x;
        e.max_abs = e.max_abs.max(d);
        if x != 0.0 {
            e.max_rel = e.max_rel.max(d / x.abs());
        }
        if d > 0.0 {
            push_worst(&mut worst, d, element);
        }
    }
    e.nmse = match (err2 == 0.0, ref2 == 0.0) {
        (true, _) => 0.0,
        (false, true) => f64::INFINITY,
        (false, false) => err2 / ref2,
    };
    e.rms_expected = if finite_pairs > 0 {
        (ref2 / finite_pairs as f64).sqrt()
    } else {
        0.0
    };
    e.max_err = match (e.max_abs == 0.0, e.rms_expected == 0.0) {
        (true, _) => 0.0,
        (false, true) => f64::INFINITY,
        (false, false) => e.max_abs / e.rms_expected,
    };
    e.worst = worst.into_iter().map(|(_, el)| el).collect();
    e
}

/// Compares u32 words exactly (token ids).
pub fn word_error(found: &[u32], expected: &[u32]) -> TensorError {
    let mut e = TensorError {
        dtype: "u32".into(),
        n: found.len().min(expected.len()) as u64,
        ..Default::default()
    };
    for (i, (&f, &x)) in found.iter().zip(expected).enumerate() {
        if f != x {
            e.mismatched += 1;
            if e.worst.len() < WORST_KEPT {
                e.worst.push(Element {
                    index: i as u64,
                    found: f as f64,
                    expected: x as f64,
                });
            }
        }
    }
    if e.mismatched > 0 {
        e.nmse = f64::INFINITY;
        e.max_err = f64::INFINITY;
    }
    e
}

/// A maximum NMSE and `max_err` (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub nmse: f64,
    pub max_err: f64,
}

impl Limits {
    /// Why `e` crosses these limits, or `None` when it stays within them.
    pub fn exceeded(&self, e: &TensorError) -> Option<String> {
        if e.dtype == "u32" {
            return (e.mismatched > 0).then(|| format!("{} of {} words differ", e.mismatched, e.n));
        }
        if e.nonfinite_mismatch > 0 {
            return Some(format!(
                "{} elements are NaN/Inf on one side only ({} NaN, {} Inf found; {} NaN, {} Inf expected)",
                e.nonfinite_mismatch, e.nan, e.inf, e.expected_nan, e.expected_inf
            ));
        }
        if e.nmse > self.nmse {
            return Some(format!("NMSE {:.3e} > {:.1e}", e.nmse, self.nmse));
        }
        if e.max_err > self.max_err {
            return Some(format!(
                "max error {:.3e} × rms > {:.1e}",
                e.max_err, self.max_err
            ));
        }
        None
    }
}

/// Which limits apply where (see the module docs for the defaults and the keys).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    pub local: Limits,
    pub chained: Limits,
    /// Local limits of op families (an op name or its prefix before `_`).
    pub ops: BTreeMap<String, Limits>,
    /// Whether the chained limits were given (`chained.nmse=` / `chained.max=`), so a
    /// path with int8 activations keeps them ([`Self::for_int8_activations`]).
    #[serde(default)]
    pub chained_given: bool,
    /// Local limits of dispatches that round activations to int8 (`None`:
    /// [`INT8_LOCAL`]); [`Self::for_int8_activations`] sets it so that reports show it.
    #[serde(default)]
    pub int8_local: Option<Limits>,
}

/// Chained limits for a tested path that rounds activations to int8 (see the module docs).
pub const INT8_CHAINED: Limits = Limits {
    nmse: 5e-2,
    max_err: 2.0,
};

/// Local limits of a dispatch that rounds activations to int8 (see the module docs).
pub const INT8_LOCAL: Limits = Limits {
    nmse: 1e-5,
    max_err: 2e-2,
};

impl Default for Thresholds {
    fn default() -> Self {
        let local = Limits {
            nmse: 1e-7,
            max_err: 1e-3,
        };
        let mut ops = BTreeMap::new();
        ops.insert(
            "rope".to_string(),
            Limits {
                nmse: 1e-6,
                max_err: 1e-2,
            },
        );
        Thresholds {
            local,
            chained: Limits {
                nmse: 1e-3,
                max_err: 0.5,
            },
            ops,
            chained_given: false,
            int8_local: None,
        }
    }
}

/// Whether the op-family key `key` names `op` (`gemv` names `gemv_q4_1`).
fn names(key: &str, op: &str) -> bool {
    op == key
        || op
            .strip_prefix(key)
            .is_some_and(|rest| rest.starts_with('_'))
}

impl Thresholds {
    /// The local limits of `op`: its family's when set (the longest key wins), else the
    /// default.
    pub fn local_for(&self, op: &str) -> Limits {
        self.ops
            .iter()
            .filter(|(k, _)| names(k, op))
            .max_by_key(|(k, _)| k.len())
            .map_or(self.local, |(_, l)| *l)
    }

    /// The limits for a tested path that rounds activations to int8 (see the module
    /// docs): [`INT8_LOCAL`] for those dispatches; `own_rounding`: the reference rounds
    /// on its own (a second GPU), so the chained limits become [`INT8_CHAINED`] unless
    /// given with `--threshold`.
    pub fn for_int8_activations(&mut self, own_rounding: bool) {
        self.int8_local = Some(INT8_LOCAL);
        if own_rounding && !self.chained_given {
            self.chained = INT8_CHAINED;
        }
    }

    /// The local limits of a dispatch of `op`; `int8`: one that rounds its activations to
    /// int8, which takes the looser of its op's and [`Self::int8_local`] ([`INT8_LOCAL`]
    /// unless set).
    pub fn local_for_dispatch(&self, op: &str, int8: bool) -> Limits {
        let own = self.local_for(op);
        if !int8 {
            return own;
        }
        let l = self.int8_local.unwrap_or(INT8_LOCAL);
        Limits {
            nmse: own.nmse.max(l.nmse),
            max_err: own.max_err.max(l.max_err),
        }
    }

    /// Applies one `--threshold KEY=VALUE` (see the module docs).
    pub fn set(&mut self, arg: &str) -> Result<(), String> {
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| format!("--threshold {arg}: expected KEY=VALUE, e.g. rope=1e-6"))?;
        let v: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| *v >= 0.0)
            .ok_or_else(|| format!("--threshold {arg}: `{value}` is not a non-negative number"))?;
        let key = key.trim();
        match key {
            "nmse" => self.local.nmse = v,
            "max" => self.local.max_err = v,
            "chained.nmse" => {
                self.chained.nmse = v;
                self.chained_given = true;
            }
            "chained.max" => {
                self.chained.max_err = v;
                self.chained_given = true;
            }
            "" => return Err(format!("--threshold {arg}: empty key")),
            _ => {
                let (op, measure) = match key.rsplit_once('.') {
                    Some((op, m @ ("nmse" | "max"))) => (op, m),
                    Some(_) => {
                        return Err(format!("--threshold {arg}: expected OP, OP.nmse or OP.max"))
                    }
                    None => (key, "nmse"),
                };
                let current = self.local_for(op);
                let l = self.ops.entry(op.to_string()).or_insert(current);
                match measure {
                    "nmse" => l.nmse = v,
                    _ => l.max_err = v,
                }
            }
        }
        Ok(())
    }
}

/// Where two byte images of a tensor first differ, word by word (f32 words within
/// `tolerance` relative to max(|expected|, 1) count as equal; bitwise without one).
#[derive(Debug, Clone, PartialEq)]
pub struct WordDiff {
    pub first_word: u64,
    pub words: u64,
    pub expected: u32,
    pub found: u32,
    pub max_abs: f64,
}

/// The word diff of `found` against `expected`, or `None` when they agree.
pub fn word_diff(expected: &[u8], found: &[u8], tolerance: Option<f32>) -> Option<WordDiff> {
    let word = |b: &[u8], i: usize| {
        b.get(i * 4..i * 4 + 4)
            .map_or(0, |w| u32::from_le_bytes(w.try_into().unwrap()))
    };
    let n = expected.len().max(found.len()).div_ceil(4);
    let mut diff: Option<WordDiff> = None;
    for i in 0..n {
        let (e, f) = (word(expected, i), word(found, i));
        let (ef, ff) = (f32::from_bits(e), f32::from_bits(f));
        let same = match tolerance {
            None => e == f,
            Some(t) => {
                e == f || (ef.is_nan() && ff.is_nan()) || ((ef - ff).abs() <= t * ef.abs().max(1.0))
            }
        };
        if same {
            continue;
        }
        let abs = (ef as f64 - ff as f64).abs();
        let d = diff.get_or_insert(WordDiff {
            first_word: i as u64,
            words: 0,
            expected: e,
            found: f,
            max_abs: 0.0,
        });
        d.words += 1;
        if abs.is_finite() && abs > d.max_abs {
            d.max_abs = abs;
        }
    }
    if expected.len() != found.len() && diff.is_none() {
        return Some(WordDiff {
            first_word: n as u64,
            words: 1,
            expected: 0,
            found: 0,
            max_abs: 0.0,
        });
    }
    diff
}
