//! The ops test binary: every op, GPU against its CPU oracle.
mod batched;
mod common;
mod dp4a;
mod gemv_variants;
mod harness;
mod kernels;
mod kquants;
mod quant_gemv_embedding;
