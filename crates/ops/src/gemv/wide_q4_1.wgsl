// gemv, q4_1 weights in the packed layout through 32-byte loads (the wide rows frames):
// w = d · q + m, so a block gives d · Σ q·x + m · Σ x.
fn pair_load(row: u32, p: u32, window: ptr<function, vec4<u64>>) -> Pair {
    let b = row * (COLS / 32u) + 2u * p;
    // The pair's two (f16 d, f16 m) words are u64 number SCALES_AT * 2 + b / 2 of the
    // buffer; 4 to an element, loaded when the pair enters a new one.
    let u = SCALES_AT * 2u + (b >> 1u);
    if p == 0u || (u & 3u) == 0u {
        *window = w[u >> 2u];
    }
    let dm = (*window)[u & 3u];
    var pr: Pair;
    pr.qa = w[b >> 1u];
    pr.s = vec4<f32>(unpack2x16float(u32(dm)), unpack2x16float(u32(dm >> 32u)));
    return pr;
}

fn pair_dot(pr: Pair) -> f32 {
    return (pr.s.x * q4_dot(pr.qa.x, pr.qa.y, 0u) + pr.s.y * x_block_sum(0u))
        + (pr.s.z * q4_dot(pr.qa.z, pr.qa.w, 8u) + pr.s.w * x_block_sum(8u));
}
