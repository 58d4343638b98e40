use super::SiluMul;

impl SiluMul {
    /// `out = gate / (1 + exp(-gate)) · up`, the kernel's formula.
    pub fn cpu(&self, gate: &[f32], up: &[f32], out: &mut [f32]) {
        let n = self.n as usize;
        for ((o, &g), &u) in out[..n].iter_mut().zip(&gate[..n]).zip(&up[..n]) {
            *o = g / (1.0 + (-g).exp()) * u;
        }
    }
}
