// dp4a gemm weights: q4_1, packed layout: quants vec4 i, (d, m) word i of the scales.
fn load_wblock(i: u32) -> WBlock {
    let q = w[i];
    let dm = unpack2x16float(w[SCALES_AT + (i >> 2u)][i & 3u]);
    return WBlock(q & vec4<u32>(0x0F0F0F0Fu), (q >> vec4<u32>(4u)) & vec4<u32>(0x0F0F0F0Fu), dm);
}
