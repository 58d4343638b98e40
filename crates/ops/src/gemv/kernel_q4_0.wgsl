// gemv, q4_0 weights: 18-byte blocks {f16 d, u8 qs[16]}. Byte j of qs holds element j
// (low nibble) and element j + 16 (high nibble), so unit k (qs word k) covers elements
// 4k..4k+3 and 4k+16..4k+19.

@group(0) @binding(0) var<storage, read> w: array<u32>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = vec4<f32>;

fn unit_dot(row: u32, u: u32) -> f32 {
    let b = u >> 2u;
    let k = u & 3u;
    let byte0 = (row * (COLS / 32u) + b) * 18u;
    let a = byte0 >> 2u;
    let mid = (byte0 & 2u) != 0u;
    let w0 = w[a];
    let d = unpack2x16float(select(w0, w0 >> 16u, mid)).x;
    let q = realign(w[a + k], w[a + k + 1u], mid);
    // nib_* carry 2^23; (2^23 + 8) removes it and q4_0's zero point 8.
    let z = TWO23 + 8.0;
    let o = b * 8u + k;
    return d * (dot(nib_lo(q) - z, xv(o)) + dot(nib_hi(q) - z, xv(o + 4u)));
}
