// gemm weights: q4_K, GGUF bytes: 144-byte (36-word, always word-aligned) super-blocks
// {f16 d, f16 dmin, u8 scales[12], u8 qs[128]} of 256 elements. 32-element block i is
// sub-block i % 8 of super-block i / 8 (gemm_k_sub_block.wgsl), value d · sc · q −
// dmin · m (ggml's dequantize_row_q4_K).
@group(0) @binding(0) var<storage, read> w: array<u32>;

// Unpacked as it loads (a sub-block reads 11 of the super-block's words): the raw form
// carries the WBlock's bits (k_raw, gemm_k_sub_block.wgsl).
fn load_wraw(i: u32) -> WRaw {
    let a = (i / 8u) * 36u;
    return k_raw(k_sub_block(a, i % 8u, a + 4u));
}
