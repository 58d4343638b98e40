//! Tensor infos: name, shape, type and where the bytes are, each checked on reading.

use std::ops::Range;

use super::cursor::{Cursor, Field};
use super::error::GgufError;
use super::types::GgmlType;

/// ggml tensors have at most 4 dimensions (`GGML_MAX_DIMS`).
pub const MAX_DIMS: u32 = 4;

/// One tensor of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// Shape in ggml order: `dims[0]` is the contiguous row length (columns).
    pub dims: Vec<u64>,
    pub ggml_type: GgmlType,
    /// Start of the bytes, relative to the data section.
    pub offset: u64,
    /// Bytes the tensor takes.
    pub size: u64,
    /// Where this tensor's info starts in the file (for errors about it).
    pub info_offset: u64,
}

impl TensorInfo {
    /// Columns (row length) and rows (all other dimensions flattened).
    pub fn cols_rows(&self) -> (u64, u64) {
        let cols = self.dims.first().copied().unwrap_or(1);
        let rows = self.dims.iter().skip(1).product();
        (cols, rows)
    }

    pub fn elements(&self) -> u64 {
        self.dims.iter().product()
    }

    /// The absolute byte range in a file whose data section starts at `data_offset`
    /// (checked against the file when parsed).
    pub fn file_range(&self, data_offset: u64) -> Range<usize> {
        let start = (data_offset + self.offset) as usize;
        start..start + self.size as usize
    }

    pub(crate) fn read(c: &mut Cursor<'_>, i: u64) -> Result<TensorInfo, GgufError> {
        let info_offset = c.pos();
        let name = c.str(Field::Tensor("name", i))?.to_string();
        let bad = |reason: String| GgufError::BadShape {
            tensor: name.clone(),
            offset: info_offset,
            reason,
        };
        let n_dims = c.u32(Field::Tensor("n_dims", i))?;
        if n_dims > MAX_DIMS {
            return Err(bad(format!(
                "{n_dims} dimensions (ggml allows at most {MAX_DIMS})"
            )));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            let d = c.u64(Field::Tensor("dims", i))?;
            if d > i64::MAX as u64 {
                return Err(bad(format!("dimension {d} exceeds ggml's int64 range")));
            }
            dims.push(d);
        }
        let type_offset = c.pos();
        let type_id = c.u32(Field::Tensor("type", i))?;
        let ggml_type = GgmlType::from_id(type_id).ok_or_else(|| GgufError::UnknownTensorType {
            tensor: name.clone(),
            offset: type_offset,
            type_id,
        })?;
        let offset = c.u64(Field::Tensor("offset", i))?;
        let elements = dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| bad(format!("shape {dims:?} overflows the element count")))?;
        let cols = dims.first().copied().unwrap_or(1);
        let block = u64::from(ggml_type.block_elems);
        if cols % block != 0 {
            return Err(bad(format!(
                "rows of {cols} elements are not whole {block}-element blocks of {}",
                ggml_type.name
            )));
        }
        let size = (elements / block)
            .checked_mul(u64::from(ggml_type.block_bytes))
            .ok_or_else(|| bad(format!("shape {dims:?} overflows the byte size")))?;
        Ok(TensorInfo {
            name,
            dims,
            ggml_type,
            offset,
            size,
            info_offset,
        })
    }
}
