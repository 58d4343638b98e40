// block_dot for the rows frame, q6_K: units 4j..4j+3 of a super-block (j = b % 8) share
// their half, group and scale pair: d and the scales loaded once, the 16 ql bytes and 16
// qh bytes as 4 words each (spliced when the super-block starts mid-word).
fn block_dot(row: u32, b: u32) -> f32 {
    let sbk = b >> 3u;
    let k0 = (b & 7u) * 4u;
    let byte0 = (row * (COLS / 256u) + sbk) * 210u;
    let hf = k0 >> 4u;
    let g = (k0 >> 3u) & 1u;
    let i0 = k0 & 7u;
    let db = byte0 + 208u;
    let dw = w[db >> 2u];
    let d = unpack2x16float(select(dw, dw >> 16u, (db & 2u) != 0u)).x;
    let sb = byte0 + 192u + 8u * hf;
    let sw = vec2<u32>(k_word(sb), k_word(sb + 4u));
    let shift = 8u * ((i0 >> 2u) + 2u * g);
    let ds = d * i8_pair((sw >> vec2<u32>(shift)) & vec2<u32>(0xFFu));
    let qlb = byte0 + 64u * hf + 32u * g + 4u * i0;
    let qhb = byte0 + 128u + 32u * hf + 4u * i0;
    let z = TWO23 + 32.0;
    let o = sbk * 64u + hf * 32u + g * 8u + i0;
    let ql0 = k_word(qlb);
    let qh0 = k_word(qhb) >> (2u * g);
    let ql1 = k_word(qlb + 4u);
    let qh1 = k_word(qhb + 4u) >> (2u * g);
    let ql2 = k_word(qlb + 8u);
    let qh2 = k_word(qhb + 8u) >> (2u * g);
    let ql3 = k_word(qlb + 12u);
    let qh3 = k_word(qhb + 12u) >> (2u * g);
    let sl = (dot(q6_lo(ql0, qh0) - z, xv(o)) + dot(q6_lo(ql1, qh1) - z, xv(o + 1u)))
        + (dot(q6_lo(ql2, qh2) - z, xv(o + 2u)) + dot(q6_lo(ql3, qh3) - z, xv(o + 3u)));
    let sh = (dot(q6_hi(ql0, qh0) - z, xv(o + 16u)) + dot(q6_hi(ql1, qh1) - z, xv(o + 17u)))
        + (dot(q6_hi(ql2, qh2) - z, xv(o + 18u)) + dot(q6_hi(ql3, qh3) - z, xv(o + 19u)));
    return ds.x * sl + ds.y * sh;
}

// A q6_K unit's low (high) nibbles of ql with their two high bits from qh (already
// shifted by 2g), as bytes plus 2^23.
fn q6_lo(ql: u32, qh: u32) -> vec4<f32> {
    return u8x4((ql & 0x0F0F0F0Fu) | ((qh & 0x03030303u) << 4u));
}

fn q6_hi(ql: u32, qh: u32) -> vec4<f32> {
    return u8x4(((ql >> 4u) & 0x0F0F0F0Fu) | (((qh >> 4u) & 0x03030303u) << 4u));
}
