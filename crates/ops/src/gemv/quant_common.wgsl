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
