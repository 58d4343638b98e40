// Helpers for the block formats (appended after the format file). A unit is a quarter of
// a 32-element block: 8 elements, one word of 4-bit quants or two of 8-bit ones.
//
// Integers 0..255 become floats as bitcast(0x4B000000 | n) = 2^23 + n, then one subtraction
// removes the 2^23 (and any zero point): exact, and cheaper than int-to-float conversion,
// which runs at a fraction of the FMA rate on NVIDIA GPUs.

const TWO23: f32 = 8388608.0;

fn n_units() -> u32 {
    return COLS / 8u;
}

// Low nibbles of the 4 bytes of q, plus 2^23.
fn nib_lo(q: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(((vec4<u32>(q) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u)) | vec4<u32>(0x4B000000u));
}

// High nibbles of the 4 bytes of q, plus 2^23.
fn nib_hi(q: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(((vec4<u32>(q) >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u)) | vec4<u32>(0x4B000000u));
}

// The 4 bytes of q as signed integers (q ^ 0x80 is the byte biased by 128).
fn i8x4(q: u32) -> vec4<f32> {
    let biased = (vec4<u32>(q ^ 0x80808080u) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xFFu);
    return bitcast<vec4<f32>>(biased | vec4<u32>(0x4B000000u)) - (TWO23 + 128.0);
}

// Word k of a block's payload, which starts 2 bytes into the block: `hi` itself when the
// block starts mid-word (the payload is then word-aligned), else the halves of `lo` and
// `hi` spliced. Blocks of 18 and 34 bytes alternate between the two cases.
fn realign(lo: u32, hi: u32, mid: bool) -> u32 {
    return select((lo >> 16u) | (hi << 16u), hi, mid);
}

// The 4 bytes of q, plus 2^23 each.
fn u8x4(q: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(((vec4<u32>(q) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xFFu)) | vec4<u32>(0x4B000000u));
}

// Two bytes (0..255, in u32s) read as i8, as floats.
fn i8_pair(v: vec2<u32>) -> vec2<f32> {
    return bitcast<vec2<f32>>((v ^ vec2<u32>(0x80u)) | vec2<u32>(0x4B000000u)) - (TWO23 + 128.0);
}

// q4_K / q5_K: the 6-bit scales (xy) and mins (zw) of sub-blocks 2c and 2c + 1, from the
// block's 12 scale bytes as three words (ggml's get_scale_min_k4 for two j at once).
// Sub-blocks 0..3 keep scale and min in the low 6 bits of bytes j and j + 4; sub-blocks
// 4..7 split them between the nibbles of byte j + 4 and the top 2 bits of bytes j − 4, j.
fn k_scale_min(c: u32, s0: u32, s1: u32, s2: u32) -> vec4<f32> {
    let sh = vec2<u32>(16u * (c & 1u)) + vec2<u32>(0u, 8u);
    let b0 = (vec2<u32>(s0) >> sh) & vec2<u32>(0xFFu);
    let b1 = (vec2<u32>(s1) >> sh) & vec2<u32>(0xFFu);
    let b2 = (vec2<u32>(s2) >> sh) & vec2<u32>(0xFFu);
    let low = c < 2u;
    let sc = select((b2 & vec2<u32>(15u)) | ((b0 >> vec2<u32>(6u)) << vec2<u32>(4u)), b0 & vec2<u32>(63u), low);
    let m = select((b2 >> vec2<u32>(4u)) | ((b1 >> vec2<u32>(6u)) << vec2<u32>(4u)), b1 & vec2<u32>(63u), low);
    return bitcast<vec4<f32>>(vec4<u32>(sc, m) | vec4<u32>(0x4B000000u)) - TWO23;
}

// q5_0 / q5_1: bits 0..3 of h moved to bit 4 of bytes 0..3 (the fifth bits of four
// consecutive elements, spliced into their nibble bytes).
fn fifth_bits(h: u32) -> u32 {
    return ((h & 1u) | ((h & 2u) << 7u) | ((h & 4u) << 14u) | ((h & 8u) << 21u)) << 4u;
}

// The fifth bits of a block's quant words 0..3 (qh bits 4k..4k+3 from bit `first`: 0 for
// the low nibbles, 16 for the high), as fifth_bits places them (the dp4a q5 kernels).
fn fifth_words(qh: u32, first: u32) -> vec4<u32> {
    let h = vec4<u32>(qh) >> (vec4<u32>(first) + vec4<u32>(0u, 4u, 8u, 12u));
    return vec4<u32>(fifth_bits(h.x), fifth_bits(h.y), fifth_bits(h.z), fifth_bits(h.w));
}

// q5_0 / q5_1 unit k of a block: its 4 low-nibble elements (4k..4k+3) and its 4
// high-nibble ones (4k+16..4k+19), fifth bits spliced in, as bytes plus 2^23 (u8x4).
fn q5_lo(q: u32, qh: u32, k: u32) -> vec4<f32> {
    return u8x4((q & 0x0F0F0F0Fu) | fifth_bits(qh >> (4u * k)));
}

fn q5_hi(q: u32, qh: u32, k: u32) -> vec4<f32> {
    return u8x4(((q >> 4u) & 0x0F0F0F0Fu) | fifth_bits(qh >> (4u * k + 16u)));
}
