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
}
