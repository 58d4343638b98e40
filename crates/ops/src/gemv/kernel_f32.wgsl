// gemv, f32 weights: a unit is one element, so a row group's lanes read contiguous words.

@group(0) @binding(0) var<storage, read> w: array<f32>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = f32;

fn n_units() -> u32 {
    return COLS;
}

fn unit_dot(row: u32, u: u32) -> f32 {
    return w[row * COLS + u] * xv(u);
}
