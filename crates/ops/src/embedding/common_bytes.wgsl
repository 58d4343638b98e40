// Byte access into a table of packed blocks read as u32 words (little-endian). Quantized
// blocks of 34, 18 or 210 bytes are not word-aligned, hence the shifts.

fn byte_at(i: u32) -> u32 {
    return (table[i >> 2u] >> ((i & 3u) * 8u)) & 0xFFu;
}

// The f16 at byte `i` (always even in these formats).
fn half_at(i: u32) -> f32 {
    return unpack2x16float(table[i >> 2u] >> ((i & 2u) * 8u)).x;
}
