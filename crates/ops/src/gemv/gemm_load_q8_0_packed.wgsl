// dp4a gemm weights: q8_0, packed layout: quants vec4 2i and 2i + 1.
fn load_wblock(i: u32) -> WBlock {
    return WBlock(w[2u * i], w[2u * i + 1u], vec2<f32>(block_scale(i), 0.0));
}
