@group(0) @binding(0) var<storage, read> table: array<u32>;

// q5_0: 22-byte blocks {f16 d, u32 qh, u8 qs[16]}; element j's fifth bit is bit j of qh.
fn dequant(row: u32, c: u32) -> f32 {
    let byte0 = (row * (DIM / 32u) + c / 32u) * 22u;
    let j = c % 32u;
    let qh = byte_at(byte0 + 2u + j / 8u) >> (j % 8u);
    let q = ((byte_at(byte0 + 6u + j % 16u) >> ((j / 16u) * 4u)) & 15u) | ((qh & 1u) << 4u);
    return f32(i32(q) - 16) * half_at(byte0);
}
