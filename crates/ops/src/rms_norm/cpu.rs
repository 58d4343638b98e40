use super::RmsNorm;
use crate::Real;

impl RmsNorm {
    /// `out = x / sqrt(mean(x²) + eps) * weight`.
    pub fn cpu<T: Real>(&self, x: &[T], weight: &[T], out: &mut [T]) {
        let n = self.n as usize;
        let (x, weight, out) = (&x[..n], &weight[..n], &mut out[..n]);
        let sum_sq = crate::real::dot(x, x);
        let scale = T::one() / (sum_sq / T::of_u32(self.n) + T::of(self.eps)).sqrt();
        for ((o, &v), &w) in out.iter_mut().zip(x).zip(weight) {
            *o = v * scale * w;
        }
    }

    /// `out += x / sqrt(mean(x²) + eps) * weight` (what [`Self::dispatch_add`] computes).
    pub fn cpu_add<T: Real>(&self, x: &[T], weight: &[T], out: &mut [T]) {
        let n = self.n as usize;
        let mut normed = vec![T::zero(); n];
        self.cpu(x, weight, &mut normed);
        for (o, v) in out[..n].iter_mut().zip(normed) {
            *o = *o + v;
        }
    }
}
