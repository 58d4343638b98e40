// dp4a gemm weights: q4_1, GGUF bytes: 20-byte blocks {f16 d, f16 m, u8 qs[16]}, every
// one word-aligned.
@group(0) @binding(0) var<storage, read> w: array<u32>;

fn load_wblock(i: u32) -> WBlock {
    let a = i * 5u;
    let q = vec4<u32>(w[a + 1u], w[a + 2u], w[a + 3u], w[a + 4u]);
    return WBlock(nibbles_lo(q), nibbles_hi(q), unpack2x16float(w[a]));
}
