// gemv, q4_1 weights: 20-byte blocks {f16 d, f16 m, u8 qs[16]}, word-aligned. Unit k (qs
// word k) covers elements 4k..4k+3 (low nibbles) and 4k+16..4k+19 (high nibbles).
// sum (q*d + m) * x = d * sum q*x + m * sum x.

@group(0) @binding(0) var<storage, read> w: array<u32>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = vec4<f32>;

fn unit_dot(row: u32, u: u32) -> f32 {
    let b = u >> 2u;
    let k = u & 3u;
    let a = (row * (COLS / 32u) + b) * 5u;
    let dm = unpack2x16float(w[a]);
    let q = w[a + 1u + k];
    let o = b * 8u + k;
    let xl = xv(o);
    let xh = xv(o + 4u);
    let s = dot(nib_lo(q) - TWO23, xl) + dot(nib_hi(q) - TWO23, xh);
    return dm.x * s + dm.y * dot(xl + xh, vec4<f32>(1.0));
}
