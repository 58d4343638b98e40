//! gpuscope-ops: one kernel family per op, each with a CPU reference and a declared cost.
//!
//! Every op lives in its own folder (`kernel.wgsl`, `cpu.rs`, `cost.rs`, `mod.rs`) and is a
//! small struct of its static parameters with three faces:
//!
//! - `cpu(...)`: the oracle, plain f32 Rust, used by the CPU reference decoder and the tests;
//! - `cost()`: the bytes the dispatch must move and the FLOPs it must do (rooflines use it);
//! - `dispatch(gpu, buffers...)`: a [`gpuscope_runtime::Dispatch`] built once, at graph-build
//!   time, which the runtime then encodes, times and counts on every token.
//!
//! The CPU code is an oracle, not a second engine: it favours clarity over speed. Oracles
//! are generic over [`Real`] (f32 like the kernels, f64 for exact arithmetic).
//!
//! Around the ops:
//!
//! - [`exec`]: each op's `exec.rs` runs its oracle for one *dispatch* (parameters from the
//!   pipeline's override constants, inputs from the bindings); a registry finds it by
//!   shader name. `gpuscope check` and the harness use it.
//! - [`harness`]: `gpuscope ops test | perf`, every op × weight format × shape against its
//!   executor with guard regions around every output, or timed.

pub mod add;
pub mod argmax;
pub mod attention;
pub mod embedding;
pub mod exec;
pub mod gelu_mul;
pub mod gemv;
pub mod harness;
pub mod head_norm;
pub mod quant;
pub mod real;
pub mod rms_norm;
pub mod rope;
pub mod silu_mul;
pub mod softmax;

pub use quant::WeightFormat;
pub use real::Real;

/// Fails unless `buf` holds `bytes` bytes for its `role` in `op`. A short buffer is not a
/// wgpu error (WGSL clamps out-of-bounds accesses), so the ops check their buffers here
/// rather than have it discovered as wrong numbers.
pub(crate) fn need(
    buf: &gpuscope_runtime::GpuBuffer,
    bytes: u64,
    role: &str,
    op: &dyn std::fmt::Debug,
) -> Result<(), gpuscope_runtime::GpuError> {
    if buf.size() < bytes {
        return Err(gpuscope_runtime::GpuError::Invalid(format!(
            "{op:?}: buffer \"{}\" ({role}) has {} bytes, needs {bytes}",
            buf.label(),
            buf.size()
        )));
    }
    Ok(())
}
