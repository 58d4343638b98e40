//! `gpuscope diff`: the gate's exit codes, warnings, refusals and formats, on profiles
//! written here (no GPU needed).

use gpuscope_trace::{Counters, DispatchEvent, GpuSpan, PassEvent, Profile, TokenRecord};

use crate::common::{gpuscope, one_error, text};

/// 64 tokens of one gemv each, ±3% jitter (seeded), every time `factor` times longer.
fn profile(seed: u64, factor: f64) -> Profile {
    let mut state = seed;
    let mut jitter = |ns: f64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let unit = (state >> 11) as f64 / (1u64 << 53) as f64;
        (ns * factor * (0.97 + 0.06 * unit)) as u64
    };
    let mut p = Profile {
        tool: "gpuscope test".into(),
        ..Default::default()
    };
    p.adapter.name = "Test GPU".into();
    p.workload.name = "tiny (synthetic)".into();
    p.workload.weights = "q4_1".into();
    for token in 0..64u32 {
        let start = token as u64 * 10_000_000;
        let gpu = GpuSpan {
            start_ns: start,
            end_ns: start + jitter(500_000.0),
        };
        p.dispatches.push(DispatchEvent {
            token,
            index: 0,
            op: "gemv_q4_1".into(),
            label: "L0.ffn_down".into(),
            layer: Some(0),
            pass: 0,
            pipeline: "gemv_q4_1/main".into(),
            workgroups: [1, 1, 1],
            bytes: 1000,
            flops: 2000,
            cpu_encode_ns: 1000,
            gpu: Some(gpu),
            timestamp_issue: None,
        });
        p.passes.push(PassEvent {
            token,
            index: 0,
            name: "L0".into(),
            layer: Some(0),
            dispatches: 1,
            gpu: Some(gpu),
            timestamp_issue: None,
        });
        p.tokens.push(TokenRecord {
            index: token,
            position: token,
            wall_ns: jitter(1_000_000.0),
            gpu_busy_ns: Some(gpu.duration_ns()),
            counters: Counters {
                dispatches: 1,
                passes: 1,
                submits: 1,
                syncs: 1,
                ..Default::default()
            },
            ..Default::default()
        });
    }
    p
}

/// Writes the profiles into a temporary directory; returns it and their paths.
fn files(profiles: &[(&str, &Profile)]) -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let paths = profiles
        .iter()
        .map(|(name, p)| {
            let path = dir.path().join(name);
            gpuscope_trace::io::save_profile(&path, p).unwrap();
            path.to_str().unwrap().to_string()
        })
        .collect();
    (dir, paths)
}

const GATE: [&str; 4] = ["--max-regress", "5%", "--max-counter-increase", "0"];

#[test]
fn the_gate_passes_noise_and_fails_a_slowdown_with_exit_5() {
    let (_dir, f) = files(&[
        ("base.json", &profile(1, 1.0)),
        ("same.json", &profile(2, 1.0)),
        ("slow.json", &profile(3, 1.2)),
    ]);
    let out = gpuscope(&[&["diff", &f[0], &f[1]][..], &GATE].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("gate passed: 11 checks"));

    let out = gpuscope(
        &[
            &["diff", &f[0], &f[2]][..],
            &GATE,
            &["--max-regress-op", "gemv_q4_1=3%"],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("GATE FAILED: 2 of 12 checks"), "{stdout}");
    let err = text(&out.stderr);
    let line = err.lines().find(|l| l.starts_with("error: ")).unwrap();
    assert!(line.contains("gate failed: 2 of 12 checks"), "{line}");
}

#[test]
fn a_counter_increase_fails_the_gate() {
    let base = profile(1, 1.0);
    let mut new = base.clone();
    new.tokens[5].counters.syncs = 2;
    let (_dir, f) = files(&[("base.json", &base), ("new.json", &new)]);
    let out = gpuscope(&[&["diff", &f[0], &f[1]][..], &GATE].concat());
    assert_eq!(out.status.code(), Some(5));
    assert!(text(&out.stdout).contains("syncs per token"));
    // Without limits, diff only reports.
    assert_eq!(gpuscope(&["diff", &f[0], &f[1]]).status.code(), Some(0));
}

#[test]
fn different_models_warn_loudly_and_strict_refuses() {
    let base = profile(1, 1.0);
    let mut new = profile(2, 1.0);
    new.workload.name = "smollm2-135m (synthetic)".into();
    new.adapter.name = "Other GPU".into();
    let (_dir, f) = files(&[("base.json", &base), ("new.json", &new)]);
    let out = gpuscope(&["diff", &f[0], &f[1]]);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(
        err.contains("WARNING: model differs between the profiles"),
        "{err}"
    );
    assert!(err.contains("WARNING: adapter differs"), "{err}");
    assert!(text(&out.stdout).contains("WARNING: model differs"));

    let out = gpuscope(&["diff", &f[0], &f[1], "--strict"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let line = err.lines().find(|l| l.starts_with("error: ")).unwrap();
    assert!(
        line.contains("--strict: the profiles differ in model"),
        "{line}"
    );
}

#[test]
fn empty_future_and_unknown_inputs_are_one_line_errors() {
    // A run that decoded nothing: no tokens, so no events either.
    let mut empty = profile(1, 1.0);
    empty.tokens.clear();
    empty.dispatches.clear();
    empty.passes.clear();
    let (dir, f) = files(&[("base.json", &profile(1, 1.0)), ("empty.json", &empty)]);
    let error_line = |args: &[&str]| {
        let out = gpuscope(args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&out.stderr)
        );
        one_error(&out.stderr)
    };
    let line = error_line(&["diff", &f[0], &f[1]]);
    assert!(
        line.contains("empty.json: the new profile has no tokens"),
        "{line}"
    );

    let future = dir.path().join("future.json");
    std::fs::write(
        &future,
        r#"{"format": {"major": 2, "minor": 0}, "tokens": []}"#,
    )
    .unwrap();
    let line = error_line(&["diff", &f[0], future.to_str().unwrap()]);
    assert!(
        line.contains("future.json: profile format 2.0 cannot be read"),
        "{line}"
    );

    let line = error_line(&["diff", &f[0], &f[0], "--max-regress-op", "gemv_q9=3%"]);
    assert!(line.contains("no op or label `gemv_q9`"), "{line}");

    let out = gpuscope(&["diff", &f[0], &f[0], "--max-regress", "five"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(text(&out.stderr).contains("`five` is not a percentage"));
}

#[test]
fn markdown_and_json_outputs() {
    let (_dir, f) = files(&[("a.json", &profile(1, 1.0)), ("b.json", &profile(2, 1.3))]);
    let out = gpuscope(&["diff", &f[0], &f[1], "--format", "md"]);
    let md = text(&out.stdout);
    assert!(md.starts_with("# gpuscope diff"), "{md}");
    assert!(
        md.contains("## Ops (GPU time per token)") && md.contains("| gemv_q4_1 |"),
        "{md}"
    );
    let out = gpuscope(&[&["diff", &f[0], &f[1], "--format", "json"][..], &GATE].concat());
    assert_eq!(out.status.code(), Some(5));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["headline"]["wall"]["verdict"], "slower");
    assert_eq!(v["ops"][0]["op"], "gemv_q4_1");
    assert_eq!(v["gate"]["checks"][0]["outcome"], "fail");
}
