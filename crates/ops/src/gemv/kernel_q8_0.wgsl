// gemv, q8_0 weights: 34-byte blocks {f16 d, i8 qs[32]}; unit k covers qs words 2k and
// 2k + 1, elements 8k..8k+7.

@group(0) @binding(0) var<storage, read> w: array<u32>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = vec4<f32>;

fn unit_dot(row: u32, u: u32) -> f32 {
    let b = u >> 2u;
    let k = u & 3u;
    let byte0 = (row * (COLS / 32u) + b) * 34u;
    let a = byte0 >> 2u;
    let mid = (byte0 & 2u) != 0u;
    let w0 = w[a];
    let d = unpack2x16float(select(w0, w0 >> 16u, mid)).x;
    let j = a + 2u * k;
    let v0 = w[j];
    let v1 = w[j + 1u];
    let v2 = w[j + 2u];
    let o = b * 8u + 2u * k;
    return d * (dot(i8x4(realign(v0, v1, mid)), xv(o)) + dot(i8x4(realign(v1, v2, mid)), xv(o + 1u)));
}
