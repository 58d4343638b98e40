//! Llama-family model shapes, and the presets gpuscope can synthesize.

/// The shape of a Llama-family decoder.
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
}

/// A named model shape for synthetic runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// Two layers of toy size: fast tests.
    Tiny,
    /// SmolLM2-135M's exact shape.
    Smollm2_135m,
    /// Llama-3.2-1B's shape.
    Llama1b,
    /// Llama-3.1-8B's shape.
    Llama8b,
}

impl Preset {
    pub const ALL: [Preset; 4] = [
        Preset::Tiny,
        Preset::Smollm2_135m,
        Preset::Llama1b,
        Preset::Llama8b,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Tiny => "tiny",
            Preset::Smollm2_135m => "smollm2-135m",
            Preset::Llama1b => "llama-1b",
            Preset::Llama8b => "llama-8b",
        }
    }

    pub fn parse(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == name)
    }

    pub fn config(self) -> LlamaConfig {
        match self {
            Preset::Tiny => LlamaConfig {
                n_layers: 2,
                dim: 128,
                n_heads: 4,
                n_kv_heads: 2,
                head_dim: 32,
                ffn_dim: 256,
                vocab: 512,
                rope_base: 10000.0,
                rope_dims: 32,
                rms_eps: 1e-5,
                tied_embeddings: true,
            },
            // From SmolLM2-135M-Instruct's GGUF metadata.
            Preset::Smollm2_135m => LlamaConfig {
                n_layers: 30,
                dim: 576,
                n_heads: 9,
                n_kv_heads: 3,
                head_dim: 64,
                ffn_dim: 1536,
                vocab: 49152,
                rope_base: 100000.0,
                rope_dims: 64,
                rms_eps: 1e-5,
                tied_embeddings: true,
            },
            // From Llama-3.2-1B's config.json.
            Preset::Llama1b => LlamaConfig {
                n_layers: 16,
                dim: 2048,
                n_heads: 32,
                n_kv_heads: 8,
                head_dim: 64,
                ffn_dim: 8192,
                vocab: 128256,
                rope_base: 500000.0,
                rope_dims: 64,
                rms_eps: 1e-5,
                tied_embeddings: true,
            },
            // From Llama-3.1-8B's config.json.
            Preset::Llama8b => LlamaConfig {
                n_layers: 32,
                dim: 4096,
                n_heads: 32,
                n_kv_heads: 8,
                head_dim: 128,
                ffn_dim: 14336,
                vocab: 128256,
                rope_base: 500000.0,
                rope_dims: 128,
                rms_eps: 1e-5,
                tied_embeddings: false,
            },
        }
    }
}

impl LlamaConfig {
    pub fn q_dim(&self) -> u32 {
        self.n_heads * self.head_dim
    }

    pub fn kv_dim(&self) -> u32 {
        self.n_kv_heads * self.head_dim
    }

    /// The rope op of this shape over a KV cache of `max_ctx` rows.
    pub fn rope(&self, max_ctx: u32) -> gpuscope_ops::rope::Rope {
        gpuscope_ops::rope::Rope {
            n_heads: self.n_heads,
            n_kv_heads: self.n_kv_heads,
            head_dim: self.head_dim,
            rope_dims: self.rope_dims,
            base: self.rope_base,
            max_ctx,
        }
    }

    /// The fused attention op of this shape over a KV cache of `max_ctx` rows.
    pub fn attention(&self, max_ctx: u32) -> gpuscope_ops::attention::AttnFused {
        gpuscope_ops::attention::AttnFused {
            n_heads: self.n_heads,
            n_kv_heads: self.n_kv_heads,
            head_dim: self.head_dim,
            max_ctx,
        }
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
        let per_layer = d * q + 2 * d * kv + q * d + 3 * d * f + 2 * d;
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
