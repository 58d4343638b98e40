// gemm weights: q8_0, packed layout: quants vec4 2i and 2i + 1; d half (i & 1) of the
// scales' word i / 2.
fn load_wraw(i: u32) -> WRaw {
    let pair = w[SCALES_AT + (i >> 3u)][(i >> 1u) & 3u];
    return WRaw(w[2u * i], w[2u * i + 1u], vec2<u32>(pair, i & 1u));
}

fn unpack_wraw(r: WRaw) -> WBlock {
    let pair = unpack2x16float(r.s.x);
    return WBlock(r.q0, r.q1, vec2<f32>(select(pair.x, pair.y, r.s.y != 0u), 0.0));
}
