@group(0) @binding(0) var<storage, read> table: array<f32>;

fn dequant(row: u32, c: u32) -> f32 {
    return table[row * DIM + c];
}
