// gemm weights: q5_0, GGUF bytes: 22-byte blocks {f16 d, u32 qh, u8 qs[16]}
// (gemm_q5_block.wgsl for the quants), value d · (q − 16), so (d, o) = (d, −16 d).
// Blocks start on even bytes: the payload after d is word-aligned when the block starts
// mid-word, else spliced (realign).
@group(0) @binding(0) var<storage, read> w: array<u32>;

fn load_wblock(i: u32) -> WBlock {
    let byte0 = i * 22u;
    let a = byte0 >> 2u;
    let mid = (byte0 & 2u) != 0u;
    let w0 = w[a];
    let d = unpack2x16float(select(w0, w0 >> 16u, mid)).x;
    let qh = realign(w0, w[a + 1u], mid);
    let q = vec4<u32>(
        realign(w[a + 1u], w[a + 2u], mid),
        realign(w[a + 2u], w[a + 3u], mid),
        realign(w[a + 3u], w[a + 4u], mid),
        realign(w[a + 4u], w[a + 5u], mid),
    );
    return q5_wblock(q, qh, vec2<f32>(d, -16.0 * d));
}
