use gpuscope_runtime::Cost;

use super::GeluMul;

impl GeluMul {
    /// Reads gate and up, writes out. FLOPs: g², the polynomial (3), tanh (counted as
    /// one), the add and three multiplies: 9 per element.
    pub fn cost(&self) -> Cost {
        let n = self.n as u64;
        Cost {
            bytes: 3 * 4 * n,
            flops: 9 * n,
        }
    }
}
