use gpuscope_runtime::Cost;

use super::HeadNorm;

impl HeadNorm {
    /// Reads and writes each q and k head and reads the two weights. FLOPs as
    /// [`crate::rms_norm::RmsNorm::cost`]: 4 per element.
    pub fn cost(&self) -> Cost {
        let n = u64::from(self.n_heads + self.n_kv_heads) * u64::from(self.head_dim);
        Cost {
            bytes: 4 * (2 * n + 2 * u64::from(self.head_dim)),
            flops: 4 * n,
        }
    }
}
