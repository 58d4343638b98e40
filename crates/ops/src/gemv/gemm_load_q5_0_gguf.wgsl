// gemm weights: q5_0, GGUF bytes: 22-byte blocks {f16 d, u32 qh, u8 qs[16]}
// (gemm_q5_block.wgsl for the quants), value d · (q − 16), so (d, o) = (d, −16 d).
// Blocks start on even bytes: the payload after d is word-aligned when the block starts
// mid-word, else spliced (realign). Raw: words a..a+5, and whether the block starts
// mid-word.
@group(0) @binding(0) var<storage, read> w: array<u32>;

fn load_wraw(i: u32) -> WRaw {
    let byte0 = i * 22u;
    let a = byte0 >> 2u;
    let q0 = vec4<u32>(w[a], w[a + 1u], w[a + 2u], w[a + 3u]);
    return WRaw(q0, vec4<u32>(w[a + 4u], w[a + 5u], 0u, 0u), vec2<u32>(0u, byte0 & 2u));
}

fn unpack_wraw(r: WRaw) -> WBlock {
    let mid = r.s.y != 0u;
    let d = unpack2x16float(select(r.q0.x, r.q0.x >> 16u, mid)).x;
    let qh = realign(r.q0.x, r.q0.y, mid);
    let q = vec4<u32>(
        realign(r.q0.y, r.q0.z, mid),
        realign(r.q0.z, r.q0.w, mid),
        realign(r.q0.w, r.q1.x, mid),
        realign(r.q1.x, r.q1.y, mid),
    );
    return q5_wblock(q, qh, vec2<f32>(d, -16.0 * d));
}
