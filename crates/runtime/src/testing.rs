//! Test support shared by every crate's GPU tests.
//!
//! A GPU test that finds no adapter never passes silently: with `CI` set it fails, and
//! otherwise it prints `skipped: no adapter` with the reason and appends a line to the
//! file `$GPUSCOPE_SKIP_LOG` names (when set), so a run can say how many GPU tests did
//! not run (`.ci/run` sets both and fails on any skip).

use std::io::Write;
use std::sync::OnceLock;

use crate::device::{Gpu, GpuOptions};

/// One GPU device for a whole test binary, or `None` on a developer machine without an
/// adapter (the skip is printed and counted, see the module doc).
///
/// With `CI` set, a missing adapter panics instead: a GPU test that silently skipped in
/// CI would pass without the GPU path having run.
pub fn shared_gpu() -> Option<&'static Gpu> {
    static GPU: OnceLock<Result<Gpu, String>> = OnceLock::new();
    match GPU.get_or_init(|| Gpu::new(&GpuOptions::default()).map_err(|e| e.to_string())) {
        Ok(gpu) => Some(gpu),
        Err(err) => {
            if std::env::var_os("CI").is_some() {
                panic!("no GPU adapter in CI: {err}");
            }
            skipped(&format!("no adapter: {err}"));
            None
        }
    }
}

/// Says that the calling test did not run its GPU part, and why: on stderr, and as one
/// line of `$GPUSCOPE_SKIP_LOG` when that is set.
pub fn skipped(why: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    eprintln!("skipped: {test}: {why}");
    if let Some(path) = std::env::var_os("GPUSCOPE_SKIP_LOG") {
        let line = format!("{test}: {why}\n");
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = appended {
            eprintln!(
                "could not count the skip in {}: {e}",
                path.to_string_lossy()
            );
        }
    }
}
