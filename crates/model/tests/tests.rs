//! The model test binary: GPU decoding against the CPU reference, counters, profiles.
//! (The statistical tests — the regression gate's experiment `gate.rs`, bench against
//! profile `bench_agree.rs`, sampled against full timing `sampling.rs` — are binaries of
//! their own, run by `scripts/statistical-tests.sh`, not by the default suite.)
mod arch;
mod check;
mod common;
mod counters;
mod decode;
mod fuzz_seeds;
mod prefill;
mod profile;
mod real_gemma;
mod real_model;
mod tokenizer_qwen;
mod tokenizer_spm;
