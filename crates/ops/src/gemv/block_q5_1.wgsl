// block_dot for the rows frame, q5_1: a whole 24-byte block (the 4 units of unit_dot)
// with d, m and qh loaded once instead of once per unit.
fn block_dot(row: u32, b: u32) -> f32 {
    let a = (row * (COLS / 32u) + b) * 6u;
    let dm = unpack2x16float(w[a]);
    let qh = w[a + 1u];
    let o = b * 8u;
    var s = 0.0;
    var sx = vec4<f32>(0.0);
    for (var k = 0u; k < 4u; k++) {
        let q = w[a + 2u + k];
        let lo = (q & 0x0F0F0F0Fu) | fifth_bits(qh >> (4u * k));
        let hi = ((q >> 4u) & 0x0F0F0F0Fu) | fifth_bits(qh >> (4u * k + 16u));
        let xl = xv(o + k);
        let xh = xv(o + 4u + k);
        s += dot(u8x4(lo) - TWO23, xl) + dot(u8x4(hi) - TWO23, xh);
        sx += xl + xh;
    }
    return dm.x * s + dm.y * dot(sx, vec4<f32>(1.0));
}
