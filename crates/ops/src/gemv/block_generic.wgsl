// block_dot for the rows frame: the four units of a 32-element step, one after another.
fn block_dot(row: u32, b: u32) -> f32 {
    let u = 4u * b;
    return (unit_dot(row, u) + unit_dot(row, u + 1u)) + (unit_dot(row, u + 2u) + unit_dot(row, u + 3u));
}
