// dp4a gemv, q4_0 weights in the packed layout (packed_q4_0.wgsl has the layout): block
// i's quants are vec4 i. Quant word k holds elements 4k..4k+3 in its low nibbles (x
// word k, in xa) and 4k+16..4k+19 in its high nibbles (x word 4 + k, in xb). Nibbles are
// 0..15, so dot4I8Packed reads them unchanged; the zero point 8 comes off through the
// block's sum of q: sum (n - 8) q d = d * sum n q - 8 * d * sum q = m.x * s - 8 * m.y.
// The frame loads a block (load_block) a step before it multiplies it (block_idot): the
// block keeps its scale as the loaded word (`s`, d in half `odd`), unpacked by `wscale`
// when multiplied, so that no instruction waits for the next step's loads before this
// step's dot products.

struct WBlock {
    q: vec4<u32>,
    s: u32,
    odd: u32,
}

fn load_block(row: u32, b: u32) -> WBlock {
    let i = row * (COLS / 32u) + b;
    // scale_word(i) written out: the fused down projection copies this function by text
    // with `w` renamed (shader.rs, `down_loader`).
    return WBlock(w[i], w[SCALES_AT + (i >> 3u)][(i >> 1u) & 3u], i & 1u);
}

// The block's f16 scale d.
fn wscale(wb: WBlock) -> f32 {
    return scale_in(wb.s, wb.odd);
}

fn block_idot(wb: WBlock, xa: vec4<u32>, xb: vec4<u32>, m: vec2<f32>) -> f32 {
    let s = idot8(nibbles_lo(wb.q), nibbles_hi(wb.q), xa, xb);
    return wscale(wb) * (m.x * f32(s) - 8.0 * m.y);
}
