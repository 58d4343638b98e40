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
}

/// `Σ a·b` in `T`, in index order (the oracles' dot product).
pub fn dot<T: Real>(a: &[T], b: &[T]) -> T {
    a.iter().zip(b).fold(T::zero(), |acc, (&x, &y)| acc + x * y)
}
