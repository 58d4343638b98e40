//! The named model shapes gpuscope can synthesize (`--preset`): real models' shapes and
//! tiny ones for tests, each with its architecture's features.

use crate::arch::{ArchFeatures, Architecture};
use crate::config::LlamaConfig;

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
    /// Gemma 3 270M's shape (its GGUF file's metadata).
    Gemma3_270m,
    /// Qwen2.5-0.5B's shape.
    Qwen25_05b,
    /// Qwen3-0.6B's shape.
    Qwen3_06b,
    /// Mistral-7B-v0.1's shape (sliding window 4096).
    Mistral7b,
    /// Phi-3-mini-4k's shape.
    Phi3Mini,
    /// Toy sizes of each other architecture, with its features (fast tests): a window
    /// of 4 positions where the architecture has one.
    TinyGemma3,
    TinyQwen2,
    TinyQwen3,
    TinyMistral,
    TinyPhi3,
}

impl Preset {
    pub const ALL: [Preset; 14] = [
        Preset::Tiny,
        Preset::Smollm2_135m,
        Preset::Llama1b,
        Preset::Llama8b,
        Preset::Gemma3_270m,
        Preset::Qwen25_05b,
        Preset::Qwen3_06b,
        Preset::Mistral7b,
        Preset::Phi3Mini,
        Preset::TinyGemma3,
        Preset::TinyQwen2,
        Preset::TinyQwen3,
        Preset::TinyMistral,
        Preset::TinyPhi3,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Tiny => "tiny",
            Preset::Smollm2_135m => "smollm2-135m",
            Preset::Llama1b => "llama-1b",
            Preset::Llama8b => "llama-8b",
            Preset::Gemma3_270m => "gemma3-270m",
            Preset::Qwen25_05b => "qwen2.5-0.5b",
            Preset::Qwen3_06b => "qwen3-0.6b",
            Preset::Mistral7b => "mistral-7b",
            Preset::Phi3Mini => "phi3-mini",
            Preset::TinyGemma3 => "tiny-gemma3",
            Preset::TinyQwen2 => "tiny-qwen2",
            Preset::TinyQwen3 => "tiny-qwen3",
            Preset::TinyMistral => "tiny-mistral",
            Preset::TinyPhi3 => "tiny-phi3",
        }
    }

    pub fn parse(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == name)
    }

    pub fn config(self) -> LlamaConfig {
        match self {
            Preset::Tiny => tiny(Architecture::Llama),
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
                arch: ArchFeatures::default(),
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
                arch: ArchFeatures::default(),
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
                arch: ArchFeatures::default(),
            },
            Preset::Gemma3_270m
            | Preset::Qwen25_05b
            | Preset::Qwen3_06b
            | Preset::Mistral7b
            | Preset::Phi3Mini => real(self),
            Preset::TinyGemma3 => tiny(Architecture::Gemma3),
            Preset::TinyQwen2 => tiny(Architecture::Qwen2),
            Preset::TinyQwen3 => tiny(Architecture::Qwen3),
            Preset::TinyMistral => tiny(Architecture::Mistral),
            Preset::TinyPhi3 => tiny(Architecture::Phi3),
        }
    }
}

/// Two layers of toy size with `arch`'s features (a window of 4 where it has one; Gemma 3
/// with 3 layers, so that one is a full-attention layer with its own rope base: 10 000 on
/// the windowed layers, 1 000 000 on the full one, as the real model).
pub fn tiny(arch: Architecture) -> LlamaConfig {
    let mut features = arch.features();
    let mut n_layers = 2;
    let mut rope_base = 10000.0;
    match arch {
        Architecture::Gemma3 => {
            features.sliding_window = 4;
            features.swa_pattern = 3;
            n_layers = 3;
            rope_base = 1_000_000.0;
        }
        Architecture::Mistral => features.sliding_window = 4,
        _ => {}
    }
    LlamaConfig {
        n_layers,
        dim: 128,
        n_heads: 4,
        n_kv_heads: 2,
        head_dim: 32,
        ffn_dim: 256,
        vocab: 512,
        rope_base,
        rope_dims: 32,
        rms_eps: 1e-5,
        tied_embeddings: arch != Architecture::Phi3,
        arch: features,
    }
}

/// The preset's shape, from each model's GGUF metadata or `config.json`.
///
/// # Panics
/// For a preset that is not one of these architectures' real shapes.
fn real(preset: Preset) -> LlamaConfig {
    let shape =
        |arch: Architecture, n_layers, dim, (n_heads, n_kv_heads, head_dim), ffn_dim, vocab| {
            LlamaConfig {
                n_layers,
                dim,
                n_heads,
                n_kv_heads,
                head_dim,
                ffn_dim,
                vocab,
                rope_base: 1_000_000.0,
                rope_dims: head_dim,
                rms_eps: 1e-6,
                tied_embeddings: true,
                arch: arch.features(),
            }
        };
    match preset {
        // gemma-3-270m-q4_k_m.gguf: window 512 on 5 layers of 6, rope bases 1e6 / 1e4.
        Preset::Gemma3_270m => {
            let mut c = shape(Architecture::Gemma3, 18, 640, (4, 1, 256), 2048, 262_144);
            c.arch.sliding_window = 512;
            c
        }
        // Qwen2.5-0.5B's config.json.
        Preset::Qwen25_05b => shape(Architecture::Qwen2, 24, 896, (14, 2, 64), 4864, 151_936),
        // Qwen3-0.6B's config.json.
        Preset::Qwen3_06b => shape(Architecture::Qwen3, 28, 1024, (16, 8, 128), 3072, 151_936),
        // Mistral-7B-v0.1's config.json: a window of 4096 on every layer.
        Preset::Mistral7b => {
            let mut c = shape(Architecture::Mistral, 32, 4096, (32, 8, 128), 14336, 32000);
            c.rope_base = 10_000.0;
            c.rms_eps = 1e-5;
            c.tied_embeddings = false;
            c.arch.sliding_window = 4096;
            c
        }
        // Phi-3-mini-4k-instruct's config.json (its window of 2047 is ignored, as
        // llama.cpp does).
        Preset::Phi3Mini => {
            let mut c = shape(Architecture::Phi3, 32, 3072, (32, 32, 96), 8192, 32064);
            c.rope_base = 10_000.0;
            c.rms_eps = 1e-5;
            c.tied_embeddings = false;
            c
        }
        other => panic!("{} is not an architecture preset", other.name()),
    }
}
