use super::SiluMul;
use crate::Real;

impl SiluMul {
    /// `out = gate / (1 + exp(-gate)) · up`, the kernel's formula.
    pub fn cpu<T: Real>(&self, gate: &[T], up: &[T], out: &mut [T]) {
        let n = self.n as usize;
        for ((o, &g), &u) in out[..n].iter_mut().zip(&gate[..n]).zip(&up[..n]) {
            *o = g / (T::one() + (-g).exp()) * u;
        }
    }
}
