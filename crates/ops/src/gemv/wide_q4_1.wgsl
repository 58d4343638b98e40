// gemv, q4_1 weights in the packed layout through 32-byte loads (the wide rows frame):
// w = d · q + m, so a block gives d · Σ q·x + m · Σ x.
fn pair_dot(row: u32, p: u32, window: ptr<function, vec4<u64>>) -> f32 {
    let b = row * (COLS / 32u) + 2u * p;
    let q = w[b >> 1u];
    // The pair's two (f16 d, f16 m) words are u64 number SCALES_AT * 2 + b / 2 of the
    // buffer; 4 to an element, loaded when the pair enters a new one.
    let u = SCALES_AT * 2u + (b >> 1u);
    if p == 0u || (u & 3u) == 0u {
        *window = w[u >> 2u];
    }
    let dm = (*window)[u & 3u];
    let da = unpack2x16float(u32(dm));
    let db = unpack2x16float(u32(dm >> 32u));
    return (da.x * q4_dot(q.x, q.y, 0u) + da.y * x_block_sum(0u))
        + (db.x * q4_dot(q.z, q.w, 8u) + db.y * x_block_sum(8u));
}
