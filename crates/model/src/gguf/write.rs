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
        let tensors: Vec<TensorOut<'_>> = self
            .tensors
            .iter()
            .map(|(name, dims, ggml_type, bytes)| TensorOut {
                name,
                dims: dims.clone(),
                ggml_type: *ggml_type,
                bytes,
            })
            .collect();
        let mut out = Vec::new();
        self.write_with(&mut out, &tensors)
            .expect("writing to a Vec does not fail");
        out
    }

    /// Writes the file to `out` with `tensors` (in place of any added with
    /// [`Self::tensor`]), each tensor's bytes streamed from where they are: a
    /// multi-gigabyte model is not copied into one buffer first.
    pub fn write_with(
        &self,
        out: &mut impl std::io::Write,
        tensors: &[TensorOut<'_>],
    ) -> std::io::Result<()> {
        let mut head = Vec::new();
        head.extend_from_slice(b"GGUF");
        head.extend_from_slice(&self.version.to_le_bytes());
        head.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
        head.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (k, v) in &self.metadata {
            put_str(&mut head, k);
            put_value(&mut head, v);
        }
        let mut offset = 0u64;
        let mut offsets = Vec::new();
        for t in tensors {
            put_str(&mut head, t.name);
            head.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
            t.dims
                .iter()
                .for_each(|d| head.extend_from_slice(&d.to_le_bytes()));
            head.extend_from_slice(&t.ggml_type.to_le_bytes());
            head.extend_from_slice(&offset.to_le_bytes());
            offsets.push(offset);
            offset = (offset + t.bytes.len() as u64).next_multiple_of(self.alignment);
        }
        head.resize(
            (head.len() as u64).next_multiple_of(self.alignment) as usize,
            0,
        );
        out.write_all(&head)?;
        let mut written = 0u64;
        for (t, off) in tensors.iter().zip(offsets) {
            out.write_all(&vec![0u8; (off - written) as usize])?;
            out.write_all(t.bytes)?;
            written = off + t.bytes.len() as u64;
        }
        Ok(())
    }
}

/// A tensor to write: name, dims in ggml order (row length first), type, stored bytes.
pub struct TensorOut<'a> {
    pub name: &'a str,
    pub dims: Vec<u64>,
    pub ggml_type: u32,
    pub bytes: &'a [u8],
}
