use super::Add;

impl Add {
    /// `acc += x`.
    pub fn cpu(&self, acc: &mut [f32], x: &[f32]) {
        let n = self.n as usize;
        for (a, &b) in acc[..n].iter_mut().zip(&x[..n]) {
            *a += b;
        }
    }
}
