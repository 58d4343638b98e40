use super::Softmax;
use crate::Real;

impl Softmax {
    /// Softmax in place over `data[r·row_stride ..][..n_ctx]` for each row `r`.
    pub fn cpu<T: Real>(&self, n_ctx: u32, data: &mut [T]) {
        let n = n_ctx.min(self.row_stride) as usize;
        let stride = self.row_stride as usize;
        for r in 0..self.rows as usize {
            let row = &mut data[r * stride..][..n];
            let max = row.iter().copied().fold(T::neg_infinity(), T::max);
            let mut sum = T::zero();
            for x in row.iter_mut() {
                *x = (*x - max).exp();
                sum = sum + *x;
            }
            let inv = T::one() / sum;
            for x in row.iter_mut() {
                *x = *x * inv;
            }
        }
    }
}
