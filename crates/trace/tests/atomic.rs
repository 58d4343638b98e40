//! Atomic outputs: files replaced in one rename, captures moved into place whole, the
//! user's files never written among or deleted, capture paths kept inside the capture.

use std::path::Path;

use gpuscope_trace::atomic::{write_atomic, OutputError};
use gpuscope_trace::capture::{read_capture, CaptureError, OnExisting};

use crate::fuzz_seeds::write_small_capture;

/// Names in `dir`, sorted (hidden temporary files included).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_file_is_replaced_whole_and_no_temporary_file_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    write_atomic(&path, b"old").unwrap();
    write_atomic(&path, b"new contents").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new contents");
    assert_eq!(names(dir.path()), ["p.json"]);
}

#[cfg(unix)]
#[test]
fn a_new_file_gets_ordinary_permissions_and_a_replaced_one_keeps_its_own() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    write_atomic(&path, b"x").unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    // 0666 less the umask: readable by others under the usual umasks (022, 002).
    assert_eq!(mode & 0o044, 0o044, "mode {mode:o}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    write_atomic(&path, b"y").unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
}

#[test]
fn a_directory_as_the_target_is_one_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let e = write_atomic(dir.path(), b"x").unwrap_err();
    assert!(matches!(e, OutputError::IsADirectory { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains(&dir.path().display().to_string()) && text.contains("is a directory"),
        "{text}"
    );
    assert!(!text.contains("os error"), "{text}");
    let missing = dir.path().join("no/such/p.json");
    let e = write_atomic(&missing, b"x").unwrap_err().to_string();
    assert!(e.contains("does not exist") && e.contains("no/such"), "{e}");
}

fn refused(e: CaptureError) -> String {
    assert!(matches!(e, CaptureError::Target { .. }), "{e:?}");
    e.to_string()
}

#[test]
fn a_capture_is_not_written_among_the_users_files_and_they_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("cap");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("notes.txt"), b"mine").unwrap();
    let e = gpuscope_trace::capture::CaptureWriter::create(&target, OnExisting::Replace)
        .err()
        .unwrap();
    let text = refused(e);
    assert!(
        text.contains("not a gpuscope capture") && text.contains("notes.txt"),
        "{text}"
    );
    assert_eq!(names(&target), ["notes.txt"]);
    assert_eq!(std::fs::read(target.join("notes.txt")).unwrap(), b"mine");
    assert_eq!(names(dir.path()), ["cap"], "no temporary directory is left");
}

#[test]
fn a_file_as_the_capture_target_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("cap");
    std::fs::write(&target, b"mine").unwrap();
    let e = gpuscope_trace::capture::check_target(&target, OnExisting::Replace).unwrap_err();
    assert!(refused(e).contains("not a directory"));
    assert_eq!(std::fs::read(&target).unwrap(), b"mine");
}

#[test]
fn replacing_a_capture_needs_force_and_then_leaves_only_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("cap");
    write_small_capture(&target, OnExisting::Refuse);
    // Mark the old capture (the manifest is not hashed) to tell it from the new one.
    let manifest = target.join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replace("gpuscope fuzz seed", "the old one")).unwrap();
    let e = gpuscope_trace::capture::check_target(&target, OnExisting::Refuse).unwrap_err();
    assert!(refused(e).contains("--force"));
    assert_eq!(read_capture(&target).unwrap().manifest.tool, "the old one");
    write_small_capture(&target, OnExisting::Replace);
    assert_eq!(
        read_capture(&target).unwrap().manifest.tool,
        "gpuscope fuzz seed"
    );
    assert_eq!(names(dir.path()), ["cap"], "nothing left beside it");
    // An empty directory takes a capture without --force.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    write_small_capture(&empty, OnExisting::Refuse);
    read_capture(&empty).unwrap();
}

#[test]
fn force_does_not_replace_a_capture_that_holds_the_users_files() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("cap");
    write_small_capture(&target, OnExisting::Refuse);
    std::fs::write(target.join("blobs/mine.bin"), b"mine").unwrap();
    let e = gpuscope_trace::capture::check_target(&target, OnExisting::Replace).unwrap_err();
    let text = refused(e);
    assert!(
        text.contains("blobs/mine.bin") && text.contains("move them away"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(target.join("blobs/mine.bin")).unwrap(),
        b"mine"
    );
}

#[test]
fn capture_paths_cannot_leave_the_capture_directory() {
    use gpuscope_trace::capture::source::is_inside;
    for ok in ["manifest.json", "blobs/b.bin", "shaders/gemv.wgsl"] {
        assert!(is_inside(ok), "{ok}");
    }
    for bad in [
        "",
        "/etc/passwd",
        "../x",
        "blobs/../../x",
        "./x",
        "blobs//x",
        "C:/x",
        "c:x",
        "blobs\\..\\x",
        "x\0",
    ] {
        assert!(!is_inside(bad), "{bad:?}");
    }
}

#[cfg(unix)]
#[test]
fn a_blob_that_links_outside_the_capture_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("cap");
    write_small_capture(&target, OnExisting::Refuse);
    let blob = target.join(gpuscope_trace::capture::packed::BLOB);
    let outside = dir.path().join("outside.bin");
    std::fs::rename(&blob, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &blob).unwrap();
    let e = read_capture(&target).unwrap_err().to_string();
    assert!(e.contains("outside the capture directory"), "{e}");
}

#[test]
fn a_manifest_listing_a_path_outside_the_capture_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("cap");
    write_small_capture(&target, OnExisting::Refuse);
    let path = target.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\"blobs/b.bin\"", "\"../b.bin\"")).unwrap();
    let e = read_capture(&target).unwrap_err().to_string();
    assert!(e.contains("`../b.bin` leaves the capture directory"), "{e}");
}
