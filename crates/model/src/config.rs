//! Decoder shapes (the Llama family and the architectures that differ from it in a few
//! places: Gemma 3, Qwen2, Qwen3, Mistral, Phi-3), and the presets gpuscope can
//! synthesize.
//!
//! An architecture is data ([`ArchFeatures`]): which norms, biases, activation, rope
//! mode, attention window and rope base per layer it has. The decoders read those
//! features; nothing is copied per architecture.

pub use crate::arch::{Activation, ArchFeatures, Architecture};

/// The shape of a decoder, with its architecture's features.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaConfig {
    pub n_layers: u32,
    pub dim: u32,
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    pub ffn_dim: u32,
    pub vocab: u32,
    pub rope_base: f32,
    /// Dimensions of each head that rope rotates (GGUF `rope.dimension_count`).
    pub rope_dims: u32,
    pub rms_eps: f32,
    /// Output projection shares the token embedding table.
    pub tied_embeddings: bool,
    /// Where the architecture differs from Llama.
    pub arch: ArchFeatures,
}

impl LlamaConfig {
    pub fn q_dim(&self) -> u32 {
        self.n_heads * self.head_dim
    }

    pub fn kv_dim(&self) -> u32 {
        self.n_kv_heads * self.head_dim
    }

    /// The rope op of layer 0 over a KV cache of `max_ctx` rows ([`Self::rope_at`]).
    pub fn rope(&self, max_ctx: u32) -> gpuscope_ops::rope::Rope {
        self.rope_at(0, max_ctx)
    }

    /// The largest attention op over a KV cache of `max_ctx` rows: a full-attention
    /// layer's (what buffers shared by every layer are sized for).
    pub fn attention(&self, max_ctx: u32) -> gpuscope_ops::attention::AttnFused {
        gpuscope_ops::attention::AttnFused {
            n_heads: self.n_heads,
            n_kv_heads: self.n_kv_heads,
            head_dim: self.head_dim,
            max_ctx,
        }
    }

    /// The window of layer `layer`, when it has one narrower than `max_ctx`.
    pub fn window_at(&self, layer: u32, max_ctx: u32) -> Option<u32> {
        let w = self.arch.sliding_window;
        (self.arch.is_swa(layer) && w < max_ctx).then_some(w)
    }

    /// Rows of layer `layer`'s KV cache: the window (a ring, position `p` in row
    /// `p % window`) on windowed layers, else `max_ctx`. Attention reads every row it
    /// holds, which for a ring are exactly the window's positions.
    pub fn kv_rows_at(&self, layer: u32, max_ctx: u32) -> u32 {
        self.window_at(layer, max_ctx).unwrap_or(max_ctx)
    }

    /// Layer `layer`'s rope base: the windowed layers' own where the architecture has one.
    pub fn rope_base_at(&self, layer: u32) -> f32 {
        match self.arch.rope_base_swa {
            Some(b) if self.arch.is_swa(layer) => b,
            _ => self.rope_base,
        }
    }

    /// Layer `layer`'s rope op (its base, the architecture's mode) and KV-cache store
    /// over the layer's cache ([`Self::kv_rows_at`]).
    pub fn rope_at(&self, layer: u32, max_ctx: u32) -> gpuscope_ops::rope::Rope {
        gpuscope_ops::rope::Rope {
            n_heads: self.n_heads,
            n_kv_heads: self.n_kv_heads,
            head_dim: self.head_dim,
            rope_dims: self.rope_dims,
            base: self.rope_base_at(layer),
            max_ctx: self.kv_rows_at(layer, max_ctx),
            neox: self.arch.rope_neox,
            ring: self.window_at(layer, max_ctx).is_some(),
        }
    }

    /// Layer `layer`'s attention op over its KV cache ([`Self::kv_rows_at`]).
    pub fn attention_at(&self, layer: u32, max_ctx: u32) -> gpuscope_ops::attention::AttnFused {
        self.attention(self.kv_rows_at(layer, max_ctx))
    }

    /// The factor embeddings are multiplied by: √dim in f32 (llama.cpp's `sqrtf(n_embd)`)
    /// where the architecture scales them.
    pub fn embed_scale(&self) -> Option<f32> {
        self.arch.embed_scale.then(|| (self.dim as f32).sqrt())
    }

    /// Parameters in the weight matrices, embeddings and norms.
    pub fn params(&self) -> u64 {
        let (d, q, kv, f, v) = (
            self.dim as u64,
            self.q_dim() as u64,
            self.kv_dim() as u64,
            self.ffn_dim as u64,
            self.vocab as u64,
        );
        let a = &self.arch;
        let mut per_layer = d * q + 2 * d * kv + q * d + 3 * d * f + 2 * d;
        if a.qkv_bias {
            per_layer += q + 2 * kv;
        }
        if a.qk_norm {
            per_layer += 2 * self.head_dim as u64;
        }
        if a.post_norms {
            per_layer += 2 * d;
        }
        let output = if self.tied_embeddings { 0 } else { v * d };
        v * d + output + self.n_layers as u64 * per_layer + d
    }

    /// Checks the invariants the kernels rely on.
    pub fn validate(&self) -> Result<(), String> {
        if self.n_kv_heads == 0 || !self.n_heads.is_multiple_of(self.n_kv_heads) {
            return Err(format!(
                "n_heads ({}) must be a multiple of n_kv_heads ({})",
                self.n_heads, self.n_kv_heads
            ));
        }
        if self.rope_dims > self.head_dim || !self.rope_dims.is_multiple_of(2) {
            return Err(format!(
                "rope_dims ({}) must be even and at most head_dim ({})",
                self.rope_dims, self.head_dim
            ));
        }
        for (name, v) in [
            ("dim", self.dim),
            ("q_dim", self.q_dim()),
            ("ffn_dim", self.ffn_dim),
        ] {
            if v % 32 != 0 {
                return Err(format!(
                    "{name} ({v}) must be a multiple of 32 (the quant block size)"
                ));
            }
        }
        Ok(())
    }
}
