use super::{AttnScores, AttnValues};

impl AttnScores {
    /// Writes `scores[h·max_ctx + t]` for `t < n_ctx`; the rest of each row is untouched.
    pub fn cpu(&self, n_ctx: u32, q: &[f32], k_cache: &[f32], scores: &mut [f32]) {
        assert!(
            n_ctx <= self.max_ctx,
            "attn_scores: n_ctx {n_ctx} > max_ctx {}",
            self.max_ctx
        );
        let hd = self.head_dim as usize;
        let kv_row = self.n_kv_heads as usize * hd;
        let group = (self.n_heads / self.n_kv_heads) as usize;
        let scale = self.scale();
        for h in 0..self.n_heads as usize {
            let qh = &q[h * hd..(h + 1) * hd];
            let kv = h / group;
            for t in 0..n_ctx as usize {
                let k = &k_cache[t * kv_row + kv * hd..][..hd];
                let dot: f32 = qh.iter().zip(k).map(|(a, b)| a * b).sum();
                scores[h * self.max_ctx as usize + t] = dot * scale;
            }
        }
    }
}

impl AttnValues {
    /// `out[h·head_dim + d] = Σ_{t < n_ctx} probs[h·max_ctx + t] · v_cache[t][kv_head][d]`.
    pub fn cpu(&self, n_ctx: u32, probs: &[f32], v_cache: &[f32], out: &mut [f32]) {
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
            o.fill(0.0);
            for t in 0..n_ctx as usize {
                let p = probs[h * self.max_ctx as usize + t];
                let v = &v_cache[t * kv_row + kv * hd..][..hd];
                for (o, &v) in o.iter_mut().zip(v) {
                    *o += p * v;
                }
            }
        }
    }
}
