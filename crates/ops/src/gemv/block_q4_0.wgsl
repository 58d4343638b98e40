// block_dot for the rows frame, q4_0: a whole 18-byte block (the 4 units of unit_dot) with
// each of its 5 words loaded once; lavapipe's compiler did not merge the four units'
// repeated loads (a q8_0 head 25% faster per CPU-second block by block).
fn block_dot(row: u32, b: u32) -> f32 {
    let byte0 = (row * (COLS / 32u) + b) * 18u;
    let a = byte0 >> 2u;
    let mid = (byte0 & 2u) != 0u;
    let w0 = w[a];
    let w1 = w[a + 1u];
    let w2 = w[a + 2u];
    let w3 = w[a + 3u];
    let w4 = w[a + 4u];
    let d = unpack2x16float(select(w0, w0 >> 16u, mid)).x;
    let q0 = realign(w0, w1, mid);
    let q1 = realign(w1, w2, mid);
    let q2 = realign(w2, w3, mid);
    let q3 = realign(w3, w4, mid);
    let z = TWO23 + 8.0;
    let o = b * 8u;
    let s = (dot(nib_lo(q0) - z, xv(o)) + dot(nib_hi(q0) - z, xv(o + 4u)))
        + (dot(nib_lo(q1) - z, xv(o + 1u)) + dot(nib_hi(q1) - z, xv(o + 5u)))
        + (dot(nib_lo(q2) - z, xv(o + 2u)) + dot(nib_hi(q2) - z, xv(o + 6u)))
        + (dot(nib_lo(q3) - z, xv(o + 3u)) + dot(nib_hi(q3) - z, xv(o + 7u)));
    return d * s;
}
