//! The model test binary: GPU decoding against the CPU reference, counters, profiles,
//! bench against profile. (The regression gate's experiment is `gate.rs`, a binary of
//! its own so that no other test runs beside its timings.)
mod bench;
mod check;
mod common;
mod counters;
mod decode;
mod fuzz_seeds;
mod prefill;
mod profile;
mod real_model;
mod tokenizer_spm;
