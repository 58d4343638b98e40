//! The embedding oracle: dequantize the token's row, or leave `out` alone when the token
//! is in another chunk.

use super::Embedding;
use crate::Real;

impl Embedding {
    /// Writes row `token - row_start` of `table` into `out[..dim]` when this chunk holds
    /// `token`; otherwise leaves `out` untouched (like the GPU kernel).
    ///
    /// # Panics
    /// If `table` is shorter than the chunk or `out` shorter than `dim`.
    pub fn cpu<T: Real>(&self, table: &[u8], token: u32, out: &mut [T]) {
        self.cpu_scaled(table, token, out, 1.0)
    }

    /// [`Self::cpu`] with every element multiplied by `scale` (as the kernel's `SCALE`).
    pub fn cpu_scaled<T: Real>(&self, table: &[u8], token: u32, out: &mut [T], scale: f32) {
        if !self.holds(token) {
            return;
        }
        let rb = self.row_bytes() as usize;
        let r = (token - self.row_start) as usize;
        let mut row = vec![0f32; self.dim as usize];
        self.format.dequantize_row(&table[r * rb..][..rb], &mut row);
        for (o, v) in out[..self.dim as usize].iter_mut().zip(row) {
            *o = T::of(v) * T::of(scale);
        }
    }
}
