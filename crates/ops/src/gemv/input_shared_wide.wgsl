// gemv input for the wide rows frame (kernel_rows_wide.wgsl): step p covers elements
// 64p..64p+63 of x; lane l loads elements 64p + 8l .. 64p + 8l + 7 as one vec4<u64> (one
// load instead of two vec4<f32>: lavapipe pays per component), and xv(i) fetches vec4 i
// of the step from lane i / 2 with a subgroup shuffle. With NORM the lane's floats are
// multiplied by the norm weight (loaded the same way) and sum x^2 is added up step by
// step (subgroupAdd).
@group(0) @binding(1) var<storage, read> x: array<vec4<u64>>;
NORM_DECL

const HAS_NORM: bool = NORM_ON;

var<private> x_lo: vec4<f32>;
var<private> x_hi: vec4<f32>;
var<private> x_ss: f32;

// Four f32 from two u64 (little-endian: the low word first).
fn f32x4_of(a: u64, b: u64) -> vec4<f32> {
    return bitcast<vec4<f32>>(vec4<u32>(u32(a), u32(a >> 32u), u32(b), u32(b >> 32u)));
}

fn x_window(p: u32) {
    // The lane's place in its subgroup (all 8 lanes are active: the frame has no early
    // return), which is what subgroupShuffle indexes.
    let i = p * 8u + subgroupExclusiveAdd(1u);
    let v = x[i];
    var lo = f32x4_of(v.x, v.y);
    var hi = f32x4_of(v.z, v.w);
    if HAS_NORM {
        x_ss += subgroupAdd(dot(lo, lo) + dot(hi, hi));
        let n = norm_words(i);
        lo *= f32x4_of(n.x, n.y);
        hi *= f32x4_of(n.z, n.w);
    }
    x_lo = lo;
    x_hi = hi;
}

fn xv(i: u32) -> vec4<f32> {
    return subgroupShuffle(select(x_lo, x_hi, (i & 1u) != 0u), i >> 1u);
}

fn x_sumsq() -> f32 {
    return x_ss;
}

fn row_scale(ss: f32) -> f32 {
    if HAS_NORM {
        return inverseSqrt(ss / f32(COLS) + EPS);
    }
    return 1.0;
}
