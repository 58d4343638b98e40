// gemv frame, shared by every weight format: y[OUT_OFFSET + r] = sum_c W[r, c] * x[c].
//
// A workgroup of WG_SIZE threads is WG_SIZE / TPR groups of TPR lanes; each group owns NR
// consecutive rows. A lane walks its rows in steps of TPR "units" (an element for f32, a
// pair for f16, a quarter block of 8 elements for the block formats): consecutive lanes
// read consecutive words, and each step has NR independent weight loads in flight. The
// lanes' partial sums meet in a shared-memory tree reduction. No subgroup operations:
// they are not offered by every backend.
//
// Small units and few live registers matter more than anything else here on NVIDIA (H200,
// wgpu 30 / Vulkan): one lane per whole block, or an x slice passed between functions as
// an array or struct, ran 2-4x slower (register pressure, local memory).
//
// The format file appended after this one declares binding 0 (`w`, the weights exactly as
// in the GGUF file) and binding 1 (`x`), and defines:
//   fn n_units() -> u32                     units per row
//   fn unit_dot(row: u32, u: u32) -> f32    sum over unit u of W[row, c] * x[c]

override ROWS: u32;
override COLS: u32;
override OUT_OFFSET: u32;
// Lanes per row group: a power of two dividing WG_SIZE (checked on the Rust side).
override TPR: u32;
// Rows per lane, 1..=NR_MAX.
override NR: u32;
// 1: y += W·x (a residual add fused into the projection, saving a dispatch); 0: y = W·x.
override ACCUMULATE: u32 = 0u;

const WG_SIZE: u32 = 256u;
const NR_MAX: u32 = 4u;

@group(0) @binding(2) var<storage, read_write> y: array<f32>;

// partial[r * WG_SIZE + lid]: lane lid's sum for the r-th row of its group.
var<workgroup> partial: array<f32, 1024>; // WG_SIZE * NR_MAX

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

    // One named accumulator per row, not an array: a dynamically indexed array may be
    // placed in local memory (measured 2-3x slower on an H200). Branches on the constant
    // NR fold away.
    let units = n_units();
    let r0 = min(row0, ROWS - 1u);
    // Rows past the end (last workgroup) recompute the last row, unwritten: keeps every
    // load in bounds without a branch around it.
    let r1 = min(row0 + 1u, ROWS - 1u);
    let r2 = min(row0 + 2u, ROWS - 1u);
    let r3 = min(row0 + 3u, ROWS - 1u);
    var a0 = 0.0;
    var a1 = 0.0;
    var a2 = 0.0;
    var a3 = 0.0;
    for (var u = lane; u < units; u += TPR) {
        a0 += unit_dot(r0, u);
        if NR > 1u {
            a1 += unit_dot(r1, u);
        }
        if NR > 2u {
            a2 += unit_dot(r2, u);
        }
        if NR > 3u {
            a3 += unit_dot(r3, u);
        }
    }
    partial[lid] = a0;
    partial[WG_SIZE + lid] = a1;
    partial[2u * WG_SIZE + lid] = a2;
    partial[3u * WG_SIZE + lid] = a3;
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s = s >> 1u) {
        if lane < s {
            for (var r = 0u; r < NR; r++) {
                partial[r * WG_SIZE + lid] += partial[r * WG_SIZE + lid + s];
            }
        }
        workgroupBarrier();
    }
    if lane == 0u {
        for (var r = 0u; r < NR; r++) {
            if row0 + r < ROWS {
                let i = OUT_OFFSET + row0 + r;
                if ACCUMULATE != 0u {
                    y[i] = y[i] + partial[r * WG_SIZE + lid];
                } else {
                    y[i] = partial[r * WG_SIZE + lid];
                }
            }
        }
    }
}
