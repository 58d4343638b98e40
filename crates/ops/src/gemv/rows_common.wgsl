// The constants and row mapping both rows frames share (kernel_rows.wgsl,
// kernel_rows_wide.wgsl).

override ROWS: u32;
override COLS: u32;
override OUT_OFFSET: u32;
// Rows per lane, 1..=4 (2 or 4 for the pair epilogues).
override NR: u32;
override WG: u32 = 8u;
// Test-only planted slowdown, as in the lanes frame (kernel.wgsl): EXTRA_PASSES more
// passes over the rows, reaching the output only past 3e38. 0 compiles away.
override EXTRA_PASSES: u32 = 0u;
// Experiment only (`bench --experiment memory-vs-compute`): when ROW_SPAN > 0, row r reads
// the weights of row r % ROW_SPAN, so the full arithmetic runs over a few rows that stay
// in cache: the kernel's compute-only time. 0 (the default) compiles away.
override ROW_SPAN: u32 = 0u;

fn span_row(r: u32) -> u32 {
    // max(.., 1u): naga folds `r % 0u` as an error even in the branch not taken.
    return select(r % max(ROW_SPAN, 1u), r, ROW_SPAN == 0u);
}
