//! Reading a capture: version first, then every file's length and hash, then references.
//!
//! Only the manifest's `format` field is parsed first, so a capture of another major
//! version is refused with both versions named instead of a "missing field" from the
//! full parse. Files are read through a [`CaptureSource`], so the reader runs the same
//! on a directory and on files held in memory (the fuzz target feeds it those).
//!
//! Blobs are checked for length at load and for their hash when first read
//! ([`Capture::blob`]): a capture with its model's weights can be gigabytes, and
//! `inspect` never needs those bytes.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::capture::blob::{fnv1a64, BlobSlice, FileEntry};
use crate::capture::error::CaptureError;
use crate::capture::model::{Capture, CapturedData, Commands, Manifest, Stream};
use crate::capture::{files, validate, CAPTURE_FORMAT};
use crate::FormatVersion;

/// Where a capture's files come from.
pub trait CaptureSource: Send + Sync {
    /// The whole file at `path` (`/`-separated, relative to the capture).
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>>;
    /// The file's length without reading it.
    fn len(&self, path: &str) -> std::io::Result<u64>;
}

/// Whether `path`, as a capture names its files, stays inside the capture directory:
/// relative, `/`-separated, every component a plain name (no `..`, `.`, empty part,
/// drive letter, backslash or NUL). Checked for every file the manifest lists, before
/// anything is opened; blob and shader references must name listed files.
pub fn is_inside(path: &str) -> bool {
    !path.is_empty()
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains(['\\', ':', '\0']))
}

/// A capture directory on disk. A file whose real path (symbolic links followed) is
/// outside the directory is refused as if missing.
pub struct DirSource(pub PathBuf);

impl DirSource {
    fn resolve(&self, path: &str) -> std::io::Result<PathBuf> {
        let root = std::fs::canonicalize(&self.0)?;
        let real = std::fs::canonicalize(self.0.join(path))?;
        if !real.starts_with(&root) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "a link to {}, outside the capture directory",
                    real.display()
                ),
            ));
        }
        Ok(real)
    }
}

impl CaptureSource for DirSource {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.resolve(path)?)
    }
    fn len(&self, path: &str) -> std::io::Result<u64> {
        let meta = std::fs::metadata(self.resolve(path)?)?;
        if !meta.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "not a file",
            ));
        }
        Ok(meta.len())
    }
}

/// Files held in memory, by path.
#[derive(Default, Clone)]
pub struct MemSource(pub BTreeMap<String, Vec<u8>>);

impl CaptureSource for MemSource {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        self.0
            .get(path)
            .cloned()
            .ok_or_else(|| std::io::ErrorKind::NotFound.into())
    }
    fn len(&self, path: &str) -> std::io::Result<u64> {
        self.0
            .get(path)
            .map(|v| v.len() as u64)
            .ok_or_else(|| std::io::ErrorKind::NotFound.into())
    }
}

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
        listed.insert(f.path.as_str(), f);
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

#[derive(Deserialize)]
struct Header {
    format: Option<serde_json::Value>,
}

fn parse_manifest(bytes: &[u8], path: &Path) -> Result<Manifest, CaptureError> {
    let header: Header = parse_json(bytes, path)?;
    let Some(value) = header.format else {
        return Err(CaptureError::MissingFormat {
            path: path.to_path_buf(),
            supported: CAPTURE_FORMAT,
        });
    };
    let found: FormatVersion =
        serde_json::from_value(value.clone()).map_err(|_| CaptureError::MalformedFormat {
            path: path.to_path_buf(),
            found: value.to_string(),
        })?;
    if found.major != CAPTURE_FORMAT.major {
        return Err(CaptureError::UnsupportedVersion {
            path: path.to_path_buf(),
            found,
            supported: CAPTURE_FORMAT,
        });
    }
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
