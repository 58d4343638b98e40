//! `gpuscope check` and `gpuscope ops` run as a user would: verdicts, exit codes, the
//! breakpoint's capture replayed by `gpuscope replay`, one-line errors on bad input.

use std::process::Output;

use crate::common::{gpuscope, have_gpu, one_error, text};

/// The last stderr line, which must be the one `error:` line.
fn error_line(out: &Output) -> String {
    one_error(&out.stderr)
}

#[test]
fn check_passes_writes_json_and_fails_with_code_5_on_a_planted_fault() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("c.json");
    let out = gpuscope(&["check", "--tokens", "2", "--json", json.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("PASS") && stdout.contains("Error growth per layer"));
    let report: gpuscope_trace::check::CheckReport =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report.tokens.len(), 2);

    // Dispatch 20 of 26 (13 per token with every fusion): token 1's L1 attention.
    let out = gpuscope(&["check", "--tokens", "2", "--inject-fault", "corrupt=20"]);
    assert_eq!(out.status.code(), Some(5));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("First divergent dispatch (local error"),
        "{stdout}"
    );
    assert!(stdout.contains("(seq 20)") && stdout.contains("worst elements"));
    assert!(error_line(&out).contains("check failed at dispatch 20"));
}

#[test]
fn a_breakpoint_capture_replays_alone() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t");
    let out = gpuscope(&[
        "check",
        "--tokens",
        "2",
        "--trace-tensors",
        trace.to_str().unwrap(),
        "--break-at",
        "token=1,label=L0.rope",
    ]);
    // The README's example: rope runs inside the q/k/v gemv with the default fusions.
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("gpuscope replay"), "{err}");
    let report = text(&out.stdout);
    assert!(
        report.contains("L0.rope: with this plan's fusions it runs inside L0.attn_qkv"),
        "{report}"
    );
    let out = gpuscope(&["replay", trace.join("capture").to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("match"), "{stdout}");
    // One dispatch gets a dispatch's report, not a decode report of one step.
    assert!(
        stdout.contains("Per-command replay") && stdout.contains("L0.attn_qkv"),
        "{stdout}"
    );
    assert!(!stdout.contains("tok/s"), "{stdout}");
}

#[test]
fn bad_check_input_gets_one_line_and_leaves_nothing() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t");
    let t = trace.to_str().unwrap();
    let cases: [(&[&str], i32, &str); 4] = [
        (&["--against", "no-such-adapter"], 3, "no-such-adapter"),
        (
            &["--trace-tensors", t, "--filter", "op=softmax"],
            1,
            "selects no dispatch",
        ),
        (
            &["--trace-tensors", t, "--break-at", "999999"],
            1,
            "--break-at 999999",
        ),
        (
            &["--trace-tensors", "/proc/no/such/dir"],
            2,
            "/proc/no/such does not exist",
        ),
    ];
    for (args, code, message) in cases {
        let mut all = vec!["check", "--tokens", "2"];
        all.extend_from_slice(args);
        let out = gpuscope(&all);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            error_line(&out).contains(message),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A kernel the adapter cannot run is reported as not supported, and does not fail the
/// run: llvmpipe's GL backend offers no subgroups, so no dp4a.
#[test]
fn ops_test_reports_kernels_the_adapter_cannot_run_as_not_supported() {
    if !have_gpu() {
        return;
    }
    let out = gpuscope(&[
        "ops",
        "test",
        "--op",
        "gemv_q8_0",
        "--backend",
        "gl",
        "--no-plan",
    ]);
    if !out.status.success() && std::env::var_os("CI").is_none() {
        eprintln!("SKIPPED (not in CI): no GL adapter: {}", text(&out.stderr));
        return;
    }
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", text(&out.stderr));
    let dp4a: Vec<&str> = stdout.lines().filter(|l| l.contains(".dp4a")).collect();
    assert_eq!(dp4a.len(), 7, "{stdout}");
    assert!(
        dp4a.iter()
            .all(|l| l.contains(" n/a ") && l.contains("not supported: ")),
        "{stdout}"
    );
    assert!(
        stdout.contains("0 failed, 7 not supported by this adapter"),
        "{stdout}"
    );
    // The float kernels of the same format ran.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("gemv_q8_0.shared") && l.contains(" OK ")),
        "{stdout}"
    );
}

#[test]
fn ops_test_names_a_planted_wrong_kernel_and_perf_prints_csv() {
    if !have_gpu() {
        return;
    }
    let out = gpuscope(&[
        "ops",
        "test",
        "--op",
        "rope",
        "--shape",
        "smollm2",
        "--inject-fault",
        "rope-theta",
        "--no-plan",
    ]);
    assert_eq!(out.status.code(), Some(5));
    assert!(
        error_line(&out).contains("rope, rope_qkv, rope_qkv_batched"),
        "{}",
        text(&out.stderr)
    );
    let out = gpuscope(&[
        "ops",
        "perf",
        "--op",
        "rms_norm",
        "--shape",
        "smollm2",
        "--output",
        "csv",
        "--no-plan",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut lines = stdout.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("backend_name,op_name,format,shape,op_params,test_mode,time_us,"));
    assert!(lines.next().unwrap().contains(",rms_norm,"));
}

/// `ops test` and `ops perf` list every kernel of the adapter's default plan (the shaders
/// a SmolLM2-135M profile runs), marked as the plan's.
#[test]
fn ops_test_and_perf_cover_every_kernel_of_the_default_plan() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let out = gpuscope(&[
        "profile",
        "--preset",
        "smollm2-135m",
        "--weights",
        "q8_0",
        "--tokens",
        "2",
        "--warmup",
        "0",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let p: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let mut want: Vec<String> = p["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            d["pipeline"]
                .as_str()
                .unwrap()
                .split(':')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    want.sort();
    want.dedup();
    let out = gpuscope(&[
        "ops",
        "test",
        "--format",
        "q8_0",
        "--shape",
        "smollm2-135m",
        "--output",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    let mut got: Vec<String> = rows
        .iter()
        .filter(|r| r["test_mode"] == "plan")
        .map(|r| r["op_name"].as_str().unwrap().to_string())
        .collect();
    got.sort();
    assert_eq!(got, want);
    assert!(rows
        .iter()
        .all(|r| r["used_by_plan"] == true && r["passed"] == true));
    // Timed as the decoder binds it, marked in the table.
    let out = gpuscope(&[
        "ops",
        "perf",
        "--format",
        "q8_0",
        "--shape",
        "L0.attn_qkv",
        "--no-plan",
    ]);
    assert_eq!(out.status.code(), Some(1), "only the plan has that shape");
    let out = gpuscope(&["ops", "perf", "--format", "q8_0", "--shape", "L0.attn_qkv"]);
    let table = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let row = table
        .lines()
        .find(|l| l.contains("smollm2-135m.L0.attn_qkv"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains(" yes "), "{row}");
}
