//! Metadata values of every GGUF type, arrays and nested arrays included.
//!
//! Arrays are stored compactly (numbers as typed vectors, strings as one buffer plus
//! end offsets), so memory stays proportional to the bytes the file spends on them.

use super::cursor::{Cursor, Field};
use super::error::GgufError;

/// Arrays inside arrays deeper than this are refused (a recursion bound; real files
/// use one level).
pub const MAX_ARRAY_DEPTH: u32 = 8;

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(MetaArray),
    U64(u64),
    I64(i64),
    F64(f64),
}

/// An array value: all elements of one type.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaArray {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    Bool(Vec<bool>),
    String(StrArray),
    Array(Vec<MetaArray>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

/// Strings of an array, concatenated, with each one's end.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StrArray {
    text: String,
    ends: Vec<usize>,
}

impl StrArray {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.text[start..end])
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i).expect("in range"))
    }
}

impl FromIterator<String> for StrArray {
    fn from_iter<I: IntoIterator<Item = String>>(iter: I) -> StrArray {
        let mut a = StrArray::default();
        for s in iter {
            a.text.push_str(&s);
            a.ends.push(a.text.len());
        }
        a
    }
}

/// GGUF value type ids.
pub(crate) mod type_id {
    pub const U8: u32 = 0;
    pub const I8: u32 = 1;
    pub const U16: u32 = 2;
    pub const I16: u32 = 3;
    pub const U32: u32 = 4;
    pub const I32: u32 = 5;
    pub const F32: u32 = 6;
    pub const BOOL: u32 = 7;
    pub const STRING: u32 = 8;
    pub const ARRAY: u32 = 9;
    pub const U64: u32 = 10;
    pub const I64: u32 = 11;
    pub const F64: u32 = 12;
}

/// The fewest bytes one value of type `t` takes in a file (0 for an unknown type).
fn min_bytes(t: u32) -> u64 {
    use type_id::*;
    match t {
        U8 | I8 | BOOL => 1,
        U16 | I16 => 2,
        U32 | I32 | F32 => 4,
        U64 | I64 | F64 | STRING => 8,
        ARRAY => 12,
        _ => 0,
    }
}

macro_rules! read_vec {
    ($c:expr, $n:expr, $field:expr, $ty:ty) => {{
        let bytes = $c.take($n * std::mem::size_of::<$ty>() as u64, $field)?;
        bytes
            .chunks_exact(std::mem::size_of::<$ty>())
            .map(|b| <$ty>::from_le_bytes(b.try_into().expect("exact chunk")))
            .collect::<Vec<$ty>>()
    }};
}

impl MetaValue {
    /// Reads a value of type `t` for `key`.
    pub(crate) fn read(c: &mut Cursor<'_>, t: u32, key: &str) -> Result<MetaValue, GgufError> {
        use type_id::*;
        let f = Field::Value(key, None);
        let offset = c.pos();
        Ok(match t {
            U8 => MetaValue::U8(c.array::<1>(f)?[0]),
            I8 => MetaValue::I8(c.array::<1>(f)?[0] as i8),
            U16 => MetaValue::U16(u16::from_le_bytes(c.array(f)?)),
            I16 => MetaValue::I16(i16::from_le_bytes(c.array(f)?)),
            U32 => MetaValue::U32(u32::from_le_bytes(c.array(f)?)),
            I32 => MetaValue::I32(i32::from_le_bytes(c.array(f)?)),
            F32 => MetaValue::F32(f32::from_le_bytes(c.array(f)?)),
            BOOL => MetaValue::Bool(c.array::<1>(f)?[0] != 0),
            STRING => MetaValue::String(c.str(f)?.to_string()),
            ARRAY => MetaValue::Array(MetaArray::read(c, key, 1)?),
            U64 => MetaValue::U64(u64::from_le_bytes(c.array(f)?)),
            I64 => MetaValue::I64(i64::from_le_bytes(c.array(f)?)),
            F64 => MetaValue::F64(f64::from_le_bytes(c.array(f)?)),
            _ => {
                return Err(GgufError::UnknownValueType {
                    field: f.to_string(),
                    offset,
                    type_id: t,
                })
            }
        })
    }

    /// The GGUF type id of this value.
    pub fn type_id(&self) -> u32 {
        use type_id::*;
        match self {
            MetaValue::U8(_) => U8,
            MetaValue::I8(_) => I8,
            MetaValue::U16(_) => U16,
            MetaValue::I16(_) => I16,
            MetaValue::U32(_) => U32,
            MetaValue::I32(_) => I32,
            MetaValue::F32(_) => F32,
            MetaValue::Bool(_) => BOOL,
            MetaValue::String(_) => STRING,
            MetaValue::Array(_) => ARRAY,
            MetaValue::U64(_) => U64,
            MetaValue::I64(_) => I64,
            MetaValue::F64(_) => F64,
        }
    }

    /// Any non-negative integer value.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            MetaValue::U8(v) => Some(v.into()),
            MetaValue::U16(v) => Some(v.into()),
            MetaValue::U32(v) => Some(v.into()),
            MetaValue::U64(v) => Some(v),
            MetaValue::I8(v) => u64::try_from(v).ok(),
            MetaValue::I16(v) => u64::try_from(v).ok(),
            MetaValue::I32(v) => u64::try_from(v).ok(),
            MetaValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// Any float value (f64 narrowed).
    pub fn as_f32(&self) -> Option<f32> {
        match *self {
            MetaValue::F32(v) => Some(v),
            MetaValue::F64(v) => Some(v as f32),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetaValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            MetaValue::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&MetaArray> {
        match self {
            MetaValue::Array(a) => Some(a),
            _ => None,
        }
    }

    /// A short rendering for listings: arrays show their type and length only.
    pub fn summary(&self) -> String {
        match self {
            MetaValue::String(s) if s.chars().count() > 60 => {
                format!("{:?}…", s.chars().take(60).collect::<String>())
            }
            MetaValue::String(s) => format!("{s:?}"),
            MetaValue::Array(a) => format!("[{} × {}]", a.len(), a.elem_name()),
            MetaValue::U8(v) => v.to_string(),
            MetaValue::I8(v) => v.to_string(),
            MetaValue::U16(v) => v.to_string(),
            MetaValue::I16(v) => v.to_string(),
            MetaValue::U32(v) => v.to_string(),
            MetaValue::I32(v) => v.to_string(),
            MetaValue::U64(v) => v.to_string(),
            MetaValue::I64(v) => v.to_string(),
            MetaValue::F32(v) => v.to_string(),
            MetaValue::F64(v) => v.to_string(),
            MetaValue::Bool(v) => v.to_string(),
        }
    }
}

impl MetaArray {
    fn read(c: &mut Cursor<'_>, key: &str, depth: u32) -> Result<MetaArray, GgufError> {
        use type_id::*;
        let f = Field::Value(key, None);
        if depth > MAX_ARRAY_DEPTH {
            return Err(GgufError::NestingTooDeep {
                field: f.to_string(),
                offset: c.pos(),
                max: MAX_ARRAY_DEPTH,
            });
        }
        let type_offset = c.pos();
        let t = c.u32(f)?;
        let min = min_bytes(t);
        if min == 0 {
            return Err(GgufError::UnknownValueType {
                field: f.to_string(),
                offset: type_offset,
                type_id: t,
            });
        }
        let n = c.count(min, f)?;
        Ok(match t {
            U8 => MetaArray::U8(c.take(n, f)?.to_vec()),
            I8 => MetaArray::I8(c.take(n, f)?.iter().map(|&b| b as i8).collect()),
            BOOL => MetaArray::Bool(c.take(n, f)?.iter().map(|&b| b != 0).collect()),
            U16 => MetaArray::U16(read_vec!(c, n, f, u16)),
            I16 => MetaArray::I16(read_vec!(c, n, f, i16)),
            U32 => MetaArray::U32(read_vec!(c, n, f, u32)),
            I32 => MetaArray::I32(read_vec!(c, n, f, i32)),
            F32 => MetaArray::F32(read_vec!(c, n, f, f32)),
            U64 => MetaArray::U64(read_vec!(c, n, f, u64)),
            I64 => MetaArray::I64(read_vec!(c, n, f, i64)),
            F64 => MetaArray::F64(read_vec!(c, n, f, f64)),
            STRING => {
                let mut a = StrArray {
                    text: String::new(),
                    ends: Vec::with_capacity(c.capacity_for::<usize>(n)),
                };
                for i in 0..n {
                    a.text.push_str(c.str(Field::Value(key, Some(i)))?);
                    a.ends.push(a.text.len());
                }
                a.text.shrink_to_fit();
                MetaArray::String(a)
            }
            ARRAY => {
                let mut v = Vec::with_capacity(c.capacity_for::<MetaArray>(n));
                for _ in 0..n {
                    v.push(MetaArray::read(c, key, depth + 1)?);
                }
                MetaArray::Array(v)
            }
            _ => unreachable!("min_bytes is 0 for unknown types"),
        })
    }

    pub fn len(&self) -> usize {
        match self {
            MetaArray::U8(v) => v.len(),
            MetaArray::I8(v) => v.len(),
            MetaArray::U16(v) => v.len(),
            MetaArray::I16(v) => v.len(),
            MetaArray::U32(v) => v.len(),
            MetaArray::I32(v) => v.len(),
            MetaArray::F32(v) => v.len(),
            MetaArray::Bool(v) => v.len(),
            MetaArray::String(v) => v.len(),
            MetaArray::Array(v) => v.len(),
            MetaArray::U64(v) => v.len(),
            MetaArray::I64(v) => v.len(),
            MetaArray::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type's name, as in listings.
    pub fn elem_name(&self) -> &'static str {
        match self {
            MetaArray::U8(_) => "u8",
            MetaArray::I8(_) => "i8",
            MetaArray::U16(_) => "u16",
            MetaArray::I16(_) => "i16",
            MetaArray::U32(_) => "u32",
            MetaArray::I32(_) => "i32",
            MetaArray::F32(_) => "f32",
            MetaArray::Bool(_) => "bool",
            MetaArray::String(_) => "string",
            MetaArray::Array(_) => "array",
            MetaArray::U64(_) => "u64",
            MetaArray::I64(_) => "i64",
            MetaArray::F64(_) => "f64",
        }
    }

    pub fn as_strings(&self) -> Option<&StrArray> {
        match self {
            MetaArray::String(s) => Some(s),
            _ => None,
        }
    }

    /// Integer elements as i64 (any integer element type).
    pub fn to_i64s(&self) -> Option<Vec<i64>> {
        Some(match self {
            MetaArray::U8(v) => v.iter().map(|&x| x as i64).collect(),
            MetaArray::I8(v) => v.iter().map(|&x| x as i64).collect(),
            MetaArray::U16(v) => v.iter().map(|&x| x as i64).collect(),
            MetaArray::I16(v) => v.iter().map(|&x| x as i64).collect(),
            MetaArray::U32(v) => v.iter().map(|&x| x as i64).collect(),
            MetaArray::I32(v) => v.iter().map(|&x| x as i64).collect(),
            MetaArray::U64(v) => v.iter().map(|&x| x as i64).collect(),
            MetaArray::I64(v) => v.clone(),
            _ => return None,
        })
    }

    /// Float elements as f32.
    pub fn to_f32s(&self) -> Option<Vec<f32>> {
        match self {
            MetaArray::F32(v) => Some(v.clone()),
            MetaArray::F64(v) => Some(v.iter().map(|&x| x as f32).collect()),
            _ => None,
        }
    }
}
