//! A small GGUF writer: tests craft files with it (valid and broken), and synthetic
//! models can be saved as real GGUF files. Writes version 3, little-endian.

use super::value::{type_id, MetaArray, MetaValue};

/// Builds a GGUF file in memory.
#[derive(Debug, Clone)]
pub struct GgufWriter {
    pub version: u32,
    pub alignment: u64,
    metadata: Vec<(String, MetaValue)>,
    tensors: Vec<(String, Vec<u64>, u32, Vec<u8>)>,
}

impl Default for GgufWriter {
    fn default() -> Self {
        GgufWriter {
            version: 3,
            alignment: 32,
            metadata: Vec::new(),
            tensors: Vec::new(),
        }
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_array(out: &mut Vec<u8>, a: &MetaArray) {
    macro_rules! nums {
        ($t:expr, $v:expr) => {{
            out.extend_from_slice(&$t.to_le_bytes());
            out.extend_from_slice(&($v.len() as u64).to_le_bytes());
            $v.iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }};
    }
    match a {
        MetaArray::U8(v) => nums!(type_id::U8, v),
        MetaArray::I8(v) => nums!(type_id::I8, v),
        MetaArray::U16(v) => nums!(type_id::U16, v),
        MetaArray::I16(v) => nums!(type_id::I16, v),
        MetaArray::U32(v) => nums!(type_id::U32, v),
        MetaArray::I32(v) => nums!(type_id::I32, v),
        MetaArray::F32(v) => nums!(type_id::F32, v),
        MetaArray::U64(v) => nums!(type_id::U64, v),
        MetaArray::I64(v) => nums!(type_id::I64, v),
        MetaArray::F64(v) => nums!(type_id::F64, v),
        MetaArray::Bool(v) => nums!(
            type_id::BOOL,
            v.iter().map(|&b| b as u8).collect::<Vec<u8>>()
        ),
        MetaArray::String(v) => {
            out.extend_from_slice(&type_id::STRING.to_le_bytes());
            out.extend_from_slice(&(v.len() as u64).to_le_bytes());
            v.iter().for_each(|s| put_str(out, s));
        }
        MetaArray::Array(v) => {
            out.extend_from_slice(&type_id::ARRAY.to_le_bytes());
            out.extend_from_slice(&(v.len() as u64).to_le_bytes());
            v.iter().for_each(|a| put_array(out, a));
        }
    }
}

fn put_value(out: &mut Vec<u8>, v: &MetaValue) {
    out.extend_from_slice(&v.type_id().to_le_bytes());
    match v {
        MetaValue::U8(x) => out.push(*x),
        MetaValue::I8(x) => out.push(*x as u8),
        MetaValue::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::Bool(x) => out.push(*x as u8),
        MetaValue::String(s) => put_str(out, s),
        MetaValue::Array(a) => put_array(out, a),
        MetaValue::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
    }
}

impl GgufWriter {
    pub fn new() -> GgufWriter {
        GgufWriter::default()
    }

    pub fn meta(&mut self, key: &str, value: MetaValue) -> &mut Self {
        self.metadata.push((key.to_string(), value));
        self
    }

    /// Adds a tensor; `dims` in ggml order (row length first), `bytes` as stored.
    pub fn tensor(
        &mut self,
        name: &str,
        dims: &[u64],
        ggml_type: u32,
        bytes: Vec<u8>,
    ) -> &mut Self {
        self.tensors
            .push((name.to_string(), dims.to_vec(), ggml_type, bytes));
        self
    }

    /// The file's bytes. Tensor data is laid out in order, each start aligned.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(b"GGUF");
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (k, v) in &self.metadata {
            put_str(&mut out, k);
            put_value(&mut out, v);
        }
        let mut offset = 0u64;
        let mut offsets = Vec::new();
        for (name, dims, t, bytes) in &self.tensors {
            put_str(&mut out, name);
            out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
            dims.iter()
                .for_each(|d| out.extend_from_slice(&d.to_le_bytes()));
            out.extend_from_slice(&t.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            offsets.push(offset);
            offset = (offset + bytes.len() as u64).next_multiple_of(self.alignment);
        }
        out.resize(
            (out.len() as u64).next_multiple_of(self.alignment) as usize,
            0,
        );
        let data_start = out.len();
        for ((_, _, _, bytes), off) in self.tensors.iter().zip(offsets) {
            out.resize(data_start + off as usize, 0);
            out.extend_from_slice(bytes);
        }
        out
    }
}
