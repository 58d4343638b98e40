use super::{Argmax, NONE};
use crate::Real;

impl Argmax {
    /// Index of the largest value; the first on ties; NaN skipped; [`NONE`] if all NaN.
    pub fn cpu<T: Real>(&self, logits: &[T]) -> u32 {
        let mut best: Option<(u32, T)> = None;
        for (i, &v) in logits[..self.n as usize].iter().enumerate() {
            if v.is_nan() {
                continue;
            }
            if best.is_none_or(|(_, b)| v > b) {
                best = Some((i as u32, v));
            }
        }
        best.map_or(NONE, |(i, _)| i)
    }

    /// The split form's partials: each [`super::CHUNK`] of `logits`' best value and
    /// index ([`NONE`] and 0 where no element is a number), as `argmax_partial` writes.
    pub fn cpu_partials<T: Real>(&self, logits: &[T]) -> (Vec<T>, Vec<u32>) {
        let chunk = super::CHUNK as usize;
        logits[..self.n as usize]
            .chunks(chunk)
            .enumerate()
            .map(|(g, c)| match (Argmax { n: c.len() as u32 }).cpu(c) {
                NONE => (T::zero(), NONE),
                i => (c[i as usize], (g * chunk) as u32 + i),
            })
            .unzip()
    }

    /// The split form's merge: the best of the partials (the smaller index on ties).
    pub fn cpu_merge<T: Real>(values: &[T], indices: &[u32]) -> u32 {
        let mut best: Option<(u32, T)> = None;
        for (&v, &i) in values.iter().zip(indices) {
            if i != NONE && best.is_none_or(|(bi, b)| v > b || (v == b && i < bi)) {
                best = Some((i, v));
            }
        }
        best.map_or(NONE, |(i, _)| i)
    }
}
