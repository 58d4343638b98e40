// gemm weights: q8_0, GGUF bytes: 34-byte blocks {f16 d, i8 qs[32]} (every other one
// starts mid-word: realign splices the payload's words). Raw: words a..a+8, and whether
// the block starts mid-word.
@group(0) @binding(0) var<storage, read> w: array<u32>;

fn load_wraw(i: u32) -> WRaw {
    let byte0 = i * 34u;
    let a = byte0 >> 2u;
    let q0 = vec4<u32>(w[a], w[a + 1u], w[a + 2u], w[a + 3u]);
    let q1 = vec4<u32>(w[a + 4u], w[a + 5u], w[a + 6u], w[a + 7u]);
    return WRaw(q0, q1, vec2<u32>(w[a + 8u], byte0 & 2u));
}

fn unpack_wraw(r: WRaw) -> WBlock {
    let mid = r.s.y != 0u;
    let d = unpack2x16float(select(r.q0.x, r.q0.x >> 16u, mid)).x;
    let q0 = vec4<u32>(
        realign(r.q0.x, r.q0.y, mid),
        realign(r.q0.y, r.q0.z, mid),
        realign(r.q0.z, r.q0.w, mid),
        realign(r.q0.w, r.q1.x, mid),
    );
    let q1 = vec4<u32>(
        realign(r.q1.x, r.q1.y, mid),
        realign(r.q1.y, r.q1.z, mid),
        realign(r.q1.z, r.q1.w, mid),
        realign(r.q1.w, r.s.x, mid),
    );
    return WBlock(q0, q1, vec2<f32>(d, 0.0));
}
