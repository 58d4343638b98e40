// gemm weights: q5_0, GGUF bytes: 22-byte blocks {f16 d, u32 qh, u8 qs[16]}: element j
// is the low (j < 16) or high nibble of qs[j % 16] with bit j of qh as its fifth bit,
// value d · (q − 16), so (d, o) = (d, −16 d). Blocks start on even bytes: the payload
// after d is word-aligned when the block starts mid-word, else spliced (realign).
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
    let lo = vec4<u32>(
        q5_word(q.x, qh, 0u, false),
        q5_word(q.y, qh, 1u, false),
        q5_word(q.z, qh, 2u, false),
        q5_word(q.w, qh, 3u, false),
    );
    let hi = vec4<u32>(
        q5_word(q.x, qh, 0u, true),
        q5_word(q.y, qh, 1u, true),
        q5_word(q.z, qh, 2u, true),
        q5_word(q.w, qh, 3u, true),
    );
    return WBlock(lo, hi, vec2<f32>(d, -16.0 * d));
}
