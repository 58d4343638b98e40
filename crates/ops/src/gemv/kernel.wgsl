// gemv frame "lanes" (variants `shared` and `subgroup`), shared by every weight format:
// y[OUT_OFFSET + r] = sum_c W[r, c] * x[c], or a fused form of it (see mod.rs).
//
// A workgroup of WG_SIZE threads is WG_SIZE / TPR groups of TPR lanes; each group owns NR
// consecutive rows. A lane walks its rows in steps of TPR "units" (an element for f32, a
// pair for f16, a quarter block of 8 elements for the block formats): consecutive lanes
// read consecutive words, and each step has NR independent weight loads in flight. The
// lanes' partial sums meet in `group_sum`: a shared-memory tree (reduce_shared.wgsl) or
// subgroup shuffles (reduce_subgroup.wgsl, no barrier; TPR at most the subgroup size).
//
// Small units and few live registers matter more than anything else here on NVIDIA (H200,
// wgpu 30 / Vulkan): one lane per whole block, or an x slice passed between functions as
// an array or struct, ran 2-4x slower (register pressure, local memory).
//
// Pieces composed around this file (shader.rs): before it lanes_common.wgsl (the shape's
// overrides, span_row, GroupSum); after it
// - the format file: binding 0 (`w`), `alias XT` (f32 or vec4<f32>: x's element type),
//   fn n_units() -> u32 and fn unit_dot(row: u32, u: u32) -> f32, which reads x through
//   xv(i); for the `blocks` variant also block_dot(row, b) (a whole block: the format's
//   block file, or the packed format file);
// - the input: binding 1 (`x`), xv(i), and for a fused rms_norm x_sumsq (the lane's
//   share of sum x^2) and row_scale (the norm's one scalar per vector);
// - the reduction: group_sum;
// - the epilogue: phys_row (logical row -> matrix row) and emit (writes NR rows: y,
//   y += (residual), rope + KV-cache store, or silu(gate) * up).

const WG_SIZE: u32 = 256u;
// true for the `blocks` variant (substituted when the shader is composed).
const WHOLE_BLOCKS: bool = WHOLE_BLOCKS_ON;

@compute @workgroup_size(WG_SIZE)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // 2-D grids (more than 65535 workgroups) are flattened back to a linear id.
    let wg_lin = wg.x + wg.y * nwg.x;
    let first_row = wg_lin * ((WG_SIZE / TPR) * NR);
    // Workgroup-uniform, so returning before the barriers is allowed.
    if first_row >= ROWS {
        return;
    }
    let row0 = first_row + (lid / TPR) * NR;
    let lane = lid % TPR;

    // One named accumulator per row (components of one vec4, constant-indexed), not an
    // array: a dynamically indexed array may be placed in local memory (measured 2-3x
    // slower on an H200). Branches on the constant NR fold away. Rows past the end (last
    // workgroup) recompute the last row, unwritten: every load stays in bounds without a
    // branch around it.
    let units = n_units();
    let r0 = phys_row(span_row(min(row0, ROWS - 1u)));
    let r1 = phys_row(span_row(min(row0 + 1u, ROWS - 1u)));
    let r2 = phys_row(span_row(min(row0 + 2u, ROWS - 1u)));
    let r3 = phys_row(span_row(min(row0 + 3u, ROWS - 1u)));
    var acc = vec4<f32>(0.0);
    // Variant `blocks`: a lane's step is a whole block (block_dot: each word loaded once,
    // one 16-byte load over the packed layout); units past the last whole block of 4
    // (formats whose rows are not whole 32-element blocks) go through unit_dot below.
    var first_unit = lane;
    if WHOLE_BLOCKS {
        let blocks = units / 4u;
        for (var b = lane; b < blocks; b += TPR) {
            acc.x += block_dot(r0, b);
            if NR > 1u {
                acc.y += block_dot(r1, b);
            }
            if NR > 2u {
                acc.z += block_dot(r2, b);
            }
            if NR > 3u {
                acc.w += block_dot(r3, b);
            }
        }
        first_unit = blocks * 4u + lane;
    }
    for (var u = first_unit; u < units; u += TPR) {
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
        for (var u = lane; u < units; u += TPR) {
            extra += unit_dot(r0, u);
            if NR > 1u {
                extra += unit_dot(r1, u);
            }
            if NR > 2u {
                extra += unit_dot(r2, u);
            }
            if NR > 3u {
                extra += unit_dot(r3, u);
            }
        }
    }
    if abs(extra) > 3.0e38 {
        acc.x = extra;
    }
    let total = group_sum(lid, lane, acc, x_sumsq(lane, TPR));
    if lane == 0u {
        emit(row0, total.acc * row_scale(total.ss));
    }
}
