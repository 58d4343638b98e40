//! The CPU reference decoder: the same graph as the GPU decoder, op by op, through each
//! op's CPU oracle. It exists to check the GPU path, not to be fast.

use gpuscope_ops::add::Add;
use gpuscope_ops::argmax::Argmax;
use gpuscope_ops::attention::{AttnScores, AttnValues};
use gpuscope_ops::embedding::Embedding;
use gpuscope_ops::gemv::Gemv;
use gpuscope_ops::rms_norm::RmsNorm;
use gpuscope_ops::silu_mul::SiluMul;
use gpuscope_ops::softmax::Softmax;

use crate::error::ModelError;
use crate::weights::{ModelWeights, Tensor};

/// What one CPU step produced.
pub struct CpuStep {
    pub token: u32,
    pub logits: Vec<f32>,
}

pub struct CpuDecoder<'w> {
    weights: &'w ModelWeights,
    max_ctx: u32,
    position: u32,
    k_cache: Vec<Vec<f32>>,
    v_cache: Vec<Vec<f32>>,
}

fn gemv(t: &Tensor, x: &[f32], y: &mut [f32]) {
    Gemv {
        rows: t.rows,
        cols: t.cols,
        format: t.format,
        out_offset: 0,
        layout: gpuscope_ops::gemv::WeightLayout::Gguf,
    }
    .cpu(&t.data, x, y);
}

impl<'w> CpuDecoder<'w> {
    pub fn new(weights: &'w ModelWeights, max_ctx: u32) -> Result<CpuDecoder<'w>, ModelError> {
        let c = &weights.config;
        c.validate().map_err(ModelError::Config)?;
        // The CPU ops index the cache with u32 (as the kernels do).
        let kv = c
            .kv_dim()
            .checked_mul(max_ctx)
            .ok_or(ModelError::KvCacheTooLarge {
                positions: max_ctx,
                bytes: u64::from(c.kv_dim()) * 4 * u64::from(max_ctx),
                limit: u64::from(u32::MAX) * 4,
                limit_name: "the CPU reference's 32-bit indexing",
                fits: u64::from(u32::MAX / c.kv_dim().max(1)),
            })? as usize;
        Ok(CpuDecoder {
            weights,
            max_ctx,
            position: 0,
            k_cache: vec![vec![0.0; kv]; c.n_layers as usize],
            v_cache: vec![vec![0.0; kv]; c.n_layers as usize],
        })
    }

    pub fn position(&self) -> u32 {
        self.position
    }

    /// Decodes `token` at the next position and returns the logits and greedy token.
    pub fn step(&mut self, token: u32) -> Result<CpuStep, ModelError> {
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
        let pos = self.position;
        let n_ctx = pos + 1;
        let (dim, q_dim, kv_dim, ffn) = (
            c.dim as usize,
            c.q_dim() as usize,
            c.kv_dim() as usize,
            c.ffn_dim as usize,
        );
        let mut x = vec![0f32; dim];
        Embedding {
            rows: w.token_embd.rows,
            dim: c.dim,
            format: w.token_embd.format,
            row_start: 0,
        }
        .cpu(&w.token_embd.data, token, &mut x);
        let rms = RmsNorm {
            n: c.dim,
            eps: c.rms_eps,
        };
        let rope = c.rope(self.max_ctx);
        let scores_op = AttnScores {
            n_heads: c.n_heads,
            n_kv_heads: c.n_kv_heads,
            head_dim: c.head_dim,
            max_ctx: self.max_ctx,
        };
        let values_op = AttnValues {
            n_heads: c.n_heads,
            n_kv_heads: c.n_kv_heads,
            head_dim: c.head_dim,
            max_ctx: self.max_ctx,
        };
        let softmax = Softmax {
            rows: c.n_heads,
            row_stride: self.max_ctx,
        };
        let add = Add { n: c.dim };
        let (mut xn, mut q, mut k, mut v) = (
            vec![0f32; dim],
            vec![0f32; q_dim],
            vec![0f32; kv_dim],
            vec![0f32; kv_dim],
        );
        let mut scores = vec![0f32; (c.n_heads * self.max_ctx) as usize];
        let (mut attn, mut delta) = (vec![0f32; q_dim], vec![0f32; dim]);
        let (mut gate, mut up, mut hidden) = (vec![0f32; ffn], vec![0f32; ffn], vec![0f32; ffn]);
        for (i, l) in w.layers.iter().enumerate() {
            rms.cpu(&x, &l.attn_norm, &mut xn);
            gemv(&l.wq, &xn, &mut q);
            gemv(&l.wk, &xn, &mut k);
            gemv(&l.wv, &xn, &mut v);
            rope.cpu(
                pos,
                &mut q,
                &k,
                &v,
                &mut self.k_cache[i],
                &mut self.v_cache[i],
            );
            scores_op.cpu(n_ctx, &q, &self.k_cache[i], &mut scores);
            softmax.cpu(n_ctx, &mut scores);
            values_op.cpu(n_ctx, &scores, &self.v_cache[i], &mut attn);
            gemv(&l.wo, &attn, &mut delta);
            add.cpu(&mut x, &delta);
            rms.cpu(&x, &l.ffn_norm, &mut xn);
            gemv(&l.w_gate, &xn, &mut gate);
            gemv(&l.w_up, &xn, &mut up);
            SiluMul { n: c.ffn_dim }.cpu(&gate, &up, &mut hidden);
            gemv(&l.w_down, &hidden, &mut delta);
            add.cpu(&mut x, &delta);
        }
        rms.cpu(&x, &w.output_norm, &mut xn);
        let mut logits = vec![0f32; c.vocab as usize];
        gemv(w.output(), &xn, &mut logits);
        let token = Argmax { n: c.vocab }.cpu(&logits);
        self.position += 1;
        Ok(CpuStep { token, logits })
    }
}
