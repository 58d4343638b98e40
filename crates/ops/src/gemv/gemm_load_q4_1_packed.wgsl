// gemm weights: q4_1, packed layout: quants vec4 i, (d, m) word i of the scales.
fn load_wraw(i: u32) -> WRaw {
    return WRaw(w[i], vec4<u32>(0u), vec2<u32>(w[SCALES_AT + (i >> 2u)][i & 3u], 0u));
}

fn unpack_wraw(r: WRaw) -> WBlock {
    return WBlock(nibbles_lo(r.q0), nibbles_hi(r.q0), unpack2x16float(r.s.x));
}
