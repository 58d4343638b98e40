//! What a gemv must move and do: every weight byte once, x once, y once; one multiply and
//! one add per weight.

use gpuscope_runtime::Cost;

use super::Gemv;

impl Gemv {
    pub fn cost(&self) -> Cost {
        let (rows, cols) = (u64::from(self.rows), u64::from(self.cols));
        Cost {
            bytes: self.weight_bytes() + cols * 4 + rows * 4,
            flops: 2 * rows * cols,
        }
    }
}

impl Gemv {
    /// The accumulating form also reads y once and adds once per row.
    pub fn cost_accumulate(&self) -> Cost {
        let plain = self.cost();
        Cost {
            bytes: plain.bytes + u64::from(self.rows) * 4,
            flops: plain.flops + u64::from(self.rows),
        }
    }
}
