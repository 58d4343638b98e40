//! Where a capture may be written, and putting a finished one there in one step.
//!
//! A capture is a directory, so it cannot be renamed over an old one the way a file is.
//! [`crate::capture::CaptureWriter`] writes every file into a hidden temporary sibling
//! (`.NAME.gpuscope-XXXXXX`, same parent, so the same file system) and `commit` renames
//! it into place at the end:
//!
//! - the target does not exist, or is an empty directory: one rename;
//! - the target is an older gpuscope capture and replacing was asked for (`--force`):
//!   the old capture is renamed aside (`.NAME.gpuscope-old-XXXXXX`), the new one renamed
//!   into place, then the old one's files — only those its manifest lists — are deleted;
//! - anything else is refused before the run starts ([`check_target`]) and again before
//!   the rename: a directory holding files that are not a gpuscope capture (nothing of
//!   the user's is ever deleted or written among), a capture without `--force`, a file.
//!
//! What a crash leaves behind: before the final rename, the old target untouched and a
//! hidden `.NAME.gpuscope-XXXXXX` temporary directory beside it (an error, unlike a
//! crash, removes it); during a `--force` replacement, between its two renames, the old
//! capture under `.NAME.gpuscope-old-XXXXXX` and the new one in the temporary directory,
//! both complete. Either hidden directory may be deleted, or renamed back by hand.

use std::path::Path;

use crate::capture::error::CaptureError;
use crate::capture::files;
use crate::capture::model::Manifest;
use crate::capture::read::parse_json;

/// What to do when the target is already a gpuscope capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnExisting {
    /// Refuse (the default: a capture may hold the only record of a run).
    Refuse,
    /// Replace it (`--force`).
    Replace,
}

/// What is at the target now.
#[derive(Debug)]
enum Target {
    Absent,
    EmptyDir,
    /// An older capture: its manifest (to know which files are its own).
    Capture(Box<Manifest>),
}

/// Checks that a capture may be written to `dir` (see the module doc); called before a
/// run, so a refused target costs nothing.
pub fn check_target(dir: &Path, on_existing: OnExisting) -> Result<(), CaptureError> {
    inspect_target(dir, on_existing).map(|_| ())
}

fn refuse(dir: &Path, why: String) -> CaptureError {
    CaptureError::Target {
        path: dir.to_path_buf(),
        why,
    }
}

fn inspect_target(dir: &Path, on_existing: OnExisting) -> Result<Target, CaptureError> {
    let meta = match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // The rule every output follows (`atomic::check_new_entry`): the parent
            // exists and takes new entries.
            crate::atomic::check_new_entry(dir).map_err(|e| refuse(dir, cannot_make(e)))?;
            return Ok(Target::Absent);
        }
        Err(source) => {
            return Err(CaptureError::Read {
                path: dir.to_path_buf(),
                source,
            })
        }
        Ok(m) => m,
    };
    if !meta.is_dir() {
        return Err(refuse(
            dir,
            "exists and is not a directory: give a new or empty directory for the capture".into(),
        ));
    }
    let entries = list(dir)?;
    if entries.is_empty() {
        return Ok(Target::EmptyDir);
    }
    let manifest_path = dir.join(files::MANIFEST);
    let manifest: Option<Manifest> = std::fs::read(&manifest_path)
        .ok()
        .and_then(|bytes| parse_json(&bytes, &manifest_path).ok());
    let Some(manifest) = manifest else {
        return Err(refuse(
            dir,
            format!(
                "is not empty and is not a gpuscope capture (it holds {}): give a new or empty directory; nothing was written",
                sample(&entries)
            ),
        ));
    };
    if on_existing == OnExisting::Refuse {
        return Err(refuse(
            dir,
            "already holds a gpuscope capture: pass --force to replace it, or give another directory".into(),
        ));
    }
    let foreign: Vec<String> = foreign_entries(dir, &manifest)?;
    if !foreign.is_empty() {
        return Err(refuse(
            dir,
            format!(
                "holds a gpuscope capture and other files ({}): --force replaces only a directory that holds nothing but a capture; move them away first",
                sample(&foreign)
            ),
        ));
    }
    Ok(Target::Capture(Box::new(manifest)))
}

/// Why a new capture directory cannot be made, worded to follow its path.
fn cannot_make(e: crate::atomic::OutputError) -> String {
    use crate::atomic::OutputError;
    match e {
        OutputError::NoDirectory { dir, .. } => format!(
            "cannot be made: the directory {} does not exist (nothing is created for it)",
            dir.display()
        ),
        OutputError::DirectoryNotWritable { dir, source, .. } => {
            format!(
                "cannot be made: cannot write in {}: {source}",
                dir.display()
            )
        }
        other => format!("cannot be made: {other}"),
    }
}

/// The names in `dir`, sorted.
fn list(dir: &Path) -> Result<Vec<String>, CaptureError> {
    let read = |source| CaptureError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).map_err(read)? {
        names.push(e.map_err(read)?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// Up to three names, and how many more.
fn sample(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
    match names.len() {
        n if n > 3 => format!("{}, and {} more", shown.join(", "), n - 3),
        _ => shown.join(", "),
    }
}

/// Subdirectories a capture writes its files into.
const SUBDIRS: [&str; 2] = ["blobs", "shaders"];

/// Entries of a capture directory (recursively, as `/` paths) that its manifest does not
/// list: those would be lost with it.
fn foreign_entries(dir: &Path, manifest: &Manifest) -> Result<Vec<String>, CaptureError> {
    let own = |p: &str| p == files::MANIFEST || manifest.files.iter().any(|f| f.path == p);
    let mut foreign = Vec::new();
    for name in list(dir)? {
        let path = dir.join(&name);
        if SUBDIRS.contains(&name.as_str()) && path.is_dir() && !path.is_symlink() {
            for inner in list(&path)? {
                let rel = format!("{name}/{inner}");
                if !own(&rel) {
                    foreign.push(rel);
                }
            }
        } else if !own(&name) || !path.is_file() {
            foreign.push(name);
        }
    }
    Ok(foreign)
}

/// A temporary sibling directory of `dir` for a capture being written.
/// Its parent must exist: as for every output, nothing is created for it.
pub(crate) fn temp_sibling(dir: &Path) -> Result<tempfile::TempDir, CaptureError> {
    let parent = crate::atomic::parent_dir(dir);
    tempfile::Builder::new()
        .prefix(&format!(".{}.gpuscope-", file_name(dir)))
        .tempdir_in(parent)
        .map_err(|source| CaptureError::Write {
            path: parent.to_path_buf(),
            source,
        })
}

fn file_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "capture".into())
}

/// Moves the finished capture in `tmp` to `dir` (see the module doc).
pub(crate) fn commit(
    tmp: tempfile::TempDir,
    dir: &Path,
    on_existing: OnExisting,
) -> Result<(), CaptureError> {
    let write = |path: &Path, source| CaptureError::Write {
        path: path.to_path_buf(),
        source,
    };
    match inspect_target(dir, on_existing)? {
        Target::Absent => {
            let tmp = tmp.keep();
            std::fs::rename(&tmp, dir).map_err(|e| write(dir, e))
        }
        Target::EmptyDir => {
            // remove_dir only removes an empty directory: a file that appeared since
            // the check makes it fail rather than be lost.
            std::fs::remove_dir(dir).map_err(|e| write(dir, e))?;
            let tmp = tmp.keep();
            std::fs::rename(&tmp, dir).map_err(|e| write(dir, e))
        }
        Target::Capture(old) => {
            let aside = tempfile::Builder::new()
                .prefix(&format!(".{}.gpuscope-old-", file_name(dir)))
                .tempdir_in(crate::atomic::parent_dir(dir))
                .map_err(|e| write(dir, e))?
                .keep();
            // Renaming a directory onto an empty one replaces it on POSIX; elsewhere
            // the placeholder goes first.
            if std::fs::rename(dir, &aside).is_err() {
                std::fs::remove_dir(&aside).map_err(|e| write(&aside, e))?;
                std::fs::rename(dir, &aside).map_err(|e| write(dir, e))?;
            }
            let tmp = tmp.keep();
            if let Err(e) = std::fs::rename(&tmp, dir) {
                // Put the old capture back; the new one stays in its temporary directory.
                let _ = std::fs::rename(&aside, dir);
                return Err(write(dir, e));
            }
            remove_capture(&aside, &old).map_err(|e| write(&aside, e))
        }
    }
}

/// Deletes a replaced capture: the files its manifest lists, then the directories,
/// which are then empty (a stray file makes `remove_dir` fail instead of losing it).
fn remove_capture(dir: &Path, manifest: &Manifest) -> std::io::Result<()> {
    for f in &manifest.files {
        if crate::capture::source::is_inside(&f.path) {
            let _ = std::fs::remove_file(dir.join(&f.path));
        }
    }
    std::fs::remove_file(dir.join(files::MANIFEST))?;
    for sub in SUBDIRS {
        if dir.join(sub).is_dir() {
            std::fs::remove_dir(dir.join(sub))?;
        }
    }
    std::fs::remove_dir(dir)
}
