//! The ops test binary: every op, GPU against its CPU oracle.
mod common;
mod batched;
mod kernels;
mod quant_gemv_embedding;
mod kquants;
