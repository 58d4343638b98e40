use super::Softmax;

impl Softmax {
    /// Softmax in place over `data[r·row_stride ..][..n_ctx]` for each row `r`.
    pub fn cpu(&self, n_ctx: u32, data: &mut [f32]) {
        let n = n_ctx.min(self.row_stride) as usize;
        let stride = self.row_stride as usize;
        for r in 0..self.rows as usize {
            let row = &mut data[r * stride..][..n];
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0.0f32;
            for x in row.iter_mut() {
                *x = (*x - max).exp();
                sum += *x;
            }
            let inv = 1.0 / sum;
            for x in row.iter_mut() {
                *x *= inv;
            }
        }
    }
}
