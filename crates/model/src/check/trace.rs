//! The trace directory: `.npy` files and `index.json`, written into a hidden sibling
//! directory and renamed into place at the end, so a failed or interrupted run leaves
//! nothing half-written under the name asked for.

use std::path::{Path, PathBuf};

use gpuscope_trace::tensors::{npy, TraceEntry, TraceIndex};

use super::CheckError;

pub(crate) struct TraceWriter {
    dir: PathBuf,
    tmp: PathBuf,
    pub(crate) index: TraceIndex,
    finished: bool,
}

fn io(what: &'static str, path: &Path, e: impl std::fmt::Display) -> CheckError {
    CheckError::Io {
        what,
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

impl TraceWriter {
    /// Refuses a `dir` that exists and is not an empty directory; creates the hidden
    /// work directory now, so an unwritable place fails before the run.
    pub(crate) fn create(dir: &Path, index: TraceIndex) -> Result<TraceWriter, CheckError> {
        const WHAT: &str = "cannot write the trace directory";
        if dir.exists() {
            let empty = std::fs::read_dir(dir)
                .map_err(|e| io(WHAT, dir, e))?
                .next()
                .is_none();
            if !dir.is_dir() || !empty {
                return Err(io(
                    WHAT,
                    dir,
                    "it exists and is not an empty directory (choose a new name)",
                ));
            }
        }
        let name = dir
            .file_name()
            .ok_or_else(|| io(WHAT, dir, "it has no directory name"))?;
        let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
        let parent = parent.unwrap_or(Path::new("."));
        let tmp = parent.join(format!(
            ".{}.partial-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).map_err(|e| io(WHAT, dir, e))?;
        Ok(TraceWriter {
            dir: dir.to_path_buf(),
            tmp,
            index,
            finished: false,
        })
    }

    /// The work directory (files written there move with it).
    pub(crate) fn work_dir(&self) -> &Path {
        &self.tmp
    }

    /// Writes `name` as a `.npy` file; returns its name.
    pub(crate) fn npy(
        &self,
        name: &str,
        descr: &str,
        shape: usize,
        data: &[u8],
    ) -> Result<String, CheckError> {
        let path = self.tmp.join(name);
        std::fs::write(&path, npy(descr, &[shape], data))
            .map_err(|e| io("cannot write", &path, e))?;
        Ok(name.to_string())
    }

    pub(crate) fn add(&mut self, entry: TraceEntry) {
        self.index.entries.push(entry);
    }

    /// Writes `index.json` and moves the directory into place.
    pub(crate) fn finish(mut self) -> Result<PathBuf, CheckError> {
        let json = serde_json::to_string_pretty(&self.index).expect("the index serializes");
        let index = self.tmp.join("index.json");
        std::fs::write(&index, json + "\n").map_err(|e| io("cannot write", &index, e))?;
        if self.dir.exists() {
            // Checked empty at the start.
            std::fs::remove_dir(&self.dir)
                .map_err(|e| io("cannot replace the empty directory", &self.dir, e))?;
        }
        std::fs::rename(&self.tmp, &self.dir)
            .map_err(|e| io("cannot move the trace into place at", &self.dir, e))?;
        self.finished = true;
        Ok(self.dir.clone())
    }
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}

/// A file-name-safe form of a label (`L3.attn_qkv` stays, `/` and spaces do not).
pub(crate) fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
