//! A bounds-checked little-endian reader: every read is checked against the bytes left,
//! and every error carries the field being read and its absolute byte offset.

use std::fmt;

use super::error::GgufError;

/// What is being read, rendered only when an error needs it (no allocation per read).
#[derive(Clone, Copy)]
pub(crate) enum Field<'k> {
    Plain(&'static str),
    /// A part (`key`, `value type`, ...) of metadata entry `index`.
    Entry(&'static str, u64),
    /// The value of metadata key `key`, element `index` when inside an array.
    Value(&'k str, Option<u64>),
    /// A part of tensor info `index`.
    Tensor(&'static str, u64),
}

impl fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::Plain(s) => write!(f, "{s}"),
            Field::Entry(what, i) => write!(f, "metadata entry {i} {what}"),
            Field::Value(key, None) => write!(f, "value of {key:?}"),
            Field::Value(key, Some(i)) => write!(f, "value of {key:?} element {i}"),
            Field::Tensor(what, i) => write!(f, "tensor info {i} {what}"),
        }
    }
}

pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, pos: 0 }
    }

    pub fn pos(&self) -> u64 {
        self.pos as u64
    }

    pub fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    pub fn file_size(&self) -> u64 {
        self.bytes.len() as u64
    }

    pub fn take(&mut self, n: u64, field: Field<'_>) -> Result<&'a [u8], GgufError> {
        if n > self.remaining() {
            return Err(GgufError::Truncated {
                field: field.to_string(),
                offset: self.pos(),
                needed: n,
                file_size: self.file_size(),
            });
        }
        let out = &self.bytes[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(out)
    }

    pub fn array<const N: usize>(&mut self, field: Field<'_>) -> Result<[u8; N], GgufError> {
        Ok(self
            .take(N as u64, field)?
            .try_into()
            .expect("took N bytes"))
    }

    pub fn u32(&mut self, field: Field<'_>) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }

    pub fn u64(&mut self, field: Field<'_>) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    /// A count of items that take at least `min_bytes` each: refused when they cannot
    /// fit in the rest of the file, so no allocation is ever sized by a hostile count.
    pub fn count(&mut self, min_bytes: u64, field: Field<'_>) -> Result<u64, GgufError> {
        let offset = self.pos();
        let count = self.u64(field)?;
        let remaining = self.remaining();
        if count.checked_mul(min_bytes).is_none_or(|b| b > remaining) {
            return Err(GgufError::AbsurdCount {
                field: field.to_string(),
                offset,
                count,
                min_bytes,
                remaining,
            });
        }
        Ok(count)
    }

    /// How many `T`s to reserve room for ahead of reading `count` items: never more
    /// memory than the bytes left in the file, whatever the count claims (items read
    /// later grow the vector as they are actually found).
    pub fn capacity_for<T>(&self, count: u64) -> usize {
        let fit = self.remaining() / (std::mem::size_of::<T>() as u64).max(1);
        count.min(fit) as usize
    }

    /// A GGUF string: u64 length, then that many UTF-8 bytes.
    pub fn str(&mut self, field: Field<'_>) -> Result<&'a str, GgufError> {
        let offset = self.pos();
        let length = self.u64(field)?;
        let remaining = self.remaining();
        if length > remaining {
            return Err(GgufError::AbsurdLength {
                field: field.to_string(),
                offset,
                length,
                remaining,
            });
        }
        let start = self.pos();
        let bytes = self.take(length, field)?;
        std::str::from_utf8(bytes).map_err(|_| GgufError::InvalidUtf8 {
            field: field.to_string(),
            offset: start,
        })
    }

    /// Moves to `pos` (at most the end of the file).
    pub fn seek(&mut self, pos: u64) {
        self.pos = pos.min(self.file_size()) as usize;
    }
}
