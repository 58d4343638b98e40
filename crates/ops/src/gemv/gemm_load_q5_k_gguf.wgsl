// gemm weights: q5_K, GGUF bytes: 176-byte (44-word, always word-aligned) super-blocks
// {f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]} of 256 elements. 32-element
// block i is sub-block j = i % 8 of super-block i / 8: its quants are the low (even j)
// or high (odd j) nibbles of the 32 bytes qs[32 · (j / 2)..], in order, with bit j of
// qh[l] as element l's fifth bit; its value d · sc_j · q − dmin · m_j (ggml's
// dequantize_row_q5_K), so (d, o) = (d · sc_j, −dmin · m_j). No branches: the coopmat
// frame calls this in control flow that must stay uniform.
@group(0) @binding(0) var<storage, read> w: array<u32>;

fn load_wblock(i: u32) -> WBlock {
    let a = (i / 8u) * 44u;
    let j = i % 8u;
    let dm = unpack2x16float(w[a]);
    let sm = k_scale_min(j / 2u, w[a + 1u], w[a + 2u], w[a + 3u]);
    let odd = (j & 1u) != 0u;
    let sc = select(sm.x, sm.y, odd);
    let m = select(sm.z, sm.w, odd);
    let q = a + 12u + 8u * (j / 2u);
    let shift = vec4<u32>(select(0u, 4u, odd));
    let mask = vec4<u32>(0x0F0F0F0Fu);
    let bit = vec4<u32>(j);
    let one = vec4<u32>(0x01010101u);
    let q0 = (vec4<u32>(w[q], w[q + 1u], w[q + 2u], w[q + 3u]) >> shift) & mask;
    let q1 = (vec4<u32>(w[q + 4u], w[q + 5u], w[q + 6u], w[q + 7u]) >> shift) & mask;
    let h0 = ((vec4<u32>(w[a + 4u], w[a + 5u], w[a + 6u], w[a + 7u]) >> bit) & one) << vec4<u32>(4u);
    let h1 = ((vec4<u32>(w[a + 8u], w[a + 9u], w[a + 10u], w[a + 11u]) >> bit) & one) << vec4<u32>(4u);
    return WBlock(q0 | h0, q1 | h1, vec2<f32>(dm.x * sc, -dm.y * m));
}
