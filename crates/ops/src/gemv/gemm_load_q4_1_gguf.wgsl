// gemm weights: q4_1, GGUF bytes: 20-byte blocks {f16 d, f16 m, u8 qs[16]}, every one
// word-aligned. Raw: the quants' words and (d, m)'s.
@group(0) @binding(0) var<storage, read> w: array<u32>;

fn load_wraw(i: u32) -> WRaw {
    let a = i * 5u;
    let q = vec4<u32>(w[a + 1u], w[a + 2u], w[a + 3u], w[a + 4u]);
    return WRaw(q, vec4<u32>(0u), vec2<u32>(w[a], 0u));
}

fn unpack_wraw(r: WRaw) -> WBlock {
    return WBlock(nibbles_lo(r.q0), nibbles_hi(r.q0), unpack2x16float(r.s.x));
}
