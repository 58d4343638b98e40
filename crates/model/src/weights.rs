//! Model weights in GGUF layout, wherever they came from (a file or the synthesizer).
//!
//! A tensor's bytes are either owned (synthetic weights, concatenated matrices) or a
//! range of a shared buffer, normally a GGUF file's memory map, so loading a model does
//! not copy the file: the bytes go from the map straight to the GPU upload.

use std::ops::{Deref, Range};
use std::sync::Arc;

use gpuscope_ops::WeightFormat;

use crate::config::LlamaConfig;

/// A 2-D weight matrix, row-major, each row in GGUF block layout.
#[derive(Debug, Clone)]
pub struct Tensor {
    /// GGUF tensor name, e.g. `blk.3.ffn_up.weight`.
    pub name: String,
    pub format: WeightFormat,
    pub rows: u32,
    pub cols: u32,
    pub data: TensorData,
}

/// Bytes shared between tensors, e.g. one memory-mapped file.
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A tensor's bytes: owned, or a range of a shared buffer. Derefs to `[u8]`.
#[derive(Clone)]
pub enum TensorData {
    Owned(Vec<u8>),
    Shared {
        source: SharedBytes,
        range: Range<usize>,
    },
}

impl TensorData {
    /// A view of `range` in `source`.
    ///
    /// # Panics
    /// If `range` is not inside `source` (callers check offsets when parsing).
    pub fn shared(source: SharedBytes, range: Range<usize>) -> TensorData {
        assert!(
            range.start <= range.end && range.end <= (*source).as_ref().len(),
            "tensor range outside its buffer"
        );
        TensorData::Shared { source, range }
    }

    pub fn bytes(&self) -> &[u8] {
        match self {
            TensorData::Owned(v) => v,
            TensorData::Shared { source, range } => &(**source).as_ref()[range.clone()],
        }
    }
}

impl Deref for TensorData {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

impl From<Vec<u8>> for TensorData {
    fn from(v: Vec<u8>) -> TensorData {
        TensorData::Owned(v)
    }
}

impl std::fmt::Debug for TensorData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TensorData::Owned(v) => write!(f, "Owned({} bytes)", v.len()),
            TensorData::Shared { range, .. } => write!(f, "Shared({range:?})"),
        }
    }
}

impl Tensor {
    pub fn row_bytes(&self) -> usize {
        self.data.len() / self.rows as usize
    }

    pub fn row(&self, r: u32) -> &[u8] {
        let n = self.row_bytes();
        &self.data[r as usize * n..(r as usize + 1) * n]
    }

    /// Rows `first..first + rows` as a tensor of their own named `name` (a view of the
    /// same bytes where they are shared): how a fused q/k/v or gate/up tensor is split.
    ///
    /// # Panics
    /// If the rows are not inside the tensor.
    pub fn rows_view(&self, name: &str, first: u32, rows: u32) -> Tensor {
        assert!(
            first + rows <= self.rows,
            "rows_view: rows outside the tensor"
        );
        let n = self.row_bytes();
        let (a, b) = (first as usize * n, (first + rows) as usize * n);
        let data = match &self.data {
            TensorData::Owned(v) => TensorData::Owned(v[a..b].to_vec()),
            TensorData::Shared { source, range } => {
                TensorData::shared(source.clone(), range.start + a..range.start + b)
            }
        };
        Tensor {
            name: name.to_string(),
            format: self.format,
            rows,
            cols: self.cols,
            data,
        }
    }
}

/// One transformer block.
#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub attn_norm: Vec<f32>,
    pub wq: Tensor,
    pub wk: Tensor,
    pub wv: Tensor,
    pub wo: Tensor,
    pub ffn_norm: Vec<f32>,
    pub w_gate: Tensor,
    pub w_up: Tensor,
    pub w_down: Tensor,
    /// What the architecture adds ([`crate::ArchFeatures`]); empty for Llama.
    pub extra: LayerExtras,
}

/// The vectors an architecture adds to a block (each `None` where it has none).
#[derive(Debug, Clone, Default)]
pub struct LayerExtras {
    /// The q, k and v biases, concatenated (`q_dim + 2 kv_dim`): Qwen2.
    pub qkv_bias: Option<Vec<f32>>,
    /// The q and k head norms' weights (`head_dim` each): Qwen3, Gemma 3.
    pub q_norm: Option<Vec<f32>>,
    pub k_norm: Option<Vec<f32>>,
    /// The norms of the attention's and the FFN's outputs (`dim` each): Gemma 3.
    pub post_attn_norm: Option<Vec<f32>>,
    pub post_ffn_norm: Option<Vec<f32>>,
}

impl LayerExtras {
    /// Every vector with its GGUF-style name, for byte counts and uploads.
    pub fn vectors(&self) -> impl Iterator<Item = (&'static str, &Vec<f32>)> {
        [
            ("attn_qkv_bias", &self.qkv_bias),
            ("attn_q_norm", &self.q_norm),
            ("attn_k_norm", &self.k_norm),
            ("post_attention_norm", &self.post_attn_norm),
            ("post_ffw_norm", &self.post_ffn_norm),
        ]
        .into_iter()
        .filter_map(|(n, v)| v.as_ref().map(|v| (n, v)))
    }
}

/// Everything a decoder needs.
#[derive(Debug, Clone)]
pub struct ModelWeights {
    pub config: LlamaConfig,
    /// Display name, e.g. `smollm2-135m (synthetic, seed 1)`.
    pub name: String,
    pub token_embd: Tensor,
    /// `None` when the output projection is tied to `token_embd`.
    pub output: Option<Tensor>,
    pub output_norm: Vec<f32>,
    pub layers: Vec<LayerWeights>,
}

impl ModelWeights {
    /// The output projection: `output` or the tied embedding table.
    pub fn output(&self) -> &Tensor {
        self.output.as_ref().unwrap_or(&self.token_embd)
    }

    /// Bytes of all weights as stored.
    pub fn weight_bytes(&self) -> u64 {
        let mut total = self.token_embd.data.len() as u64 + self.output_norm.len() as u64 * 4;
        if let Some(o) = &self.output {
            total += o.data.len() as u64;
        }
        for l in &self.layers {
            total += (l.attn_norm.len() + l.ffn_norm.len()) as u64 * 4;
            total += l
                .extra
                .vectors()
                .map(|(_, v)| v.len() as u64 * 4)
                .sum::<u64>();
            for t in [&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down] {
                total += t.data.len() as u64;
            }
        }
        total
    }

    /// The weight format of the layer matrices (what `--weights` chose).
    pub fn matrix_format(&self) -> WeightFormat {
        self.layers
            .first()
            .map(|l| l.wq.format)
            .unwrap_or(self.token_embd.format)
    }

    /// Every matrix format with its tensor count, most tensors first:
    /// `q4_1 (181), q8_0 (30)`. Files and fallbacks mix formats; one name would hide it.
    pub fn format_summary(&self) -> String {
        let mut counts: Vec<(WeightFormat, usize)> = Vec::new();
        let mut add = |f: WeightFormat| match counts.iter_mut().find(|(g, _)| *g == f) {
            Some((_, n)) => *n += 1,
            None => counts.push((f, 1)),
        };
        add(self.token_embd.format);
        if let Some(o) = &self.output {
            add(o.format);
        }
        for l in &self.layers {
            for t in [&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down] {
                add(t.format);
            }
        }
        counts.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
        if counts.len() == 1 {
            return counts[0].0.name().to_string();
        }
        counts
            .iter()
            .map(|(f, n)| format!("{} ({n})", f.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
