@group(0) @binding(0) var<storage, read> table: array<u32>;

fn dequant(row: u32, c: u32) -> f32 {
    let byte0 = (row * (DIM / 32u) + c / 32u) * 34u;
    let q = bitcast<i32>(byte_at(byte0 + 2u + c % 32u) << 24u) >> 24u;
    return f32(q) * half_at(byte0);
}
