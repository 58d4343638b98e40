// dp4a gemm weights: q4_0, GGUF bytes: 18-byte blocks {f16 d, u8 qs[16]} (three in four
// start mid-word: realign splices the payload's words).
@group(0) @binding(0) var<storage, read> w: array<u32>;

fn load_wblock(i: u32) -> WBlock {
    let byte0 = i * 18u;
    let a = byte0 >> 2u;
    let mid = (byte0 & 2u) != 0u;
    let w0 = w[a];
    let d = unpack2x16float(select(w0, w0 >> 16u, mid)).x;
    let q = vec4<u32>(
        realign(w[a], w[a + 1u], mid),
        realign(w[a + 1u], w[a + 2u], mid),
        realign(w[a + 2u], w[a + 3u], mid),
        realign(w[a + 3u], w[a + 4u], mid),
    );
    return WBlock(nibbles_lo(q), nibbles_hi(q), vec2<f32>(d, -8.0 * d));
}
