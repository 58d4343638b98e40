//! Blob references and the hash that guards every file of a capture.
//!
//! The hash is 64-bit FNV-1a: it catches truncation, partial copies and edits, which is
//! all a capture needs (it is not a defence against a forger), and it needs no
//! dependency. Written as 16 hex digits.

use serde::{Deserialize, Serialize};

/// 64-bit FNV-1a of `bytes`, as 16 hex digits.
pub fn fnv1a64(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// A file of the capture as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path inside the capture directory, `/`-separated.
    pub path: String,
    /// `commands`, `stream`, `data`, `shader`, `blob` or `view`.
    pub role: String,
    pub bytes: u64,
    pub hash: String,
}

/// `len` bytes at `start` of the blob file `blob`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobSlice {
    pub blob: String,
    pub start: u64,
    pub len: u64,
}
