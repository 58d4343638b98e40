use gpuscope_runtime::Cost;

use super::Rope;

impl Rope {
    /// Bytes: `pos` (4), the rotating part of q read and written back, k and v read and
    /// each written to its cache row. FLOPs: 6 per rotated pair (4 multiplies, 2 adds);
    /// the angle's pow, cos and sin are not counted.
    pub fn cost(&self) -> Cost {
        let q_rot = self.n_heads as u64 * self.rope_dims as u64;
        let kv = self.kv_row();
        let pairs = (self.n_heads + self.n_kv_heads) as u64 * (self.rope_dims / 2) as u64;
        Cost {
            bytes: 4 + 4 * (2 * q_rot + 2 * kv + 2 * kv),
            flops: 6 * pairs,
        }
    }
}
