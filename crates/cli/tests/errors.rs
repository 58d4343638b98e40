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
    assert_eq!(out.status.code(), Some(2));
    let e = one_error(&out.stderr);
    assert_eq!(
        e,
        format!("error: invalid value '{d}' for '--json <JSON>': {d} is a directory, not a file: give a file path")
    );
    assert!(
        !text(&out.stderr).contains("decoding"),
        "refused before the run"
    );
    let missing = dir.path().join("no/p.json");
    let out = gpuscope(&["replay", d, "--json", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_error(&out.stderr).contains("does not exist"));
}

/// Regression: `--trace` was checked only after the run, `--capture` made missing
/// parent directories while `--json` refused them, and `--json` replaced a read-only
/// file. Every output now follows one rule, checked before anything runs.
#[test]
fn every_output_path_follows_one_rule_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let ro = dir.path().join("ro.json");
    std::fs::write(&ro, b"keep").unwrap();
    let mut perm = std::fs::metadata(&ro).unwrap().permissions();
    perm.set_readonly(true);
    std::fs::set_permissions(&ro, perm).unwrap();
    let in_missing = |name: &str| missing.join(name).to_str().unwrap().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--trace".into(), in_missing("t.pftrace")],
            "does not exist",
        ),
        (
            vec!["--compact".into(), in_missing("p.bin")],
            "does not exist",
        ),
        (
            vec!["--capture".into(), in_missing("cap")],
            "does not exist",
        ),
        (
            vec!["--json".into(), ro.to_str().unwrap().into()],
            "is read-only",
        ),
    ];
    for (flag, why) in cases {
        let mut args: Vec<String> = ["profile", "--preset", "tiny", "--tokens", "1"]
            .map(String::from)
            .to_vec();
        args.extend(flag.clone());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = gpuscope(&refs);
        assert_eq!(out.status.code(), Some(2), "{flag:?}");
        let e = one_error(&out.stderr);
        assert!(e.contains(&flag[0]) && e.contains(why), "{flag:?}: {e}");
        assert!(
            !text(&out.stderr).contains("decoding"),
            "{flag:?}: before the run"
        );
    }
    assert!(!missing.exists(), "no directory made for an output");
    assert_eq!(std::fs::read(&ro).unwrap(), b"keep");
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

/// Regression: `--prompt-tokens 4294967295` built a 17 GB prompt before any check, and
/// `bench -p 0-4294967294` expanded the range in memory while parsing; `run -n` wrapped
/// a u32 and `replay --timeout 1e300` panicked. Every numeric argument now has a range,
/// checked as the command line is read.
#[test]
fn numbers_out_of_range_are_refused_as_they_are_read() {
    let cases: [(&[&str], &str); 7] = [
        (
            &["profile", "--prompt-tokens", "4294967295"],
            "--prompt-tokens",
        ),
        (&["profile", "--tokens", "0"], "--tokens"),
        (&["bench", "-p", "0-4294967294"], "more than 1048576 tokens"),
        (&["bench", "-p", "0-100000+1"], "more than 4096 lengths"),
        (
            &["run", "x.gguf", "-p", "hi", "-n", "4294967294"],
            "--tokens",
        ),
        (
            &["replay", ".", "--timeout", "1e300"],
            "a number of seconds",
        ),
        (
            &["replay", ".", "--tolerance", "nan"],
            "a relative tolerance",
        ),
    ];
    for (args, needle) in cases {
        let start = std::time::Instant::now();
        let out = gpuscope(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let e = one_error(&out.stderr);
        assert!(e.contains(needle), "{args:?}: {e}");
        assert_eq!(text(&out.stderr).trim_end().lines().count(), 1, "{args:?}");
        assert!(
            start.elapsed().as_secs() < 10,
            "{args:?} took {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn too_many_tokens_names_the_kv_cache_and_tokens() {
    if !have_gpu() {
        return;
    }
    // Within the parse-time limit (2^20 tokens), past this device's binding size.
    let out = gpuscope(&["profile", "--preset", "tiny", "--tokens", "1000000"]);
    assert_eq!(out.status.code(), Some(3));
    let e = one_error(&out.stderr);
    assert!(
        e.contains("the KV cache for 1000000 tokens needs")
            && e.contains("lower --tokens (at most"),
        "{e}"
    );
    assert!(!e.contains("row chunks"), "{e}");
}
