// gemm weights: q5_K, GGUF bytes: 176-byte (44-word, always word-aligned) super-blocks
// {f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]} of 256 elements. 32-element
// block i is sub-block j = i % 8 of super-block i / 8: q4_K's nibbles and scales
// (gemm_k_sub_block.wgsl), with bit j of qh[l] as element l's fifth bit (ggml's
// dequantize_row_q5_K).
@group(0) @binding(0) var<storage, read> w: array<u32>;

// Unpacked as it loads, like q4_K (k_raw).
fn load_wraw(i: u32) -> WRaw {
    let a = (i / 8u) * 44u;
    let j = i % 8u;
    let b = k_sub_block(a, j, a + 12u);
    let bit = vec4<u32>(j);
    let one = vec4<u32>(0x01010101u);
    let h0 = ((vec4<u32>(w[a + 4u], w[a + 5u], w[a + 6u], w[a + 7u]) >> bit) & one) << vec4<u32>(4u);
    let h1 = ((vec4<u32>(w[a + 8u], w[a + 9u], w[a + 10u], w[a + 11u]) >> bit) & one) << vec4<u32>(4u);
    return k_raw(WBlock(b.q0 | h0, b.q1 | h1, b.dm));
}
