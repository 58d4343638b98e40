@group(0) @binding(0) var<storage, read> table: array<u32>;

// 144-byte super-blocks {f16 d, f16 dmin, u8 scales[12], u8 qs[128]}: element e of a
// block is in sub-block j = e / 32, the low (j even) or high (j odd) nibble of
// qs[32 (e / 64) + e % 32]; x = (d·sc)·q − dmin·m as in dequantize_row_q4_K.
fn dequant(row: u32, c: u32) -> f32 {
    let byte0 = (row * (DIM / 256u) + c / 256u) * 144u;
    let e = c % 256u;
    let j = e / 32u;
    let sm = scale_min_k4(byte0 + 4u, j);
    let q = (byte_at(byte0 + 16u + 32u * (e / 64u) + e % 32u) >> (4u * (j & 1u))) & 15u;
    let d = half_at(byte0) * f32(sm.x);
    let m = half_at(byte0 + 2u) * f32(sm.y);
    return d * f32(q) - m;
}
