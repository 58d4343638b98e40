//! The capture format without a GPU: round trip, views, inspect, and every kind of
//! damage a capture can come back with (each error names the file and what is wrong).

use std::path::Path;

use gpuscope_trace::capture::*;

fn fixture(variants: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    gpuscope_trace::fixtures::write_capture(dir.path(), variants, 3);
    dir
}

fn err(dir: &Path) -> String {
    read_capture(dir)
        .expect_err("the damaged capture is refused")
        .to_string()
}

#[test]
fn a_capture_round_trips_with_its_views_and_blobs() {
    let dir = fixture(2);
    let cap = read_capture(dir.path()).unwrap();
    assert_eq!(cap.stream.steps.len(), 3);
    assert_eq!(cap.stream.dispatch_count(), 6);
    assert_eq!(cap.shader_sources[0], gpuscope_trace::fixtures::COPY_WGSL);
    let counts = cap.command_counts();
    assert_eq!(counts.len(), 2);
    assert!(counts.iter().all(|(_, n, _)| *n == 3));
    assert_eq!(
        cap.blob(&cap.stream.steps[1].uploads[0].data).unwrap(),
        vec![7u8; 16]
    );
    cap.verify_blobs().unwrap();
    for view in ["measurements", "shaders", "used_consts", "used_pipelines"] {
        assert!(
            dir.path().join(format!("fixture_{view}.json")).is_file(),
            "{view}"
        );
    }
    let m: Vec<views::MeasurementView> = serde_json::from_slice(
        &std::fs::read(dir.path().join("fixture_measurements.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(m[1].label, "copy1");
    assert_eq!(m[1].duration.as_ref().unwrap().mean_ns, 200.0);
    assert_eq!(m[1].output_bytes, 256);
    let used: Vec<views::UsedPipeline> = serde_json::from_slice(
        &std::fs::read(dir.path().join("fixture_used_pipelines.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(used.iter().map(|u| u.count).sum::<u64>(), 6);
}

#[test]
fn truncated_manifest_is_reported_as_truncated() {
    let dir = fixture(1);
    let path = dir.path().join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    let e = err(dir.path());
    assert!(
        e.contains("manifest.json") && e.contains("truncated"),
        "{e}"
    );
}

#[test]
fn a_truncated_file_is_named_with_its_expected_length() {
    let dir = fixture(1);
    let path = dir.path().join("stream.json");
    let text = std::fs::read(&path).unwrap();
    std::fs::write(&path, &text[..text.len() - 10]).unwrap();
    let e = err(dir.path());
    assert!(
        e.contains("stream.json") && e.contains("truncated or replaced"),
        "{e}"
    );
}

#[test]
fn a_missing_blob_is_named() {
    let dir = fixture(1);
    std::fs::remove_file(dir.path().join("blobs/buffer-1.bin")).unwrap();
    let e = err(dir.path());
    assert!(e.contains("buffer-1.bin") && e.contains("missing"), "{e}");
}

#[test]
fn an_altered_blob_fails_its_hash_when_read() {
    let dir = fixture(1);
    std::fs::write(dir.path().join("blobs/buffer-1.bin"), [2u8; 256]).unwrap();
    let cap = read_capture(dir.path()).unwrap();
    let e = cap.verify_blobs().unwrap_err().to_string();
    assert!(e.contains("buffer-1.bin") && e.contains("hash"), "{e}");
}

#[test]
fn another_major_version_names_both_versions() {
    let dir = fixture(1);
    let path = dir.path().join("manifest.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"major\": 1", "\"major\": 9");
    std::fs::write(&path, text).unwrap();
    let e = err(dir.path());
    assert!(
        e.contains("capture format 9.") && e.contains("reads format 1.x"),
        "{e}"
    );
    // A newer minor of the same major loads.
    let dir = fixture(1);
    let path = dir.path().join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        &format!(
            "\"minor\": {}",
            gpuscope_trace::capture::CAPTURE_FORMAT.minor
        ),
        "\"minor\": 77",
    );
    assert!(text.contains("\"minor\": 77"));
    std::fs::write(&path, text).unwrap();
    read_capture(dir.path()).unwrap();
}

#[test]
fn a_directory_without_a_manifest_is_not_a_capture() {
    let dir = tempfile::tempdir().unwrap();
    let e = err(dir.path());
    assert!(e.contains("not a gpuscope capture"), "{e}");
}

#[test]
fn bad_references_name_the_file_and_the_reference() {
    // Rewrite commands.json through the writer so lengths and hashes are right and
    // only the reference is wrong.
    let dir = fixture(2);
    let cap = read_capture(dir.path()).unwrap();
    let mut commands = cap.commands.clone();
    commands.bind_groups[1].entries[1].buffer = 99;
    let mut w = CaptureWriter::create(dir.path(), OnExisting::Replace).unwrap();
    w.write_file(
        "shaders/copy.wgsl",
        "shader",
        gpuscope_trace::fixtures::COPY_WGSL.as_bytes(),
    )
    .unwrap();
    w.write_file("blobs/uploads.bin", "blob", &[7u8; 48])
        .unwrap();
    w.finish(cap.manifest.clone(), &commands, &cap.stream, None)
        .unwrap();
    let e = err(dir.path());
    assert!(
        e.contains("commands.json") && e.contains("buffer 99"),
        "{e}"
    );
}

#[test]
fn in_memory_sources_read_like_directories() {
    let dir = fixture(1);
    let mut files = MemSource::default();
    for entry in walk(dir.path()) {
        let rel = entry
            .strip_prefix(dir.path())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        files.0.insert(rel, std::fs::read(&entry).unwrap());
    }
    let cap = read_capture_from(Box::new(files.clone()), Path::new("<memory>")).unwrap();
    assert_eq!(cap.stream.steps.len(), 3);
    files.0.remove("blobs/uploads.bin");
    let e = read_capture_from(Box::new(files), Path::new("<memory>"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("<memory>/blobs/uploads.bin"), "{e}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Issue 24: a manifest listing one file many times (200k entries was accepted, each
/// stat'ed) is refused, naming the file.
#[test]
fn a_file_listed_twice_in_the_manifest_is_refused() {
    let dir = fixture(1);
    let path = dir.path().join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let files = m["files"].as_array_mut().unwrap();
    let first = files[0].clone();
    files.push(first.clone());
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    let e = err(dir.path());
    assert!(
        e.contains("manifest.json")
            && e.contains(&format!(
                "`{}` is listed more than once",
                first["path"].as_str().unwrap()
            )),
        "{e}"
    );
}
