// dp4a gemv, q4_1 weights in the packed layout (packed_q4_1.wgsl has the layout): block
// i's quants are vec4 i, its (f16 d, f16 m) word i of the scales region. Nibble order as
// q4_0 (idot_q4_0.wgsl). sum (d n + m) q dx = d * (dx * sum n q) + m * (dx * sum q).

fn block_idot(row: u32, b: u32, xa: vec4<u32>, xb: vec4<u32>, m: vec2<f32>) -> f32 {
    let i = row * (COLS / 32u) + b;
    let q = w[i];
    let s = idot8(nibbles_lo(q), nibbles_hi(q), xa, xb);
    let dm = unpack2x16float(w[SCALES_AT + (i >> 2u)][i & 3u]);
    return dm.x * (m.x * f32(s)) + dm.y * m.y;
}
