//! What can go wrong reading or writing a capture; every error names the file.

use std::path::PathBuf;

use crate::FormatVersion;

#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: missing (the manifest lists it); the capture is incomplete", path.display())]
    MissingFile { path: PathBuf },
    #[error("{}: not a gpuscope capture directory: no manifest.json", path.display())]
    NotACapture { path: PathBuf },
    /// The JSON ends early (a run killed while writing, a partial copy).
    #[error("{}: truncated: JSON ends at line {line}, column {column}", path.display())]
    Truncated {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    #[error("{}:{line}:{column}: invalid capture file: {message}", path.display())]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}: no `format` field: not a gpuscope capture manifest (this build reads format {supported})", path.display())]
    MissingFormat {
        path: PathBuf,
        supported: FormatVersion,
    },
    #[error("{}: `format` field is not {{\"major\": N, \"minor\": N}}: found {found}", path.display())]
    MalformedFormat { path: PathBuf, found: String },
    #[error(
        "{}: capture format {found} cannot be read by this build, which reads format {}.x (writes {supported})",
        path.display(),
        supported.major
    )]
    UnsupportedVersion {
        path: PathBuf,
        found: FormatVersion,
        supported: FormatVersion,
    },
    #[error("{}: {found} bytes, the manifest says {expected} (truncated or replaced)", path.display())]
    Size {
        path: PathBuf,
        expected: u64,
        found: u64,
    },
    #[error("{}: hash {found}, the manifest says {expected} (the file was altered)", path.display())]
    Hash {
        path: PathBuf,
        expected: String,
        found: String,
    },
    /// A reference to something that does not exist (a pipeline index, a buffer id, a
    /// blob range past the blob's end).
    #[error("{}: {message}", path.display())]
    Reference { path: PathBuf, message: String },
    /// A directory a capture may not be written to (see [`crate::capture::target`]).
    #[error("capture directory {} {why}", path.display())]
    Target { path: PathBuf, why: String },
    #[error("cannot serialize {}: {message}", path.display())]
    Serialize { path: PathBuf, message: String },
}
