// gemv input with rms_norm folded in: W·(x / rms(x) ∘ nw) = (W·(x ∘ nw)) / rms(x). The
// weights see x ∘ nw; the norm's scale is one scalar per vector, applied to each row's
// sum. sum x^2 is added up beside the dot products as xv reads x: a row's units read
// each element of x exactly once (every format's unit_dot does), so a lane's NR rows
// see its share of x NR times, and group_sum adds the lanes' shares: the total is NR ·
// sum x^2 (NR is 1, 2 or 4, so dividing is exact). No extra pass over x, no dispatch and
// no buffer between the residual stream and the projection.
@group(0) @binding(1) var<storage, read> x: array<XT>;
@group(0) @binding(B_NORM) var<storage, read> nw: array<XT>;

override EPS: f32;

const HAS_NORM: bool = true;

var<private> x_ss: f32;

fn xv(i: u32) -> XT {
    let v = x[i];
    x_ss += xsq(v);
    return v * nw[i];
}

fn x_sumsq(first: u32, step: u32) -> f32 {
    return x_ss / f32(NR);
}

fn row_scale(ss: f32) -> f32 {
    return inverseSqrt(ss / f32(COLS) + EPS);
}

fn x_window(u: u32, lane: u32) {}
