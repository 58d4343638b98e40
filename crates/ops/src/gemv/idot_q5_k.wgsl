// dp4a gemv, q5_K weights as the GGUF bytes: 176-byte super-blocks {f16 d, f16 dmin, u8
// scales[12], u8 qh[32], u8 qs[128]}, 11 vec4s (qh in vec4s 1..2, the quants from 3):
// q4_K's blocks (idot_k.wgsl) with bit j of qh[l] as element l's fifth bit in sub-block j
// (ggml's dequantize_row_q5_K), quants 0..31.

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;

fn load_block(row: u32, b: u32) -> WBlock {
    let i = row * (COLS / 32u) + b;
    let a = (i / 8u) * 11u;
    let j = i % 8u;
    let k = k_block(a, j, a + 3u);
    let bit = vec4<u32>(j);
    let one = vec4<u32>(0x01010101u);
    let h0 = ((w[a + 1u] >> bit) & one) << vec4<u32>(4u);
    let h1 = ((w[a + 2u] >> bit) & one) << vec4<u32>(4u);
    return WBlock(k.q0 | h0, k.q1 | h1, k.ao);
}
