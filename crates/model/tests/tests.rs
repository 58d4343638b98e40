//! The model test binary: GPU decoding against the CPU reference, counters, profiles.
//! (The regression gate's experiment, `gate.rs`, and bench against profile,
//! `bench_agree.rs`, are binaries of their own so that no other test runs beside their
//! timings.)
mod check;
mod common;
mod counters;
mod decode;
mod fuzz_seeds;
mod prefill;
mod profile;
mod real_model;
mod tokenizer_spm;
