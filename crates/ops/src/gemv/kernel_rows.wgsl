// gemv frame "rows" (variant `rows`), for adapters that are CPUs (lavapipe, WARP): one lane
// per NR consecutive rows, no shared memory, no barrier, no reduction. Pieces appended as
// for the lanes frame (kernel.wgsl): format, input, epilogue.
//
// Why (Mesa 22.3 lavapipe, measured on a 2-core AMD EPYC VM): a workgroup runs as a loop of
// 8-wide SIMD steps on one CPU thread, a barrier switches between coroutines, and every
// storage-buffer load is issued lane by lane. The lanes frame's 256-thread workgroups and
// log2(TPR) barriers took 17 ms for a 3072x576 q4_1 gemv; one lane per row, 4 rows per
// lane (x loaded once for 4 rows) took 1.2 ms of CPU. For q4_0, q4_1 and q8_0 on an
// adapter whose subgroups are exactly the workgroup's 8 lanes, x comes through subgroup
// shuffles (input_shared.wgsl): each lane loads one vec4 of a block's x instead of all 8.
//
// The input defines x_window(u, lane), called every 4 units (a no-op but for the shared
// input); block_dot(row, b) comes with the format (block_<fmt>.wgsl or block_generic.wgsl).
// Constants and span_row: rows_common.wgsl.

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row0 = ((wg.x + wg.y * nwg.x) * WG + lid) * NR;
    // No early return for lanes past the end: with x shared through subgroup shuffles
    // (input_shared.wgsl) every lane must take part; their rows are clamped and emit
    // skips rows >= ROWS.
    let units = n_units();
    let r0 = phys_row(span_row(min(row0, ROWS - 1u)));
    let r1 = phys_row(span_row(min(row0 + 1u, ROWS - 1u)));
    let r2 = phys_row(span_row(min(row0 + 2u, ROWS - 1u)));
    let r3 = phys_row(span_row(min(row0 + 3u, ROWS - 1u)));
    var acc = vec4<f32>(0.0);
    // Four units per step: block_dot (block_<fmt>.wgsl) takes a whole 32-element block of
    // q4_0, q4_1, q5_0, q5_1 and q8_0, or 4 units of a q4_K, q5_K or q6_K super-block,
    // with each word (and the super-block's scales) loaded once; other formats add 4
    // unit_dots (block_generic.wgsl).
    let units4 = units & ~3u;
    for (var u = 0u; u < units4; u += 4u) {
        x_window(u, lid);
        acc.x += block_dot(r0, u >> 2u);
        if NR > 1u {
            acc.y += block_dot(r1, u >> 2u);
        }
        if NR > 2u {
            acc.z += block_dot(r2, u >> 2u);
        }
        if NR > 3u {
            acc.w += block_dot(r3, u >> 2u);
        }
    }
    for (var u = units4; u < units; u++) {
        acc.x += unit_dot(r0, u);
        if NR > 1u {
            acc.y += unit_dot(r1, u);
        }
        if NR > 2u {
            acc.z += unit_dot(r2, u);
        }
        if NR > 3u {
            acc.w += unit_dot(r3, u);
        }
    }
    var extra = 0.0;
    for (var p = 0u; p < EXTRA_PASSES; p++) {
        for (var u = 0u; u < units4; u += 4u) {
            x_window(u, lid);
            extra += block_dot(r0, u >> 2u);
            if NR > 1u {
                extra += block_dot(r1, u >> 2u);
            }
            if NR > 2u {
                extra += block_dot(r2, u >> 2u);
            }
            if NR > 3u {
                extra += block_dot(r3, u >> 2u);
            }
        }
    }
    if abs(extra) > 3.0e38 {
        acc.x = extra;
    }
    emit(row0, acc * row_scale(x_sumsq(0u, 1u)));
}
