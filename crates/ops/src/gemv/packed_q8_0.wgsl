// gemv, q8_0 weights in the packed layout (layout.rs): block i's 32 quant bytes are
// vec4 2i and 2i + 1, its f16 scale is half i of the scales region, which starts at vec4
// SCALES_AT. Unit k covers quant words 2k and 2k + 1, elements 8k..8k+7.

fn unit_dot(row: u32, u: u32) -> f32 {
    let b = u >> 2u;
    let k = u & 3u;
    let i = row * (COLS / 32u) + b;
    let v = w[2u * i + (k >> 1u)];
    let q = select(v.xy, v.zw, (k & 1u) != 0u);
    let o = b * 8u + 2u * k;
    return block_scale(i) * (dot(i8x4(q.x), xv(o)) + dot(i8x4(q.y), xv(o + 1u)));
}

// A whole block: two 16-byte loads of quants, one of the scale word.
fn block_dot(row: u32, b: u32) -> f32 {
    let i = row * (COLS / 32u) + b;
    let q0 = w[2u * i];
    let q1 = w[2u * i + 1u];
    let o = b * 8u;
    let s = (dot(i8x4(q0.x), xv(o)) + dot(i8x4(q0.y), xv(o + 1u)))
        + (dot(i8x4(q0.z), xv(o + 2u)) + dot(i8x4(q0.w), xv(o + 3u)))
        + (dot(i8x4(q1.x), xv(o + 4u)) + dot(i8x4(q1.y), xv(o + 5u)))
        + (dot(i8x4(q1.z), xv(o + 6u)) + dot(i8x4(q1.w), xv(o + 7u)));
    return block_scale(i) * s;
}
