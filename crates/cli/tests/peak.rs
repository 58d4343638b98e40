//! `peak`, the ceilings cache, and the analysis sections of `profile` and `report` on
//! the software adapter, with small sizes so CI stays quick.

use std::path::Path;

use crate::common::{gpuscope, gpuscope_with_cache, have_gpu, text};

/// `peak` at CI size: 4 MiB, 3 repetitions, kernels grown to 1 ms, a chain of 50.
fn peak(cache: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "peak",
        "--mib",
        "4",
        "--repetitions",
        "3",
        "--target-ms",
        "1",
        "--chain",
        "50",
    ];
    args.extend_from_slice(extra);
    gpuscope_with_cache(cache, &args)
}

fn cache_files(cache: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(cache.join("ceilings"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[test]
fn peak_measures_caches_reuses_and_never_trusts_a_corrupt_cache() {
    if !have_gpu() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let out = peak(cache.path(), &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    for part in [
        "Ceilings of ",
        "(GPU timestamps around each pass)",
        "copy ",
        "read ",
        "write ",
        "f32 FMA ",
        "dependent dispatch ",
        "CPU encode + submit ",
        "fill ",
        "Cached in ",
    ] {
        assert!(stdout.contains(part), "{part:?} missing:\n{stdout}");
    }
    assert!(!stdout.contains("copy not measured"), "{stdout}");
    let files = cache_files(cache.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let measured = std::fs::read_to_string(&files[0]).unwrap();

    // Cached: printed again, not measured again.
    let out = peak(cache.path(), &[]);
    let again = text(&out.stdout);
    assert!(out.status.success());
    assert!(
        again.contains("`gpuscope peak --refresh` measures again"),
        "{again}"
    );
    assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), measured);

    // Corrupt: said on stderr, measured again, and the entry is valid again.
    std::fs::write(
        &files[0],
        "{\"format\": {\"major\": 1, \"minor\": 0}, \"identity\": 4",
    )
    .unwrap();
    let out = peak(cache.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("not using the ceilings cache") && err.contains("corrupt"),
        "{err}"
    );
    assert!(text(&out.stdout).contains("Cached in "));
    let fixed: gpuscope_trace::Ceilings =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert!(fixed.validate().is_ok());

    // --refresh measures even with a good entry.
    let out = peak(cache.path(), &["--refresh"]);
    assert!(
        text(&out.stderr).contains("measuring the ceilings"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn profile_embeds_the_ceilings_and_report_says_whose_it_used() {
    if !have_gpu() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    assert!(peak(cache.path(), &[]).status.success());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let compact = dir.path().join("p.gpuprof");
    let out = gpuscope_with_cache(
        cache.path(),
        &[
            "profile",
            "--preset",
            "tiny",
            "--weights",
            "q4_1",
            "--tokens",
            "10",
            "--warmup",
            "1",
            // Unfused, so the checklist has epilogue fusion candidates to find.
            "--fuse",
            "none",
            "--json",
            json.to_str().unwrap(),
            "--compact",
            compact.to_str().unwrap(),
        ],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    for part in [
        "Ceilings: measured by gpuscope",
        "embedded in the profile",
        "Steady state:",
        "% ceil",
        "Roofline per token (",
        "wall is ",
        "what it would take: at 80% of their ceilings",
        "Timeline (",
        "busy ",
        "launch efficiency ",
        "Checklist (",
        "fusion candidates: ",
        "kernels reach 10% of their ceiling",
        "dispatches have enough workgroups",
    ] {
        assert!(stdout.contains(part), "{part:?} missing:\n{stdout}");
    }
    // The tiny graph feeds rope and silu_mul straight from the gemv that writes their
    // input: epilogue fusion candidates, found from the recorded bindings.
    assert!(stdout.contains("epilogue: "), "{stdout}");
    // Read back elsewhere (an empty cache): the embedded ceilings are used, and both
    // files give the same report.
    let from_compact = gpuscope(&["report", compact.to_str().unwrap()]);
    let from_json = gpuscope(&["report", json.to_str().unwrap()]);
    assert!(
        from_compact.status.success(),
        "{}",
        text(&from_compact.stderr)
    );
    assert_eq!(text(&from_compact.stdout), text(&from_json.stdout));
    assert!(text(&from_compact.stdout).contains("embedded in the profile"));
    // Without embedded ceilings: this machine's cache, said so, when it is the same
    // device; else none, with what to run.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("ceilings");
    let bare = dir.path().join("bare.json");
    std::fs::write(&bare, v.to_string()).unwrap();
    let local = gpuscope_with_cache(cache.path(), &["report", bare.to_str().unwrap()]);
    assert!(
        text(&local.stdout).contains("from this machine's cache"),
        "{}",
        text(&local.stdout)
    );
    let none = gpuscope(&["report", bare.to_str().unwrap()]);
    assert!(
        text(&none.stdout)
            .contains("Ceilings: none (none measured for this adapter: run `gpuscope peak`"),
        "{}",
        text(&none.stdout)
    );
}

#[test]
fn profile_without_ceilings_says_to_run_peak() {
    if !have_gpu() {
        return;
    }
    let out = gpuscope(&[
        "profile", "--preset", "tiny", "--tokens", "2", "--warmup", "0",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("run `gpuscope peak` once"),
        "{}",
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Ceilings: none"), "{stdout}");
    assert!(stdout.contains("Roofline per token: needs measured ceilings"));
}

#[test]
fn report_reads_a_profile_of_the_previous_format() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../trace/tests/data/v1_2/profile.json");
    let out = gpuscope(&["report", path.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for part in [
        "format 1.2",
        "Steady state:",
        "Timeline (",
        "Checklist (",
        "Bottleneck:",
    ] {
        assert!(stdout.contains(part), "{part:?} missing:\n{stdout}");
    }
}

#[test]
fn an_inconsistent_profile_is_a_one_line_error_naming_the_field() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../trace/tests/data/small/profile.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["dispatches"][3]["token"] = serde_json::json!(41);
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, v.to_string()).unwrap();
    let out = gpuscope(&["report", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("bad.json: inconsistent profile: `dispatches[3].token`: token 41 has no entry in `tokens`"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn the_real_smollm2_gets_every_section_and_pass_timing_says_what_it_cannot_compute() {
    let Some(model) = crate::common::smollm2() else {
        return;
    };
    if !have_gpu() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    assert!(peak(cache.path(), &[]).status.success());
    let out = gpuscope_with_cache(
        cache.path(),
        &[
            "profile", &model, "--tokens", "10", "--warmup", "1", "--timing", "pass",
        ],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for part in [
        "Ceilings: measured by gpuscope",
        "Steady state:",
        "Roofline per token (",
        "Timeline (",
        "kernels = pass spans",
        "not computable: ",
        "launch efficiency (timing pass: gaps between dispatches inside a pass are not visible)",
        "mean kernel time (timing pass: passes are timed, not dispatches)",
        "Memory",
        "Checklist (",
        "kernels reach 10% of their ceiling: no per-dispatch GPU times (needs timing `dispatch`)",
        "next: gpuscope profile <same options> --timing dispatch",
        "Bottleneck:",
    ] {
        assert!(stdout.contains(part), "{part:?} missing:\n{stdout}");
    }
}
