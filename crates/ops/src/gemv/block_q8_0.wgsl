// block_dot for the rows frame, q8_0: a whole 34-byte block (the 4 units of unit_dot)
// with each of the 9 words it spans loaded once; unit by unit, the words two units share
// and the scale were loaded again (lavapipe did not merge them: 25% slower per
// CPU-second on a 8192x576 head).
fn block_dot(row: u32, b: u32) -> f32 {
    let byte0 = (row * (COLS / 32u) + b) * 34u;
    let a = byte0 >> 2u;
    let mid = (byte0 & 2u) != 0u;
    let w0 = w[a];
    let w1 = w[a + 1u];
    let w2 = w[a + 2u];
    let w3 = w[a + 3u];
    let w4 = w[a + 4u];
    let w5 = w[a + 5u];
    let w6 = w[a + 6u];
    let w7 = w[a + 7u];
    let w8 = w[a + 8u];
    let d = unpack2x16float(select(w0, w0 >> 16u, mid)).x;
    let o = b * 8u;
    let s = (dot(i8x4(realign(w0, w1, mid)), xv(o)) + dot(i8x4(realign(w1, w2, mid)), xv(o + 1u)))
        + (dot(i8x4(realign(w2, w3, mid)), xv(o + 2u)) + dot(i8x4(realign(w3, w4, mid)), xv(o + 3u)))
        + (dot(i8x4(realign(w4, w5, mid)), xv(o + 4u)) + dot(i8x4(realign(w5, w6, mid)), xv(o + 5u)))
        + (dot(i8x4(realign(w6, w7, mid)), xv(o + 6u)) + dot(i8x4(realign(w7, w8, mid)), xv(o + 7u)));
    return d * s;
}
