// gemv, f32 weights: a unit is one element, so a row group's lanes read contiguous words.

@group(0) @binding(0) var<storage, read> w: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;

fn n_units() -> u32 {
    return COLS;
}

fn unit_dot(row: u32, u: u32) -> f32 {
    return w[row * COLS + u] * x[u];
}
