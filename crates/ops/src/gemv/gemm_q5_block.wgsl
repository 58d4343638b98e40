// The q5_0 / q5_1 gemm loaders' shared part (prepended to each): a block from its 16
// quant bytes (4 words, in order) and qh, as the frame's int8 words: element j the low
// (j < 16) or high nibble of byte j % 16, bit j of qh its fifth bit (fifth_words,
// quant_common.wgsl, as the dp4a gemv's idot_q5_*.wgsl splice them).
fn q5_wblock(q: vec4<u32>, qh: u32, dm: vec2<f32>) -> WBlock {
    let lo = nibbles_lo(q) | fifth_words(qh, 0u);
    let hi = nibbles_hi(q) | fifth_words(qh, 16u);
    return WBlock(lo, hi, dm);
}
