//! The gemv oracle: dequantize a row with [`WeightFormat::dequantize_row`], then an f32 dot
//! product in column order. Deliberately plain: the GPU kernel is tested against it.

use super::Gemv;

impl Gemv {
    /// y[out_offset + r] = Σ_c W[r, c]·x[c] for every row; other elements of `y` untouched.
    ///
    /// # Panics
    /// If `w`, `x` or `y` is shorter than the shape needs.
    pub fn cpu(&self, w: &[u8], x: &[f32], y: &mut [f32]) {
        let (rows, cols) = (self.rows as usize, self.cols as usize);
        let row_bytes = self.row_bytes() as usize;
        assert!(
            w.len() >= rows * row_bytes,
            "gemv cpu: {} weight bytes, need {}",
            w.len(),
            rows * row_bytes
        );
        assert!(
            x.len() >= cols,
            "gemv cpu: x has {} elements, need {cols}",
            x.len()
        );
        let out = &mut y[self.out_offset as usize..][..rows];
        let mut row = vec![0.0f32; cols];
        for (r, yr) in out.iter_mut().enumerate() {
            self.format
                .dequantize_row(&w[r * row_bytes..][..row_bytes], &mut row);
            *yr = row.iter().zip(x).fold(0.0f32, |acc, (a, b)| acc + a * b);
        }
    }
}
