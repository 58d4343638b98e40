// gemm weights: q5_1, GGUF bytes: 24-byte (6-word, always aligned) blocks {f16 d, f16 m,
// u32 qh, u8 qs[16]} (gemm_q5_block.wgsl for the quants), value d · q + m, so
// (d, o) = (d, m). Raw: the quants' words, then (d, m)'s and qh.
@group(0) @binding(0) var<storage, read> w: array<u32>;

fn load_wraw(i: u32) -> WRaw {
    let a = i * 6u;
    let q = vec4<u32>(w[a + 2u], w[a + 3u], w[a + 4u], w[a + 5u]);
    return WRaw(q, vec4<u32>(0u), vec2<u32>(w[a], w[a + 1u]));
}

fn unpack_wraw(r: WRaw) -> WBlock {
    return q5_wblock(r.q0, r.s.y, unpack2x16float(r.s.x));
}
