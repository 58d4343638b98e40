//! `report --format md|html|perfetto|json` and `profile --trace` on real lavapipe runs
//! (synthetic and SmolLM2), and their errors on bad input.

use std::path::Path;
use std::process::Command;

use crate::common::smollm2;
use crate::common::{gpuscope, have_gpu, text};

/// The layout of a Markdown document: section headings and table headers, numbers
/// masked (a run's findings and counts vary; its layout must not).
fn layout(md: &str) -> String {
    let lines: Vec<&str> = md.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter(|(i, l)| {
            (l.starts_with('#') && !l.starts_with("####"))
                || (l.starts_with('|') && !lines[i.saturating_sub(1)].starts_with('|'))
        })
        .map(|(_, l)| l.replace(|c: char| c.is_ascii_digit(), "#"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Loads `page` in headless chromium when installed (required when `CI` is set):
/// the script ran to its end without an error.
fn check_in_browser(page: &Path) {
    let Ok(found) = Command::new("which").arg("chromium").output() else {
        return;
    };
    if !found.status.success() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but chromium is missing"
        );
        gpuscope_runtime::testing::skipped("the browser check: no chromium installed");
        return;
    }
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args(["--headless", "--disable-gpu", "--no-sandbox", "--dump-dom"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = text(&out.stdout);
    assert!(!dom.contains("id=\"js-error\""), "script error: {dom}");
    assert!(dom.contains("data-rendered=\"ok\""), "page not drawn");
}

/// Writes every format of `profile` and checks each.
fn every_format(dir: &Path, profile: &Path, expect_op: &str) -> String {
    let p = profile.to_str().unwrap();
    let md = dir.join("r.md");
    let out = gpuscope(&["report", p, "--format", "md", "-o", md.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.contains(expect_op) && md.contains("## Opportunities"),
        "{md}"
    );

    let html = dir.join("r.html");
    let out = gpuscope(&[
        "report",
        p,
        "--format",
        "html",
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&html).unwrap().contains(expect_op));
    check_in_browser(&html);

    let trace = dir.join("r.pftrace");
    let out = gpuscope(&[
        "report",
        p,
        "--format",
        "perfetto",
        "-o",
        trace.to_str().unwrap(),
    ]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The recorder's CPU spans pin the GPU clock: a real run must align.
    assert!(stderr.contains("GPU clock aligned"), "{stderr}");
    assert!(stderr.contains("flows"), "{stderr}");
    let bytes = std::fs::read(&trace).unwrap();
    assert_eq!(
        bytes[0], 0x0a,
        "a Trace starts with a packet (field 1, bytes)"
    );

    let out = gpuscope(&["report", p, "--format", "json"]);
    assert!(out.status.success());
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(again["dispatches"]
        .as_array()
        .is_some_and(|d| !d.is_empty()));
    md
}

#[test]
fn synthetic_run_in_every_format() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let trace = dir.path().join("p.pftrace");
    let out = gpuscope(&[
        "profile",
        "--preset",
        "tiny",
        "--weights",
        "q4_1",
        "--tokens",
        "4",
        "--warmup",
        "1",
        "--timing",
        "dispatch",
        "--json",
        json.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("Perfetto trace written"));
    assert!(std::fs::metadata(&trace).unwrap().len() > 0);
    let md = every_format(dir.path(), &json, "gemv_q4_1");
    insta::assert_snapshot!("synthetic_layout", layout(&md));
}

#[test]
fn smollm2_in_every_format() {
    let Some(model) = smollm2() else { return };
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let out = gpuscope(&[
        "profile",
        &model,
        "--tokens",
        "2",
        "--warmup",
        "0",
        "--timing",
        "dispatch",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let md = every_format(dir.path(), &json, "gemv_q4_1");
    assert!(
        md.contains("SmolLM2-135M-Instruct.Q4_1.gguf") || md.contains("Smollm2"),
        "{md}"
    );
}

/// A profile file to feed `report` (written by the trace crate's fixture format).
fn small_profile() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../trace/tests/data/small/profile.json")
}

fn one_line_error(out: &std::process::Output, code: i32, needle: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains(needle),
        "{stderr}"
    );
}

#[test]
fn bad_report_requests_are_one_line_errors_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let small = small_profile();
    let small = small.to_str().unwrap();
    let out = gpuscope(&["report", small, "--format", "svg"]);
    one_line_error(&out, 2, "unknown report format `svg`");
    let out = gpuscope(&["report", small, "--format", "perfetto"]);
    one_line_error(&out, 2, "-o FILE");

    let missing = dir.path().join("no/such/dir/r.html");
    let out = gpuscope(&[
        "report",
        small,
        "--format",
        "html",
        "-o",
        missing.to_str().unwrap(),
    ]);
    one_line_error(&out, 2, "no/such/dir does not exist");

    // A profile from a future major version: refused, the old output left as it was.
    let future = dir.path().join("future.json");
    let json = std::fs::read_to_string(small_profile()).unwrap();
    let json = json.replacen("\"major\": 1", "\"major\": 2", 1);
    std::fs::write(&future, json).unwrap();
    let existing = dir.path().join("old.pftrace");
    std::fs::write(&existing, b"old").unwrap();
    for format in ["perfetto", "html", "md"] {
        let out = gpuscope(&[
            "report",
            future.to_str().unwrap(),
            "--format",
            format,
            "-o",
            existing.to_str().unwrap(),
        ]);
        one_line_error(&out, 1, "future.json");
        assert_eq!(std::fs::read(&existing).unwrap(), b"old");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
}
