// gemv, q4_0 weights in the packed layout through 32-byte loads (the wide rows frames):
// w = d · (q - 8), so a block gives d · (Σ q·x - 8 Σ x).
fn pair_load(row: u32, p: u32, window: ptr<function, vec4<u64>>) -> Pair {
    let b = row * (COLS / 32u) + 2u * p;
    let d = d_pair(b, p, window);
    var pr: Pair;
    pr.qa = w[b >> 1u];
    pr.s = vec4<f32>(d.x, -8.0 * d.x, d.y, -8.0 * d.y);
    return pr;
}

fn pair_dot(pr: Pair) -> f32 {
    return (pr.s.x * q4_dot(pr.qa.x, pr.qa.y, 0u) + pr.s.y * x_block_sum(0u))
        + (pr.s.z * q4_dot(pr.qa.z, pr.qa.w, 8u) + pr.s.w * x_block_sum(8u));
}
