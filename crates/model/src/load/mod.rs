//! From a GGUF file to a runnable model: the mapping of metadata and tensor names for
//! each architecture gpuscope runs ([`Architecture`]), as llama.cpp's loader does it.
//!
//! Shapes come from `<arch>.*` metadata (block count, widths, heads, rope, eps, sliding
//! window) and are checked against every tensor's shape; the vocabulary size is the
//! embedding table's height; the output projection is tied to the embedding when
//! `output.weight` is absent. Matrices keep their GGUF bytes as views into the file's
//! memory map; fused tensors (Phi-3's `attn_qkv`, its double-height `ffn_up`) are split
//! into views of their rows. What an architecture adds (biases, head norms, post norms)
//! goes into [`crate::weights::LayerExtras`].
//!
//! No un-permuting of Q/K rows: llama.cpp's converter permutes them for the `llama`
//! architecture so that its "normal" rope (rotating adjacent pairs) applies, and
//! gpuscope's rope is that same mode; the NeoX architectures keep the original order
//! and their rope rotates `(i, i + rope_dims/2)`.

mod features;

use std::collections::BTreeMap;
use std::path::Path;

use gpuscope_ops::WeightFormat;
use half::f16;
use thiserror::Error;

use crate::arch::Architecture;
use crate::config::LlamaConfig;
use crate::gguf::{Gguf, GgufError, TensorInfo};
use crate::weights::{LayerExtras, LayerWeights, ModelWeights, Tensor};

/// Architectures gpuscope maps (GGUF `general.architecture`): [`Architecture::ALL`].
pub const SUPPORTED_ARCHITECTURES: &[&str] =
    &["llama", "mistral", "qwen2", "qwen3", "phi3", "gemma3"];

#[derive(Debug, Error)]
pub enum LoadError {
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error("architecture {found:?} is not supported: gpuscope runs {}", SUPPORTED_ARCHITECTURES.join(", "))]
    Architecture { found: String },
    #[error("GGUF metadata has no {key}")]
    MissingKey { key: String },
    #[error("GGUF metadata {key} = {found} is not valid: {why}")]
    BadKey {
        key: String,
        found: String,
        why: String,
    },
    #[error("tensor {name} is missing from the file")]
    MissingTensor { name: String },
    #[error("tensor {name} has shape {found:?} (ggml order), expected {expected:?}")]
    Shape {
        name: String,
        found: Vec<u64>,
        expected: Vec<u64>,
    },
    #[error("tensor {name} is {format}, a format gpuscope has no kernels for (supported: {supported}); \
             pick a file quantized to one of those")]
    UnsupportedFormat {
        name: String,
        format: &'static str,
        supported: String,
    },
    #[error("invalid model configuration: {0}")]
    Config(String),
    #[error("{what} is not supported by gpuscope's {arch} decoder")]
    Unsupported { arch: String, what: String },
}

/// What the file says about the model beyond its shape.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    /// `general.name`, else the file name.
    pub name: String,
    pub architecture: String,
    /// `<arch>.context_length`: the longest context the model was trained for.
    pub context_length: u32,
    /// Tensors per format, e.g. `q4_1 ×210, f32 ×61, q8_0 ×1`.
    pub formats: String,
    pub file_bytes: u64,
    /// Things the file asks for that gpuscope does not do (printed, not fatal).
    pub warnings: Vec<String>,
}

/// A loaded model: weights (views into the file) and what the file says about them.
pub struct LoadedModel {
    pub gguf: Gguf,
    pub weights: ModelWeights,
    pub info: ModelInfo,
}

/// Opens, memory-maps and maps a GGUF Llama-family model.
pub fn load_gguf(path: &Path) -> Result<LoadedModel, LoadError> {
    let gguf = Gguf::open(path)?;
    load_model(gguf)
}

/// The file's metadata under its architecture's prefix.
pub(crate) struct Meta<'a> {
    pub(crate) gguf: &'a Gguf,
    pub(crate) arch: &'a str,
}

impl Meta<'_> {
    pub(crate) fn key(&self, k: &str) -> String {
        format!("{}.{k}", self.arch)
    }

    pub(crate) fn u32_opt(&self, k: &str) -> Result<Option<u32>, LoadError> {
        let key = self.key(k);
        match self.gguf.file.metadata.get(&key) {
            None => Ok(None),
            Some(v) => match v.as_u64().and_then(|x| u32::try_from(x).ok()) {
                Some(x) if x > 0 => Ok(Some(x)),
                _ => Err(LoadError::BadKey {
                    key,
                    found: v.summary(),
                    why: "expected a positive integer".into(),
                }),
            },
        }
    }

    fn u32(&self, k: &str) -> Result<u32, LoadError> {
        self.u32_opt(k)?
            .ok_or_else(|| LoadError::MissingKey { key: self.key(k) })
    }

    pub(crate) fn f32_or(&self, k: &str, default: f32) -> Result<f32, LoadError> {
        let key = self.key(k);
        match self.gguf.file.metadata.get(&key) {
            None => Ok(default),
            Some(v) => match v.as_f32() {
                Some(x) if x.is_finite() && x > 0.0 => Ok(x),
                _ => Err(LoadError::BadKey {
                    key,
                    found: v.summary(),
                    why: "expected a positive float".into(),
                }),
            },
        }
    }
}

fn supported_formats() -> String {
    WeightFormat::ALL
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn info<'g>(gguf: &'g Gguf, name: &str) -> Result<&'g TensorInfo, LoadError> {
    gguf.file
        .tensor(name)
        .ok_or_else(|| LoadError::MissingTensor {
            name: name.to_string(),
        })
}

fn expect_shape(t: &TensorInfo, expected: &[u64]) -> Result<(), LoadError> {
    if t.dims != expected {
        return Err(LoadError::Shape {
            name: t.name.clone(),
            found: t.dims.clone(),
            expected: expected.to_vec(),
        });
    }
    Ok(())
}

/// A `rows × cols` matrix (ggml dims `[cols, rows]`), bytes viewed from the file.
fn matrix(gguf: &Gguf, name: &str, rows: u32, cols: u32) -> Result<Tensor, LoadError> {
    let t = info(gguf, name)?;
    expect_shape(t, &[cols as u64, rows as u64])?;
    let format = t
        .ggml_type
        .format()
        .ok_or_else(|| LoadError::UnsupportedFormat {
            name: name.to_string(),
            format: t.ggml_type.name,
            supported: supported_formats(),
        })?;
    Ok(Tensor {
        name: name.to_string(),
        format,
        rows,
        cols,
        data: gguf.tensor_data(t),
    })
}

/// A norm weight vector of `n` floats (f32 in files; f16 converted if met).
fn vector(gguf: &Gguf, name: &str, n: u32) -> Result<Vec<f32>, LoadError> {
    let t = info(gguf, name)?;
    expect_shape(t, &[n as u64])?;
    let bytes = gguf.tensor_bytes(t);
    match t.ggml_type.name {
        "f32" => Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect()),
        "f16" => Ok(bytes
            .chunks_exact(2)
            .map(|b| f16::from_le_bytes(b.try_into().unwrap()).to_f32())
            .collect()),
        other => Err(LoadError::UnsupportedFormat {
            name: name.to_string(),
            format: other,
            supported: "f32, f16".into(),
        }),
    }
}

/// Maps a parsed GGUF file to weights of one of the [`Architecture`]s.
pub fn load_model(gguf: Gguf) -> Result<LoadedModel, LoadError> {
    let md = &gguf.file.metadata;
    let arch = md
        .get_str("general.architecture")
        .ok_or_else(|| LoadError::MissingKey {
            key: "general.architecture".into(),
        })?
        .to_string();
    let Some(architecture) = Architecture::parse(&arch) else {
        return Err(LoadError::Architecture { found: arch });
    };
    let m = Meta {
        gguf: &gguf,
        arch: &arch,
    };
    let FileConfig {
        config,
        context_length,
        mut warnings,
    } = file_config(&m, architecture)?;
    warnings.extend(ignored_features(&m)?);
    let layers = (0..config.n_layers)
        .map(|i| layer_weights(&gguf, &config, i))
        .collect::<Result<Vec<_>, LoadError>>()?;
    let (dim, vocab) = (config.dim, config.vocab);
    let token_embd = matrix(&gguf, "token_embd.weight", vocab, dim)?;
    let output = if config.tied_embeddings {
        None
    } else {
        Some(matrix(&gguf, "output.weight", vocab, dim)?)
    };
    let output_norm = vector(&gguf, "output_norm.weight", dim)?;
    let info = ModelInfo {
        name: model_name(&gguf),
        architecture: arch,
        context_length,
        formats: tensor_formats(&gguf),
        file_bytes: gguf.file.file_size,
        warnings,
    };
    let weights = ModelWeights {
        config,
        name: info.name.clone(),
        token_embd,
        output,
        output_norm,
        layers,
    };
    Ok(LoadedModel {
        gguf,
        weights,
        info,
    })
}

/// The model's shape as the file's metadata gives it, its training context, and what
/// it asks for that the decoders leave out.
struct FileConfig {
    config: LlamaConfig,
    context_length: u32,
    warnings: Vec<String>,
}

/// The head size: `attention.key_length`, else the width over the heads.
fn head_dim(m: &Meta, dim: u32, n_heads: u32) -> Result<u32, LoadError> {
    let head_dim = match m.u32_opt("attention.key_length")? {
        Some(k) => k,
        None if dim.is_multiple_of(n_heads) => dim / n_heads,
        None => {
            return Err(LoadError::BadKey {
                key: m.key("attention.head_count"),
                found: n_heads.to_string(),
                why: format!(
                    "does not divide embedding_length {dim} and attention.key_length is absent"
                ),
            })
        }
    };
    if let Some(v) = m.u32_opt("attention.value_length")? {
        if v != head_dim {
            return Err(LoadError::Config(format!(
                "attention.value_length {v} differs from key_length {head_dim}"
            )));
        }
    }
    Ok(head_dim)
}

/// The shape from the architecture's metadata keys and the embedding table's size,
/// checked (head sizes that do not divide, widths that overflow, a bad table).
fn file_config(m: &Meta, architecture: Architecture) -> Result<FileConfig, LoadError> {
    let n_layers = m.u32("block_count")?;
    let dim = m.u32("embedding_length")?;
    let n_heads = m.u32("attention.head_count")?;
    let n_kv_heads = m.u32_opt("attention.head_count_kv")?.unwrap_or(n_heads);
    let head_dim = head_dim(m, dim, n_heads)?;
    // Widths multiply (heads × head size); hostile metadata must not overflow them.
    for (what, heads) in [
        ("attention.head_count", n_heads),
        ("attention.head_count_kv", n_kv_heads),
    ] {
        if heads.checked_mul(head_dim).is_none() {
            return Err(LoadError::BadKey {
                key: m.key(what),
                found: heads.to_string(),
                why: format!("times head size {head_dim} overflows"),
            });
        }
    }
    let ffn_dim = m.u32("feed_forward_length")?;
    let context_length = m.u32_opt("context_length")?.unwrap_or(2048);
    let embd = info(m.gguf, "token_embd.weight")?;
    let vocab = match embd.dims.as_slice() {
        [d, v] if *d == dim as u64 && *v > 0 && *v <= u32::MAX as u64 => *v as u32,
        _ => {
            return Err(LoadError::Shape {
                name: embd.name.clone(),
                found: embd.dims.clone(),
                expected: vec![dim as u64, 0],
            })
        }
    };
    let mut warnings = Vec::new();
    let config = LlamaConfig {
        n_layers,
        dim,
        n_heads,
        n_kv_heads,
        head_dim,
        ffn_dim,
        vocab,
        rope_base: m.f32_or("rope.freq_base", 10000.0)?,
        rope_dims: m.u32_opt("rope.dimension_count")?.unwrap_or(head_dim),
        rms_eps: m.f32_or("attention.layer_norm_rms_epsilon", 1e-5)?,
        tied_embeddings: m.gguf.file.tensor("output.weight").is_none(),
        arch: features::features(m, architecture, n_layers, &mut warnings)?,
    };
    config.validate().map_err(LoadError::Config)?;
    Ok(FileConfig {
        config,
        context_length,
        warnings,
    })
}

/// Warnings for what the file asks that the decoder does not do (rope scaling), and
/// errors for what would make every token wrong (Phi-3's LongRoPE factors, an output
/// bias).
fn ignored_features(m: &Meta) -> Result<Vec<String>, LoadError> {
    let mut warnings = Vec::new();
    if m.gguf.file.tensor("rope_freqs.weight").is_some() {
        warnings.push("rope_freqs.weight (Llama 3.1-style rope frequency scaling) is ignored: long-range positions will be off".into());
    }
    if let Some(s) = m
        .gguf
        .file
        .metadata
        .get_str(&m.key("rope.scaling.type"))
        .filter(|s| *s != "none")
    {
        // Linear scaling (Gemma 3 4B and larger on their full-attention layers) turns
        // every position's angles, not only those past the original context.
        let factor = m
            .gguf
            .file
            .metadata
            .get_f32(&m.key("rope.scaling.factor"))
            .unwrap_or(1.0);
        if s == "linear" && factor != 1.0 {
            return Err(LoadError::Unsupported {
                arch: m.arch.to_string(),
                what: format!(
                    "{} \"linear\" with {} {factor} (it scales every position's rope angles)",
                    m.key("rope.scaling.type"),
                    m.key("rope.scaling.factor")
                ),
            });
        }
        warnings.push(format!(
            "rope scaling {s:?} is ignored: positions beyond the original context will be off"
        ));
    }
    for name in [
        "rope_factors_short.weight",
        "rope_factors_long.weight",
        "output.bias",
    ] {
        if m.gguf.file.tensor(name).is_some()
            || m.gguf.file.tensor(&format!("blk.0.{name}")).is_some()
        {
            return Err(LoadError::Unsupported {
                arch: m.arch.to_string(),
                what: format!("tensor {name}"),
            });
        }
    }
    Ok(warnings)
}

/// Layer `i`'s norms and matrices, each checked against the shape; fused tensors split.
fn layer_weights(gguf: &Gguf, config: &LlamaConfig, i: u32) -> Result<LayerWeights, LoadError> {
    let (dim, ffn_dim) = (config.dim, config.ffn_dim);
    let (q, kv) = (config.q_dim(), config.kv_dim());
    let b = |n: &str| format!("blk.{i}.{n}.weight");
    let (wq, wk, wv) = if config.arch.fused_qkv {
        let qkv = matrix(gguf, &b("attn_qkv"), q + 2 * kv, dim)?;
        (
            qkv.rows_view(&b("attn_qkv[q]"), 0, q),
            qkv.rows_view(&b("attn_qkv[k]"), q, kv),
            qkv.rows_view(&b("attn_qkv[v]"), q + kv, kv),
        )
    } else {
        (
            matrix(gguf, &b("attn_q"), q, dim)?,
            matrix(gguf, &b("attn_k"), kv, dim)?,
            matrix(gguf, &b("attn_v"), kv, dim)?,
        )
    };
    let (w_gate, w_up) = if config.arch.fused_gate_up {
        let gate_up = matrix(gguf, &b("ffn_up"), 2 * ffn_dim, dim)?;
        (
            gate_up.rows_view(&b("ffn_up[gate]"), 0, ffn_dim),
            gate_up.rows_view(&b("ffn_up[up]"), ffn_dim, ffn_dim),
        )
    } else {
        (
            matrix(gguf, &b("ffn_gate"), ffn_dim, dim)?,
            matrix(gguf, &b("ffn_up"), ffn_dim, dim)?,
        )
    };
    Ok(LayerWeights {
        attn_norm: vector(gguf, &b("attn_norm"), dim)?,
        wq,
        wk,
        wv,
        wo: matrix(gguf, &b("attn_output"), dim, q)?,
        ffn_norm: vector(gguf, &b("ffn_norm"), dim)?,
        w_gate,
        w_up,
        w_down: matrix(gguf, &b("ffn_down"), dim, ffn_dim)?,
        extra: layer_extras(gguf, config, i)?,
    })
}

/// Layer `i`'s biases and extra norms, as the architecture has them.
fn layer_extras(gguf: &Gguf, c: &LlamaConfig, i: u32) -> Result<LayerExtras, LoadError> {
    let a = &c.arch;
    let name = |n: &str| format!("blk.{i}.{n}");
    let norm = |on: bool, n: &str, len: u32| -> Result<Option<Vec<f32>>, LoadError> {
        on.then(|| vector(gguf, &name(&format!("{n}.weight")), len))
            .transpose()
    };
    let qkv_bias = if !a.qkv_bias {
        None
    } else if gguf.file.tensor(&name("attn_qkv.bias")).is_some() {
        Some(vector(
            gguf,
            &name("attn_qkv.bias"),
            c.q_dim() + 2 * c.kv_dim(),
        )?)
    } else {
        let mut v = vector(gguf, &name("attn_q.bias"), c.q_dim())?;
        v.extend(vector(gguf, &name("attn_k.bias"), c.kv_dim())?);
        v.extend(vector(gguf, &name("attn_v.bias"), c.kv_dim())?);
        Some(v)
    };
    Ok(LayerExtras {
        qkv_bias,
        q_norm: norm(a.qk_norm, "attn_q_norm", c.head_dim)?,
        k_norm: norm(a.qk_norm, "attn_k_norm", c.head_dim)?,
        post_attn_norm: norm(a.post_norms, "post_attention_norm", c.dim)?,
        post_ffn_norm: norm(a.post_norms, "post_ffw_norm", c.dim)?,
    })
}

/// `general.name`, else the file's stem.
fn model_name(gguf: &Gguf) -> String {
    gguf.file
        .metadata
        .get_str("general.name")
        .map(str::to_string)
        .or_else(|| {
            gguf.path
                .as_ref()
                .and_then(|p| p.file_stem())
                .map(|s| s.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "unnamed model".into())
}

/// The tensors' formats with their counts, most used first: `q4_1 ×169, f32 ×61`.
fn tensor_formats(gguf: &Gguf) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &gguf.file.tensors {
        *counts.entry(t.ggml_type.name).or_default() += 1;
    }
    let mut counts: Vec<_> = counts.into_iter().collect();
    counts.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    counts
        .iter()
        .map(|(f, n)| format!("{f} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}
