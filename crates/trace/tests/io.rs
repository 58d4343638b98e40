//! Reading and writing profiles: round trips, and a specific error for each kind of
//! bad file.

use std::path::PathBuf;

use gpuscope_trace::io::{load_profile, profile_from_json, save_profile, ProfileIoError};
use gpuscope_trace::{FormatVersion, PROFILE_FORMAT};

use gpuscope_trace::fixtures as fixture;

/// A fresh path in the system temp dir, unique per test and process.
fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpuscope-trace-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn small_json() -> serde_json::Value {
    serde_json::to_value(fixture::small()).unwrap()
}

#[test]
fn file_round_trip_is_equal() {
    let path = temp_path("round_trip.json");
    let p = fixture::small();
    save_profile(&path, &p).unwrap();
    assert_eq!(load_profile(&path).unwrap(), p);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn string_round_trip_is_equal() {
    for p in [fixture::small(), fixture::untimed(), fixture::long(3, 4)] {
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(profile_from_json(&json).unwrap(), p);
    }
}

#[test]
fn fixture_file_loads() {
    let path = fixture::data("small/profile.json");
    if fixture::bless() {
        save_profile(&path, &fixture::small()).unwrap();
    }
    assert_eq!(load_profile(&path).unwrap(), fixture::small());
}

#[test]
fn other_major_version_names_both() {
    let mut v = small_json();
    v["format"] = serde_json::json!({"major": 2, "minor": 3});
    // Version is checked first: a v2 file with a v1-incompatible body still says "version".
    v["tokens"] = serde_json::json!("changed in v2");
    let e = profile_from_json(&v.to_string()).unwrap_err();
    match &e {
        ProfileIoError::UnsupportedVersion {
            found, supported, ..
        } => {
            assert_eq!(*found, FormatVersion { major: 2, minor: 3 });
            assert_eq!(*supported, PROFILE_FORMAT);
        }
        e => panic!("unexpected error {e:?}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains("format 2.3") && msg.contains("reads format 1.x"),
        "{msg}"
    );
}

#[test]
fn newer_minor_with_new_fields_is_read() {
    let mut v = small_json();
    v["format"]["minor"] = 9.into();
    v["added_in_1_9"] = serde_json::json!({"anything": [1, 2]});
    let p = profile_from_json(&v.to_string()).unwrap();
    assert_eq!(p.format, FormatVersion { major: 1, minor: 9 });
    assert_eq!(p.tokens, fixture::small().tokens);
}

#[test]
fn truncated_file_names_path_and_position() {
    let path = temp_path("truncated.json");
    let json = serde_json::to_string_pretty(&fixture::small()).unwrap();
    std::fs::write(&path, &json[..json.len() / 2]).unwrap();
    let e = load_profile(&path).unwrap_err();
    assert!(
        matches!(e, ProfileIoError::Truncated { line, .. } if line > 1),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains(&path.display().to_string()) && msg.contains("truncated"),
        "{msg}"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn missing_format() {
    let mut v = small_json();
    v.as_object_mut().unwrap().remove("format");
    let e = profile_from_json(&v.to_string()).unwrap_err();
    assert!(matches!(e, ProfileIoError::MissingFormat { .. }), "{e:?}");
    assert!(e.to_string().contains("no `format` field"), "{e}");
}

#[test]
fn garbled_format() {
    let mut v = small_json();
    v["format"] = "1.0".into();
    let e = profile_from_json(&v.to_string()).unwrap_err();
    assert!(
        matches!(&e, ProfileIoError::MalformedFormat { found, .. } if found == "\"1.0\""),
        "{e:?}"
    );
}

#[test]
fn wrong_field_type_gives_line_and_column() {
    let mut v = small_json();
    v["tokens"][1]["wall_ns"] = "slow".into();
    let json = serde_json::to_string_pretty(&v).unwrap();
    let e = profile_from_json(&json).unwrap_err();
    let ProfileIoError::Json {
        line,
        column,
        message,
        ..
    } = &e
    else {
        panic!("unexpected error {e:?}");
    };
    let wall_line = json.lines().position(|l| l.contains("\"slow\"")).unwrap() + 1;
    assert_eq!(*line, wall_line);
    assert!(*column > 0);
    assert!(
        message.contains("invalid type: string \"slow\""),
        "{message}"
    );
    assert!(
        e.to_string()
            .starts_with(&format!("<profile JSON>:{wall_line}:")),
        "{e}"
    );
}

#[test]
fn not_a_profile() {
    for bad in [
        "[1, 2]",
        "42",
        "{\"format\": {\"major\": 1, \"minor\": 0}}",
        "not json",
    ] {
        let e = profile_from_json(bad).unwrap_err();
        assert!(matches!(e, ProfileIoError::Json { .. }), "{bad}: {e:?}");
    }
    assert!(matches!(
        profile_from_json("").unwrap_err(),
        ProfileIoError::Truncated { .. }
    ));
}

#[test]
fn missing_file_names_path() {
    let path = temp_path("does-not-exist.json");
    let e = load_profile(&path).unwrap_err();
    assert!(matches!(e, ProfileIoError::Read { .. }));
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
}

#[test]
fn unwritable_path_is_an_error() {
    let path = temp_path("no-such-dir").join("profile.json");
    let e = save_profile(&path, &fixture::small()).unwrap_err();
    assert!(matches!(e, ProfileIoError::Write { .. }), "{e:?}");
}

#[test]
fn format_1_0_file_without_cpu_times_still_loads() {
    // Written by the 1.0 build, before `TokenRecord::cpu` existed.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/v1_0/profile.json");
    let p = gpuscope_trace::io::load_profile(&path).expect("a 1.0 profile must load");
    assert_eq!(p.format.major, 1);
    assert_eq!(p.format.minor, 0);
    assert!(!p.tokens.is_empty());
    assert!(p
        .tokens
        .iter()
        .all(|t| t.cpu == gpuscope_trace::CpuTimes::default()));
}

#[test]
fn format_1_2_file_loads_with_the_1_3_additions_empty() {
    // Written by the 1.2 build, before CPU spans, buffers, sampling and settings.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/v1_2/profile.json");
    let p = gpuscope_trace::io::load_profile(&path).expect("a 1.2 profile must load");
    assert_eq!((p.format.major, p.format.minor), (1, 2));
    assert!(p.cpu_spans.is_empty() && p.buffers.is_empty() && p.incomplete.is_none());
    assert!(p.workload.settings.is_empty() && p.timing.sampling.is_none());
    let mut now = fixture::small();
    now.format = p.format;
    assert_eq!(p, now, "a 1.2 file reads as the same profile");
}

#[test]
fn inconsistent_fields_are_named() {
    type Case = (&'static str, fn(&mut serde_json::Value), &'static str);
    let cases: [Case; 8] = [
        (
            "dispatch of an unrecorded token",
            |v| v["dispatches"][4]["token"] = serde_json::json!(7),
            "`dispatches[4].token`: token 7 has no entry in `tokens`",
        ),
        (
            "token recorded twice",
            |v| v["tokens"][2]["index"] = serde_json::json!(1),
            "`tokens[2].index`: token 1 is recorded twice",
        ),
        (
            "pass of an unrecorded token",
            |v| v["passes"][0]["token"] = serde_json::json!(9),
            "`passes[0].token`: token 9 has no entry in `tokens`",
        ),
        (
            "CPU span on a thread that is not named",
            |v| {
                v["threads"] = serde_json::json!(["main"]);
                v["cpu_spans"] = serde_json::json!([
                    {"name": "encode", "thread": 3, "token": 0, "start_ns": 0, "end_ns": 5}
                ]);
            },
            "`cpu_spans[0].thread`: thread 3 but `threads` names 1",
        ),
        // Regression: a renderer sized a per-pass table by this index (4 billion passes
        // from a 47 KB file aborted the Perfetto export).
        (
            "dispatch of a pass the token does not have",
            |v| v["dispatches"][0]["pass"] = serde_json::json!(4_000_000_000u32),
            "`dispatches[0].pass`: pass 4000000000 of token 0, which has 11 pass and dispatch events",
        ),
        (
            "pass index beyond the token's events",
            |v| v["passes"][1]["index"] = serde_json::json!(4_000_000_000u32),
            "`passes[1].index`: pass 4000000000 of token 0, which has 11 pass and dispatch events",
        ),
        // Regression: with no thread named, the thread index went unchecked and sized
        // the Perfetto export's per-thread table.
        (
            "CPU span on a huge thread index with no thread named",
            |v| {
                v["threads"] = serde_json::json!([]);
                v["cpu_spans"] = serde_json::json!([
                    {"name": "encode", "thread": 4_000_000_000u32, "token": 0, "start_ns": 0, "end_ns": 5}
                ]);
            },
            "`cpu_spans[0].thread`: thread 4000000000 but the profile names no thread and has 1 spans",
        ),
        (
            "buffer dropped before it was created",
            |v| {
                v["buffers"] = serde_json::json!([
                    {"label": "x", "kind": "activations", "bytes": 4, "created_token": 2, "dropped_token": 1}
                ]);
            },
            "`buffers[0].dropped_token`: dropped in token 1, before it was created (token 2)",
        ),
    ];
    for (what, edit, expected) in cases {
        let mut v = small_json();
        edit(&mut v);
        let e = profile_from_json(&v.to_string()).unwrap_err();
        assert!(
            matches!(e, ProfileIoError::Inconsistent { .. }),
            "{what}: {e}"
        );
        assert_eq!(
            e.to_string(),
            format!("<profile JSON>: inconsistent profile: {expected}"),
            "{what}"
        );
    }
}

#[test]
fn a_missing_field_is_named() {
    let mut v = small_json();
    v["dispatches"][0].as_object_mut().unwrap().remove("bytes");
    let e = profile_from_json(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("missing field `bytes`"), "{e}");
    assert_eq!(e.lines().count(), 1);
}
