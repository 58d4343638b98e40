use gpuscope_runtime::Cost;

use super::Add;

impl Add {
    /// Reads acc and x, writes acc; one add per element.
    pub fn cost(&self) -> Cost {
        let n = self.n as u64;
        Cost {
            bytes: 3 * 4 * n,
            flops: n,
        }
    }
}
