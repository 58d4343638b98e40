// block_dot for the rows frame, q5_1: a whole 24-byte block (the 4 units of unit_dot)
// with d, m and qh loaded once, straight-line.
fn block_dot(row: u32, b: u32) -> f32 {
    let a = (row * (COLS / 32u) + b) * 6u;
    let dm = unpack2x16float(w[a]);
    let qh = w[a + 1u];
    let q0 = w[a + 2u];
    let q1 = w[a + 3u];
    let q2 = w[a + 4u];
    let q3 = w[a + 5u];
    let o = b * 8u;
    let x0 = xv(o);
    let x1 = xv(o + 1u);
    let x2 = xv(o + 2u);
    let x3 = xv(o + 3u);
    let x4 = xv(o + 4u);
    let x5 = xv(o + 5u);
    let x6 = xv(o + 6u);
    let x7 = xv(o + 7u);
    let s = (dot(q5_lo(q0, qh, 0u) - TWO23, x0) + dot(q5_hi(q0, qh, 0u) - TWO23, x4))
        + (dot(q5_lo(q1, qh, 1u) - TWO23, x1) + dot(q5_hi(q1, qh, 1u) - TWO23, x5))
        + (dot(q5_lo(q2, qh, 2u) - TWO23, x2) + dot(q5_hi(q2, qh, 2u) - TWO23, x6))
        + (dot(q5_lo(q3, qh, 3u) - TWO23, x3) + dot(q5_hi(q3, qh, 3u) - TWO23, x7));
    let sx = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    return dm.x * s + dm.y * dot(sx, vec4<f32>(1.0));
}
