use super::{AttnScores, AttnValues};
use crate::real::dot;
use crate::Real;

impl AttnScores {
    /// Writes `scores[h·max_ctx + t]` for `t < n_ctx`; the rest of each row is untouched.
    pub fn cpu<T: Real>(&self, n_ctx: u32, q: &[T], k_cache: &[T], scores: &mut [T]) {
        assert!(
            n_ctx <= self.max_ctx,
            "attn_scores: n_ctx {n_ctx} > max_ctx {}",
            self.max_ctx
        );
        let hd = self.head_dim as usize;
        let kv_row = self.n_kv_heads as usize * hd;
        let group = (self.n_heads / self.n_kv_heads) as usize;
        // `1 / sqrt(head_dim)`: the f32 value the kernel gets, or the f64 one.
        let scale = T::one() / T::of_u32(self.head_dim).sqrt();
        for h in 0..self.n_heads as usize {
            let qh = &q[h * hd..(h + 1) * hd];
            let kv = h / group;
            for t in 0..n_ctx as usize {
                let k = &k_cache[t * kv_row + kv * hd..][..hd];
                scores[h * self.max_ctx as usize + t] = dot(qh, k) * scale;
            }
        }
    }
}

impl AttnValues {
    /// `out[h·head_dim + d] = Σ_{t < n_ctx} probs[h·max_ctx + t] · v_cache[t][kv_head][d]`.
    pub fn cpu<T: Real>(&self, n_ctx: u32, probs: &[T], v_cache: &[T], out: &mut [T]) {
        assert!(
            n_ctx <= self.max_ctx,
            "attn_values: n_ctx {n_ctx} > max_ctx {}",
            self.max_ctx
        );
        let hd = self.head_dim as usize;
        let kv_row = self.n_kv_heads as usize * hd;
        let group = (self.n_heads / self.n_kv_heads) as usize;
        for h in 0..self.n_heads as usize {
            let kv = h / group;
            let o = &mut out[h * hd..(h + 1) * hd];
            o.fill(T::zero());
            for t in 0..n_ctx as usize {
                let p = probs[h * self.max_ctx as usize + t];
                let v = &v_cache[t * kv_row + kv * hd..][..hd];
                for (o, &v) in o.iter_mut().zip(v) {
                    *o = *o + p * v;
                }
            }
        }
    }
}
