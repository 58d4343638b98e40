//! Reading a capture: version first, then every file's length and hash, then references.
//!
//! Only the manifest's `format` field is parsed first ([`crate::version`]), so a capture
//! of another major version is refused with both versions named instead of a "missing
//! field" from the full parse. Files are read through a [`CaptureSource`], so the reader runs the same
//! on a directory and on files held in memory (the fuzz target feeds it those).
//!
//! Blobs are checked for length at load and for their hash when first read
//! ([`Capture::blob`]): a capture with its model's weights can be gigabytes, and
//! `inspect` never needs those bytes.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;

use crate::capture::blob::{fnv1a64, BlobSlice, FileEntry};
use crate::capture::error::CaptureError;
use crate::capture::model::{Capture, CapturedData, Commands, Manifest, Stream};
use crate::capture::source::{is_inside, CaptureSource, DirSource};
use crate::capture::{files, validate, CAPTURE_FORMAT};
use crate::version::{FormatHeader, VersionError};

/// Reads and checks the capture in directory `dir`.
pub fn read_capture(dir: &Path) -> Result<Capture, CaptureError> {
    read_capture_from(Box::new(DirSource(dir.to_path_buf())), dir)
}

/// Reads and checks a capture from any source; `root` names it in errors.
pub fn read_capture_from(
    source: Box<dyn CaptureSource>,
    root: &Path,
) -> Result<Capture, CaptureError> {
    let at = |p: &str| root.join(p);
    let manifest_bytes = source.read(files::MANIFEST).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => CaptureError::NotACapture {
            path: root.to_path_buf(),
        },
        _ => CaptureError::Read {
            path: at(files::MANIFEST),
            source: e,
        },
    })?;
    let manifest: Manifest = parse_manifest(&manifest_bytes, &at(files::MANIFEST))?;
    let mut listed: HashMap<&str, &FileEntry> = HashMap::new();
    for f in &manifest.files {
        if !is_inside(&f.path) {
            return Err(CaptureError::Reference {
                path: at(files::MANIFEST),
                message: format!("file path `{}` leaves the capture directory", f.path),
            });
        }
        let found = source.len(&f.path).map_err(|e| missing(&at(&f.path), e))?;
        if found != f.bytes {
            return Err(CaptureError::Size {
                path: at(&f.path),
                expected: f.bytes,
                found,
            });
        }
        // A path listed twice is a manifest no writer makes (and a way to make the
        // reader stat and hash one file many times).
        if listed.insert(f.path.as_str(), f).is_some() {
            return Err(CaptureError::Reference {
                path: at(files::MANIFEST),
                message: format!("file `{}` is listed more than once", f.path),
            });
        }
    }
    // Everything but blobs is read now, so its hash is checked now.
    let read_checked = |p: &str| -> Result<Vec<u8>, CaptureError> {
        let Some(entry) = listed.get(p) else {
            return Err(CaptureError::Reference {
                path: at(files::MANIFEST),
                message: format!("`{p}` is not in the manifest's file list"),
            });
        };
        let bytes = source.read(p).map_err(|e| missing(&at(p), e))?;
        check(entry, &bytes, &at(p))?;
        Ok(bytes)
    };
    for f in &manifest.files {
        if f.role == "view" {
            read_checked(&f.path)?;
        }
    }
    let commands: Commands = parse_json(&read_checked(files::COMMANDS)?, &at(files::COMMANDS))?;
    let stream: Stream = parse_json(&read_checked(files::STREAM)?, &at(files::STREAM))?;
    let data: Option<CapturedData> = match listed.contains_key(files::DATA) {
        true => Some(parse_json(&read_checked(files::DATA)?, &at(files::DATA))?),
        false => None,
    };
    let mut shader_sources = Vec::with_capacity(commands.shaders.len());
    for s in &commands.shaders {
        let bytes = read_checked(&s.source)?;
        let text = String::from_utf8(bytes).map_err(|e| CaptureError::Reference {
            path: at(&s.source),
            message: format!(
                "WGSL source is not UTF-8 (byte {})",
                e.utf8_error().valid_up_to()
            ),
        })?;
        shader_sources.push(text);
    }
    let blob_lengths: HashMap<String, u64> = manifest
        .files
        .iter()
        .filter(|f| f.role == "blob")
        .map(|f| (f.path.clone(), f.bytes))
        .collect();
    validate::check_references(
        &manifest,
        &commands,
        &stream,
        data.as_ref(),
        &blob_lengths,
        root,
    )?;
    Ok(Capture {
        manifest,
        commands,
        stream,
        data,
        shader_sources,
        source,
        root: root.to_path_buf(),
        blobs: Mutex::new(HashMap::new()),
    })
}

impl Capture {
    /// Where the capture was read from.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The bytes of `slice`, from its blob file, whose length and hash are checked
    /// against the manifest the first time it is read. Blob files are kept after that:
    /// call [`Capture::forget_blobs`] once their bytes are on the GPU.
    pub fn blob(&self, slice: &BlobSlice) -> Result<Vec<u8>, CaptureError> {
        let whole = self.whole_blob(&slice.blob)?;
        let end = slice
            .start
            .checked_add(slice.len)
            .filter(|&e| e <= whole.len() as u64);
        match end {
            Some(end) => Ok(whole[slice.start as usize..end as usize].to_vec()),
            None => Err(CaptureError::Reference {
                path: self.root.join(&slice.blob),
                message: format!(
                    "range {}+{} is past the blob's end ({} bytes)",
                    slice.start,
                    slice.len,
                    whole.len()
                ),
            }),
        }
    }

    /// Drops the blob files kept in memory.
    pub fn forget_blobs(&self) {
        self.blobs.lock().unwrap().clear();
    }

    /// Reads every blob once, checking its length and hash.
    pub fn verify_blobs(&self) -> Result<(), CaptureError> {
        for f in self.manifest.files.iter().filter(|f| f.role == "blob") {
            self.whole_blob(&f.path)?;
            self.blobs.lock().unwrap().remove(&f.path);
        }
        Ok(())
    }

    fn whole_blob(&self, name: &str) -> Result<Arc<Vec<u8>>, CaptureError> {
        if let Some(b) = self.blobs.lock().unwrap().get(name) {
            return Ok(b.clone());
        }
        let path = self.root.join(name);
        let Some(entry) = self.manifest.files.iter().find(|f| f.path == name) else {
            return Err(CaptureError::Reference {
                path: self.root.join(files::MANIFEST),
                message: format!("blob `{name}` is not in the manifest's file list"),
            });
        };
        let bytes = self.source.read(name).map_err(|e| missing(&path, e))?;
        check(entry, &bytes, &path)?;
        let bytes = Arc::new(bytes);
        self.blobs
            .lock()
            .unwrap()
            .insert(name.to_string(), bytes.clone());
        Ok(bytes)
    }
}

fn missing(path: &Path, e: std::io::Error) -> CaptureError {
    match e.kind() {
        std::io::ErrorKind::NotFound => CaptureError::MissingFile {
            path: path.to_path_buf(),
        },
        _ => CaptureError::Read {
            path: path.to_path_buf(),
            source: e,
        },
    }
}

fn check(entry: &FileEntry, bytes: &[u8], path: &Path) -> Result<(), CaptureError> {
    if bytes.len() as u64 != entry.bytes {
        return Err(CaptureError::Size {
            path: path.to_path_buf(),
            expected: entry.bytes,
            found: bytes.len() as u64,
        });
    }
    let found = fnv1a64(bytes);
    if found != entry.hash {
        return Err(CaptureError::Hash {
            path: path.to_path_buf(),
            expected: entry.hash.clone(),
            found,
        });
    }
    Ok(())
}

fn parse_manifest(bytes: &[u8], path: &Path) -> Result<Manifest, CaptureError> {
    let header: FormatHeader = parse_json(bytes, path)?;
    header.check(CAPTURE_FORMAT).map_err(|e| {
        let path = path.to_path_buf();
        match e {
            VersionError::Missing { supported } => CaptureError::MissingFormat { path, supported },
            VersionError::Malformed { found } => CaptureError::MalformedFormat { path, found },
            VersionError::Unsupported { found, supported } => CaptureError::UnsupportedVersion {
                path,
                found,
                supported,
            },
        }
    })?;
    parse_json(bytes, path)
}

/// Parses JSON, turning serde's errors into ones that name the file, line and column.
pub(crate) fn parse_json<T: DeserializeOwned>(
    bytes: &[u8],
    path: &Path,
) -> Result<T, CaptureError> {
    serde_json::from_slice(bytes).map_err(|e| {
        let (line, column) = (e.line(), e.column());
        if e.classify() == serde_json::error::Category::Eof {
            return CaptureError::Truncated {
                path: path.to_path_buf(),
                line,
                column,
            };
        }
        let full = e.to_string();
        let suffix = format!(" at line {line} column {column}");
        let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
        CaptureError::Json {
            path: path.to_path_buf(),
            line,
            column,
            message,
        }
    })
}
