// The q5_0 / q5_1 gemm loaders' shared part (prepended to each): a block from its 16
// quant bytes (4 words, in order) and qh, as the frame's int8 words: element j the low
// (j < 16) or high nibble of byte j % 16, bit j of qh its fifth bit.
fn q5_wblock(q: vec4<u32>, qh: u32, dm: vec2<f32>) -> WBlock {
    let shift = vec4<u32>(0u, 4u, 8u, 12u);
    let lo = (q & vec4<u32>(0x0F0F0F0Fu)) | fifth_bits4(vec4<u32>(qh) >> shift);
    let hi = ((q >> vec4<u32>(4u)) & vec4<u32>(0x0F0F0F0Fu))
        | fifth_bits4(vec4<u32>(qh) >> (shift + vec4<u32>(16u)));
    return WBlock(lo, hi, dm);
}

// fifth_bits (quant_common.wgsl) for four words.
fn fifth_bits4(h: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(fifth_bits(h.x), fifth_bits(h.y), fifth_bits(h.z), fifth_bits(h.w));
}
