// gemm weights: q5_1, GGUF bytes: 24-byte (6-word, always aligned) blocks {f16 d, f16 m,
// u32 qh, u8 qs[16]}: element j is the low (j < 16) or high nibble of qs[j % 16] with
// bit j of qh as its fifth bit, value d · q + m, so (d, o) = (d, m).
@group(0) @binding(0) var<storage, read> w: array<u32>;

fn load_wblock(i: u32) -> WBlock {
    let a = i * 6u;
    let qh = w[a + 1u];
    let q = vec4<u32>(w[a + 2u], w[a + 3u], w[a + 4u], w[a + 5u]);
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
    return WBlock(lo, hi, unpack2x16float(w[a]));
}
