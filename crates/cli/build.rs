//! The commit gpuscope is built from, for `bench`'s `build_commit` and `build_number`
//! (llama-bench's: the short hash and the number of commits). `unknown` and 0 outside a
//! git checkout.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=7", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let number = git(&["rev-list", "--count", "HEAD"]).unwrap_or_else(|| "0".into());
    println!("cargo:rustc-env=GPUSCOPE_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=GPUSCOPE_BUILD_NUMBER={number}");
    // A new commit or checkout moves HEAD's log: rerun then, not on every build.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/logs/HEAD");
    }
}
