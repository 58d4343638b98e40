// Batched gemv frame for CPU adapters (shaders `gemv_batched_<fmt>.packed.wide`): Y[b,
// OUT_OFFSET + r] (+)= Σ_c W[r, c]·X[b, c] for the batch rows b < params[1], with the
// wide rows frame's weights (kernel_rows_wide.wgsl: packed q4_0 / q4_1 / q8_0 read as
// vec4<u64>, one lane per NR rows, 8-lane workgroups, no reduction) and its format parts.
// A workgroup loads each of its rows' block pairs once and applies it to CHUNK batch rows
// of x (grid: row groups × batch chunks), so the weights, which lavapipe loads lane by
// lane at a cost per component, are read once per CHUNK prompt rows instead of once per
// row; x comes 8 floats a lane per step and batch row, shared through shuffles.
// Constants and span_row: rows_common.wgsl.

override ACCUMULATE: u32 = 0u;
// f32 elements per row of y.
override Y_STRIDE: u32;
// The rows the buffers were built for: params[1] is clamped to it.
override MAX_BATCH: u32;

// Batch rows per workgroup: the named accumulators a0..a7 below.
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

// The lane's loaded pairs (NR rows) against batch row b's step p.
fn rows_dot(b: u32, p: u32, q0: Pair, q1: Pair, q2: Pair, q3: Pair) -> vec4<f32> {
    x_window(b, p);
    var v = vec4<f32>(pair_dot(q0), 0.0, 0.0, 0.0);
    if NR > 1u {
        v.y = pair_dot(q1);
    }
    if NR > 2u {
        v.z = pair_dot(q2);
    }
    if NR > 3u {
        v.w = pair_dot(q3);
    }
    return v;
}

fn store(b: u32, row0: u32, v: vec4<f32>) {
    for (var k = 0u; k < NR; k++) {
        let r = row0 + k;
        if r < ROWS {
            let i = b * Y_STRIDE + OUT_OFFSET + r;
            var s = v[k];
            if ACCUMULATE != 0u {
                s += y[i];
            }
            y[i] = s;
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
    let row0 = (wg.x * WG + lid) * NR;
    // Lanes past the end keep going with clamped rows (x is shared through shuffles);
    // store skips rows >= ROWS.
    let r0 = span_row(min(row0, ROWS - 1u));
    let r1 = span_row(min(row0 + 1u, ROWS - 1u));
    let r2 = span_row(min(row0 + 2u, ROWS - 1u));
    let r3 = span_row(min(row0 + 3u, ROWS - 1u));
    var w0: vec4<u64>;
    var w1: vec4<u64>;
    var w2: vec4<u64>;
    var w3: vec4<u64>;
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    var a4 = vec4<f32>(0.0);
    var a5 = vec4<f32>(0.0);
    var a6 = vec4<f32>(0.0);
    var a7 = vec4<f32>(0.0);
    for (var p = 0u; p < COLS / 64u; p++) {
        let q0 = pair_load(r0, p, &w0);
        var q1: Pair;
        var q2: Pair;
        var q3: Pair;
        if NR > 1u {
            q1 = pair_load(r1, p, &w1);
        }
        if NR > 2u {
            q2 = pair_load(r2, p, &w2);
        }
        if NR > 3u {
            q3 = pair_load(r3, p, &w3);
        }
        a0 += rows_dot(b0, p, q0, q1, q2, q3);
        if nb > 1u {
            a1 += rows_dot(b0 + 1u, p, q0, q1, q2, q3);
        }
        if nb > 2u {
            a2 += rows_dot(b0 + 2u, p, q0, q1, q2, q3);
        }
        if nb > 3u {
            a3 += rows_dot(b0 + 3u, p, q0, q1, q2, q3);
        }
        if nb > 4u {
            a4 += rows_dot(b0 + 4u, p, q0, q1, q2, q3);
        }
        if nb > 5u {
            a5 += rows_dot(b0 + 5u, p, q0, q1, q2, q3);
        }
        if nb > 6u {
            a6 += rows_dot(b0 + 6u, p, q0, q1, q2, q3);
        }
        if nb > 7u {
            a7 += rows_dot(b0 + 7u, p, q0, q1, q2, q3);
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
