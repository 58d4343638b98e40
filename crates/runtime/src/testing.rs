//! Test support shared by every crate's GPU tests.

use std::sync::OnceLock;

use crate::device::{Gpu, GpuOptions};

/// One GPU device for a whole test binary, or `None` on a developer machine without an
/// adapter (the reason is printed).
///
/// With `CI` set, a missing adapter panics instead: a GPU test that silently skipped in
/// CI would pass without the GPU path having run.
pub fn shared_gpu() -> Option<&'static Gpu> {
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
