// dp4a gemv, q4_1 weights in the packed layout (packed_q4_1.wgsl has the layout): block
// i's quants are vec4 i, its (f16 d, f16 m) word i of the scales region. Nibble order as
// q4_0 (idot_q4_0.wgsl). sum (d n + m) q dx = d * (dx * sum n q) + m * (dx * sum q).

struct WBlock {
    q: vec4<u32>,
    dm: vec2<f32>,
}

fn load_block(row: u32, b: u32) -> WBlock {
    let i = row * (COLS / 32u) + b;
    return WBlock(w[i], unpack2x16float(w[SCALES_AT + (i >> 2u)][i & 3u]));
}

fn block_idot(wb: WBlock, xa: vec4<u32>, xb: vec4<u32>, m: vec2<f32>) -> f32 {
    let s = idot8(nibbles_lo(wb.q), nibbles_hi(wb.q), xa, xb);
    return wb.dm.x * (m.x * f32(s)) + wb.dm.y * m.y;
}
