// Batched gemv frame for CPU adapters (shaders `gemv_batched_<fmt>.packed.wide`): Y[b,
// OUT_OFFSET + r] (+)= Σ_c W[r, c]·X[b, c] for the batch rows b < params[1], with the
// wide rows frame's weights (kernel_rows_wide.wgsl: packed q4_0 / q4_1 / q8_0 read as
// vec4<u64>, rows of lanes, 8-lane workgroups, no reduction) and its format parts.
// A lane takes 8 weight rows (two groups of 4) and a workgroup CHUNK batch rows (grid:
// row groups × batch chunks): each block pair of the lane's rows is loaded once and
// applied to the CHUNK batch rows, so the weights, which lavapipe loads lane by lane at a
// cost per component, are read once per CHUNK prompt rows; x comes 8 floats a lane per
// step and batch row, shared through shuffles, and serves 8 weight rows (lavapipe,
// SmolLM2 gate/up at 141 rows: 20% fewer instructions than 4 rows a lane). The weight
// decoding is written per batch row; the compiler shares it across them.

override ROWS: u32;
override COLS: u32;
override OUT_OFFSET: u32;
override WG: u32 = 8u;
override ACCUMULATE: u32 = 0u;
// f32 elements per row of y.
override Y_STRIDE: u32;
// The rows the buffers were built for: params[1] is clamped to it.
override MAX_BATCH: u32;

// Weight rows per lane.
const LANE_ROWS: u32 = 8u;
// Batch rows per workgroup: the named accumulators below.
const CHUNK: u32 = 8u;

@group(0) @binding(1) var<storage, read> x: array<vec4<u64>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
// [pos0, n_rows, 0, 0]
@group(0) @binding(3) var<storage, read> params: array<u32, 4>;

var<private> x_lo: vec4<f32>;
var<private> x_hi: vec4<f32>;

fn f32x4_of(a: u64, b: u64) -> vec4<f32> {
    return bitcast<vec4<f32>>(vec4<u32>(u32(a), u32(a >> 32u), u32(b), u32(b >> 32u)));
}

// Step p of batch row b: lane l holds elements 64p + 8l .. 64p + 8l + 7.
fn x_window(b: u32, p: u32) {
    let v = x[b * (COLS / 8u) + p * 8u + subgroupExclusiveAdd(1u)];
    x_lo = f32x4_of(v.x, v.y);
    x_hi = f32x4_of(v.z, v.w);
}

fn xv(i: u32) -> vec4<f32> {
    return subgroupShuffle(select(x_lo, x_hi, (i & 1u) != 0u), i >> 1u);
}

// A lane's 8 rows' pairs of one step, and their sums for one batch row.
struct Pairs {
    p0: Pair,
    p1: Pair,
    p2: Pair,
    p3: Pair,
    p4: Pair,
    p5: Pair,
    p6: Pair,
    p7: Pair,
}

struct Sums {
    lo: vec4<f32>,
    hi: vec4<f32>,
}

// The lane's pairs against batch row b's step p.
fn rows_dot(b: u32, p: u32, q: Pairs) -> Sums {
    x_window(b, p);
    var s: Sums;
    s.lo = vec4<f32>(pair_dot(q.p0), pair_dot(q.p1), pair_dot(q.p2), pair_dot(q.p3));
    s.hi = vec4<f32>(pair_dot(q.p4), pair_dot(q.p5), pair_dot(q.p6), pair_dot(q.p7));
    return s;
}

fn add(a: Sums, b: Sums) -> Sums {
    return Sums(a.lo + b.lo, a.hi + b.hi);
}

fn store(b: u32, row0: u32, s: Sums) {
    for (var k = 0u; k < LANE_ROWS; k++) {
        let r = row0 + k;
        if r < ROWS {
            let i = b * Y_STRIDE + OUT_OFFSET + r;
            var v = select(s.hi[k & 3u], s.lo[k & 3u], k < 4u);
            if ACCUMULATE != 0u {
                v += y[i];
            }
            y[i] = v;
        }
    }
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = min(params[1], MAX_BATCH);
    let b0 = wg.y * CHUNK;
    // Workgroup-uniform: every lane returns or none.
    if b0 >= n {
        return;
    }
    let nb = min(CHUNK, n - b0);
    let row0 = (wg.x * WG + lid) * LANE_ROWS;
    // Lanes past the end keep going with clamped rows (x is shared through shuffles);
    // store skips rows >= ROWS.
    let r0 = min(row0, ROWS - 1u);
    let r1 = min(row0 + 1u, ROWS - 1u);
    let r2 = min(row0 + 2u, ROWS - 1u);
    let r3 = min(row0 + 3u, ROWS - 1u);
    let r4 = min(row0 + 4u, ROWS - 1u);
    let r5 = min(row0 + 5u, ROWS - 1u);
    let r6 = min(row0 + 6u, ROWS - 1u);
    let r7 = min(row0 + 7u, ROWS - 1u);
    // Each row's window of its scales (see pair_load).
    var w0: vec4<u64>;
    var w1: vec4<u64>;
    var w2: vec4<u64>;
    var w3: vec4<u64>;
    var w4: vec4<u64>;
    var w5: vec4<u64>;
    var w6: vec4<u64>;
    var w7: vec4<u64>;
    var a0: Sums;
    var a1: Sums;
    var a2: Sums;
    var a3: Sums;
    var a4: Sums;
    var a5: Sums;
    var a6: Sums;
    var a7: Sums;
    for (var p = 0u; p < COLS / 64u; p++) {
        let q = Pairs(
            pair_load(r0, p, &w0),
            pair_load(r1, p, &w1),
            pair_load(r2, p, &w2),
            pair_load(r3, p, &w3),
            pair_load(r4, p, &w4),
            pair_load(r5, p, &w5),
            pair_load(r6, p, &w6),
            pair_load(r7, p, &w7),
        );
        a0 = add(a0, rows_dot(b0, p, q));
        if nb > 1u {
            a1 = add(a1, rows_dot(b0 + 1u, p, q));
        }
        if nb > 2u {
            a2 = add(a2, rows_dot(b0 + 2u, p, q));
        }
        if nb > 3u {
            a3 = add(a3, rows_dot(b0 + 3u, p, q));
        }
        if nb > 4u {
            a4 = add(a4, rows_dot(b0 + 4u, p, q));
        }
        if nb > 5u {
            a5 = add(a5, rows_dot(b0 + 5u, p, q));
        }
        if nb > 6u {
            a6 = add(a6, rows_dot(b0 + 6u, p, q));
        }
        if nb > 7u {
            a7 = add(a7, rows_dot(b0 + 7u, p, q));
        }
    }
    store(b0, row0, a0);
    if nb > 1u {
        store(b0 + 1u, row0, a1);
    }
    if nb > 2u {
        store(b0 + 2u, row0, a2);
    }
    if nb > 3u {
        store(b0 + 3u, row0, a3);
    }
    if nb > 4u {
        store(b0 + 4u, row0, a4);
    }
    if nb > 5u {
        store(b0 + 5u, row0, a5);
    }
    if nb > 6u {
        store(b0 + 6u, row0, a6);
    }
    if nb > 7u {
        store(b0 + 7u, row0, a7);
    }
}
