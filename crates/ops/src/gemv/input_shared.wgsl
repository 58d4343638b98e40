// gemv input for the rows frame on CPU adapters (q4_0, q4_1, q8_0; subgroups of exactly
// the workgroup's 8 lanes): every 4 units (one 32-element block: 8 vec4 of x), lane l
// loads vec4 l of the block and xv(i) fetches vec4 i mod 8 from its lane with a subgroup
// shuffle. On lavapipe each storage load is issued lane by lane, so this is 1 load per
// lane per block instead of 8. With NORM the lane's vec4 is multiplied by the norm weight
// as it is loaded, and sum x^2 is added up block by block (subgroupAdd).
@group(0) @binding(1) var<storage, read> x: array<XT>;
NORM_BINDING

const HAS_NORM: bool = NORM_ON;

var<private> x_lane: XT;
var<private> x_ss: f32;

fn x_window(u: u32, lane: u32) {
    // The lane's place in its subgroup (all 8 lanes are active: the frame has no early
    // return), which is what subgroupShuffle indexes; not assumed equal to `lane`.
    let i = (u >> 2u) * 8u + subgroupExclusiveAdd(1u);
    let v = x[i];
    if HAS_NORM {
        x_ss += subgroupAdd(dot(v, v));
        x_lane = v * NORM_WEIGHT;
    } else {
        x_lane = v;
    }
}

fn xv(i: u32) -> XT {
    return subgroupShuffle(x_lane, i & 7u);
}

fn x_sumsq(first: u32, step: u32) -> f32 {
    return x_ss;
}

fn row_scale(ss: f32) -> f32 {
    if HAS_NORM {
        return inverseSqrt(ss / f32(COLS) + EPS);
    }
    return 1.0;
}
