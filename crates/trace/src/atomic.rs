//! Writing output files so that a crash leaves the old file or the new one, never half
//! of one: every file gpuscope writes (profiles, reports, benchmarks, captures' files)
//! goes through [`write_atomic`].
//!
//! The bytes go to a temporary file beside the target (same directory, so the same file
//! system), are flushed to disk, and the temporary file is renamed over the target —
//! an atomic replacement on POSIX systems and on Windows (`MoveFileEx` with
//! replace-existing). Built on the `tempfile` crate (`NamedTempFile` + `persist`). A
//! process killed between the write and the rename leaves a hidden
//! `.NAME.XXXXXX.tmp` beside the target, which may be deleted; the target is untouched.
//!
//! A new file gets the permissions a plain create would give it (0666 less the umask);
//! a replaced file keeps its own.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Why an output file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The target names a directory (`--json /tmp`).
    #[error("{} is a directory, not a file: give a file path", path.display())]
    IsADirectory { path: PathBuf },
    /// The directory the file would go in does not exist.
    #[error("{}: the directory {} does not exist", path.display(), dir.display())]
    NoDirectory { path: PathBuf, dir: PathBuf },
    /// Nothing can be created in the directory (permissions, a read-only file system).
    #[error("{}: cannot write in the directory {}: {source}", path.display(), dir.display())]
    DirectoryNotWritable {
        path: PathBuf,
        dir: PathBuf,
        source: std::io::Error,
    },
    /// The target exists and is read-only: gpuscope does not replace it (as `cp` would
    /// not without `-f`).
    #[error("{} is read-only: make it writable or give another path", path.display())]
    ReadOnly { path: PathBuf },
    #[error("cannot write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl From<OutputError> for std::io::Error {
    /// The I/O cause alone, for callers whose error already names the path.
    fn from(e: OutputError) -> std::io::Error {
        match e {
            OutputError::Io { source, .. } => source,
            other => std::io::Error::other(other.to_string()),
        }
    }
}

/// The directory a file at `path` lives in (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Checks that a file can be written at `path`: it is not a directory, not a read-only
/// file, and its directory exists and takes new files (see [`check_new_entry`]).
/// Commands check every output path this way before a run, so a typo or a protected
/// destination costs nothing.
pub fn check_file_target(path: &Path) -> Result<(), OutputError> {
    if path.is_dir() {
        return Err(OutputError::IsADirectory {
            path: path.to_path_buf(),
        });
    }
    if std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly()) {
        return Err(OutputError::ReadOnly {
            path: path.to_path_buf(),
        });
    }
    check_new_entry(path)
}

/// Checks that a new entry (file or directory) can be made at `path`: its parent
/// directory exists (nothing is created for it) and takes new entries, tried by
/// creating and removing a hidden temporary file there — the one test that also
/// answers for read-only file systems and access control lists. The same rule holds for
/// every output gpuscope writes, files and capture directories alike.
pub fn check_new_entry(path: &Path) -> Result<(), OutputError> {
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Err(OutputError::NoDirectory {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
        });
    }
    tempfile::Builder::new()
        .prefix(".gpuscope-probe-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|source| OutputError::DirectoryNotWritable {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
            source,
        })
}

/// Writes `bytes` to `path` through a temporary file and a rename (see the module doc).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    write_atomic_with(path, |f| f.write_all(bytes))
}

/// [`write_atomic`] with `write` streaming into the temporary file (for outputs too
/// large to build in memory first). On an error the temporary file is removed and
/// `path` is left as it was.
pub fn write_atomic_with<T>(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<T>,
) -> Result<T, OutputError> {
    let io = |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    };
    check_file_target(path)?;
    let existing = std::fs::metadata(path).ok();
    let dir = parent_dir(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    if let Some(permissions) = new_file_permissions(existing.as_ref()) {
        builder.permissions(permissions);
    }
    let mut tmp = builder.tempfile_in(dir).map_err(io)?;
    let result = write(tmp.as_file_mut()).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(result)
}

/// A replaced file's own permissions; for a new file on Unix 0666, which open(2) reduces
/// by the umask as for any new file (tempfile's default, 0600, would hide a profile
/// from other users).
fn new_file_permissions(existing: Option<&std::fs::Metadata>) -> Option<std::fs::Permissions> {
    if let Some(m) = existing {
        return Some(m.permissions());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        Some(std::fs::Permissions::from_mode(0o666))
    }
    #[cfg(not(unix))]
    None
}
