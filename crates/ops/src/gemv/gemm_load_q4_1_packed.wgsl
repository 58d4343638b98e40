// dp4a gemm weights: q4_1, packed layout: quants vec4 i, (d, m) word i of the scales.
fn load_wblock(i: u32) -> WBlock {
    let q = w[i];
    let dm = unpack2x16float(w[SCALES_AT + (i >> 2u)][i & 3u]);
    return WBlock(nibbles_lo(q), nibbles_hi(q), dm);
}
