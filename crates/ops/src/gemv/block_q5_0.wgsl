// block_dot for the rows frame, q5_0: a whole 22-byte block (the 4 units of unit_dot)
// with each of its 6 words loaded once (q5_0_words.wgsl), straight-line (lavapipe runs a
// loop over a local array several times slower).
fn block_dot(row: u32, b: u32) -> f32 {
    let k = q5_0_words(row * (COLS / 32u) + b);
    let z = TWO23 + 16.0;
    let o = b * 8u;
    let s = (dot(q5_lo(k.q.x, k.qh, 0u) - z, xv(o)) + dot(q5_hi(k.q.x, k.qh, 0u) - z, xv(o + 4u)))
        + (dot(q5_lo(k.q.y, k.qh, 1u) - z, xv(o + 1u)) + dot(q5_hi(k.q.y, k.qh, 1u) - z, xv(o + 5u)))
        + (dot(q5_lo(k.q.z, k.qh, 2u) - z, xv(o + 2u)) + dot(q5_hi(k.q.z, k.qh, 2u) - z, xv(o + 6u)))
        + (dot(q5_lo(k.q.w, k.qh, 3u) - z, xv(o + 3u)) + dot(q5_hi(k.q.w, k.qh, 3u) - z, xv(o + 7u)));
    return k.d * s;
}
