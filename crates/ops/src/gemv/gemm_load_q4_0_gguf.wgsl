// gemm weights: q4_0, GGUF bytes: 18-byte blocks {f16 d, u8 qs[16]} (three in four start
// mid-word: realign splices the payload's words). Raw: words a..a+4, and whether the
// block starts mid-word.
@group(0) @binding(0) var<storage, read> w: array<u32>;

fn load_wraw(i: u32) -> WRaw {
    let byte0 = i * 18u;
    let a = byte0 >> 2u;
    let q0 = vec4<u32>(w[a], w[a + 1u], w[a + 2u], w[a + 3u]);
    return WRaw(q0, vec4<u32>(0u), vec2<u32>(w[a + 4u], byte0 & 2u));
}

fn unpack_wraw(r: WRaw) -> WBlock {
    let mid = r.s.y != 0u;
    let d = unpack2x16float(select(r.q0.x, r.q0.x >> 16u, mid)).x;
    let q = vec4<u32>(
        realign(r.q0.x, r.q0.y, mid),
        realign(r.q0.y, r.q0.z, mid),
        realign(r.q0.z, r.q0.w, mid),
        realign(r.q0.w, r.s.x, mid),
    );
    return WBlock(nibbles_lo(q), nibbles_hi(q), vec2<f32>(d, -8.0 * d));
}
