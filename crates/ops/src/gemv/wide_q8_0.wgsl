// gemv, q8_0 weights in the packed layout through 32-byte loads (the wide rows frames): a
// block's 32 quant bytes are one element; w = d · q.

// The int8 values of quant word q as f32 (byte 0 first; exact).
fn i8x4_wide(q: u32) -> vec4<f32> {
    return vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(q) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

fn q8_dot(q: vec4<u64>, o: u32) -> f32 {
    return (dot(i8x4_wide(u32(q.x)), xv(o)) + dot(i8x4_wide(u32(q.x >> 32u)), xv(o + 1u)))
        + (dot(i8x4_wide(u32(q.y)), xv(o + 2u)) + dot(i8x4_wide(u32(q.y >> 32u)), xv(o + 3u)))
        + (dot(i8x4_wide(u32(q.z)), xv(o + 4u)) + dot(i8x4_wide(u32(q.z >> 32u)), xv(o + 5u)))
        + (dot(i8x4_wide(u32(q.w)), xv(o + 6u)) + dot(i8x4_wide(u32(q.w >> 32u)), xv(o + 7u)));
}

fn pair_load(row: u32, p: u32, window: ptr<function, vec4<u64>>) -> Pair {
    let b = row * (COLS / 32u) + 2u * p;
    let d = d_pair(b, p, window);
    var pr: Pair;
    pr.qa = w[b];
    pr.qb = w[b + 1u];
    pr.s = vec4<f32>(d.x, 0.0, d.y, 0.0);
    return pr;
}

fn pair_dot(pr: Pair) -> f32 {
    return pr.s.x * q8_dot(pr.qa, 0u) + pr.s.z * q8_dot(pr.qb, 8u);
}
