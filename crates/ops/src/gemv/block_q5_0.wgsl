// block_dot for the rows frame, q5_0: a whole 22-byte block (the 4 units of unit_dot)
// with each of its 6 words loaded once, straight-line (lavapipe runs a loop over a local
// array several times slower).
fn block_dot(row: u32, b: u32) -> f32 {
    let byte0 = (row * (COLS / 32u) + b) * 22u;
    let a = byte0 >> 2u;
    let mid = (byte0 & 2u) != 0u;
    let w0 = w[a];
    let w1 = w[a + 1u];
    let w2 = w[a + 2u];
    let w3 = w[a + 3u];
    let w4 = w[a + 4u];
    let w5 = w[a + 5u];
    let d = unpack2x16float(select(w0, w0 >> 16u, mid)).x;
    let qh = realign(w0, w1, mid);
    let q0 = realign(w1, w2, mid);
    let q1 = realign(w2, w3, mid);
    let q2 = realign(w3, w4, mid);
    let q3 = realign(w4, w5, mid);
    let z = TWO23 + 16.0;
    let o = b * 8u;
    let s = (dot(q5_lo(q0, qh, 0u) - z, xv(o)) + dot(q5_hi(q0, qh, 0u) - z, xv(o + 4u)))
        + (dot(q5_lo(q1, qh, 1u) - z, xv(o + 1u)) + dot(q5_hi(q1, qh, 1u) - z, xv(o + 5u)))
        + (dot(q5_lo(q2, qh, 2u) - z, xv(o + 2u)) + dot(q5_hi(q2, qh, 2u) - z, xv(o + 6u)))
        + (dot(q5_lo(q3, qh, 3u) - z, xv(o + 3u)) + dot(q5_hi(q3, qh, 3u) - z, xv(o + 7u)));
    return d * s;
}
