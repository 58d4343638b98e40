use gpuscope_runtime::Cost;

use super::Argmax;

impl Argmax {
    /// Reads the logits, writes one u32. FLOPs: one compare per element.
    pub fn cost(&self) -> Cost {
        let n = self.n as u64;
        Cost {
            bytes: 4 * n + 4,
            flops: n,
        }
    }
}
