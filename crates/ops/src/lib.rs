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
//! The CPU code is an oracle, not a second engine: it favours clarity over speed.

pub mod add;
pub mod argmax;
pub mod attention;
pub mod embedding;
pub mod gemv;
pub mod quant;
pub mod rms_norm;
pub mod rope;
pub mod silu_mul;
pub mod softmax;

pub use quant::WeightFormat;
