use super::HeadNorm;
use crate::rms_norm::RmsNorm;
use crate::Real;

impl HeadNorm {
    /// Each q head (at `q_off`) and k head (at `k_off`) of `qkv` through
    /// [`RmsNorm::cpu`] with its weight, in place.
    pub fn cpu<T: Real>(&self, qkv: &mut [T], q_weight: &[T], k_weight: &[T]) {
        let hd = self.head_dim as usize;
        let norm = RmsNorm {
            n: self.head_dim,
            eps: self.eps,
        };
        let heads = (0..self.n_heads as usize)
            .map(|h| (self.q_off as usize + h * hd, q_weight))
            .chain((0..self.n_kv_heads as usize).map(|h| (self.k_off as usize + h * hd, k_weight)));
        for (at, w) in heads {
            let x = qkv[at..at + hd].to_vec();
            norm.cpu(&x, w, &mut qkv[at..at + hd]);
        }
    }
}
