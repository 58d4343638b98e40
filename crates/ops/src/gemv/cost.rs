//! What a gemv must move and do: every weight byte once, x once, y once; one multiply and
//! one add per weight. The fused forms add what the folded op moves and does beyond that.

use gpuscope_runtime::Cost;

use super::{Gemv, GemvEpilogue, GemvFused};

impl Gemv {
    pub fn cost(&self) -> Cost {
        let (rows, cols) = (u64::from(self.rows), u64::from(self.cols));
        Cost {
            bytes: self.weight_bytes() + cols * 4 + rows * 4,
            flops: 2 * rows * cols,
        }
    }

    /// The accumulating form also reads y once and adds once per row.
    pub fn cost_accumulate(&self) -> Cost {
        let plain = self.cost();
        Cost {
            bytes: plain.bytes + u64::from(self.rows) * 4,
            flops: plain.flops + u64::from(self.rows),
        }
    }
}

impl GemvFused {
    /// Weight rows read (silu_mul skips the alignment rows between gate and up), x, the
    /// norm weight (read once per element and x squared: 3 FLOPs per element beside the
    /// product), and what the epilogue writes: rows, rows read and written (accumulate),
    /// rotated q and KV-cache rows (6 FLOPs per rotated pair, the step's 4 bytes), or one
    /// value per gate/up pair (about 4 FLOPs: exp, add, divide, multiply), or with the
    /// down projection folded in its matrix and partials; a folded post norm as below.
    pub fn cost(&self) -> Cost {
        let g = &self.gemv;
        let cols = u64::from(g.cols);
        let rows = u64::from(self.logical_rows());
        let row_bytes = g.weight_bytes() / u64::from(g.rows.max(1));
        let mut bytes = rows * row_bytes + cols * 4;
        let mut flops = 2 * rows * cols;
        if self.norm.is_some() {
            bytes += cols * 4;
            flops += 3 * cols;
        }
        // A folded post norm reads d and its weight and writes the new residual once:
        // d² summed (2 FLOPs an element), then x + (d · s) · w (3).
        if self.post_norm.is_some() {
            bytes += cols * 12;
            flops += 5 * cols;
        }
        match self.epilogue {
            GemvEpilogue::Store => bytes += rows * 4,
            GemvEpilogue::Accumulate => {
                bytes += rows * 8;
                flops += rows;
            }
            GemvEpilogue::RopeKv(rope) => {
                bytes += rows * 4 + 4;
                let q_k_rows = (u64::from(rope.n_heads) + u64::from(rope.n_kv_heads))
                    * u64::from(rope.head_dim);
                let rotated = rows.min(q_k_rows) * u64::from(rope.rope_dims)
                    / u64::from(rope.head_dim.max(1));
                flops += 3 * rotated;
            }
            GemvEpilogue::SiluMul { n, .. } | GemvEpilogue::GeluMul { n, .. } => {
                bytes += u64::from(n) * 4;
                flops += 4 * u64::from(n);
            }
            // The down matrix read once, its partials of dim written.
            GemvEpilogue::SiluDown { n, dim, .. } => {
                let down = self.down_gemv().expect("SiluDown has a down matrix");
                bytes += down.weight_bytes() + u64::from(self.down_partials()) * u64::from(dim) * 4;
                flops += 4 * u64::from(n) + 2 * u64::from(n) * u64::from(dim);
            }
        }
        Cost { bytes, flops }
    }
}
