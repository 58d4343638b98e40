// dp4a gemv, q5_0 weights as the GGUF bytes: 22-byte blocks {f16 d, u32 qh, u8 qs[16]},
// read as words by q5_0_words.wgsl. Quant
// word k holds elements 4k..4k+3 in its low nibbles and 4k+16..4k+19 in its high ones;
// bit j of qh is element j's fifth bit, spliced in as bit 4 of the element's byte. The
// quants are then 0..31, which dot4I8Packed reads unchanged; the zero point 16 comes off
// through the block's sum of q: sum (n - 16) q d = d * (dx * sum n q) - 16 * d * (dx *
// sum q) = d * (m.x * s - 16 * m.y). No packed layout: the other frames read q5_0 as
// GGUF bytes too, and the bytes per token are the same.

@group(0) @binding(0) var<storage, read> w: array<u32>;

// The block's words, q5_0_words.wgsl's.
alias WBlock = Q5Words;

fn load_block(row: u32, b: u32) -> WBlock {
    return q5_0_words(row * (COLS / 32u) + b);
}

fn block_idot(wb: WBlock, xa: vec4<u32>, xb: vec4<u32>, m: vec2<f32>) -> f32 {
    let lo = nibbles_lo(wb.q) | fifth_words(wb.qh, 0u);
    let hi = nibbles_hi(wb.q) | fifth_words(wb.qh, 16u);
    let s = idot8(lo, hi, xa, xb);
    return wb.d * (m.x * f32(s) - 16.0 * m.y);
}
