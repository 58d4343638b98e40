//! The model test binary: GPU decoding against the CPU reference, counters, profiles.
mod common;
mod counters;
mod decode;
mod prefill;
mod profile;
mod real_model;
mod tokenizer_spm;
