//! Shared test setup: one GPU device for the whole test binary, seeded random inputs.
#![allow(dead_code)]

use std::sync::OnceLock;

use gpuscope_runtime::{Gpu, GpuOptions};
use rand::{rngs::StdRng, SeedableRng};

/// The test binary's GPU, or `None` on a developer machine with no adapter.
///
/// With `CI` set, a missing adapter fails the test instead: a GPU test that silently
/// skips in CI would pass without the GPU path having run.
pub fn gpu() -> Option<&'static Gpu> {
    static GPU: OnceLock<Option<Gpu>> = OnceLock::new();
    GPU.get_or_init(|| match Gpu::new(&GpuOptions::default()) {
        Ok(gpu) => Some(gpu),
        Err(err) => {
            if std::env::var_os("CI").is_some() {
                panic!("no GPU adapter in CI: {err}");
            }
            eprintln!("skipping GPU test: {err}");
            None
        }
    })
    .as_ref()
}

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}
