//! [`Real`]: the number type the CPU oracles compute in.
//!
//! Every oracle is generic over it, so one implementation serves two purposes: in `f32` it
//! follows the GPU kernels' arithmetic (what the tests and the CPU decoder use), in `f64`
//! it accumulates over the same dequantized weights in double precision — the "exact
//! arithmetic" reference `gpuscope check --precision f64` measures both GPU paths against.
//! Inputs that are f32 on the GPU (weights, activations, constants) are widened exactly.

use std::fmt::Debug;

use crate::exec::RunFn;

pub trait Real: num_traits::Float + Default + Debug + Send + Sync + 'static {
    /// `f32` or `f64`, as printed in reports.
    const NAME: &'static str;
    /// Whether values lose precision when stored back as f32 (host copies then keep the
    /// wide values beside the f32 bytes).
    const WIDER_THAN_F32: bool;
    fn of(v: f32) -> Self;
    fn of_f64(v: f64) -> Self;
    fn of_u32(v: u32) -> Self;
    fn as_f32(self) -> f32;
    fn as_f64(self) -> f64;
    /// The instantiation of an executor for this type (how [`crate::exec::Executor::run`]
    /// stays one generic call over the two the registry holds).
    #[doc(hidden)]
    fn pick(f32: RunFn<f32>, f64: RunFn<f64>) -> RunFn<Self>;
    /// `out[j] = Σ_c w[j·n + c]·x[c]` (n = `x.len()`), each row summed in column order
    /// from zero, exactly as a fold over the row would ([`dot_rows`]).
    fn dot_rows(w: &[f32], x: &[Self], out: &mut [Self]);
}

impl Real for f32 {
    const NAME: &'static str = "f32";
    const WIDER_THAN_F32: bool = false;
    fn of(v: f32) -> f32 {
        v
    }
    fn of_f64(v: f64) -> f32 {
        v as f32
    }
    fn of_u32(v: u32) -> f32 {
        v as f32
    }
    fn as_f32(self) -> f32 {
        self
    }
    fn as_f64(self) -> f64 {
        self as f64
    }
    fn pick(f32: RunFn<f32>, _: RunFn<f64>) -> RunFn<f32> {
        f32
    }
    fn dot_rows(w: &[f32], x: &[f32], out: &mut [f32]) {
        dot_rows(w, x, out)
    }
}

impl Real for f64 {
    const NAME: &'static str = "f64";
    const WIDER_THAN_F32: bool = true;
    fn of(v: f32) -> f64 {
        v as f64
    }
    fn of_f64(v: f64) -> f64 {
        v
    }
    fn of_u32(v: u32) -> f64 {
        v as f64
    }
    fn as_f32(self) -> f32 {
        self as f32
    }
    fn as_f64(self) -> f64 {
        self
    }
    fn pick(_: RunFn<f32>, f64: RunFn<f64>) -> RunFn<f64> {
        f64
    }
    fn dot_rows(w: &[f32], x: &[f64], out: &mut [f64]) {
        dot_rows(w, x, out)
    }
}

/// `Σ a·b` in `T`, in index order (the oracles' dot product).
pub fn dot<T: Real>(a: &[T], b: &[T]) -> T {
    a.iter().zip(b).fold(T::zero(), |acc, (&x, &y)| acc + x * y)
}

/// Rows [`dot_rows`] interleaves: their sums are independent chains of additions, which a
/// CPU overlaps, where one row's chain waits on each addition in turn.
pub const INTERLEAVED_ROWS: usize = 8;

/// `out[j] = Σ_c w[j·n + c]·x[c]` (n = `x.len()`) for each row j, each summed in column
/// order from zero (the same additions in the same order as [`dot`] over the row, so the
/// same result to the bit), [`INTERLEAVED_ROWS`] rows at a time. Reached through
/// [`Real::dot_rows`], so that it is compiled with this crate's optimization wherever the
/// oracles are instantiated.
///
/// # Panics
/// If `w` has fewer than `out.len() · x.len()` elements.
pub fn dot_rows<T: Real>(w: &[f32], x: &[T], out: &mut [T]) {
    let n = x.len();
    assert!(
        w.len() >= out.len() * n,
        "dot_rows: {} weights, need {}",
        w.len(),
        out.len() * n
    );
    if n == 0 {
        out.fill(T::zero());
        return;
    }
    const R: usize = INTERLEAVED_ROWS;
    for (block, ys) in w.chunks(R * n).zip(out.chunks_mut(R)) {
        if ys.len() < R {
            for (row, y) in block.chunks_exact(n).zip(ys.iter_mut()) {
                *y = row
                    .iter()
                    .zip(x)
                    .fold(T::zero(), |acc, (&a, &b)| acc + T::of(a) * b);
            }
            continue;
        }
        let rows: [&[f32]; R] = std::array::from_fn(|j| &block[j * n..][..n]);
        let mut acc = [T::zero(); R];
        for (c, &xc) in x.iter().enumerate() {
            for j in 0..R {
                acc[j] = acc[j] + T::of(rows[j][c]) * xc;
            }
        }
        ys.copy_from_slice(&acc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The interleaved rows give each row's plain fold to the bit, full blocks and tail.
    #[test]
    fn dot_rows_is_each_rows_fold_to_the_bit() {
        fn check<T: Real>() {
            for (rows, n) in [(0, 5), (3, 0), (1, 7), (8, 33), (21, 640), (37, 96)] {
                // Values of mixed sign and magnitude, so that the order of additions shows.
                let w: Vec<f32> = (0..rows * n)
                    .map(|i| ((i * 7919 % 1009) as f32 - 504.0) * 1.37e-3 * (1.0 + (i % 13) as f32))
                    .collect();
                let x: Vec<T> = (0..n)
                    .map(|i| T::of(((i * 104_729 % 997) as f32 - 498.0) * 3.1e-2))
                    .collect();
                let mut got = vec![T::of(9.0); rows];
                T::dot_rows(&w, &x, &mut got);
                for (r, g) in got.iter().enumerate() {
                    let row = w[r * n..(r + 1) * n]
                        .iter()
                        .map(|&v| T::of(v))
                        .collect::<Vec<_>>();
                    let want = dot(&row, &x);
                    assert_eq!(
                        g.as_f64().to_bits(),
                        want.as_f64().to_bits(),
                        "{} {rows}x{n} row {r}",
                        T::NAME
                    );
                }
            }
        }
        check::<f32>();
        check::<f64>();
    }
}
