// block_dot for the rows frame, q5_0: a whole 22-byte block (the 4 units of unit_dot)
// with each of its 6 words loaded once.
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
    let z = TWO23 + 16.0;
    let o = b * 8u;
    var s = 0.0;
    let qs = array<u32, 4>(realign(w1, w2, mid), realign(w2, w3, mid), realign(w3, w4, mid), realign(w4, w5, mid));
    for (var k = 0u; k < 4u; k++) {
        let q = qs[k];
        let lo = (q & 0x0F0F0F0Fu) | fifth_bits(qh >> (4u * k));
        let hi = ((q >> 4u) & 0x0F0F0F0Fu) | fifth_bits(qh >> (4u * k + 16u));
        s += dot(u8x4(lo) - z, xv(o + k)) + dot(u8x4(hi) - z, xv(o + 4u + k));
    }
    return d * s;
}
