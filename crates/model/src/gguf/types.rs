//! ggml's tensor types: every id a GGUF file may hold, with its block size, so tensors
//! of types gpuscope has no kernel for can still be bounds-checked, listed and named.
//!
//! From `ggml_type` and `type_traits` in ggml.c / ggml-common.h (the `block_*` structs);
//! ids 4, 5, 31-33 and 36-38 were removed from ggml and are rejected.

use gpuscope_ops::WeightFormat;

/// One ggml tensor type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GgmlType {
    pub id: u32,
    pub name: &'static str,
    /// Elements per block (1 for plain numbers).
    pub block_elems: u32,
    /// Bytes per block.
    pub block_bytes: u32,
}

const fn t(id: u32, name: &'static str, block_elems: u32, block_bytes: u32) -> GgmlType {
    GgmlType {
        id,
        name,
        block_elems,
        block_bytes,
    }
}

const TYPES: &[GgmlType] = &[
    t(0, "f32", 1, 4),
    t(1, "f16", 1, 2),
    t(2, "q4_0", 32, 18),
    t(3, "q4_1", 32, 20),
    t(6, "q5_0", 32, 22),
    t(7, "q5_1", 32, 24),
    t(8, "q8_0", 32, 34),
    t(9, "q8_1", 32, 36),
    t(10, "q2_k", 256, 84),
    t(11, "q3_k", 256, 110),
    t(12, "q4_k", 256, 144),
    t(13, "q5_k", 256, 176),
    t(14, "q6_k", 256, 210),
    t(15, "q8_k", 256, 292),
    t(16, "iq2_xxs", 256, 66),
    t(17, "iq2_xs", 256, 74),
    t(18, "iq3_xxs", 256, 98),
    t(19, "iq1_s", 256, 50),
    t(20, "iq4_nl", 32, 18),
    t(21, "iq3_s", 256, 110),
    t(22, "iq2_s", 256, 82),
    t(23, "iq4_xs", 256, 136),
    t(24, "i8", 1, 1),
    t(25, "i16", 1, 2),
    t(26, "i32", 1, 4),
    t(27, "i64", 1, 8),
    t(28, "f64", 1, 8),
    t(29, "iq1_m", 256, 56),
    t(30, "bf16", 1, 2),
    t(34, "tq1_0", 256, 54),
    t(35, "tq2_0", 256, 66),
    t(39, "mxfp4", 32, 17),
];

impl GgmlType {
    /// The type with ggml id `id`, if ggml defines one.
    pub fn from_id(id: u32) -> Option<GgmlType> {
        TYPES.iter().copied().find(|t| t.id == id)
    }

    /// The gpuscope weight format for this type, if gpuscope has kernels for it.
    pub fn format(self) -> Option<WeightFormat> {
        WeightFormat::from_ggml_type_id(self.id)
    }
}
