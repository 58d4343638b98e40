@group(0) @binding(0) var<storage, read> table: array<u32>;

// bf16 is the top half of an f32: widening is a shift or a mask, exact.
fn dequant(row: u32, c: u32) -> f32 {
    let e = row * DIM + c;
    let v = table[e >> 1u];
    return bitcast<f32>(select(v << 16u, v & 0xFFFF0000u, (e & 1u) != 0u));
}
