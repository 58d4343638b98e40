// Batched gemv frame ("gemm" for a small batch): Y[b, OUT_OFFSET + r] (+)= sum_c W[r, c] * X[b, c]
// for batch rows b < params[1] (the prompt rows of this prefill call; at most the rows the
// buffers were built for).
//
// The grid is (row groups, batch chunks of BATCH_CHUNK rows). A workgroup is WG_SIZE / TPR
// groups of TPR lanes, one weight row per group, as in the gemv frame with NR = 1; each
// lane walks its row's units and applies every unit to up to BATCH_CHUNK rows of X, so a
// chunk of 8 prompt rows costs one pass over the weights instead of eight.
//
// The per-format `unit_dot(row, u)` of the gemv kernels is reused unchanged: it reads x
// through `xv(i)`, defined below as `x[xoff + i]`, where `xoff` selects the batch row.
// A compiler may or may not keep the weight words in registers across the calls; they
// are re-read from L1 at worst.

override ROWS: u32;
override COLS: u32;
override OUT_OFFSET: u32;
override TPR: u32;
override ACCUMULATE: u32 = 0u;
// Elements of x's array type (f32 or vec4<f32>) per batch row.
override X_STRIDE: u32;
// f32 elements of y per batch row.
override Y_STRIDE: u32;

const WG_SIZE: u32 = 256u;
const BATCH_CHUNK: u32 = 8u;

@group(0) @binding(1) var<storage, read> x: array<XT>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
// [pos0, n_rows, 0, 0]
@group(0) @binding(3) var<storage, read> params: array<u32, 4>;

var<private> xoff: u32;

fn xv(i: u32) -> XT {
    return x[xoff + i];
}
var<workgroup> partial: array<f32, 2048>; // WG_SIZE * BATCH_CHUNK

@compute @workgroup_size(WG_SIZE)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = params[1];
    let b0 = wg.y * BATCH_CHUNK;
    let first_row = wg.x * (WG_SIZE / TPR);
    // Workgroup-uniform, so returning before the barriers is allowed.
    if b0 >= n || first_row >= ROWS {
        return;
    }
    let nb = min(BATCH_CHUNK, n - b0);
    let row_raw = first_row + lid / TPR;
    let row = min(row_raw, ROWS - 1u);
    let lane = lid % TPR;
    let units = n_units();
    // Named accumulators, not an array (see the gemv frame: arrays may go to local memory).
    var a0 = 0.0;
    var a1 = 0.0;
    var a2 = 0.0;
    var a3 = 0.0;
    var a4 = 0.0;
    var a5 = 0.0;
    var a6 = 0.0;
    var a7 = 0.0;
    for (var u = lane; u < units; u += TPR) {
        xoff = b0 * X_STRIDE;
        a0 += unit_dot(row, u);
        if nb > 1u {
            xoff += X_STRIDE;
            a1 += unit_dot(row, u);
        }
        if nb > 2u {
            xoff += X_STRIDE;
            a2 += unit_dot(row, u);
        }
        if nb > 3u {
            xoff += X_STRIDE;
            a3 += unit_dot(row, u);
        }
        if nb > 4u {
            xoff += X_STRIDE;
            a4 += unit_dot(row, u);
        }
        if nb > 5u {
            xoff += X_STRIDE;
            a5 += unit_dot(row, u);
        }
        if nb > 6u {
            xoff += X_STRIDE;
            a6 += unit_dot(row, u);
        }
        if nb > 7u {
            xoff += X_STRIDE;
            a7 += unit_dot(row, u);
        }
    }
    partial[lid] = a0;
    partial[WG_SIZE + lid] = a1;
    partial[2u * WG_SIZE + lid] = a2;
    partial[3u * WG_SIZE + lid] = a3;
    partial[4u * WG_SIZE + lid] = a4;
    partial[5u * WG_SIZE + lid] = a5;
    partial[6u * WG_SIZE + lid] = a6;
    partial[7u * WG_SIZE + lid] = a7;
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s = s >> 1u) {
        if lane < s {
            for (var k = 0u; k < nb; k++) {
                partial[k * WG_SIZE + lid] += partial[k * WG_SIZE + lid + s];
            }
        }
        workgroupBarrier();
    }
    if lane == 0u && row_raw < ROWS {
        for (var k = 0u; k < nb; k++) {
            let i = (b0 + k) * Y_STRIDE + OUT_OFFSET + row_raw;
            if ACCUMULATE != 0u {
                y[i] = y[i] + partial[k * WG_SIZE + lid];
            } else {
                y[i] = partial[k * WG_SIZE + lid];
            }
        }
    }
}
