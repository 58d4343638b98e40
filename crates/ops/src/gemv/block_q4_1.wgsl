// block_dot for the rows frame, q4_1: a whole 20-byte block (the 4 units of unit_dot)
// with d and m loaded once instead of once per unit.
fn block_dot(row: u32, b: u32) -> f32 {
    let a = (row * (COLS / 32u) + b) * 5u;
    let dm = unpack2x16float(w[a]);
    let q0 = w[a + 1u];
    let q1 = w[a + 2u];
    let q2 = w[a + 3u];
    let q3 = w[a + 4u];
    let o = b * 8u;
    let x0 = xv(o);
    let x1 = xv(o + 1u);
    let x2 = xv(o + 2u);
    let x3 = xv(o + 3u);
    let x4 = xv(o + 4u);
    let x5 = xv(o + 5u);
    let x6 = xv(o + 6u);
    let x7 = xv(o + 7u);
    let s = (dot(nib_lo(q0) - TWO23, x0) + dot(nib_hi(q0) - TWO23, x4))
        + (dot(nib_lo(q1) - TWO23, x1) + dot(nib_hi(q1) - TWO23, x5))
        + (dot(nib_lo(q2) - TWO23, x2) + dot(nib_hi(q2) - TWO23, x6))
        + (dot(nib_lo(q3) - TWO23, x3) + dot(nib_hi(q3) - TWO23, x7));
    let sx = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    return dm.x * s + dm.y * dot(sx, vec4<f32>(1.0));
}
