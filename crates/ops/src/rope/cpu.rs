use super::Rope;

impl Rope {
    /// `(cos, sin)` of the angle of pair `i` at `pos`, in f32 exactly as the kernel does it.
    pub fn cos_sin(&self, pos: u32, i: u32) -> (f32, f32) {
        let freq = self.base.powf(-((2 * i) as f32) / self.rope_dims as f32);
        let theta = pos as f32 * freq;
        (theta.cos(), theta.sin())
    }

    /// Rotates the first `rope_dims` dims of one head in place.
    fn rotate_head(&self, pos: u32, head: &mut [f32]) {
        for i in 0..self.rope_dims / 2 {
            let (c, s) = self.cos_sin(pos, i);
            let e = 2 * i as usize;
            let (x0, x1) = (head[e], head[e + 1]);
            head[e] = x0 * c - x1 * s;
            head[e + 1] = x0 * s + x1 * c;
        }
    }

    /// Rotates `q` in place; writes rotated `k` to `k_cache` row `pos` and `v` to
    /// `v_cache` row `pos`. Panics if `pos >= max_ctx`.
    pub fn cpu(
        &self,
        pos: u32,
        q: &mut [f32],
        k: &[f32],
        v: &[f32],
        k_cache: &mut [f32],
        v_cache: &mut [f32],
    ) {
        assert!(
            pos < self.max_ctx,
            "rope: pos {pos} is outside the KV cache ({} rows)",
            self.max_ctx
        );
        let hd = self.head_dim as usize;
        let row = self.kv_row() as usize;
        for head in q[..self.n_heads as usize * hd].chunks_exact_mut(hd) {
            self.rotate_head(pos, head);
        }
        let at = pos as usize * row;
        let k_row = &mut k_cache[at..at + row];
        k_row.copy_from_slice(&k[..row]);
        for head in k_row.chunks_exact_mut(hd) {
            self.rotate_head(pos, head);
        }
        v_cache[at..at + row].copy_from_slice(&v[..row]);
    }
}
