//! What can be wrong with a GGUF file, each error naming the field and its byte offset.
//!
//! Offsets are absolute from the start of the file, so `xxd -s OFFSET` shows the culprit.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum GgufError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is a directory, not a GGUF file", path.display())]
    NotAFile { path: PathBuf },
    #[error("not a GGUF file: magic {found:02x?} at byte 0 (expected \"GGUF\")")]
    BadMagic { found: Vec<u8> },
    #[error(
        "GGUF version {version} at byte 4 is not supported (gpuscope reads versions 2 and 3{hint})"
    )]
    UnsupportedVersion { version: u32, hint: &'static str },
    #[error(
        "truncated file: {field} at byte {offset} needs {needed} bytes, the file has {file_size}"
    )]
    Truncated {
        field: String,
        offset: u64,
        needed: u64,
        file_size: u64,
    },
    #[error("{field} at byte {offset} is {count}, but each takes at least {min_bytes} bytes and only {remaining} remain")]
    AbsurdCount {
        field: String,
        offset: u64,
        count: u64,
        min_bytes: u64,
        remaining: u64,
    },
    #[error("{field} at byte {offset}: string length {length} is longer than the {remaining} bytes that remain")]
    AbsurdLength {
        field: String,
        offset: u64,
        length: u64,
        remaining: u64,
    },
    #[error("{field} at byte {offset} is not valid UTF-8")]
    InvalidUtf8 { field: String, offset: u64 },
    #[error("{field} at byte {offset}: unknown metadata value type {type_id}")]
    UnknownValueType {
        field: String,
        offset: u64,
        type_id: u32,
    },
    #[error("{field} at byte {offset}: arrays nested deeper than {max} levels")]
    NestingTooDeep {
        field: String,
        offset: u64,
        max: u32,
    },
    #[error("metadata key {key:?} at byte {offset} appears twice")]
    DuplicateKey { key: String, offset: u64 },
    #[error("general.alignment at byte {offset} must be a power-of-two u32, found {found}")]
    BadAlignment { offset: u64, found: String },
    #[error("tensor {tensor:?} (info at byte {offset}): {reason}")]
    BadShape {
        tensor: String,
        offset: u64,
        reason: String,
    },
    #[error("tensor {tensor:?} (info at byte {offset}): unknown ggml type id {type_id}")]
    UnknownTensorType {
        tensor: String,
        offset: u64,
        type_id: u32,
    },
    #[error("tensor {tensor:?} (info at byte {offset}): data offset {data_offset} is not a multiple of the alignment {alignment}")]
    MisalignedTensor {
        tensor: String,
        offset: u64,
        data_offset: u64,
        alignment: u64,
    },
    #[error("tensor {tensor:?} (info at byte {offset}): its {size} bytes at byte {start} run past the end of the file ({file_size} bytes)")]
    TensorOutOfBounds {
        tensor: String,
        offset: u64,
        start: u64,
        size: u64,
        file_size: u64,
    },
    #[error("tensor {tensor:?} (info at byte {offset}) appears twice")]
    DuplicateTensor { tensor: String, offset: u64 },
}
