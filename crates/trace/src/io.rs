//! Reading and writing profile files: JSON, or the compact encoding
//! ([`crate::compact`]), told apart by their first bytes.
//!
//! Reading checks the version before anything else ([`crate::version`]), in both
//! encodings: a file of another major version is refused with a message naming both
//! versions. The format's changelog lives in [`crate::profile`].
//!
//! Nothing here panics on bad input: every failure is a [`ProfileIoError`] naming the
//! file and, for JSON errors, the line and column.

use std::path::{Path, PathBuf};

use crate::profile::{Profile, PROFILE_FORMAT};
use crate::version::{FormatHeader, VersionError};
use crate::FormatVersion;

/// What went wrong reading or writing a profile, and where.
#[derive(Debug, thiserror::Error)]
pub enum ProfileIoError {
    /// A directory holding a Vulkan layer recording that cannot be read.
    #[error(transparent)]
    Recording(#[from] crate::recording::RecordingError),
    #[error("cannot read profile {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the profile: {source}")]
    Write {
        path: PathBuf,
        source: crate::atomic::OutputError,
    },
    #[error("cannot serialize profile for {}: {source}", path.display())]
    Serialize {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// The JSON ends early (a run killed while writing, a partial copy).
    #[error(
        "{}: profile is truncated: JSON ends at line {line}, column {column}",
        path.display()
    )]
    Truncated {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    #[error("{}: no `format` field: not a gpuscope profile (this build reads format {supported})", path.display())]
    MissingFormat {
        path: PathBuf,
        supported: FormatVersion,
    },
    #[error("{}: `format` field is not {{\"major\": N, \"minor\": N}}: found {found}", path.display())]
    MalformedFormat { path: PathBuf, found: String },
    #[error(
        "{}: profile format {found} cannot be read by this build, which reads format {}.x (writes {supported})",
        path.display(),
        supported.major
    )]
    UnsupportedVersion {
        path: PathBuf,
        found: FormatVersion,
        supported: FormatVersion,
    },
    /// Syntax errors, wrong types, missing fields.
    #[error("{}:{line}:{column}: invalid profile: {message}", path.display())]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// Binary that is not the compact encoding.
    #[error("{}: not a gpuscope profile: neither JSON text nor a compact profile (no `GPUPROF` magic bytes)", path.display())]
    NotAProfile { path: PathBuf },
    // The cause is part of the message and not a `source`, so it is printed once.
    #[error("{}: invalid compact profile: {error}", path.display())]
    Compact {
        path: PathBuf,
        error: crate::compact::CompactError,
    },
    /// Fields that parse but contradict each other ([`crate::consistency`]).
    #[error("{}: inconsistent profile: {error}", path.display())]
    Inconsistent {
        path: PathBuf,
        error: crate::consistency::Inconsistency,
    },
}

/// The name used in errors for JSON that did not come from a file.
const IN_MEMORY: &str = "<profile JSON>";

/// `p` as pretty-printed JSON, as [`save_profile`] writes it.
pub fn profile_to_json(p: &Profile) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(p).map(|json| json + "\n")
}

/// Writes `p` as pretty-printed JSON, atomically ([`crate::atomic::write_atomic`]).
pub fn save_profile(path: &Path, p: &Profile) -> Result<(), ProfileIoError> {
    let json = profile_to_json(p).map_err(|source| ProfileIoError::Serialize {
        path: path.to_path_buf(),
        source,
    })?;
    crate::atomic::write_atomic(path, json.as_bytes()).map_err(|source| ProfileIoError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a profile written by [`save_profile`] or [`crate::compact::save`] (any minor
/// version of the same major), or the Vulkan layer's recording directory
/// ([`crate::recording`]), and checks its consistency.
pub fn load_profile(path: &Path) -> Result<Profile, ProfileIoError> {
    // `gpuscope attach --output DIR` keeps the layer's raw recording: read as its profile.
    if path.is_dir() && crate::recording::is_recording(path) {
        return consistent(crate::recording::read_recording(path)?.to_profile(), path);
    }
    let bytes = std::fs::read(path).map_err(|source| ProfileIoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    profile_from_bytes(bytes, path)
}

/// A profile from a file's bytes, compact or JSON (the content tells), checked for
/// consistency; errors name `path`.
pub fn profile_from_bytes(bytes: Vec<u8>, path: &Path) -> Result<Profile, ProfileIoError> {
    let p = if crate::compact::is_compact(&bytes) {
        crate::compact::decode(&bytes).map_err(|error| match error {
            // The profile inside is refused as a JSON one would be, with its message.
            crate::compact::CompactError::ProfileVersion(e) => ProfileIoError::version(path, e),
            error => ProfileIoError::Compact {
                path: path.to_path_buf(),
                error,
            },
        })?
    } else {
        let text = String::from_utf8(bytes).map_err(|_| ProfileIoError::NotAProfile {
            path: path.to_path_buf(),
        })?;
        parse(&text, path)?
    };
    consistent(p, path)
}

/// Parses a profile from JSON text; errors name the source as `<profile JSON>`.
pub fn profile_from_json(json: &str) -> Result<Profile, ProfileIoError> {
    consistent(parse(json, Path::new(IN_MEMORY))?, Path::new(IN_MEMORY))
}

fn consistent(p: Profile, path: &Path) -> Result<Profile, ProfileIoError> {
    crate::consistency::check(&p).map_err(|error| ProfileIoError::Inconsistent {
        path: path.to_path_buf(),
        error,
    })?;
    Ok(p)
}

fn parse(text: &str, path: &Path) -> Result<Profile, ProfileIoError> {
    let header: FormatHeader = serde_json::from_str(text).map_err(|e| json_error(path, e))?;
    header
        .check(PROFILE_FORMAT)
        .map_err(|e| ProfileIoError::version(path, e))?;
    // Equal names share one allocation (a million events repeat a few hundred).
    crate::name::Interner::scope(|| serde_json::from_str(text)).map_err(|e| json_error(path, e))
}

impl ProfileIoError {
    /// The version check's refusal ([`crate::version`]), naming the file.
    fn version(path: &Path, e: VersionError) -> ProfileIoError {
        let path = path.to_path_buf();
        match e {
            VersionError::Missing { supported } => {
                ProfileIoError::MissingFormat { path, supported }
            }
            VersionError::Malformed { found } => ProfileIoError::MalformedFormat { path, found },
            VersionError::Unsupported { found, supported } => ProfileIoError::UnsupportedVersion {
                path,
                found,
                supported,
            },
        }
    }
}

fn json_error(path: &Path, e: serde_json::Error) -> ProfileIoError {
    let (line, column) = (e.line(), e.column());
    if e.classify() == serde_json::error::Category::Eof {
        return ProfileIoError::Truncated {
            path: path.to_path_buf(),
            line,
            column,
        };
    }
    // serde_json's message ends with " at line L column C"; the variant shows them.
    let full = e.to_string();
    let suffix = format!(" at line {line} column {column}");
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    ProfileIoError::Json {
        path: path.to_path_buf(),
        line,
        column,
        message,
    }
}
