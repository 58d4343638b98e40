use gpuscope_runtime::Cost;

use super::SiluMul;

impl SiluMul {
    /// Reads gate and up, writes out. FLOPs: negate, exp, add, divide, multiply (5 per
    /// element, exp counted as one).
    pub fn cost(&self) -> Cost {
        let n = self.n as u64;
        Cost {
            bytes: 3 * 4 * n,
            flops: 5 * n,
        }
    }
}
