//! What a user meets when something is wrong (docs/errors.md lists them all): outputs
//! that cannot be written are refused before the run, nothing of the user's is written
//! among or deleted, captures are replaced only with --force, replay checks a capture's
//! claims before allocating, limits name the option that moves them, and every cause is
//! printed once.

use crate::cli::capture_tiny;
use crate::common::{gpuscope, have_gpu, one_error, text};

#[test]
fn json_to_a_directory_is_refused_before_the_run_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = gpuscope(&["profile", "--preset", "tiny", "--tokens", "1", "--json", d]);
    assert_eq!(out.status.code(), Some(1));
    let e = one_error(&out.stderr);
    assert_eq!(
        e,
        format!("error: --json: {d} is a directory, not a file: give a file path")
    );
    assert!(
        !text(&out.stderr).contains("decoding"),
        "refused before the run"
    );
    let missing = dir.path().join("no/p.json");
    let out = gpuscope(&["replay", d, "--json", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(one_error(&out.stderr).contains("does not exist"));
}

#[test]
fn a_capture_is_never_written_among_the_users_files() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("mine");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("thesis.tex"), b"years of work").unwrap();
    for force in [false, true] {
        let mut args = vec!["profile", "--preset", "tiny", "--tokens", "1", "--capture"];
        args.push(target.to_str().unwrap());
        if force {
            args.push("--force");
        }
        let out = gpuscope(&args);
        assert_eq!(out.status.code(), Some(1));
        let e = one_error(&out.stderr);
        assert!(
            e.contains("not a gpuscope capture") && e.contains("thesis.tex"),
            "{e}"
        );
    }
    let names: Vec<_> = std::fs::read_dir(&target).unwrap().collect();
    assert_eq!(names.len(), 1);
    assert_eq!(
        std::fs::read(target.join("thesis.tex")).unwrap(),
        b"years of work"
    );
}

#[test]
fn replacing_a_capture_needs_force() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = capture_tiny(dir.path());
    let manifest = std::path::Path::new(&cap).join("manifest.json");
    let first = std::fs::read(&manifest).unwrap();
    let args = [
        "profile",
        "--preset",
        "tiny",
        "--tokens",
        "2",
        "--warmup",
        "0",
        "--capture",
        &cap,
    ];
    let out = gpuscope(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(one_error(&out.stderr).contains("pass --force"));
    assert_eq!(
        std::fs::read(&manifest).unwrap(),
        first,
        "the old capture is kept"
    );
    let mut forced = args.to_vec();
    forced.push("--force");
    let out = gpuscope(&forced);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_ne!(std::fs::read(&manifest).unwrap(), first, "replaced");
    let out = gpuscope(&["inspect", &cap]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Nothing is left beside it: no temporary or set-aside directory.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["live.json", "run"]);
}

#[test]
fn replay_refuses_a_capture_over_the_memory_budget_or_the_device_limits() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = capture_tiny(dir.path());
    let out = gpuscope(&["replay", &cap, "--max-memory", "64KiB"]);
    assert_eq!(out.status.code(), Some(1));
    let e = one_error(&out.stderr);
    assert!(
        e.contains("more than --max-memory 65536") && e.contains("nothing was allocated"),
        "{e}"
    );
    // A capture (without data) claiming a buffer bigger than any device allows: refused
    // with the number, before anything is created. commands.json is rewritten and its
    // length and hash in the manifest updated, so only the claim is wrong.
    let capdir = dir.path().join("nodata");
    let out = gpuscope(&[
        "profile",
        "--preset",
        "tiny",
        "--tokens",
        "1",
        "--warmup",
        "0",
        "--capture",
        capdir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let cap = capdir.to_str().unwrap();
    let commands_path = capdir.join("commands.json");
    let mut commands: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&commands_path).unwrap()).unwrap();
    commands["buffers"][0]["size"] = serde_json::json!(1u64 << 50);
    let bytes = serde_json::to_vec_pretty(&commands).unwrap();
    std::fs::write(&commands_path, &bytes).unwrap();
    let manifest_path = capdir.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    for f in manifest["files"].as_array_mut().unwrap() {
        if f["path"] == "commands.json" {
            f["bytes"] = serde_json::json!(bytes.len());
            f["hash"] = serde_json::json!(gpuscope_trace::capture::fnv1a64(&bytes));
        }
    }
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let out = gpuscope(&["replay", cap]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let e = one_error(&out.stderr);
    assert!(
        e.contains(&format!(
            "is {} bytes, more than this device's max_buffer_size",
            1u64 << 50
        )),
        "{e}"
    );
}

#[test]
fn too_many_tokens_names_the_kv_cache_and_tokens() {
    if !have_gpu() {
        return;
    }
    let out = gpuscope(&["profile", "--preset", "tiny", "--tokens", "100000000"]);
    assert_eq!(out.status.code(), Some(3));
    let e = one_error(&out.stderr);
    assert!(
        e.contains("the KV cache for 100000000 tokens needs")
            && e.contains("lower --tokens (at most"),
        "{e}"
    );
    assert!(!e.contains("row chunks"), "{e}");
}
