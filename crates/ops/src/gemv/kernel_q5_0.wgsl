// gemv, q5_0 weights: 22-byte blocks {f16 d, u32 qh, u8 qs[16]}. As q4_0, byte j of qs
// holds element j (low nibble) and j + 16 (high nibble); bit j of qh is element j's fifth
// bit. Unit k (qs word k) covers elements 4k..4k+3 and 4k+16..4k+19. Blocks start on
// even bytes: the payload after d (qh, then qs) is word-aligned when the block starts
// mid-word, else spliced from two words (realign).

@group(0) @binding(0) var<storage, read> w: array<u32>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = vec4<f32>;

fn unit_dot(row: u32, u: u32) -> f32 {
    let b = u >> 2u;
    let k = u & 3u;
    let byte0 = (row * (COLS / 32u) + b) * 22u;
    let a = byte0 >> 2u;
    let mid = (byte0 & 2u) != 0u;
    let w0 = w[a];
    let d = unpack2x16float(select(w0, w0 >> 16u, mid)).x;
    let qh = realign(w0, w[a + 1u], mid);
    let q = realign(w[a + 1u + k], w[a + 2u + k], mid);
    let lo = (q & 0x0F0F0F0Fu) | fifth_bits(qh >> (4u * k));
    let hi = ((q >> 4u) & 0x0F0F0F0Fu) | fifth_bits(qh >> (4u * k + 16u));
    // u8x4 carries 2^23; (2^23 + 16) removes it and q5_0's zero point 16.
    let z = TWO23 + 16.0;
    let o = b * 8u + k;
    return d * (dot(u8x4(lo) - z, xv(o)) + dot(u8x4(hi) - z, xv(o + 4u)));
}
