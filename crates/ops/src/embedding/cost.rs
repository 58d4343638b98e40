//! What an embedding lookup moves: one table row, the token id, the output row.
//!
//! The figure is for the chunk that holds the token; the other chunks of a split table
//! read only the token id. FLOPs count the dequantization arithmetic per element.

use gpuscope_runtime::Cost;

use crate::quant::WeightFormat;

use super::Embedding;

impl Embedding {
    pub fn cost(&self) -> Cost {
        let dim = u64::from(self.dim);
        let flops_per_elem = match self.format {
            WeightFormat::F32 | WeightFormat::F16 | WeightFormat::BF16 => 0,
            WeightFormat::Q8_0 | WeightFormat::Q4_0 | WeightFormat::Q5_0 => 1,
            // q4_K / q5_K: d·sc·q − dmin·m; q6_K: (d·sc)·q, both per element in the kernel.
            WeightFormat::Q4_1
            | WeightFormat::Q5_1
            | WeightFormat::Q4_K
            | WeightFormat::Q5_K
            | WeightFormat::Q6_K => 2,
        };
        Cost {
            bytes: self.row_bytes() + 4 + dim * 4,
            flops: flops_per_elem * dim,
        }
    }
}
