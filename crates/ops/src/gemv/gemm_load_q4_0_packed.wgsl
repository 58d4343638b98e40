// dp4a gemm weights: q4_0, packed layout (packed_common.wgsl binds `w` and has
// block_scale): quants vec4 i, low nibbles elements 0..15, high nibbles 16..31.
fn load_wblock(i: u32) -> WBlock {
    let q = w[i];
    let d = block_scale(i);
    return WBlock(nibbles_lo(q), nibbles_hi(q), vec2<f32>(d, -8.0 * d));
}
