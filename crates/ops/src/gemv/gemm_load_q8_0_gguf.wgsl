// dp4a gemm weights: q8_0, GGUF bytes: 34-byte blocks {f16 d, i8 qs[32]} (every other one
// starts mid-word: realign splices the payload's words).
@group(0) @binding(0) var<storage, read> w: array<u32>;

fn load_wblock(i: u32) -> WBlock {
    let byte0 = i * 34u;
    let a = byte0 >> 2u;
    let mid = (byte0 & 2u) != 0u;
    let w0 = w[a];
    let d = unpack2x16float(select(w0, w0 >> 16u, mid)).x;
    let q0 = vec4<u32>(
        realign(w[a], w[a + 1u], mid),
        realign(w[a + 1u], w[a + 2u], mid),
        realign(w[a + 2u], w[a + 3u], mid),
        realign(w[a + 3u], w[a + 4u], mid),
    );
    let q1 = vec4<u32>(
        realign(w[a + 4u], w[a + 5u], mid),
        realign(w[a + 5u], w[a + 6u], mid),
        realign(w[a + 6u], w[a + 7u], mid),
        realign(w[a + 7u], w[a + 8u], mid),
    );
    return WBlock(q0, q1, vec2<f32>(d, 0.0));
}
