use gpuscope_runtime::Cost;

use super::Softmax;

impl Softmax {
    /// At `n_ctx`: reads `n_ctx` (4 bytes), reads and writes `rows · n_ctx` floats.
    /// FLOPs: subtract, exp, sum and scale per element (4); the max's comparisons are
    /// not counted.
    pub fn cost_at(&self, n_ctx: u32) -> Cost {
        let n = self.rows as u64 * n_ctx.min(self.row_stride) as u64;
        Cost {
            bytes: 4 + 2 * 4 * n,
            flops: 4 * n,
        }
    }

    /// The cost recorded at build time: `cost_at(1)`. The decoder replaces it per token.
    pub fn cost(&self) -> Cost {
        self.cost_at(1)
    }
}
