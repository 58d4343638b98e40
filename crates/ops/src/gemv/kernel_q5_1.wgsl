// gemv, q5_1 weights: 24-byte (6-word, always aligned) blocks {f16 d, f16 m, u32 qh,
// u8 qs[16]}. Unit k (qs word k) covers elements 4k..4k+3 (low nibbles, fifth bits
// 4k..4k+3 of qh) and 4k+16..4k+19 (high nibbles, bits 4k+16..). sum (q*d + m) * x =
// d * sum q*x + m * sum x.

@group(0) @binding(0) var<storage, read> w: array<u32>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = vec4<f32>;

fn unit_dot(row: u32, u: u32) -> f32 {
    let b = u >> 2u;
    let k = u & 3u;
    let a = (row * (COLS / 32u) + b) * 6u;
    let dm = unpack2x16float(w[a]);
    let qh = w[a + 1u];
    let q = w[a + 2u + k];
    let lo = (q & 0x0F0F0F0Fu) | fifth_bits(qh >> (4u * k));
    let hi = ((q >> 4u) & 0x0F0F0F0Fu) | fifth_bits(qh >> (4u * k + 16u));
    let o = b * 8u + k;
    let xl = xv(o);
    let xh = xv(o + 4u);
    let s = dot(u8x4(lo) - TWO23, xl) + dot(u8x4(hi) - TWO23, xh);
    return dm.x * s + dm.y * dot(xl + xh, vec4<f32>(1.0));
}
