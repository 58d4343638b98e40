//! Tensor traces (`gpuscope check --trace-tensors DIR`): each selected dispatch's inputs
//! and outputs as `.npy` files plus `index.json` describing them.
//!
//! `.npy` (NumPy's format, version 1.0): the magic `\x93NUMPY`, version bytes `1 0`, a
//! little-endian u16 header length, an ASCII Python dict (`descr`, `fortran_order`,
//! `shape`) padded with spaces and a newline to a multiple of 64 bytes, then the raw
//! little-endian data. Written here rather than with a crate: writing is 20 lines, while
//! the crates that read it too (npyz) bring a Python-literal parser, proc macros and a C
//! build. `numpy.load` reads these files.
//!
//! Format changelog of `index.json` (`TRACE_FORMAT`):
//! - 1.0: first version.

use serde::{Deserialize, Serialize};

use crate::FormatVersion;

pub const TRACE_FORMAT: FormatVersion = FormatVersion { major: 1, minor: 0 };

/// A `.npy` file of `data` (little-endian elements of `descr`: `<f4`, `<f8`, `<u4`, `|u1`).
pub fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // magic (6) + version (2) + length (2) + header + '\n', padded to 64.
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// `index.json` of a trace directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceIndex {
    pub format: FormatVersion,
    pub model: String,
    /// The GPU whose tensors these are.
    pub subject: String,
    /// The reference that computed the `expected` files.
    pub reference: String,
    pub precision: String,
    pub entries: Vec<TraceEntry>,
    /// `--break-at`: the capture of the stopped dispatch (relative path), for `gpuscope replay`.
    #[serde(default)]
    pub capture: Option<String>,
}

/// One traced dispatch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEntry {
    pub seq: u64,
    pub token: u32,
    pub index: u32,
    pub layer: Option<u32>,
    pub op: String,
    pub label: String,
    pub shader: String,
    /// The pipeline's override constants (the op's parameters).
    pub constants: Vec<(String, f64)>,
    pub tensors: Vec<TraceTensor>,
}

/// One binding's contents before (`input`) or after (`output`) the dispatch, or the
/// reference's result on the same inputs (`expected`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceTensor {
    pub role: String,
    pub binding: u32,
    pub buffer: String,
    pub dtype: String,
    pub shape: Vec<usize>,
    /// The `.npy` file, relative to the directory; `None` when not written (weights).
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
