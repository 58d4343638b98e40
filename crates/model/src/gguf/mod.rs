//! GGUF reader (versions 2 and 3, little-endian), built for files nobody vetted.
//!
//! A GGUF file is: magic `GGUF`, version, tensor count, metadata count; the metadata
//! key/value pairs; the tensor infos (name, shape, ggml type, offset); padding to
//! `general.alignment` (32 by default); the tensor data. [`parse_gguf`] reads all but
//! the data from a byte slice and checks every count, length, offset and shape against
//! the file size before using it, so a hostile file gets a [`GgufError`] naming the
//! field and byte offset — never a panic, and never an allocation sized by an unchecked
//! count: a count reserves at most the bytes left in the file, and what the reader
//! holds grows only with items actually found (at most 16 × the file size + 64 KiB for
//! a file made of nothing but minimal entries; measured in `alloc_tests`). [`Gguf::open`] memory-maps a file,
//! so tensor bytes are slices of the map: nothing copies the whole file.
//!
//! Version 1 (32-bit counts, 2023) and big-endian files are refused with a message that
//! says so. Tensors of ggml types gpuscope has no kernels for are listed with their type
//! name; only using one fails (see [`crate::load`]).
//!
//! ```
//! use gpuscope_model::gguf::{parse_gguf, GgufWriter, MetaValue};
//! let mut w = GgufWriter::new();
//! w.meta("general.architecture", MetaValue::String("llama".into()));
//! w.tensor("output_norm.weight", &[4], 0, vec![0u8; 16]);
//! let file = parse_gguf(&w.to_bytes()).unwrap();
//! assert_eq!(file.metadata.get_str("general.architecture"), Some("llama"));
//! assert_eq!(file.tensor("output_norm.weight").unwrap().size, 16);
//! ```

#[cfg(test)]
mod alloc_tests;
mod cursor;
mod error;
mod tensor;
#[cfg(test)]
mod tests;
mod types;
mod value;
mod write;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use error::GgufError;
pub use tensor::{TensorInfo, MAX_DIMS};
pub use types::GgmlType;
pub use value::{MetaArray, MetaValue, StrArray, MAX_ARRAY_DEPTH};
pub use write::{GgufWriter, TensorOut};

use cursor::{Cursor, Field};

use crate::weights::{SharedBytes, TensorData};

/// Alignment of the data section when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// Metadata key/value pairs in file order, with a lookup by key.
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    entries: Vec<(String, MetaValue)>,
    index: HashMap<String, usize>,
}

impl Metadata {
    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        self.index.get(key).map(|&i| &self.entries[i].1)
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key)?.as_str()
    }

    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key)?.as_u64()
    }

    pub fn get_f32(&self, key: &str) -> Option<f32> {
        self.get(key)?.as_f32()
    }

    pub fn get_bool(&self, key: &str) -> Option<bool> {
        self.get(key)?.as_bool()
    }

    pub fn get_array(&self, key: &str) -> Option<&MetaArray> {
        self.get(key)?.as_array()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &MetaValue)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Everything in a GGUF file but the tensor data.
#[derive(Debug, Clone)]
pub struct GgufFile {
    pub version: u32,
    pub metadata: Metadata,
    pub tensors: Vec<TensorInfo>,
    pub alignment: u64,
    /// Absolute offset of the data section.
    pub data_offset: u64,
    pub file_size: u64,
    tensor_index: HashMap<String, usize>,
}

impl GgufFile {
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }
}

/// Smallest encoded metadata entry: key length (8), value type (4), a 1-byte value.
const MIN_KV_BYTES: u64 = 13;
/// Smallest encoded tensor info: name length (8), n_dims (4), type (4), offset (8).
const MIN_TENSOR_INFO_BYTES: u64 = 24;

/// Parses the header, metadata and tensor infos of a GGUF file held in `bytes`, checking
/// every tensor's bytes lie inside it.
pub fn parse_gguf(bytes: &[u8]) -> Result<GgufFile, GgufError> {
    let mut c = Cursor::new(bytes);
    let magic = c
        .take(4, Field::Plain("magic"))
        .map_err(|_| GgufError::BadMagic {
            found: bytes.to_vec(),
        })?;
    if magic != b"GGUF" {
        return Err(GgufError::BadMagic {
            found: magic.to_vec(),
        });
    }
    let version = c.u32(Field::Plain("version"))?;
    if version != 2 && version != 3 {
        let hint = match (version, version.swap_bytes()) {
            (1, _) => {
                "; version 1 used 32-bit counts: convert the file again with a current llama.cpp"
            }
            (_, 2 | 3) => "; this looks like a big-endian file",
            _ => "",
        };
        return Err(GgufError::UnsupportedVersion { version, hint });
    }
    let tensor_count = c.count(MIN_TENSOR_INFO_BYTES, Field::Plain("tensor_count"))?;
    let kv_count = c.count(MIN_KV_BYTES, Field::Plain("metadata_kv_count"))?;

    let mut metadata = Metadata::default();
    let mut alignment = DEFAULT_ALIGNMENT;
    for i in 0..kv_count {
        let key_offset = c.pos();
        let key = c.str(Field::Entry("key", i))?.to_string();
        let value_type = c.u32(Field::Entry("value type", i))?;
        let value_offset = c.pos();
        let value = MetaValue::read(&mut c, value_type, &key)?;
        if metadata.index.contains_key(&key) {
            return Err(GgufError::DuplicateKey {
                key,
                offset: key_offset,
            });
        }
        if key == "general.alignment" {
            alignment = match value {
                MetaValue::U32(a) if a.is_power_of_two() => a.into(),
                ref other => {
                    return Err(GgufError::BadAlignment {
                        offset: value_offset,
                        found: format!("{other:?}"),
                    })
                }
            };
        }
        metadata.index.insert(key.clone(), metadata.entries.len());
        metadata.entries.push((key, value));
    }

    let mut tensors = Vec::with_capacity(c.capacity_for::<TensorInfo>(tensor_count));
    // Grown as tensors are found: a hash table reserved ahead takes about twice its
    // entries' size.
    let mut tensor_index = HashMap::new();
    for i in 0..tensor_count {
        let t = TensorInfo::read(&mut c, i)?;
        if tensor_index.insert(t.name.clone(), tensors.len()).is_some() {
            return Err(GgufError::DuplicateTensor {
                tensor: t.name,
                offset: t.info_offset,
            });
        }
        tensors.push(t);
    }

    let file_size = c.file_size();
    // The data section starts at the next multiple of the alignment (u64 arithmetic:
    // the position is at most the file size, the alignment at most 2^31).
    let data_offset = c.pos().next_multiple_of(alignment);
    c.seek(data_offset);
    for t in &tensors {
        if t.offset % alignment != 0 {
            return Err(GgufError::MisalignedTensor {
                tensor: t.name.clone(),
                offset: t.info_offset,
                data_offset: t.offset,
                alignment,
            });
        }
        let start = data_offset.checked_add(t.offset);
        if start
            .and_then(|s| s.checked_add(t.size))
            .is_none_or(|end| end > file_size)
        {
            return Err(GgufError::TensorOutOfBounds {
                tensor: t.name.clone(),
                offset: t.info_offset,
                start: start.unwrap_or(u64::MAX),
                size: t.size,
                file_size,
            });
        }
    }
    Ok(GgufFile {
        version,
        metadata,
        tensors,
        alignment,
        data_offset,
        file_size,
        tensor_index,
    })
}

/// A parsed GGUF file together with its bytes (a memory map, or owned bytes).
#[derive(Clone)]
pub struct Gguf {
    pub path: Option<PathBuf>,
    pub file: GgufFile,
    bytes: SharedBytes,
}

impl std::fmt::Debug for Gguf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gguf")
            .field("path", &self.path)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl Gguf {
    /// Memory-maps `path` and parses it.
    pub fn open(path: &Path) -> Result<Gguf, GgufError> {
        let io = |source| GgufError::Io {
            path: path.to_path_buf(),
            source,
        };
        let f = std::fs::File::open(path).map_err(io)?;
        // Mapping a directory fails with ENODEV ("No such device"): say what it is.
        if f.metadata().map_err(io)?.is_dir() {
            return Err(GgufError::NotAFile {
                path: path.to_path_buf(),
            });
        }
        // SAFETY: the map is read-only; if another process truncates or rewrites the
        // file while it is mapped, reads may fault or see new bytes — the same contract
        // as llama.cpp's mmap loading. Every offset used was checked at parse time.
        let map = unsafe { memmap2::Mmap::map(&f) }.map_err(io)?;
        let bytes: SharedBytes = Arc::new(map);
        let file = parse_gguf((*bytes).as_ref())?;
        Ok(Gguf {
            path: Some(path.to_path_buf()),
            file,
            bytes,
        })
    }

    /// Parses bytes already in memory (tests, files made by [`GgufWriter`]).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Gguf, GgufError> {
        let file = parse_gguf(&bytes)?;
        Ok(Gguf {
            path: None,
            file,
            bytes: Arc::new(bytes),
        })
    }

    /// The bytes of tensor `t` (one of this file's).
    pub fn tensor_bytes(&self, t: &TensorInfo) -> &[u8] {
        &(*self.bytes).as_ref()[t.file_range(self.file.data_offset)]
    }

    /// The bytes of tensor `t` as shared data: a view into the map, not a copy.
    pub fn tensor_data(&self, t: &TensorInfo) -> TensorData {
        TensorData::shared(self.bytes.clone(), t.file_range(self.file.data_offset))
    }
}
