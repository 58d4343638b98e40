use super::Add;
use crate::Real;

impl Add {
    /// `acc += x`.
    pub fn cpu<T: Real>(&self, acc: &mut [T], x: &[T]) {
        let n = self.n as usize;
        for (a, &b) in acc[..n].iter_mut().zip(&x[..n]) {
            *a = *a + b;
        }
    }
}
