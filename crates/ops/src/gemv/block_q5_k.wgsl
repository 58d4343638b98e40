// block_dot for the rows frame, q5_K: as q4_K (block_q4_k.wgsl), with the fifth bits of
// the 4 units from qh words k0 % 8 .. k0 % 8 + 3.
fn block_dot(row: u32, b: u32) -> f32 {
    let sbk = b >> 3u;
    let k0 = (b & 7u) * 4u;
    let a = (row * (COLS / 256u) + sbk) * 44u;
    let dm = unpack2x16float(w[a]);
    let c = k0 >> 3u;
    let sm = k_scale_min(c, w[a + 1u], w[a + 2u], w[a + 3u]);
    let hb = a + 4u + (k0 & 7u);
    let sh0 = 2u * c;
    let h0 = w[hb] >> sh0;
    let h1 = w[hb + 1u] >> sh0;
    let h2 = w[hb + 2u] >> sh0;
    let h3 = w[hb + 3u] >> sh0;
    let q0 = w[a + 12u + k0];
    let q1 = w[a + 13u + k0];
    let q2 = w[a + 14u + k0];
    let q3 = w[a + 15u + k0];
    let o = sbk * 64u + c * 16u + (k0 & 7u);
    let l0 = xv(o);
    let l1 = xv(o + 1u);
    let l2 = xv(o + 2u);
    let l3 = xv(o + 3u);
    let x0 = xv(o + 8u);
    let x1 = xv(o + 9u);
    let x2 = xv(o + 10u);
    let x3 = xv(o + 11u);
    let sl = (dot(q5k_lo(q0, h0) - TWO23, l0) + dot(q5k_lo(q1, h1) - TWO23, l1))
        + (dot(q5k_lo(q2, h2) - TWO23, l2) + dot(q5k_lo(q3, h3) - TWO23, l3));
    let sh = (dot(q5k_hi(q0, h0) - TWO23, x0) + dot(q5k_hi(q1, h1) - TWO23, x1))
        + (dot(q5k_hi(q2, h2) - TWO23, x2) + dot(q5k_hi(q3, h3) - TWO23, x3));
    let xl = dot((l0 + l1) + (l2 + l3), vec4<f32>(1.0));
    let xh = dot((x0 + x1) + (x2 + x3), vec4<f32>(1.0));
    let ds = dm.x * sm.xy;
    let ms = dm.y * sm.zw;
    return (ds.x * sl + ds.y * sh) - (ms.x * xl + ms.y * xh);
}

// A q5_K quant word's low (high) nibbles with their fifth bits (bit 0 (1) of each byte of
// `h`, already shifted by 2c), as bytes plus 2^23.
fn q5k_lo(q: u32, h: u32) -> vec4<f32> {
    return u8x4((q & 0x0F0F0F0Fu) | ((h & 0x01010101u) << 4u));
}

fn q5k_hi(q: u32, h: u32) -> vec4<f32> {
    return u8x4(((q >> 4u) & 0x0F0F0F0Fu) | (((h >> 1u) & 0x01010101u) << 4u));
}
