// gemv frame "rows" over 32-byte loads (shaders named `.wide`): the `rows` frame
// (kernel_rows.wgsl) for q4_0, q4_1 and q8_0 in the packed layout, on CPU adapters that
// offer SHADER_INT64 and run subgroups of exactly the workgroup's 8 lanes, for rows of
// an even number of blocks. Pieces appended: format (wide_<fmt>.wgsl), input
// (input_shared_wide.wgsl), epilogue.
//
// Why (Mesa 22.3 lavapipe, counted with callgrind, which is exact where wall time on a
// shared 2-core VM is not): every storage-buffer load is issued lane by lane, one scalar
// load behind a bounds check per component, so a load costs per component, not per byte:
// 4.6 instructions a byte through vec4<u32>, 2.9 through vec4<u64>. Here every load is a
// vec4<u64>: a lane takes two blocks of each of its rows per step (one load of quants for
// q4_0 / q4_1, two for q8_0), keeps a window of each row's scales (one load per 8 blocks
// of q4_1, 16 of q4_0 / q8_0, instead of one per block), and x (and the norm weight)
// come 8 floats a lane per step, shared through subgroup shuffles.
//
// The format defines pair_load(row, p, window), blocks 2p and 2p + 1 of the row (window:
// that row's scales), and pair_dot(pair) against x; the input defines x_window(p),
// called once per step, and xv(i), vec4 i (0..15) of the step's 64 elements of x.
// Constants and span_row: rows_common.wgsl.

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row0 = ((wg.x + wg.y * nwg.x) * WG + lid) * NR;
    // No early return for lanes past the end: x is shared through subgroup shuffles, so
    // every lane takes part; their rows are clamped and emit skips rows >= ROWS.
    let r0 = phys_row(span_row(min(row0, ROWS - 1u)));
    let r1 = phys_row(span_row(min(row0 + 1u, ROWS - 1u)));
    let r2 = phys_row(span_row(min(row0 + 2u, ROWS - 1u)));
    let r3 = phys_row(span_row(min(row0 + 3u, ROWS - 1u)));
    let steps = COLS / 64u;
    var acc = vec4<f32>(0.0);
    var w0: vec4<u64>;
    var w1: vec4<u64>;
    var w2: vec4<u64>;
    var w3: vec4<u64>;
    for (var p = 0u; p < steps; p++) {
        x_window(p);
        acc.x += pair_dot(pair_load(r0, p, &w0));
        if NR > 1u {
            acc.y += pair_dot(pair_load(r1, p, &w1));
        }
        if NR > 2u {
            acc.z += pair_dot(pair_load(r2, p, &w2));
        }
        if NR > 3u {
            acc.w += pair_dot(pair_load(r3, p, &w3));
        }
    }
    // Taken before the planted passes, whose x_window calls add to it again.
    let ss = x_sumsq();
    var extra = 0.0;
    for (var e = 0u; e < EXTRA_PASSES; e++) {
        for (var p = 0u; p < steps; p++) {
            x_window(p);
            extra += pair_dot(pair_load(r0, p, &w0));
            if NR > 1u {
                extra += pair_dot(pair_load(r1, p, &w1));
            }
            if NR > 2u {
                extra += pair_dot(pair_load(r2, p, &w2));
            }
            if NR > 3u {
                extra += pair_dot(pair_load(r3, p, &w3));
            }
        }
    }
    if abs(extra) > 3.0e38 {
        acc.x = extra;
    }
    emit(row0, acc * row_scale(ss));
}
