//! Synthetic weights: seeded random values with realistic scales, never zeros.
//!
//! Each tensor gets its own generator seeded from (seed, tensor name), so any backend
//! rebuilding the model gets the same bits, and rows are generated in parallel chunks.
//! Matrices are drawn from N(0, (0.5/sqrt(cols))²), which keeps activations O(1) through
//! the residual stream; norm weights from U(0.8, 1.2).

use gpuscope_ops::WeightFormat;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

use crate::config::LlamaConfig;
use crate::weights::{LayerExtras, LayerWeights, ModelWeights, Tensor};

/// Rows generated per parallel chunk (each chunk has its own seeded generator).
const ROWS_PER_CHUNK: u32 = 64;

fn seed_for(seed: u64, name: &str, chunk: u32) -> u64 {
    // FNV-1a over the name, mixed with the seed and chunk: stable across platforms.
    let mut h: u64 = 0xcbf29ce484222325 ^ seed.wrapping_mul(0x9E3779B97F4A7C15);
    for b in name.bytes().chain(chunk.to_le_bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// The format a tensor `cols` wide is stored in when `format` is asked for: `format`, or
/// where a row is not a whole number of its blocks (the K formats' 256 elements against
/// SmolLM2's dim 576 or Gemma 3 270M's 640) the fallback llama.cpp's quantizer takes
/// (`llama_tensor_get_type`): q4_K → q5_0, q5_K → q5_1, else q8_0. So a synthetic file
/// holds the formats the real file of that shape does (Gemma 3 270M Q4_K_M: 81 q5_0
/// tensors). The 32 elements of these blocks divide every width `LlamaConfig::validate`
/// accepts.
pub fn storage_format(format: WeightFormat, cols: u32) -> WeightFormat {
    if cols.is_multiple_of(format.block_elems()) {
        return format;
    }
    match format {
        WeightFormat::Q4_K => WeightFormat::Q5_0,
        WeightFormat::Q5_K => WeightFormat::Q5_1,
        _ => WeightFormat::Q8_0,
    }
}

/// A `rows × cols` matrix in `format` (or its [`storage_format`] fallback), values
/// ~ N(0, std²).
pub fn random_tensor(
    seed: u64,
    name: &str,
    format: WeightFormat,
    rows: u32,
    cols: u32,
    std: f32,
) -> Tensor {
    let format = storage_format(format, cols);
    let row_bytes = format
        .row_bytes(cols as u64)
        .expect("cols is a multiple of the block size") as usize;
    let mut data = vec![0u8; row_bytes * rows as usize];
    data.par_chunks_mut(row_bytes * ROWS_PER_CHUNK as usize)
        .enumerate()
        .for_each(|(chunk, out)| {
            let mut rng = SmallRng::seed_from_u64(seed_for(seed, name, chunk as u32));
            let normal = Normal::new(0.0f32, std).unwrap();
            let mut row = vec![0f32; cols as usize];
            for out_row in out.chunks_mut(row_bytes) {
                row.iter_mut().for_each(|v| *v = normal.sample(&mut rng));
                out_row.copy_from_slice(&format.quantize_row(&row));
            }
        });
    Tensor {
        name: name.to_string(),
        format,
        rows,
        cols,
        data: data.into(),
    }
}

fn norm_weights(seed: u64, name: &str, n: u32) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed_for(seed, name, 0));
    (0..n).map(|_| rng.random_range(0.8f32..1.2)).collect()
}

/// Biases ~ U(-0.02, 0.02).
fn bias_weights(seed: u64, name: &str, n: u32) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed_for(seed, name, 0));
    (0..n).map(|_| rng.random_range(-0.02f32..0.02)).collect()
}

/// The vectors layer `i` of `c`'s architecture adds (norms ~ U(0.8, 1.2), as the others;
/// Gemma's stand for its `1 + w`, as in its GGUF files).
fn layer_extras(c: &LlamaConfig, seed: u64, i: u32) -> LayerExtras {
    let a = &c.arch;
    let name = |n: &str| format!("blk.{i}.{n}.weight");
    let norm = |on: bool, n: &str, len: u32| on.then(|| norm_weights(seed, &name(n), len));
    LayerExtras {
        qkv_bias: a.qkv_bias.then(|| {
            bias_weights(
                seed,
                &format!("blk.{i}.attn_qkv.bias"),
                c.q_dim() + 2 * c.kv_dim(),
            )
        }),
        q_norm: norm(a.qk_norm, "attn_q_norm", c.head_dim),
        k_norm: norm(a.qk_norm, "attn_k_norm", c.head_dim),
        post_attn_norm: norm(a.post_norms, "post_attention_norm", c.dim),
        post_ffn_norm: norm(a.post_norms, "post_ffw_norm", c.dim),
    }
}

/// Synthetic weights of `config`'s shape with matrices (and embeddings) in `format`.
pub fn synthetic_weights(
    config: &LlamaConfig,
    format: WeightFormat,
    seed: u64,
    name: &str,
) -> ModelWeights {
    let c = config;
    let mat = |n: &str, rows: u32, cols: u32| {
        random_tensor(seed, n, format, rows, cols, 0.5 / (cols as f32).sqrt())
    };
    let layers = (0..c.n_layers)
        .map(|i| LayerWeights {
            attn_norm: norm_weights(seed, &format!("blk.{i}.attn_norm.weight"), c.dim),
            wq: mat(&format!("blk.{i}.attn_q.weight"), c.q_dim(), c.dim),
            wk: mat(&format!("blk.{i}.attn_k.weight"), c.kv_dim(), c.dim),
            wv: mat(&format!("blk.{i}.attn_v.weight"), c.kv_dim(), c.dim),
            wo: mat(&format!("blk.{i}.attn_output.weight"), c.dim, c.q_dim()),
            ffn_norm: norm_weights(seed, &format!("blk.{i}.ffn_norm.weight"), c.dim),
            w_gate: mat(&format!("blk.{i}.ffn_gate.weight"), c.ffn_dim, c.dim),
            w_up: mat(&format!("blk.{i}.ffn_up.weight"), c.ffn_dim, c.dim),
            w_down: mat(&format!("blk.{i}.ffn_down.weight"), c.dim, c.ffn_dim),
            extra: layer_extras(c, seed, i),
        })
        .collect();
    // Embedding rows ~ N(0, 0.05²), small next to what the layers add (as in trained
    // models): with tied embeddings a unit-scale row would dominate the residual stream
    // and greedy decoding would repeat the input token forever. Where the architecture
    // multiplies embeddings by √dim (Gemma), they are drawn √dim times smaller, so the
    // residual stream starts at the same scale.
    let embd_std = 0.05 / c.embed_scale().unwrap_or(1.0);
    let token_embd = random_tensor(seed, "token_embd.weight", format, c.vocab, c.dim, embd_std);
    let output = (!c.tied_embeddings).then(|| mat("output.weight", c.vocab, c.dim));
    ModelWeights {
        config: c.clone(),
        name: format!("{name} (synthetic, seed {seed})"),
        token_embd,
        output,
        output_norm: norm_weights(seed, "output_norm.weight", c.dim),
        layers,
    }
}
