// gemv, q4_0 weights in the packed layout (layout.rs): block i's 16 quant bytes are
// vec4 i, its f16 scale is half i of the scales region, which starts at vec4 SCALES_AT.
// Byte j of the quants holds element j (low nibble) and j + 16 (high nibble), as in GGUF:
// unit k (quant word k) covers elements 4k..4k+3 and 4k+16..4k+19.

fn unit_dot(row: u32, u: u32) -> f32 {
    let b = u >> 2u;
    let k = u & 3u;
    let i = row * (COLS / 32u) + b;
    let q = w[i][k];
    // nib_* carry 2^23; (2^23 + 8) removes it and q4_0's zero point 8.
    let z = TWO23 + 8.0;
    let o = b * 8u + k;
    return block_scale(i) * (dot(nib_lo(q) - z, xv(o)) + dot(nib_hi(q) - z, xv(o + 4u)));
}

// A whole block: one 16-byte load of quants, one of the scale word.
fn block_dot(row: u32, b: u32) -> f32 {
    let i = row * (COLS / 32u) + b;
    let q = w[i];
    let z = TWO23 + 8.0;
    let o = b * 8u;
    let s = (dot(nib_lo(q.x) - z, xv(o)) + dot(nib_hi(q.x) - z, xv(o + 4u)))
        + (dot(nib_lo(q.y) - z, xv(o + 1u)) + dot(nib_hi(q.y) - z, xv(o + 5u)))
        + (dot(nib_lo(q.z) - z, xv(o + 2u)) + dot(nib_hi(q.z) - z, xv(o + 6u)))
        + (dot(nib_lo(q.w) - z, xv(o + 3u)) + dot(nib_hi(q.w) - z, xv(o + 7u)));
    return block_scale(i) * s;
}
