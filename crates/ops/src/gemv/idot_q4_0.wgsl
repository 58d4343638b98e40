// dp4a gemv, q4_0 weights in the packed layout (packed_q4_0.wgsl has the layout): block
// i's quants are vec4 i. Quant word k holds elements 4k..4k+3 in its low nibbles (x
// word k, in xa) and 4k+16..4k+19 in its high nibbles (x word 4 + k, in xb). Nibbles are
// 0..15, so dot4I8Packed reads them unchanged; the zero point 8 comes off through the
// block's sum of q: sum (n - 8) q d = d * sum n q - 8 * d * sum q = m.x * s - 8 * m.y.

fn block_idot(row: u32, b: u32, xa: vec4<u32>, xb: vec4<u32>, m: vec2<f32>) -> f32 {
    let i = row * (COLS / 32u) + b;
    let q = w[i];
    let s = idot8(nibbles_lo(q), nibbles_hi(q), xa, xb);
    return block_scale(i) * (m.x * f32(s) - 8.0 * m.y);
}
