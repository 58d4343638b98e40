//! A synthetic model saved as a GGUF file that other engines load too (`gpuscope synth`):
//! the same weights `profile --preset P --weights F --seed S` decodes, with the metadata
//! llama.cpp reads for the preset's architecture (`llama`, `qwen2`, `qwen3`, `phi3`,
//! `gemma3`; Mistral as `llama` with its window) and a SentencePiece vocabulary it loads
//! (`<unk>`, `<s>`, `</s>`, the 256 byte tokens `<0x00>`…`<0xFF>` that byte fallback
//! needs, then placeholders up to the vocabulary size, with scores and types to match:
//! every text tokenizes to bytes). So gpuscope and another engine can be timed on the
//! same file with no download (`bench -m FILE`, `llama-bench -m FILE`).

use std::borrow::Cow;
use std::path::Path;

use gpuscope_ops::WeightFormat;

use crate::arch::Architecture;
use crate::config::LlamaConfig;
use crate::gguf::{GgufWriter, MetaArray, MetaValue, TensorOut};
use crate::weights::{LayerWeights, ModelWeights, Tensor};

/// The context length written (`llama.context_length`): the presets' real models'.
pub const CONTEXT_LENGTH: u32 = 8192;

/// llama.cpp's `general.file_type` for a model whose matrices are in `format`
/// (`LLAMA_FTYPE_MOSTLY_*`; the K formats as their `_M` mixes), which llama-bench prints.
fn file_type(format: WeightFormat) -> u32 {
    match format {
        WeightFormat::F32 => 0,
        WeightFormat::F16 => 1,
        WeightFormat::Q4_0 => 2,
        WeightFormat::Q4_1 => 3,
        WeightFormat::Q8_0 => 7,
        WeightFormat::Q5_0 => 8,
        WeightFormat::Q5_1 => 9,
        WeightFormat::Q4_K => 15,
        WeightFormat::Q5_K => 17,
        WeightFormat::Q6_K => 18,
        WeightFormat::BF16 => 32,
    }
}

/// SentencePiece token types (llama.cpp's `LLAMA_TOKEN_TYPE_*`).
const NORMAL: i32 = 1;
const UNKNOWN: i32 = 2;
const CONTROL: i32 = 3;
const BYTE: i32 = 6;

/// The vocabulary: `<unk>`, `<s>`, `</s>`, the byte tokens, then `<tok_N>` up to
/// `vocab`, with their scores (placeholders score below every byte, so none is ever
/// merged) and types.
fn vocabulary(vocab: u32) -> (Vec<String>, Vec<f32>, Vec<i32>) {
    let mut tokens = vec!["<unk>".to_string(), "<s>".into(), "</s>".into()];
    let mut types = vec![UNKNOWN, CONTROL, CONTROL];
    tokens.extend((0..=255u8).map(|b| format!("<0x{b:02X}>")));
    types.extend(std::iter::repeat_n(BYTE, 256));
    for i in tokens.len() as u32..vocab {
        tokens.push(format!("<tok_{i}>"));
        types.push(NORMAL);
    }
    tokens.truncate(vocab as usize);
    types.truncate(vocab as usize);
    let scores = (0..tokens.len()).map(|i| -(i as f32)).collect();
    (tokens, scores, types)
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The `general.architecture` a file of `c` is written as: the architecture's, but
/// `llama` for Mistral (llama.cpp has no `mistral`; its window is
/// `llama.attention.sliding_window`).
pub fn arch_name(c: &LlamaConfig) -> &'static str {
    match c.arch.architecture {
        Architecture::Mistral => "llama",
        a => a.name(),
    }
}

/// The file's metadata for `w`, under its architecture's prefix.
fn metadata(w: &ModelWeights, name: &str) -> GgufWriter {
    let c = &w.config;
    let (tokens, scores, types) = vocabulary(c.vocab);
    let u32v = MetaValue::U32;
    let arch = arch_name(c);
    let k = |key: &str| format!("{arch}.{key}");
    let mut g = GgufWriter::new();
    g.meta("general.architecture", MetaValue::String(arch.into()))
        .meta("general.name", MetaValue::String(name.into()))
        .meta(
            "general.file_type",
            u32v(file_type(
                w.layers
                    .first()
                    .map_or(w.token_embd.format, |l| l.wq.format),
            )),
        )
        .meta(&k("block_count"), u32v(c.n_layers))
        .meta(&k("context_length"), u32v(CONTEXT_LENGTH))
        .meta(&k("embedding_length"), u32v(c.dim))
        .meta(&k("feed_forward_length"), u32v(c.ffn_dim))
        .meta(&k("attention.head_count"), u32v(c.n_heads))
        .meta(&k("attention.head_count_kv"), u32v(c.n_kv_heads))
        .meta(&k("attention.key_length"), u32v(c.head_dim))
        .meta(&k("attention.value_length"), u32v(c.head_dim))
        .meta(&k("rope.freq_base"), MetaValue::F32(c.rope_base))
        .meta(&k("rope.dimension_count"), u32v(c.rope_dims))
        .meta(
            &k("attention.layer_norm_rms_epsilon"),
            MetaValue::F32(c.rms_eps),
        )
        .meta(&k("vocab_size"), u32v(c.vocab));
    let a = &c.arch;
    if a.sliding_window > 0 {
        g.meta(&k("attention.sliding_window"), u32v(a.sliding_window));
        if a.architecture == Architecture::Gemma3 {
            g.meta(&k("attention.sliding_window_pattern"), u32v(a.swa_pattern));
        }
    }
    if let Some(base) = a.rope_base_swa {
        g.meta(&k("rope.freq_base_swa"), MetaValue::F32(base));
    }
    g.meta("tokenizer.ggml.model", MetaValue::String("llama".into()))
        .meta(
            "tokenizer.ggml.tokens",
            MetaValue::Array(MetaArray::String(tokens.into_iter().collect())),
        )
        .meta(
            "tokenizer.ggml.scores",
            MetaValue::Array(MetaArray::F32(scores)),
        )
        .meta(
            "tokenizer.ggml.token_type",
            MetaValue::Array(MetaArray::I32(types)),
        )
        .meta("tokenizer.ggml.unknown_token_id", u32v(0))
        .meta("tokenizer.ggml.bos_token_id", u32v(1))
        .meta("tokenizer.ggml.eos_token_id", u32v(2))
        .meta("tokenizer.ggml.add_bos_token", MetaValue::Bool(true));
    g
}

/// A tensor to write: name, ggml dims, type and bytes (borrowed, or made here for the
/// fused tensors and the vectors).
type Out<'w> = (String, Vec<u64>, u32, Cow<'w, [u8]>);

/// A matrix as written (ggml dims `[cols, rows]`).
fn matrix_out(t: &Tensor) -> Out<'_> {
    (
        t.name.clone(),
        vec![u64::from(t.cols), u64::from(t.rows)],
        t.format.ggml_type_id(),
        Cow::Borrowed(t.data.bytes()),
    )
}

/// Matrices of one format and width stacked into one tensor named `name`.
fn stacked_out<'w>(name: String, parts: &[&'w Tensor]) -> Out<'w> {
    let rows: u32 = parts.iter().map(|t| t.rows).sum();
    let bytes: Vec<u8> = parts
        .iter()
        .flat_map(|t| t.data.bytes().iter().copied())
        .collect();
    (
        name,
        vec![u64::from(parts[0].cols), u64::from(rows)],
        parts[0].format.ggml_type_id(),
        Cow::Owned(bytes),
    )
}

fn vector_out<'w>(name: String, v: &[f32]) -> Out<'w> {
    (
        name,
        vec![v.len() as u64],
        WeightFormat::F32.ggml_type_id(),
        Cow::Owned(f32_bytes(v)),
    )
}

/// Layer `i`'s tensors under llama.cpp's names for the architecture (Phi-3's fused
/// q/k/v and gate/up, Qwen2's biases, the head and post norms).
fn layer_out<'w>(c: &LlamaConfig, i: usize, l: &'w LayerWeights) -> Vec<Out<'w>> {
    let n = |s: &str| format!("blk.{i}.{s}");
    let mut out = vec![
        vector_out(n("attn_norm.weight"), &l.attn_norm),
        vector_out(n("ffn_norm.weight"), &l.ffn_norm),
        matrix_out(&l.wo),
        matrix_out(&l.w_down),
    ];
    if c.arch.fused_qkv {
        out.push(stacked_out(n("attn_qkv.weight"), &[&l.wq, &l.wk, &l.wv]));
    } else {
        out.extend([matrix_out(&l.wq), matrix_out(&l.wk), matrix_out(&l.wv)]);
    }
    if c.arch.fused_gate_up {
        out.push(stacked_out(n("ffn_up.weight"), &[&l.w_gate, &l.w_up]));
    } else {
        out.extend([matrix_out(&l.w_gate), matrix_out(&l.w_up)]);
    }
    let e = &l.extra;
    if let Some(b) = &e.qkv_bias {
        let (q, kv) = (c.q_dim() as usize, c.kv_dim() as usize);
        out.push(vector_out(n("attn_q.bias"), &b[..q]));
        out.push(vector_out(n("attn_k.bias"), &b[q..q + kv]));
        out.push(vector_out(n("attn_v.bias"), &b[q + kv..]));
    }
    for (name, v) in [
        ("attn_q_norm", &e.q_norm),
        ("attn_k_norm", &e.k_norm),
        ("post_attention_norm", &e.post_attn_norm),
        ("post_ffw_norm", &e.post_ffn_norm),
    ] {
        if let Some(v) = v {
            out.push(vector_out(n(&format!("{name}.weight")), v));
        }
    }
    out
}

/// Writes `w` as a GGUF file at `path` (through a temporary file and a rename).
pub fn write_gguf(
    w: &ModelWeights,
    name: &str,
    path: &Path,
) -> Result<(), gpuscope_trace::atomic::OutputError> {
    let c = &w.config;
    let mut all: Vec<Out<'_>> = vec![
        matrix_out(&w.token_embd),
        vector_out("output_norm.weight".into(), &w.output_norm),
    ];
    for (i, l) in w.layers.iter().enumerate() {
        all.extend(layer_out(c, i, l));
    }
    all.extend(w.output.as_ref().map(matrix_out));
    let tensors: Vec<TensorOut<'_>> = all
        .iter()
        .map(|(name, dims, ty, bytes)| TensorOut {
            name,
            dims: dims.clone(),
            ggml_type: *ty,
            bytes,
        })
        .collect();
    let g = metadata(w, name);
    gpuscope_trace::atomic::write_atomic_with(path, |f| {
        let mut out = std::io::BufWriter::with_capacity(1 << 22, f);
        g.write_with(&mut out, &tensors)?;
        std::io::Write::flush(&mut out)
    })
}
