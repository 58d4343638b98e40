use gpuscope_runtime::Cost;

use super::RmsNorm;

impl RmsNorm {
    /// Reads x and weight, writes out (n f32 each). FLOPs: x² and its sum (2n), then two
    /// multiplies per element (2n); the one sqrt is not counted.
    pub fn cost(&self) -> Cost {
        let n = self.n as u64;
        Cost {
            bytes: 3 * 4 * n,
            flops: 4 * n,
        }
    }

    /// [`Self::cost`] and the add: out is read as well, one more FLOP per element.
    pub fn cost_add(&self) -> Cost {
        let n = self.n as u64;
        Cost {
            bytes: 4 * 4 * n,
            flops: 5 * n,
        }
    }
}
