//! The CPU reference decoder: the same graph as the GPU decoder, op by op, through each
//! op's CPU oracle, for every architecture ([`crate::ArchFeatures`]). It exists to check
//! the GPU path, not to be fast. Generic over the arithmetic: `f32` like the kernels
//! ([`CpuDecoder::new`]), `f64` for exact arithmetic ([`CpuDecoder::with_precision`]).

use gpuscope_ops::add::Add;
use gpuscope_ops::argmax::Argmax;
use gpuscope_ops::attention::{AttnScores, AttnValues};
use gpuscope_ops::embedding::Embedding;
use gpuscope_ops::gelu_mul::GeluMul;
use gpuscope_ops::gemv::Gemv;
use gpuscope_ops::head_norm::HeadNorm;
use gpuscope_ops::rms_norm::RmsNorm;
use gpuscope_ops::silu_mul::SiluMul;
use gpuscope_ops::softmax::Softmax;
use gpuscope_ops::Real;
use rayon::prelude::*;

use crate::arch::Activation;
use crate::config::LlamaConfig;
use crate::error::ModelError;
use crate::weights::{LayerWeights, ModelWeights, Tensor};

/// What one CPU step produced.
pub struct CpuStep<T = f32> {
    pub token: u32,
    pub logits: Vec<T>,
}

pub struct CpuDecoder<'w, T = f32> {
    weights: &'w ModelWeights,
    max_ctx: u32,
    position: u32,
    k_cache: Vec<Vec<T>>,
    v_cache: Vec<Vec<T>>,
}

/// Rows of a gemv each parallel task takes.
const GEMV_ROWS_PER_TASK: usize = 256;

/// `y = W·x` through the gemv oracle, row blocks in parallel (each row's dot product is
/// the oracle's, so the result does not depend on the split).
fn gemv<T: Real>(t: &Tensor, x: &[T], y: &mut [T]) {
    let row_bytes = t.row_bytes();
    y[..t.rows as usize]
        .par_chunks_mut(GEMV_ROWS_PER_TASK)
        .enumerate()
        .for_each(|(i, out)| {
            let first = i * GEMV_ROWS_PER_TASK;
            Gemv {
                rows: out.len() as u32,
                cols: t.cols,
                format: t.format,
                out_offset: 0,
                layout: gpuscope_ops::gemv::WeightLayout::Gguf,
            }
            .cpu(
                &t.data[first * row_bytes..][..out.len() * row_bytes],
                x,
                out,
            );
        });
}

fn widen<T: Real>(v: &[f32]) -> Vec<T> {
    v.iter().map(|&x| T::of(x)).collect()
}

/// One step's vectors.
struct Scratch<T> {
    xn: Vec<T>,
    qkv: Vec<T>,
    scores: Vec<T>,
    attn: Vec<T>,
    delta: Vec<T>,
    normed: Vec<T>,
    gate: Vec<T>,
    up: Vec<T>,
    hidden: Vec<T>,
}

impl<T: Real> Scratch<T> {
    fn new(c: &LlamaConfig, max_ctx: u32) -> Scratch<T> {
        let z = |n: u32| vec![T::zero(); n as usize];
        Scratch {
            xn: z(c.dim),
            qkv: z(c.q_dim() + 2 * c.kv_dim()),
            scores: z(c.n_heads * max_ctx),
            attn: z(c.q_dim()),
            delta: z(c.dim),
            normed: z(c.dim),
            gate: z(c.ffn_dim),
            up: z(c.ffn_dim),
            hidden: z(c.ffn_dim),
        }
    }
}

impl<'w> CpuDecoder<'w, f32> {
    /// The f32 decoder (the kernels' arithmetic).
    pub fn new(weights: &'w ModelWeights, max_ctx: u32) -> Result<CpuDecoder<'w, f32>, ModelError> {
        CpuDecoder::with_precision(weights, max_ctx)
    }
}

impl<'w, T: Real> CpuDecoder<'w, T> {
    /// A decoder computing in `T` (`f64`: the exact-arithmetic reference).
    pub fn with_precision(
        weights: &'w ModelWeights,
        max_ctx: u32,
    ) -> Result<CpuDecoder<'w, T>, ModelError> {
        let c = &weights.config;
        c.validate().map_err(ModelError::Config)?;
        // The CPU ops index the cache with u32 (as the kernels do).
        let too_large = ModelError::KvCacheTooLarge {
            positions: max_ctx,
            bytes: u64::from(c.kv_dim()) * 4 * u64::from(max_ctx),
            limit: u64::from(u32::MAX) * 4,
            limit_name: "the CPU reference's 32-bit indexing",
            fits: u64::from(u32::MAX / c.kv_dim().max(1)),
        };
        let cache = |i: u32| {
            c.kv_dim()
                .checked_mul(c.kv_rows_at(i, max_ctx))
                .map(|n| vec![T::zero(); n as usize])
        };
        let k_cache = (0..c.n_layers).map(cache).collect::<Option<Vec<_>>>();
        let k_cache = k_cache.ok_or(too_large)?;
        Ok(CpuDecoder {
            weights,
            max_ctx,
            position: 0,
            v_cache: k_cache.clone(),
            k_cache,
        })
    }

    pub fn position(&self) -> u32 {
        self.position
    }

    /// Decodes `token` at the next position and returns the logits and greedy token.
    pub fn step(&mut self, token: u32) -> Result<CpuStep<T>, ModelError> {
        let w = self.weights;
        let c = &w.config;
        if self.position >= self.max_ctx {
            return Err(ModelError::ContextFull {
                max_ctx: self.max_ctx,
            });
        }
        if token >= c.vocab {
            return Err(ModelError::Config(format!(
                "token {token} is outside the vocabulary ({})",
                c.vocab
            )));
        }
        let mut x = vec![T::zero(); c.dim as usize];
        Embedding {
            rows: w.token_embd.rows,
            dim: c.dim,
            format: w.token_embd.format,
            row_start: 0,
        }
        .cpu_scaled(
            &w.token_embd.data,
            token,
            &mut x,
            c.embed_scale().unwrap_or(1.0),
        );
        let mut s = Scratch::new(c, self.max_ctx);
        for (i, l) in w.layers.iter().enumerate() {
            self.attention_block(i, l, &mut x, &mut s);
            self.ffn_block(l, &mut x, &mut s);
        }
        let rms = RmsNorm {
            n: c.dim,
            eps: c.rms_eps,
        };
        rms.cpu(&x, &widen(&w.output_norm), &mut s.xn);
        let mut logits = vec![T::zero(); c.vocab as usize];
        gemv(w.output(), &s.xn, &mut logits);
        let token = Argmax { n: c.vocab }.cpu(&logits);
        self.position += 1;
        Ok(CpuStep { token, logits })
    }

    /// The norm, q/k/v (biases, head norms), rope and the cache store, attention, the
    /// output projection (its norm) and the residual add.
    fn attention_block(&mut self, i: usize, l: &LayerWeights, x: &mut [T], s: &mut Scratch<T>) {
        let c = &self.weights.config;
        let (pos, layer) = (self.position, i as u32);
        let (q_dim, kv_dim) = (c.q_dim() as usize, c.kv_dim() as usize);
        let rms = RmsNorm {
            n: c.dim,
            eps: c.rms_eps,
        };
        rms.cpu(x, &widen(&l.attn_norm), &mut s.xn);
        gemv(&l.wq, &s.xn, &mut s.qkv[..q_dim]);
        gemv(&l.wk, &s.xn, &mut s.qkv[q_dim..q_dim + kv_dim]);
        gemv(&l.wv, &s.xn, &mut s.qkv[q_dim + kv_dim..]);
        if let Some(b) = &l.extra.qkv_bias {
            Add { n: b.len() as u32 }.cpu(&mut s.qkv, &widen(b));
        }
        if let (Some(qn), Some(kn)) = (&l.extra.q_norm, &l.extra.k_norm) {
            let op = HeadNorm {
                n_heads: c.n_heads,
                n_kv_heads: c.n_kv_heads,
                head_dim: c.head_dim,
                q_off: 0,
                k_off: c.q_dim(),
                eps: c.rms_eps,
            };
            op.cpu(&mut s.qkv, &widen(qn), &widen(kn));
        }
        let rope = c.rope_at(layer, self.max_ctx);
        let (q, kv) = s.qkv.split_at_mut(q_dim);
        let (k, v) = kv.split_at(kv_dim);
        rope.cpu(pos, q, k, v, &mut self.k_cache[i], &mut self.v_cache[i]);
        let rows = rope.max_ctx;
        // A ring holds every position it attends to once it is full.
        let n_ctx = (pos + 1).min(rows);
        let (n_heads, n_kv_heads, head_dim) = (c.n_heads, c.n_kv_heads, c.head_dim);
        AttnScores {
            n_heads,
            n_kv_heads,
            head_dim,
            max_ctx: rows,
        }
        .cpu(n_ctx, q, &self.k_cache[i], &mut s.scores);
        Softmax {
            rows: n_heads,
            row_stride: rows,
        }
        .cpu(n_ctx, &mut s.scores);
        AttnValues {
            n_heads,
            n_kv_heads,
            head_dim,
            max_ctx: rows,
        }
        .cpu(n_ctx, &s.scores, &self.v_cache[i], &mut s.attn);
        gemv(&l.wo, &s.attn, &mut s.delta);
        self.residual(x, s, l.extra.post_attn_norm.as_deref());
    }

    /// x += delta, or x += rms_norm(delta)·w with a post-norm.
    fn residual(&self, x: &mut [T], s: &mut Scratch<T>, post_norm: Option<&[f32]>) {
        let c = &self.weights.config;
        let add = Add { n: c.dim };
        match post_norm {
            Some(w) => {
                let rms = RmsNorm {
                    n: c.dim,
                    eps: c.rms_eps,
                };
                rms.cpu(&s.delta, &widen(w), &mut s.normed);
                add.cpu(x, &s.normed);
            }
            None => add.cpu(x, &s.delta),
        }
    }

    /// The norm, gate and up, the activation, down (its norm) and the residual add.
    fn ffn_block(&self, l: &LayerWeights, x: &mut [T], s: &mut Scratch<T>) {
        let c = &self.weights.config;
        let rms = RmsNorm {
            n: c.dim,
            eps: c.rms_eps,
        };
        rms.cpu(x, &widen(&l.ffn_norm), &mut s.xn);
        gemv(&l.w_gate, &s.xn, &mut s.gate);
        gemv(&l.w_up, &s.xn, &mut s.up);
        match c.arch.activation {
            Activation::Silu => SiluMul { n: c.ffn_dim }.cpu(&s.gate, &s.up, &mut s.hidden),
            Activation::GeluTanh => GeluMul { n: c.ffn_dim }.cpu(&s.gate, &s.up, &mut s.hidden),
        }
        gemv(&l.w_down, &s.hidden, &mut s.delta);
        self.residual(x, s, l.extra.post_ffn_norm.as_deref());
    }
}
