// gemv, q4_0 weights in the packed layout through 32-byte loads (the wide rows frame):
// w = d · (q - 8), so a block gives d · (Σ q·x - 8 Σ x).
fn pair_dot(row: u32, p: u32, window: ptr<function, vec4<u64>>) -> f32 {
    let b = row * (COLS / 32u) + 2u * p;
    let q = w[b >> 1u];
    let d = d_pair(b, p, window);
    return d.x * (q4_dot(q.x, q.y, 0u) - 8.0 * x_block_sum(0u))
        + d.y * (q4_dot(q.z, q.w, 8u) - 8.0 * x_block_sum(8u));
}
