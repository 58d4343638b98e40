//! Running the binary from the tests.

use std::process::{Command, Output};

/// Runs the binary with an empty ceilings cache of its own, so no test reads or
/// writes the user's (see `peak` for tests of the cache).
pub fn gpuscope(args: &[&str]) -> Output {
    static EMPTY: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let cache = EMPTY.get_or_init(|| tempfile::tempdir().expect("a temporary directory"));
    gpuscope_with_cache(cache.path(), args)
}

/// Runs the binary with `cache` as its ceilings cache directory.
pub fn gpuscope_with_cache(cache: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpuscope"))
        .args(args)
        .env("GPUSCOPE_CACHE_DIR", cache)
        .output()
        .expect("the gpuscope binary runs")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Whether an adapter exists; without one the GPU tests fail in CI and skip elsewhere.
pub fn have_gpu() -> bool {
    gpuscope_runtime::testing::shared_gpu().is_some()
}

/// The real test model's path (fetched and cached once), or `None` where it cannot be had.
pub fn smollm2() -> Option<String> {
    gpuscope_model::test_model::require_smollm2().map(|p| p.to_string_lossy().into_owned())
}

/// The one `error:` line of a failed run, checked to be a single line with no cause
/// repeated.
pub fn one_error(stderr: &[u8]) -> String {
    let stderr = text(stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    let line = errors[0].to_string();
    let parts: Vec<&str> = line.split(": ").collect();
    for (i, p) in parts.iter().enumerate() {
        assert!(
            !parts[i + 1..].iter().any(|q| q == p && p.len() > 8),
            "`{p}` printed twice: {line}"
        );
    }
    line
}
