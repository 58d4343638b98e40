// gemv, q4_K weights: 144-byte (36-word, so always word-aligned) super-blocks {f16 d,
// f16 dmin, u8 scales[12], u8 qs[128]} of 256 elements; see `quant/k.rs` for the layout.
// Unit k (0..32) is qs word k: with c = k / 8 (its 32-byte run) and l = 4 (k % 8), its low
// nibbles are elements 64c + l..+3 of sub-block 2c and its high nibbles elements
// 64c + 32 + l..+3 of sub-block 2c + 1. Both sub-blocks' 6-bit scales and mins come out
// of the three scale words in one vec2 pass (`k_scale_min` in quant_common.wgsl).
// sum (d·sc·q − dmin·m)·x = d·sc·Σq·x − dmin·m·Σx per sub-block.

@group(0) @binding(0) var<storage, read> w: array<u32>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = vec4<f32>;

fn unit_dot(row: u32, u: u32) -> f32 {
    let b = u >> 5u;
    let k = u & 31u;
    let a = (row * (COLS / 256u) + b) * 36u;
    let dm = unpack2x16float(w[a]);
    let c = k >> 3u;
    let sm = k_scale_min(c, w[a + 1u], w[a + 2u], w[a + 3u]);
    let q = w[a + 4u + k];
    let o = b * 64u + c * 16u + (k & 7u);
    let xl = xv(o);
    let xh = xv(o + 8u);
    let ds = dm.x * sm.xy;
    let ms = dm.y * sm.zw;
    let s = ds.x * dot(nib_lo(q) - TWO23, xl) + ds.y * dot(nib_hi(q) - TWO23, xh);
    return s - (ms.x * dot(xl, vec4<f32>(1.0)) + ms.y * dot(xh, vec4<f32>(1.0)));
}
