@group(0) @binding(0) var<storage, read> table: array<u32>;

fn dequant(row: u32, c: u32) -> f32 {
    let e = row * DIM + c;
    let h = unpack2x16float(table[e >> 1u]);
    return select(h.x, h.y, (e & 1u) != 0u);
}
