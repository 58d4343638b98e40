//! Writing a capture directory: every file goes into a temporary sibling directory,
//! which is renamed into place once the manifest (written last) is in it, so the target
//! holds either the old capture (or nothing) or the whole new one ([`target`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::capture::blob::{fnv1a64, FileEntry};
use crate::capture::error::CaptureError;
use crate::capture::model::{CapturedData, Commands, Manifest, Stream};
use crate::capture::target::{self, OnExisting};
use crate::capture::{files, views};

/// Writes the files of one capture and remembers each one's length and hash.
pub struct CaptureWriter {
    /// The capture's directory once finished.
    target: PathBuf,
    on_existing: OnExisting,
    /// Where its files are written until then (removed if the writer is dropped).
    staging: tempfile::TempDir,
    files: Vec<FileEntry>,
}

/// A safe file name for a shader or capture name.
pub fn file_stem(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

impl CaptureWriter {
    /// Starts a capture that [`CaptureWriter::finish`] puts at `dir`. Refuses at once a
    /// target that cannot take it ([`target::check_target`]); an existing capture there
    /// is replaced only with [`OnExisting::Replace`].
    pub fn create(dir: &Path, on_existing: OnExisting) -> Result<CaptureWriter, CaptureError> {
        target::check_target(dir, on_existing)?;
        let staging = target::temp_sibling(dir)?;
        for sub in ["blobs", "shaders"] {
            let p = staging.path().join(sub);
            std::fs::create_dir_all(&p)
                .map_err(|source| CaptureError::Write { path: p, source })?;
        }
        Ok(CaptureWriter {
            target: dir.to_path_buf(),
            on_existing,
            staging,
            files: Vec::new(),
        })
    }

    /// Writes `bytes` to `path` (inside the capture) and lists it with `role`.
    pub fn write_file(&mut self, path: &str, role: &str, bytes: &[u8]) -> Result<(), CaptureError> {
        if !crate::capture::source::is_inside(path) {
            return Err(CaptureError::Reference {
                path: self.target.clone(),
                message: format!("file path `{path}` leaves the capture directory"),
            });
        }
        let full = self.staging.path().join(path);
        std::fs::write(&full, bytes)
            .map_err(|source| CaptureError::Write { path: full, source })?;
        self.files.retain(|f| f.path != path);
        self.files.push(FileEntry {
            path: path.to_string(),
            role: role.to_string(),
            bytes: bytes.len() as u64,
            hash: fnv1a64(bytes),
        });
        Ok(())
    }

    /// Writes `value` as pretty JSON.
    pub fn write_json<T: Serialize>(
        &mut self,
        path: &str,
        role: &str,
        value: &T,
    ) -> Result<(), CaptureError> {
        let mut json = serde_json::to_vec_pretty(value).map_err(|e| CaptureError::Serialize {
            path: self.target.join(path),
            message: e.to_string(),
        })?;
        json.push(b'\n');
        self.write_file(path, role, &json)
    }

    /// Writes the commands, stream, data and the four views, then the manifest (with
    /// `manifest.files` replaced by the files written), and moves the capture into place.
    pub fn finish(
        mut self,
        mut manifest: Manifest,
        commands: &Commands,
        stream: &Stream,
        data: Option<&CapturedData>,
    ) -> Result<(), CaptureError> {
        self.write_json(files::COMMANDS, "commands", commands)?;
        self.write_json(files::STREAM, "stream", stream)?;
        if let Some(d) = data {
            self.write_json(files::DATA, "data", d)?;
        }
        let name = file_stem(&manifest.name);
        self.write_json(
            &format!("{name}_measurements.json"),
            "view",
            &views::measurements(commands, stream),
        )?;
        self.write_json(
            &format!("{name}_shaders.json"),
            "view",
            &views::shaders(commands),
        )?;
        self.write_json(
            &format!("{name}_used_consts.json"),
            "view",
            &views::used_consts(commands),
        )?;
        self.write_json(
            &format!("{name}_used_pipelines.json"),
            "view",
            &views::used_pipelines(commands, stream),
        )?;
        self.files.sort_by(|a, b| a.path.cmp(&b.path));
        manifest.files = self.files;
        let path = self.staging.path().join(files::MANIFEST);
        let mut json =
            serde_json::to_vec_pretty(&manifest).map_err(|e| CaptureError::Serialize {
                path: self.target.join(files::MANIFEST),
                message: e.to_string(),
            })?;
        json.push(b'\n');
        std::fs::write(&path, json).map_err(|source| CaptureError::Write { path, source })?;
        target::commit(self.staging, &self.target, self.on_existing)
    }
}
