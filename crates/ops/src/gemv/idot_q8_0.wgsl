// dp4a gemv, q8_0 weights in the packed layout (packed_q8_0.wgsl has the layout): block
// i's 32 signed quant bytes are vec4 2i (elements 0..15, x words 0..3 in xa) and 2i + 1
// (elements 16..31, x words 4..7 in xb). sum qw qx d dx = d * (dx * sum qw qx).

fn block_idot(row: u32, b: u32, xa: vec4<u32>, xb: vec4<u32>, m: vec2<f32>) -> f32 {
    let i = row * (COLS / 32u) + b;
    let q0 = w[2u * i];
    let q1 = w[2u * i + 1u];
    let s = idot8(q0, q1, xa, xb);
    return block_scale(i) * (m.x * f32(s));
}
