//! A synthetic model saved as a GGUF file that other engines load too (`gpuscope synth`):
//! the same weights `profile --preset P --weights F --seed S` decodes, with the metadata
//! llama.cpp reads for the `llama` architecture and a SentencePiece vocabulary it loads
//! (`<unk>`, `<s>`, `</s>`, the 256 byte tokens `<0x00>`…`<0xFF>` that byte fallback
//! needs, then placeholders up to the vocabulary size, with scores and types to match:
//! every text tokenizes to bytes). So gpuscope and another engine can be timed on the
//! same file with no download (`bench -m FILE`, `llama-bench -m FILE`).

use std::path::Path;

use gpuscope_ops::WeightFormat;

use crate::gguf::{GgufWriter, MetaArray, MetaValue, TensorOut};
use crate::weights::{ModelWeights, Tensor};

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

/// The file's metadata for `w` (architecture `llama`).
fn metadata(w: &ModelWeights, name: &str) -> GgufWriter {
    let c = &w.config;
    let (tokens, scores, types) = vocabulary(c.vocab);
    let u32v = MetaValue::U32;
    let mut g = GgufWriter::new();
    g.meta("general.architecture", MetaValue::String("llama".into()))
        .meta("general.name", MetaValue::String(name.into()))
        .meta(
            "general.file_type",
            u32v(file_type(
                w.layers
                    .first()
                    .map_or(w.token_embd.format, |l| l.wq.format),
            )),
        )
        .meta("llama.block_count", u32v(c.n_layers))
        .meta("llama.context_length", u32v(CONTEXT_LENGTH))
        .meta("llama.embedding_length", u32v(c.dim))
        .meta("llama.feed_forward_length", u32v(c.ffn_dim))
        .meta("llama.attention.head_count", u32v(c.n_heads))
        .meta("llama.attention.head_count_kv", u32v(c.n_kv_heads))
        .meta("llama.attention.key_length", u32v(c.head_dim))
        .meta("llama.attention.value_length", u32v(c.head_dim))
        .meta("llama.rope.freq_base", MetaValue::F32(c.rope_base))
        .meta("llama.rope.dimension_count", u32v(c.rope_dims))
        .meta(
            "llama.attention.layer_norm_rms_epsilon",
            MetaValue::F32(c.rms_eps),
        )
        .meta("llama.vocab_size", u32v(c.vocab))
        .meta("tokenizer.ggml.model", MetaValue::String("llama".into()))
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

/// Writes `w` as a GGUF file at `path` (through a temporary file and a rename).
pub fn write_gguf(
    w: &ModelWeights,
    name: &str,
    path: &Path,
) -> Result<(), gpuscope_trace::atomic::OutputError> {
    let c = &w.config;
    let matrix = |t: &'_ Tensor| -> (String, Vec<u64>, u32) {
        (
            t.name.clone(),
            vec![u64::from(t.cols), u64::from(t.rows)],
            t.format.ggml_type_id(),
        )
    };
    let mut norms: Vec<(String, Vec<u8>)> =
        vec![("output_norm.weight".into(), f32_bytes(&w.output_norm))];
    let mut mats: Vec<&Tensor> = vec![&w.token_embd];
    for (i, l) in w.layers.iter().enumerate() {
        norms.push((format!("blk.{i}.attn_norm.weight"), f32_bytes(&l.attn_norm)));
        norms.push((format!("blk.{i}.ffn_norm.weight"), f32_bytes(&l.ffn_norm)));
        mats.extend([&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down]);
    }
    mats.extend(w.output.as_ref());
    let infos: Vec<(String, Vec<u64>, u32)> = mats.iter().map(|t| matrix(t)).collect();
    let mut tensors: Vec<TensorOut<'_>> = mats
        .iter()
        .zip(&infos)
        .map(|(t, (name, dims, ty))| TensorOut {
            name,
            dims: dims.clone(),
            ggml_type: *ty,
            bytes: t.data.bytes(),
        })
        .collect();
    tensors.extend(norms.iter().map(|(name, bytes)| TensorOut {
        name,
        dims: vec![u64::from(c.dim)],
        ggml_type: WeightFormat::F32.ggml_type_id(),
        bytes,
    }));
    let g = metadata(w, name);
    gpuscope_trace::atomic::write_atomic_with(path, |f| {
        let mut out = std::io::BufWriter::with_capacity(1 << 22, f);
        g.write_with(&mut out, &tensors)?;
        std::io::Write::flush(&mut out)
    })
}
