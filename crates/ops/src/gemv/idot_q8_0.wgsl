// dp4a gemv, q8_0 weights in the packed layout (packed_q8_0.wgsl has the layout): block
// i's 32 signed quant bytes are vec4 2i (elements 0..15, x words 0..3 in xa) and 2i + 1
// (elements 16..31, x words 4..7 in xb). sum qw qx d dx = d * (dx * sum qw qx).

struct WBlock {
    q0: vec4<u32>,
    q1: vec4<u32>,
    d: f32,
}

fn load_block(row: u32, b: u32) -> WBlock {
    let i = row * (COLS / 32u) + b;
    return WBlock(w[2u * i], w[2u * i + 1u], block_scale(i));
}

fn block_idot(wb: WBlock, xa: vec4<u32>, xb: vec4<u32>, m: vec2<f32>) -> f32 {
    let s = idot8(wb.q0, wb.q1, xa, xb);
    return wb.d * (m.x * f32(s));
}
