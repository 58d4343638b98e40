// block_dot for the rows frame, q4_K: units 4j..4j+3 of a super-block (j = b % 8), which
// share their 64-element run c and so its two sub-blocks' scales and mins: d, dmin and
// the scale words loaded and decoded once instead of once per unit.
fn block_dot(row: u32, b: u32) -> f32 {
    let sbk = b >> 3u;
    let k0 = (b & 7u) * 4u;
    let a = (row * (COLS / 256u) + sbk) * 36u;
    let dm = unpack2x16float(w[a]);
    let c = k0 >> 3u;
    let sm = k_scale_min(c, w[a + 1u], w[a + 2u], w[a + 3u]);
    let q0 = w[a + 4u + k0];
    let q1 = w[a + 5u + k0];
    let q2 = w[a + 6u + k0];
    let q3 = w[a + 7u + k0];
    let o = sbk * 64u + c * 16u + (k0 & 7u);
    let l0 = xv(o);
    let l1 = xv(o + 1u);
    let l2 = xv(o + 2u);
    let l3 = xv(o + 3u);
    let h0 = xv(o + 8u);
    let h1 = xv(o + 9u);
    let h2 = xv(o + 10u);
    let h3 = xv(o + 11u);
    let sl = (dot(nib_lo(q0) - TWO23, l0) + dot(nib_lo(q1) - TWO23, l1))
        + (dot(nib_lo(q2) - TWO23, l2) + dot(nib_lo(q3) - TWO23, l3));
    let sh = (dot(nib_hi(q0) - TWO23, h0) + dot(nib_hi(q1) - TWO23, h1))
        + (dot(nib_hi(q2) - TWO23, h2) + dot(nib_hi(q3) - TWO23, h3));
    let xl = dot((l0 + l1) + (l2 + l3), vec4<f32>(1.0));
    let xh = dot((h0 + h1) + (h2 + h3), vec4<f32>(1.0));
    let ds = dm.x * sm.xy;
    let ms = dm.y * sm.zw;
    return (ds.x * sl + ds.y * sh) - (ms.x * xl + ms.y * xh);
}
