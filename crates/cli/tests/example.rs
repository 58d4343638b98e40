//! The example program written against plain wgpu (`crates/record/examples/mlp*.rs`),
//! instrumented with gpuscope-record: it computes what the plain one does, its profile
//! has the hand-counted work, and `report`, `inspect` and `replay` (whole, per command,
//! with a substituted kernel) read what it wrote.

use std::process::Command;

#[path = "../../record/examples/mlp.rs"]
#[allow(dead_code)]
mod mlp;
#[path = "../../record/examples/mlp_plain.rs"]
#[allow(dead_code)]
mod mlp_plain;

fn gpuscope(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuscope"))
        .args(args)
        .output()
        .expect("the gpuscope binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_instrumented_example_profiles_captures_and_replays_like_gpuscope_itself() {
    if gpuscope_runtime::testing::shared_gpu().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let steps = "3".to_string();
    let plain = mlp_plain::run(std::slice::from_ref(&steps)).unwrap();
    let instrumented = mlp::run(&[steps, out.to_str().unwrap().into()]).unwrap();
    assert_eq!(
        plain, instrumented,
        "instrumentation changed what the program computes"
    );

    let profile = gpuscope_trace::io::load_profile(&out.join("profile.json")).unwrap();
    assert_eq!(profile.tokens.len(), 3);
    for t in &profile.tokens {
        let c = t.counters;
        // One pass of three dispatches; each reads what the one before wrote (two
        // barriers); one submit and one wait; the input batch uploaded.
        assert_eq!(
            (c.dispatches, c.passes, c.submits, c.syncs, c.barriers),
            (3, 1, 1, 1, 2),
            "{c:?}"
        );
        assert_eq!(c.bytes_uploaded, 4 * 32 * 256);
        assert_eq!(c.resources_created(), 0);
    }
    // Setup: input + (weights, bias, output) per layer; a pipeline and a bind group each.
    assert_eq!(profile.setup.buffers_created, 10);
    assert_eq!(profile.setup.pipelines_created, 3);
    assert_eq!(profile.setup.bind_groups_created, 3);
    let labels: Vec<&str> = profile.dispatches[..3]
        .iter()
        .map(|d| d.label.as_str())
        .collect();
    assert_eq!(labels, ["L0", "L1", "L2"]);
    assert_eq!(profile.dispatches[0].flops, 2 * 32 * 256 * 512);
    assert!(!profile.instrumentation.as_ref().unwrap().is_partial());

    let (ok, report) = gpuscope(&["report", out.join("profile.json").to_str().unwrap()]);
    assert!(
        ok && report.contains("linear") && report.contains("Bottleneck"),
        "{report}"
    );

    let capture = out.join("capture");
    let capture = capture.to_str().unwrap();
    let (ok, inspect) = gpuscope(&["inspect", capture]);
    assert!(
        ok && inspect.contains("mlp:main{K=512,N=512,RELU=1}") && inspect.contains("L1"),
        "{inspect}"
    );
    // The whole stream replayed from the captured contents: every recorded output of the
    // last step compared bit for bit.
    let (ok, replay) = gpuscope(&["replay", capture]);
    assert!(ok, "{replay}");
    assert!(replay.contains("match"), "{replay}");
    let (ok, per_command) = gpuscope(&["replay", capture, "--per-command"]);
    assert!(ok && per_command.contains("mlp:main"), "{per_command}");

    // A substituted kernel that computes something else is named at its first output.
    let edited = dir.path().join("edited.wgsl");
    let wgsl = std::fs::read_to_string(format!("{capture}/shaders/mlp.wgsl")).unwrap();
    std::fs::write(
        &edited,
        wgsl.replace("acc + bias[col]", "acc + 2.0 * bias[col]"),
    )
    .unwrap();
    let (ok, substituted) = gpuscope(&[
        "replay",
        capture,
        "--substitute",
        &format!("mlp={}", edited.display()),
    ]);
    assert!(
        !ok,
        "a wrong kernel must fail the comparison:\n{substituted}"
    );
    assert!(
        substituted.contains("L0"),
        "the first mismatching dispatch is named:\n{substituted}"
    );
}

/// Lines of `new` that a line diff from `old` adds (longest common subsequence).
fn added_lines(old: &str, new: &str) -> Vec<String> {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut added) = (0, 0, Vec::new());
    while j < b.len() {
        if i < a.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if i < a.len() && lcs[i + 1][j] >= lcs[i][j + 1] {
            i += 1;
        } else {
            added.push(b[j].to_string());
            j += 1;
        }
    }
    added
}

#[test]
fn instrumenting_the_example_changes_at_most_15_lines() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../record/examples");
    let plain = std::fs::read_to_string(format!("{dir}/mlp_plain.rs")).unwrap();
    let instrumented = std::fs::read_to_string(format!("{dir}/mlp.rs")).unwrap();
    let added = added_lines(&plain, &instrumented);
    assert!(
        added.len() <= 15,
        "{} lines changed (docs/instrument-your-program.md promises 15 at most):\n{}",
        added.len(),
        added.join("\n")
    );
    assert!(added.iter().any(|l| l.contains("Recorder::new")));
}
