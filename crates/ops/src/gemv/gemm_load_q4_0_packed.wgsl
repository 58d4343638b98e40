// gemm weights: q4_0, packed layout (packed_common.wgsl binds `w`): quants vec4 i, low
// nibbles elements 0..15, high nibbles 16..31; d half (i & 1) of the scales' word i / 2.
fn load_wraw(i: u32) -> WRaw {
    let pair = w[SCALES_AT + (i >> 3u)][(i >> 1u) & 3u];
    return WRaw(w[i], vec4<u32>(0u), vec2<u32>(pair, i & 1u));
}

fn unpack_wraw(r: WRaw) -> WBlock {
    let pair = unpack2x16float(r.s.x);
    let d = select(pair.x, pair.y, r.s.y != 0u);
    return WBlock(nibbles_lo(r.q0), nibbles_hi(r.q0), vec2<f32>(d, -8.0 * d));
}
