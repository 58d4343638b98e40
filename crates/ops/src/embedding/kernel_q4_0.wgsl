@group(0) @binding(0) var<storage, read> table: array<u32>;

fn dequant(row: u32, c: u32) -> f32 {
    let byte0 = (row * (DIM / 32u) + c / 32u) * 18u;
    let j = c % 32u;
    let q = (byte_at(byte0 + 2u + j % 16u) >> ((j / 16u) * 4u)) & 15u;
    return f32(i32(q) - 8) * half_at(byte0);
}
