//! Where a capture's files come from: a directory ([`DirSource`]) or memory
//! ([`MemSource`]), behind one trait the reader and [`Capture`](super::Capture) share;
//! and which paths a capture may name ([`is_inside`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

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
