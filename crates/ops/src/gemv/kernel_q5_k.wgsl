// gemv, q5_K weights: 176-byte (44-word, always word-aligned) super-blocks {f16 d,
// f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]} of 256 elements; see `quant/k.rs`. Unit
// k (0..32) is qs word k, laid out as in q4_K (c = k / 8, l = 4 (k % 8)); the fifth bits
// of its 8 elements are bits 2c (low nibbles) and 2c + 1 (high nibbles) of qh word k % 8,
// spliced into the nibble words before the bytes become floats.

@group(0) @binding(0) var<storage, read> w: array<u32>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = vec4<f32>;

fn unit_dot(row: u32, u: u32) -> f32 {
    let b = u >> 5u;
    let k = u & 31u;
    let a = (row * (COLS / 256u) + b) * 44u;
    let dm = unpack2x16float(w[a]);
    let c = k >> 3u;
    let sm = k_scale_min(c, w[a + 1u], w[a + 2u], w[a + 3u]);
    let h = w[a + 4u + (k & 7u)] >> (2u * c);
    let q = w[a + 12u + k];
    let lo = (q & 0x0F0F0F0Fu) | ((h & 0x01010101u) << 4u);
    let hi = ((q >> 4u) & 0x0F0F0F0Fu) | (((h >> 1u) & 0x01010101u) << 4u);
    let o = b * 64u + c * 16u + (k & 7u);
    let xl = xv(o);
    let xh = xv(o + 8u);
    let ds = dm.x * sm.xy;
    let ms = dm.y * sm.zw;
    let s = ds.x * dot(u8x4(lo) - TWO23, xl) + ds.y * dot(u8x4(hi) - TWO23, xh);
    return s - (ms.x * dot(xl, vec4<f32>(1.0)) + ms.y * dot(xh, vec4<f32>(1.0)));
}
