//! The compact encoding: round trips equal to the JSON ones, read by content, and a
//! specific error for each kind of damage.

use gpuscope_trace::compact::{self, CompactError};
use gpuscope_trace::io::{load_profile, save_profile, ProfileIoError};
use gpuscope_trace::version::VersionError;
use gpuscope_trace::{FormatVersion, PROFILE_FORMAT};

use gpuscope_trace::fixtures as fixture;

fn every_fixture() -> Vec<gpuscope_trace::Profile> {
    let mut with_everything = fixture::timeline();
    with_everything.ceilings = Some(fixture::ceilings());
    with_everything.buffers = vec![gpuscope_trace::BufferRecord {
        label: "w".into(),
        kind: gpuscope_trace::MemoryKind::Weights,
        bytes: 10,
        created_token: None,
        dropped_token: None,
    }];
    vec![
        fixture::small(),
        fixture::untimed(),
        fixture::long(3, 4),
        fixture::clock_ramp(),
        with_everything,
    ]
}

#[test]
fn round_trips_are_equal() {
    for p in every_fixture() {
        let bytes = compact::encode(&p).unwrap();
        assert!(compact::is_compact(&bytes));
        assert_eq!(compact::decode(&bytes).unwrap(), p);
    }
}

#[test]
fn report_reads_either_format_by_content() {
    let dir = tempfile::tempdir().unwrap();
    let p = fixture::small_with_ceilings();
    // The names say nothing: the first bytes decide.
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    compact::save(&a, &p).unwrap();
    save_profile(&b, &p).unwrap();
    let (from_compact, from_json) = (load_profile(&a).unwrap(), load_profile(&b).unwrap());
    assert_eq!(from_compact, p);
    assert_eq!(from_compact, from_json);
    // Much smaller than JSON.
    let (ca, cb) = (
        std::fs::metadata(&a).unwrap().len(),
        std::fs::metadata(&b).unwrap().len(),
    );
    assert!(ca * 3 < cb, "compact {ca} bytes, JSON {cb}");
}

/// A compact file holding a format 2.0 profile was read (`report` exited 0) where the
/// same profile as JSON was refused: the compact reader ignored the profile format
/// version in its header. Both readers now refuse it with the same error.
#[test]
fn compact_profile_of_another_major_version_is_refused() {
    let mut p = fixture::small();
    p.format = FormatVersion { major: 2, minor: 0 };
    let bytes = compact::encode(&p).unwrap();
    let e = compact::decode(&bytes).unwrap_err();
    assert!(
        matches!(
            e,
            CompactError::ProfileVersion(VersionError::Unsupported { found, .. })
                if found == p.format
        ),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let (compact_path, json_path) = (dir.path().join("p.gpuprof"), dir.path().join("p.json"));
    std::fs::write(&compact_path, &bytes).unwrap();
    save_profile(&json_path, &p).unwrap();
    for path in [&compact_path, &json_path] {
        let e = load_profile(path).unwrap_err();
        match &e {
            ProfileIoError::UnsupportedVersion {
                found, supported, ..
            } => assert_eq!((*found, *supported), (p.format, PROFILE_FORMAT)),
            e => panic!("{}: unexpected error {e:?}", path.display()),
        }
        assert!(e.to_string().contains("profile format 2.0"), "{e}");
    }
    // Another minor of the same major is still read.
    p.format = FormatVersion {
        minor: PROFILE_FORMAT.minor + 7,
        ..PROFILE_FORMAT
    };
    assert_eq!(compact::decode(&compact::encode(&p).unwrap()).unwrap(), p);
}

#[test]
fn damage_is_named() {
    let p = fixture::small();
    let bytes = compact::encode(&p).unwrap();
    // A flipped byte anywhere fails the checksum.
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x40;
    assert!(matches!(
        compact::decode(&flipped),
        Err(CompactError::Checksum { .. })
    ));
    // Cut short: still the checksum (the last 8 bytes are no longer it).
    let cut = &bytes[..bytes.len() - 100];
    assert!(compact::decode(cut).is_err());
    // Another major version is refused before anything else.
    let mut v2 = bytes.clone();
    v2[8] = 2;
    let e = compact::decode(&v2).unwrap_err();
    assert!(matches!(e, CompactError::Version { .. }), "{e}");
    assert!(e.to_string().contains("encoding 2.0"), "{e}");
    // Only the magic bytes.
    let e = compact::decode(b"GPUPROF\0").unwrap_err();
    assert!(matches!(e, CompactError::Truncated { .. }), "{e}");
    assert!(matches!(
        compact::decode(b"{}"),
        Err(CompactError::NotCompact)
    ));
}

/// Rewrites the checksum after editing a body, to reach the checks behind it.
fn resum(mut body: Vec<u8>) -> Vec<u8> {
    use std::hash::Hasher;
    body.truncate(body.len() - 8);
    let mut h = fnv::FnvHasher::default();
    h.write(&body);
    body.extend_from_slice(&h.finish().to_le_bytes());
    body
}

#[test]
fn a_count_beyond_the_file_is_truncation_not_an_allocation() {
    let mut p = fixture::small();
    p.passes.clear();
    p.dispatches.truncate(1);
    let bytes = compact::encode(&p).unwrap();
    // The dispatch count sits right before the columns: find it by its value (1).
    // Layout end: count (8), one dispatch (81), pass count (8), no passes, checksum (8).
    let at = bytes.len() - 8 - 8 - 81 - 8;
    assert_eq!(u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()), 1);
    let mut big = bytes.clone();
    big[at..at + 8].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    let e = compact::decode(&resum(big)).unwrap_err();
    match e {
        CompactError::Truncated { what, .. } => assert_eq!(what, "the dispatch columns"),
        e => panic!("{e}"),
    }
    // A string id out of the table names the event and column.
    let mut bad = bytes.clone();
    let op_column = at + 8 + 4 + 4; // after token and index
    bad[op_column..op_column + 4].copy_from_slice(&999u32.to_le_bytes());
    let e = compact::decode(&resum(bad)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "dispatches[0].op: string 999 is out of the string table (3 strings)"
    );
}

#[test]
fn the_file_error_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.gpuprof");
    let mut bytes = compact::encode(&fixture::small()).unwrap();
    bytes.truncate(40);
    std::fs::write(&path, bytes).unwrap();
    let e = load_profile(&path).unwrap_err();
    assert!(matches!(e, ProfileIoError::Compact { .. }));
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("{}: invalid compact profile:", path.display())),
        "{msg}"
    );
    assert_eq!(msg.lines().count(), 1);
}

#[test]
fn binary_that_is_not_a_profile_says_so_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.bin");
    std::fs::write(&path, [0xff, 0xfe, 0x00, 0x12]).unwrap();
    let e = load_profile(&path).unwrap_err();
    assert!(matches!(e, ProfileIoError::NotAProfile { .. }));
    assert!(e.to_string().ends_with("not a gpuscope profile: neither JSON text nor a compact profile (no `GPUPROF` magic bytes)"));
    assert!(
        std::error::Error::source(&e).is_none(),
        "the cause is in the message, once"
    );
}
