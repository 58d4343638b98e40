// Shared by the lanes frames (kernel.wgsl: shared, subgroup, blocks; kernel_dp4a.wgsl):
// the shape's overrides, the experiments' row mapping, and what group_sum returns.

override ROWS: u32;
override COLS: u32;
override OUT_OFFSET: u32;
// Lanes per row group: a power of two dividing WG_SIZE (checked on the Rust side).
override TPR: u32;
// Rows per lane, 1..=4 (2 or 4 for the pair epilogues: rope, silu_mul).
override NR: u32;
// Test-only planted slowdown (gpuscope's regression-gate tests): each lane computes its
// dot products EXTRA_PASSES more times. Their sum reaches the output only when its
// magnitude passes 3e38, which the finite activations of a decoder never do, so results
// are unchanged, yet the compiler cannot drop the work. 0 (the default) compiles away.
override EXTRA_PASSES: u32 = 0u;
// Experiment only (`bench --experiment memory-vs-compute`): when ROW_SPAN > 0, row r reads
// the weights of row r % ROW_SPAN, so the full arithmetic runs over a few rows that stay
// in cache: the kernel's compute-only time. 0 (the default) compiles away.
override ROW_SPAN: u32 = 0u;

fn span_row(r: u32) -> u32 {
    // max(.., 1u): naga folds `r % 0u` as an error even in the branch not taken.
    return select(r % max(ROW_SPAN, 1u), r, ROW_SPAN == 0u);
}

// What group_sum returns (valid in lane 0 of the group): the rows' dot products and, with
// a fused rms_norm, the sum of x^2.
struct GroupSum {
    acc: vec4<f32>,
    ss: f32,
}
