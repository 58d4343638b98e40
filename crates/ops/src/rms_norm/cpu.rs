use super::RmsNorm;

impl RmsNorm {
    /// `out = x / sqrt(mean(x²) + eps) * weight`.
    pub fn cpu(&self, x: &[f32], weight: &[f32], out: &mut [f32]) {
        let n = self.n as usize;
        let (x, weight, out) = (&x[..n], &weight[..n], &mut out[..n]);
        let sum_sq: f32 = x.iter().map(|v| v * v).sum();
        let scale = 1.0 / (sum_sq / n as f32 + self.eps).sqrt();
        for ((o, &v), &w) in out.iter_mut().zip(x).zip(weight) {
            *o = v * scale * w;
        }
    }
}
