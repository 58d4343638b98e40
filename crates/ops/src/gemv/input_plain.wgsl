// gemv input: x as it is.
@group(0) @binding(1) var<storage, read> x: array<XT>;

const HAS_NORM: bool = false;

fn xv(i: u32) -> XT {
    return x[i];
}

fn x_sumsq(first: u32, step: u32) -> f32 {
    return 0.0;
}

fn row_scale(ss: f32) -> f32 {
    return 1.0;
}

fn x_window(u: u32, lane: u32) {}
