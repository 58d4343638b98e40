// dp4a gemv, q4_1 weights in the packed layout (packed_q4_1.wgsl has the layout): block
// i's quants are vec4 i, its (f16 d, f16 m) word i of the scales region. Nibble order as
// q4_0 (idot_q4_0.wgsl). sum (d n + m) q dx = d * (dx * sum n q) + m * (dx * sum q).

fn block_idot(row: u32, b: u32, xa: vec4<u32>, xb: vec4<u32>, m: vec2<f32>) -> f32 {
    let i = row * (COLS / 32u) + b;
    let q = w[i];
    let lo = q & vec4<u32>(0x0F0F0F0Fu);
    let hi = (q >> vec4<u32>(4u)) & vec4<u32>(0x0F0F0F0Fu);
    let s = ((dot4I8Packed(lo.x, xa.x) + dot4I8Packed(lo.y, xa.y))
        + (dot4I8Packed(lo.z, xa.z) + dot4I8Packed(lo.w, xa.w)))
        + ((dot4I8Packed(hi.x, xb.x) + dot4I8Packed(hi.y, xb.y))
        + (dot4I8Packed(hi.z, xb.z) + dot4I8Packed(hi.w, xb.w)));
    let dm = unpack2x16float(w[SCALES_AT + (i >> 2u)][i & 3u]);
    return dm.x * (m.x * f32(s)) + dm.y * m.y;
}
