// gemm weights: q8_0, packed layout: quants vec4 2i and 2i + 1; d half (i & 1) of the
// scales' word i / 2.
fn load_wraw(i: u32) -> WRaw {
    return WRaw(w[2u * i], w[2u * i + 1u], vec2<u32>(scale_word(i), i));
}

fn unpack_wraw(r: WRaw) -> WBlock {
    return WBlock(r.q0, r.q1, vec2<f32>(scale_in(r.s.x, r.s.y), 0.0));
}
