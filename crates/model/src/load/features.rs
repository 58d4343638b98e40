//! An architecture's features as a file's metadata sets them: its sliding window, the
//! windowed layers' rope base, whether it has q/k/v biases; and the keys that would make
//! the decoders wrong if left out (logit soft-capping), refused by name.

use super::{LoadError, Meta};
use crate::arch::{ArchFeatures, Architecture};
use crate::gguf::{MetaArray, MetaValue};

/// `arch`'s features with what the file says about them (`warnings` gets what is
/// ignored as llama.cpp ignores it).
pub(super) fn features(
    m: &Meta,
    arch: Architecture,
    n_layers: u32,
    warnings: &mut Vec<String>,
) -> Result<ArchFeatures, LoadError> {
    let mut f = arch.features();
    let unsupported = |what: String| LoadError::Unsupported {
        arch: m.arch.to_string(),
        what,
    };
    for key in ["final_logit_softcapping", "attn_logit_softcapping"] {
        let value = m.gguf.file.metadata.get(&m.key(key));
        if value.is_some_and(|v| v.as_f32() != Some(0.0)) {
            return Err(unsupported(format!("{} (logit soft-capping)", m.key(key))));
        }
    }
    let window = window(m)?;
    match arch {
        Architecture::Llama | Architecture::Mistral => f.sliding_window = window,
        Architecture::Gemma3 => {
            if n_layers == 62 {
                // llama.cpp: Gemma 3 27B scales queries by 1/sqrt(dim / heads).
                return Err(unsupported(
                    "Gemma 3 27B's query scale 1/sqrt(embedding_length / head_count)".into(),
                ));
            }
            f.sliding_window = window;
            f.swa_pattern = swa_pattern(m, n_layers, f.swa_pattern)?;
            f.rope_base_swa = Some(m.f32_or("rope.freq_base_swa", 10_000.0)?);
        }
        Architecture::Qwen2 | Architecture::Qwen3 | Architecture::Phi3 if window > 0 => {
            warnings.push(format!(
                "{} = {window} is ignored, as llama.cpp ignores it for {}: every layer attends to the whole context",
                m.key("attention.sliding_window"),
                arch.name()
            ));
        }
        _ => {}
    }
    let file = &m.gguf.file;
    f.qkv_bias =
        file.tensor("blk.0.attn_q.bias").is_some() || file.tensor("blk.0.attn_qkv.bias").is_some();
    Ok(f)
}

/// `attention.sliding_window`, 0 when absent or 0.
fn window(m: &Meta) -> Result<u32, LoadError> {
    let key = m.key("attention.sliding_window");
    match m.gguf.file.metadata.get(&key) {
        None => Ok(0),
        Some(v) => v
            .as_u64()
            .and_then(|x| u32::try_from(x).ok())
            .ok_or_else(|| LoadError::BadKey {
                key,
                found: v.summary(),
                why: "expected a non-negative integer".into(),
            }),
    }
}

/// `attention.sliding_window_pattern`: a period `n` (every `n`-th layer attends to the
/// whole context), or one flag per layer that follows such a period; `default` when
/// absent (llama.cpp's `load_swa_pattern`).
fn swa_pattern(m: &Meta, n_layers: u32, default: u32) -> Result<u32, LoadError> {
    let key = m.key("attention.sliding_window_pattern");
    let bad = |v: &MetaValue, why: &str| LoadError::BadKey {
        key: key.clone(),
        found: v.summary(),
        why: why.into(),
    };
    match m.gguf.file.metadata.get(&key) {
        None => Ok(default),
        Some(v @ MetaValue::Array(MetaArray::Bool(flags))) => {
            if flags.len() != n_layers as usize {
                return Err(bad(v, "expected one flag per layer"));
            }
            // The period whose rule (`layer % n < n - 1` is windowed) gives these flags.
            (1..=n_layers.max(1))
                .find(|&n| {
                    flags
                        .iter()
                        .enumerate()
                        .all(|(i, &swa)| swa == ((i as u32) % n < n - 1))
                })
                .ok_or_else(|| {
                    bad(
                        v,
                        "per-layer windows that follow no period are not supported",
                    )
                })
        }
        Some(v) => v
            .as_u64()
            .and_then(|x| u32::try_from(x).ok())
            .ok_or_else(|| bad(v, "expected a layer period or one flag per layer")),
    }
}
