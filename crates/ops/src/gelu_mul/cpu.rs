use super::GeluMul;
use crate::Real;

impl GeluMul {
    /// `out = 0.5·g·(1 + tanh(√(2/π)·g·(1 + 0.044715·g²))) · up`, the kernel's formula.
    pub fn cpu<T: Real>(&self, gate: &[T], up: &[T], out: &mut [T]) {
        let n = self.n as usize;
        // √(2/π) and 0.044715 in the type's precision (the f32 values are the kernel's).
        let (c, a, half) = (
            T::of_f64(0.797_884_560_802_865_4),
            T::of_f64(0.044_715),
            T::of(0.5),
        );
        for ((o, &g), &u) in out[..n].iter_mut().zip(&gate[..n]).zip(&up[..n]) {
            let t = (c * g * (T::one() + a * g * g)).tanh();
            *o = half * g * (T::one() + t) * u;
        }
    }
}
