@group(0) @binding(0) var<storage, read> table: array<u32>;

// 176-byte super-blocks {f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]}: as q4_K,
// with bit j of qh[e % 32] as the fifth bit of element e (sub-block j = e / 32).
fn dequant(row: u32, c: u32) -> f32 {
    let byte0 = (row * (DIM / 256u) + c / 256u) * 176u;
    let e = c % 256u;
    let j = e / 32u;
    let sm = scale_min_k4(byte0 + 4u, j);
    let lo = (byte_at(byte0 + 48u + 32u * (e / 64u) + e % 32u) >> (4u * (j & 1u))) & 15u;
    let q = lo | (((byte_at(byte0 + 16u + e % 32u) >> j) & 1u) << 4u);
    let d = half_at(byte0) * f32(sm.x);
    let m = half_at(byte0 + 2u) * f32(sm.y);
    return d * f32(q) - m;
}
