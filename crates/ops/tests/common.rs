//! Shared test setup: one GPU device for the whole test binary, seeded random inputs.
#![allow(dead_code)]

use gpuscope_runtime::Gpu;
use rand::{rngs::StdRng, SeedableRng};

/// The test binary's GPU, or `None` on a developer machine with no adapter
/// (panics in CI; see `gpuscope_runtime::testing::shared_gpu`).
pub fn gpu() -> Option<&'static Gpu> {
    gpuscope_runtime::testing::shared_gpu()
}

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}
