//! The ceilings cache: one JSON file per (adapter, backend, driver, gpuscope version)
//! under `$GPUSCOPE_CACHE_DIR`, else the user's cache directory (`dirs::cache_dir()`:
//! `~/.cache/gpuscope` on Linux, `~/Library/Caches/gpuscope` on macOS,
//! `%LOCALAPPDATA%\gpuscope` on Windows), in `ceilings/`.
//!
//! A file is trusted only when it parses, passes [`Ceilings::validate`] and names the
//! device and gpuscope version asked for; anything else is [`Lookup::Untrusted`] with
//! the reason, and the caller re-measures (`peak`) or goes without (`profile`,
//! `report`). Files are written to a temporary name in the same directory and renamed
//! into place, so a reader never sees half a file.

use std::hash::Hasher;
use std::path::{Path, PathBuf};

use gpuscope_trace::ceilings::{Ceilings, CeilingsIdentity};
use gpuscope_trace::AdapterDesc;

/// The environment variable that overrides the cache directory.
pub const CACHE_DIR_ENV: &str = "GPUSCOPE_CACHE_DIR";

/// The cache's root: `$GPUSCOPE_CACHE_DIR` when set and not empty, else
/// `<user cache dir>/gpuscope`; `None` when the platform has no cache directory.
pub fn cache_root() -> Option<PathBuf> {
    match std::env::var_os(CACHE_DIR_ENV) {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => dirs::cache_dir().map(|d| d.join("gpuscope")),
    }
}

/// The device and build a cache entry is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey {
    pub adapter: String,
    pub backend: String,
    pub driver: String,
    pub driver_info: String,
    /// e.g. `gpuscope 0.1.0`: a new version re-measures (its methods may differ).
    pub tool: String,
}

impl CacheKey {
    pub fn new(a: &AdapterDesc, tool: &str) -> CacheKey {
        CacheKey {
            adapter: a.name.clone(),
            backend: a.backend.clone(),
            driver: a.driver.clone(),
            driver_info: a.driver_info.clone(),
            tool: tool.to_string(),
        }
    }

    /// The key of what `id` identifies (its device and tool; the time is not part of it).
    pub fn of(id: &CeilingsIdentity) -> CacheKey {
        CacheKey {
            adapter: id.adapter.clone(),
            backend: id.backend.clone(),
            driver: id.driver.clone(),
            driver_info: id.driver_info.clone(),
            tool: id.tool.clone(),
        }
    }

    pub(crate) fn matches(&self, id: &CeilingsIdentity) -> bool {
        self.adapter == id.adapter
            && self.backend == id.backend
            && self.driver == id.driver
            && self.driver_info == id.driver_info
            && self.tool == id.tool
    }

    /// `ceilings/<readable slug>-<hash>.json`: the slug lets a person find the file,
    /// the FNV-1a hash of the exact strings keeps two devices that slug alike apart.
    pub fn file_name(&self) -> String {
        let fields = [
            &self.adapter,
            &self.backend,
            &self.driver,
            &self.driver_info,
            &self.tool,
        ];
        let mut h = fnv::FnvHasher::default();
        for f in fields {
            h.write(f.as_bytes());
            h.write_u8(0);
        }
        let slug: String = format!("{}-{}-{}", self.adapter, self.backend, self.tool)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect::<String>()
            .split('-')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("-");
        let slug: String = slug.chars().take(80).collect();
        format!("{slug}-{:016x}.json", h.finish())
    }

    /// The cache file for this key under `root`.
    pub fn path(&self, root: &Path) -> PathBuf {
        root.join("ceilings").join(self.file_name())
    }
}

/// What looking up the cache found.
// `Found` carries the ceilings by value (~500 bytes, the others ~50): a lookup is made
// once per command and matched at once, never stored, so boxing them would only add an
// allocation and a dereference at every use.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    Found {
        ceilings: Ceilings,
        path: PathBuf,
    },
    /// No file for this key.
    Missing {
        path: PathBuf,
    },
    /// A file exists but cannot be trusted: corrupt, another version's, or another
    /// device's. `reason` is one line.
    Untrusted {
        path: PathBuf,
        reason: String,
    },
}

/// Reads the cache entry for `key` under `root`.
pub fn load(root: &Path, key: &CacheKey) -> Lookup {
    let path = key.path(root);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Missing { path },
        Err(e) => {
            return Lookup::Untrusted {
                path,
                reason: format!("cannot read it: {e}"),
            }
        }
    };
    match parse(&text, key) {
        Ok(ceilings) => Lookup::Found { ceilings, path },
        Err(reason) => Lookup::Untrusted { path, reason },
    }
}

fn parse(text: &str, key: &CacheKey) -> Result<Ceilings, String> {
    let c: Ceilings = serde_json::from_str(text).map_err(|e| format!("corrupt: {e}"))?;
    c.validate().map_err(|e| format!("corrupt: {e}"))?;
    if !key.matches(&c.identity) {
        return Err(format!(
            "it holds ceilings of {} measured by {}, not of this device and version",
            c.identity.device(),
            c.identity.tool
        ));
    }
    Ok(c)
}

/// Why the cache could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the ceilings cache {}: {source}", path.display())]
pub struct StoreError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// Writes `c` as the entry for its own identity under `root`, atomically (a temporary
/// file in the same directory, renamed into place). Returns the file's path.
pub fn store(root: &Path, c: &Ceilings) -> Result<PathBuf, StoreError> {
    let path = CacheKey::of(&c.identity).path(root);
    let err = |source| StoreError {
        path: path.clone(),
        source,
    };
    let dir = path.parent().unwrap_or(root);
    std::fs::create_dir_all(dir).map_err(err)?;
    let mut json = serde_json::to_vec_pretty(c).map_err(|e| err(std::io::Error::other(e)))?;
    json.push(b'\n');
    gpuscope_trace::atomic::write_atomic(&path, &json).map_err(|e| err(e.into()))?;
    Ok(path)
}
