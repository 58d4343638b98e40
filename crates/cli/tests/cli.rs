//! End-to-end runs of the binary: reports, JSON, exit codes and error messages.

use std::process::{Command, Output};

fn gpuscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpuscope"))
        .args(args)
        .output()
        .expect("the gpuscope binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Whether an adapter exists; without one the GPU tests fail in CI and skip elsewhere.
fn have_gpu() -> bool {
    gpuscope_runtime::testing::shared_gpu().is_some()
}

#[test]
fn profile_prints_every_section_and_writes_json_that_report_reads() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let out = gpuscope(&[
        "profile", "--preset", "tiny", "--weights", "q4_0", "--tokens", "4", "--warmup", "1", "--overhead",
        "--json", json.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "exit {:?}\n{}\n{}", out.status, stdout, text(&out.stderr));
    for section in ["Adapter:", "Timing:", "Tokens: 4 decoded", "gemv_q4_0", "Layers", "Counters per token", "Timestamps:", "Overhead:", "Bottleneck:"] {
        assert!(stdout.contains(section), "missing {section}:\n{stdout}");
    }
    let report = gpuscope(&["report", json.to_str().unwrap()]);
    assert!(report.status.success());
    let again = text(&report.stdout);
    assert!(again.contains("gemv_q4_0") && again.contains("Bottleneck:"), "{again}");
}

#[test]
fn every_timing_mode_runs() {
    if !have_gpu() {
        return;
    }
    for mode in ["off", "pass", "dispatch"] {
        let out = gpuscope(&["profile", "--preset", "tiny", "--tokens", "2", "--warmup", "0", "--timing", mode]);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{mode}: {}", text(&out.stderr));
        assert!(stdout.contains(&format!("Timing:   {mode}")), "{mode}:\n{stdout}");
    }
}

#[test]
fn unknown_adapter_is_a_one_line_error_with_exit_3() {
    let out = gpuscope(&["profile", "--preset", "tiny", "--tokens", "1", "--adapter", "no-such-gpu-xyz"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    // (Mesa may print its own `error: XDG_RUNTIME_DIR ...` lines on headless machines.)
    let line = err.lines().find(|l| l.starts_with("error: no GPU adapter")).expect("an error line");
    assert!(line.contains("matching \"no-such-gpu-xyz\""), "{line}");
    assert!(line.contains("adapters found"), "{line}");
}

#[test]
fn bad_arguments_name_what_is_wrong() {
    let out = gpuscope(&["profile", "--preset", "gpt-9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("unknown preset `gpt-9`"), "{}", text(&out.stderr));
    let out = gpuscope(&["profile", "--weights", "q3_k"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("q3_k"), "{}", text(&out.stderr));
    let out = gpuscope(&["profile", "--timing", "sometimes"]);
    assert_eq!(out.status.code(), Some(2), "clap usage errors exit 2");
}

#[test]
fn report_of_a_malformed_file_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.json");
    std::fs::write(&path, "{\"format\": {\"major\": 1, \"minor\": 0}, \"tool\": ").unwrap();
    let out = gpuscope(&["report", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("broken.json"), "{err}");
    let future = dir.path().join("future.json");
    std::fs::write(&future, "{\"format\": {\"major\": 9, \"minor\": 0}}").unwrap();
    let out = gpuscope(&["report", future.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("9.0"), "{}", text(&out.stderr));
}
