//! Architectures as data: where Gemma 3, Qwen2, Qwen3, Mistral and Phi-3 differ from
//! Llama, as llama.cpp builds each (`src/models/<arch>.cpp`).
//!
//! | architecture | differs from Llama in |
//! |---|---|
//! | `llama`, `mistral` | nothing; `attention.sliding_window` (Mistral 7B v0.1) windows every layer |
//! | `qwen2` | q/k/v biases; NeoX rope (rotating dims `i` and `i + rope_dims/2`) |
//! | `qwen3` | RMS norms of each q and k head; NeoX rope |
//! | `phi3` | q/k/v in one tensor, gate/up in one tensor (split at load); NeoX rope; its sliding window ignored, as llama.cpp does |
//! | `gemma3` | GeGLU (gelu-tanh); RMS norms after attention and after the FFN; q/k norms; embeddings times √dim; sliding window on 5 layers of 6 with rope base 10 000, full attention with the file's base on every sixth; NeoX rope |
//!
//! Gemma's norms multiply by `1 + w` in the original model; llama.cpp's converter adds
//! the 1 to every `*norm.weight` when it writes the GGUF (`Gemma3Model.norm_shift`), and
//! its graph multiplies by the stored weight, so the decoders here do too.

/// The architectures gpuscope maps (GGUF `general.architecture`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Architecture {
    Llama,
    Mistral,
    Qwen2,
    Qwen3,
    Phi3,
    Gemma3,
}

/// The feed-forward gate's activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// SwiGLU: silu(gate) · up.
    Silu,
    /// GeGLU with the tanh approximation of gelu (ggml's `ggml_gelu`).
    GeluTanh,
}

/// What an architecture adds to the Llama decoder.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchFeatures {
    pub architecture: Architecture,
    /// NeoX rope: pair `(i, i + rope_dims/2)` of a head turns, not `(2i, 2i + 1)`.
    pub rope_neox: bool,
    /// Biases after the q, k and v projections.
    pub qkv_bias: bool,
    /// An RMS norm over each q head and each k head, before rope.
    pub qk_norm: bool,
    /// RMS norms of the attention's and the FFN's outputs, before their residual adds.
    pub post_norms: bool,
    pub activation: Activation,
    /// Token embeddings times √dim.
    pub embed_scale: bool,
    /// Positions a windowed layer attends to, the current one included (0: none).
    pub sliding_window: u32,
    /// Every `swa_pattern`-th layer attends to the whole context (`layer % n == n - 1`);
    /// 0: every layer is windowed (when there is a window).
    pub swa_pattern: u32,
    /// The rope base of the windowed layers (`None`: the model's).
    pub rope_base_swa: Option<f32>,
    /// q/k/v stored as one `attn_qkv` tensor in GGUF files.
    pub fused_qkv: bool,
    /// gate/up stored as one `ffn_up` tensor of twice the rows (gate first).
    pub fused_gate_up: bool,
}

impl Architecture {
    pub const ALL: [Architecture; 6] = [
        Self::Llama,
        Self::Mistral,
        Self::Qwen2,
        Self::Qwen3,
        Self::Phi3,
        Self::Gemma3,
    ];

    /// The `general.architecture` value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Mistral => "mistral",
            Self::Qwen2 => "qwen2",
            Self::Qwen3 => "qwen3",
            Self::Phi3 => "phi3",
            Self::Gemma3 => "gemma3",
        }
    }

    pub fn parse(name: &str) -> Option<Architecture> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Every name, comma-separated (error messages).
    pub fn names() -> String {
        Self::ALL.map(|a| a.name()).join(", ")
    }

    /// The architecture's features, without a sliding window (the file or the preset
    /// gives that).
    pub fn features(self) -> ArchFeatures {
        let llama = ArchFeatures {
            architecture: self,
            rope_neox: false,
            qkv_bias: false,
            qk_norm: false,
            post_norms: false,
            activation: Activation::Silu,
            embed_scale: false,
            sliding_window: 0,
            swa_pattern: 0,
            rope_base_swa: None,
            fused_qkv: false,
            fused_gate_up: false,
        };
        match self {
            Self::Llama | Self::Mistral => llama,
            Self::Qwen2 => ArchFeatures {
                rope_neox: true,
                qkv_bias: true,
                ..llama
            },
            Self::Qwen3 => ArchFeatures {
                rope_neox: true,
                qk_norm: true,
                ..llama
            },
            Self::Phi3 => ArchFeatures {
                rope_neox: true,
                fused_qkv: true,
                fused_gate_up: true,
                ..llama
            },
            Self::Gemma3 => ArchFeatures {
                rope_neox: true,
                qk_norm: true,
                post_norms: true,
                activation: Activation::GeluTanh,
                embed_scale: true,
                swa_pattern: 6,
                rope_base_swa: Some(10_000.0),
                ..llama
            },
        }
    }
}

impl Default for ArchFeatures {
    fn default() -> ArchFeatures {
        Architecture::Llama.features()
    }
}

impl ArchFeatures {
    /// Whether layer `layer` attends through the sliding window (llama.cpp's
    /// `set_swa_pattern`: with pattern n, layers with `layer % n < n - 1`).
    pub fn is_swa(&self, layer: u32) -> bool {
        self.sliding_window > 0
            && (self.swa_pattern == 0 || layer % self.swa_pattern < self.swa_pattern - 1)
    }

    /// What the architecture adds, in words (reports): `NeoX rope, q/k norms, ...`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.rope_neox {
            parts.push("NeoX rope".to_string());
        }
        if self.qkv_bias {
            parts.push("q/k/v biases".into());
        }
        if self.qk_norm {
            parts.push("q/k norms".into());
        }
        if self.post_norms {
            parts.push("post-attention and post-FFN norms".into());
        }
        if self.activation == Activation::GeluTanh {
            parts.push("GeGLU".into());
        }
        if self.embed_scale {
            parts.push("embeddings × √dim".into());
        }
        if self.sliding_window > 0 {
            let which = match self.swa_pattern {
                0 => "every layer".to_string(),
                n => format!("{} layers of {n}", n - 1),
            };
            parts.push(format!("sliding window {} on {which}", self.sliding_window));
        }
        if parts.is_empty() {
            "Llama".into()
        } else {
            parts.join(", ")
        }
    }
}
