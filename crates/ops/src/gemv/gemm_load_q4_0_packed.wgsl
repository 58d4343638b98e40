// gemm weights: q4_0, packed layout (packed_common.wgsl binds `w`): quants vec4 i, low
// nibbles elements 0..15, high nibbles 16..31; d half (i & 1) of the scales' word i / 2.
fn load_wraw(i: u32) -> WRaw {
    return WRaw(w[i], vec4<u32>(0u), vec2<u32>(scale_word(i), i));
}

fn unpack_wraw(r: WRaw) -> WBlock {
    let d = scale_in(r.s.x, r.s.y);
    return WBlock(nibbles_lo(r.q0), nibbles_hi(r.q0), vec2<f32>(d, -8.0 * d));
}
