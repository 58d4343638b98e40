@group(0) @binding(0) var<storage, read> table: array<u32>;

// 210-byte super-blocks {u8 ql[128], u8 qh[64], i8 scales[16], f16 d} (every other one
// starts mid-word; byte_at does not care). In half h = e / 128, group g = (e % 128) / 32
// and l = e % 32: the low (g < 2) or high nibble of ql[64h + 32 (g % 2) + l], bits 2g, 2g + 1
// of qh[32h + l], scale 8h + l / 16 + 2g; x = (d·sc)·(q − 32) as in dequantize_row_q6_K.
fn dequant(row: u32, c: u32) -> f32 {
    let byte0 = (row * (DIM / 256u) + c / 256u) * 210u;
    let e = c % 256u;
    let h = e / 128u;
    let g = (e % 128u) / 32u;
    let l = e % 32u;
    let lo = (byte_at(byte0 + 64u * h + 32u * (g & 1u) + l) >> (4u * (g >> 1u))) & 15u;
    let q = lo | (((byte_at(byte0 + 128u + 32u * h + l) >> (2u * g)) & 3u) << 4u);
    let sc = bitcast<i32>(byte_at(byte0 + 192u + 8u * h + l / 16u + 2u * g) << 24u) >> 24u;
    return (half_at(byte0 + 208u) * f32(sc)) * f32(i32(q) - 32);
}
