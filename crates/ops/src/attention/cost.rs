use gpuscope_runtime::Cost;

use super::{AttnScores, AttnValues};

impl AttnScores {
    /// At `n_ctx` cache rows: reads `n_ctx` (4 bytes), q and `n_ctx` rows of this op's
    /// kv heads, writes `n_heads · n_ctx` scores. FLOPs: a multiply-add per element of
    /// every dot product (the scale multiply is not counted).
    pub fn cost_at(&self, n_ctx: u32) -> Cost {
        let (heads, kv, hd, n) = (
            self.n_heads as u64,
            self.n_kv_heads as u64,
            self.head_dim as u64,
            n_ctx as u64,
        );
        Cost {
            bytes: 4 + 4 * (heads * hd + n * kv * hd + heads * n),
            flops: 2 * heads * n * hd,
        }
    }

    /// The cost recorded at build time: `cost_at(1)`. The decoder replaces it per token.
    pub fn cost(&self) -> Cost {
        self.cost_at(1)
    }
}

impl AttnValues {
    /// At `n_ctx` cache rows: reads `n_ctx` (4 bytes), `n_heads · n_ctx` probabilities and
    /// `n_ctx` v rows, writes `n_heads · head_dim`. FLOPs: a multiply-add per term.
    pub fn cost_at(&self, n_ctx: u32) -> Cost {
        let (heads, kv, hd, n) = (
            self.n_heads as u64,
            self.n_kv_heads as u64,
            self.head_dim as u64,
            n_ctx as u64,
        );
        Cost {
            bytes: 4 + 4 * (heads * n + n * kv * hd + heads * hd),
            flops: 2 * heads * n * hd,
        }
    }

    /// The cost recorded at build time: `cost_at(1)`. The decoder replaces it per token.
    pub fn cost(&self) -> Cost {
        self.cost_at(1)
    }
}
