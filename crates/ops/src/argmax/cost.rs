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

    /// `argmax_partial`: reads the logits, writes a value and an index per chunk.
    pub fn cost_partial(&self) -> Cost {
        let n = self.n as u64;
        Cost {
            bytes: 4 * n + 8 * self.partials() as u64,
            flops: n,
        }
    }

    /// `argmax_merge`: reads the partials, writes one u32.
    pub fn cost_merge(&self) -> Cost {
        let g = self.partials() as u64;
        Cost {
            bytes: 8 * g + 4,
            flops: g,
        }
    }
}
