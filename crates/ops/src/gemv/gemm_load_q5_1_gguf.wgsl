// gemm weights: q5_1, GGUF bytes: 24-byte (6-word, always aligned) blocks {f16 d, f16 m,
// u32 qh, u8 qs[16]} (gemm_q5_block.wgsl for the quants), value d · q + m, so
// (d, o) = (d, m).
@group(0) @binding(0) var<storage, read> w: array<u32>;

fn load_wblock(i: u32) -> WBlock {
    let a = i * 6u;
    let q = vec4<u32>(w[a + 2u], w[a + 3u], w[a + 4u], w[a + 5u]);
    return q5_wblock(q, w[a + 1u], unpack2x16float(w[a]));
}
