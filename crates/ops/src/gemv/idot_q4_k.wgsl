// dp4a gemv, q4_K weights as the GGUF bytes: 144-byte super-blocks {f16 d, f16 dmin, u8
// scales[12], u8 qs[128]}, 9 vec4s (the quants from vec4 1); the blocks are idot_k.wgsl's.

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;

fn load_block(row: u32, b: u32) -> WBlock {
    let i = row * (COLS / 32u) + b;
    let a = (i / 8u) * 9u;
    return k_block(a, i % 8u, a + 1u);
}
