use super::Rope;
use crate::Real;

impl Rope {
    /// `(cos, sin)` of the angle of pair `i` at `pos`, computed as the kernel does it
    /// (in f32 exactly so; in f64 the same formula in double precision).
    pub fn cos_sin<T: Real>(&self, pos: u32, i: u32) -> (T, T) {
        let freq = T::of(self.base).powf(-T::of_u32(2 * i) / T::of_u32(self.rope_dims));
        let theta = T::of_u32(pos) * freq;
        (theta.cos(), theta.sin())
    }

    /// The element offsets in a head of rotated pair `i` (`i < rope_dims / 2`):
    /// `(2i, 2i + 1)`, or `(i, i + rope_dims/2)` in NeoX mode.
    pub fn pair(&self, i: u32) -> (usize, usize) {
        if self.neox {
            (i as usize, (i + self.rope_dims / 2) as usize)
        } else {
            (2 * i as usize, 2 * i as usize + 1)
        }
    }

    /// The KV-cache row of position `pos` (`pos % max_ctx` for a ring).
    pub fn cache_row(&self, pos: u32) -> u32 {
        if self.ring {
            pos % self.max_ctx
        } else {
            pos
        }
    }

    /// Rotates the first `rope_dims` dims of one head in place.
    pub fn rotate_head<T: Real>(&self, pos: u32, head: &mut [T]) {
        for i in 0..self.rope_dims / 2 {
            let (c, s) = self.cos_sin::<T>(pos, i);
            let (e0, e1) = self.pair(i);
            let (x0, x1) = (head[e0], head[e1]);
            head[e0] = x0 * c - x1 * s;
            head[e1] = x0 * s + x1 * c;
        }
    }

    /// Rotates `q` in place; writes rotated `k` to `k_cache` row `pos` and `v` to
    /// `v_cache` row `pos` (row `pos % max_ctx` for a ring). Panics if `pos >= max_ctx`
    /// without `ring`.
    pub fn cpu<T: Real>(
        &self,
        pos: u32,
        q: &mut [T],
        k: &[T],
        v: &[T],
        k_cache: &mut [T],
        v_cache: &mut [T],
    ) {
        assert!(
            self.ring || pos < self.max_ctx,
            "rope: pos {pos} is outside the KV cache ({} rows)",
            self.max_ctx
        );
        let hd = self.head_dim as usize;
        let row = self.kv_row() as usize;
        for head in q[..self.n_heads as usize * hd].chunks_exact_mut(hd) {
            self.rotate_head(pos, head);
        }
        let at = self.cache_row(pos) as usize * row;
        let k_row = &mut k_cache[at..at + row];
        k_row.copy_from_slice(&k[..row]);
        for head in k_row.chunks_exact_mut(hd) {
            self.rotate_head(pos, head);
        }
        v_cache[at..at + row].copy_from_slice(&v[..row]);
    }
}
