@group(0) @binding(0) var<storage, read> table: array<u32>;

// q5_1: 24-byte blocks {f16 d, f16 m, u32 qh, u8 qs[16]}; x = q·d + m.
fn dequant(row: u32, c: u32) -> f32 {
    let byte0 = (row * (DIM / 32u) + c / 32u) * 24u;
    let j = c % 32u;
    let qh = byte_at(byte0 + 4u + j / 8u) >> (j % 8u);
    let q = ((byte_at(byte0 + 8u + j % 16u) >> ((j / 16u) * 4u)) & 15u) | ((qh & 1u) << 4u);
    return f32(q) * half_at(byte0) + half_at(byte0 + 2u);
}
