// gemv epilogue for the gate/up projection with the down projection folded in
// (`+silu_mul+gemv_<fmt>`, the dp4a frame only; GemvEpilogue::SiluDown). Each workgroup
// owns 32 FFN rows j (logical rows 2j gate, 2j + 1 up, as epilogue_silu.wgsl), forms
// h_j = act(gate_j) · up_j in workgroup memory, and multiplies that 32-wide block of h
// into its block column of W_down: partial `wg` of the FFN's output, DOWN_ROWS floats at
// y[wg · DOWN_ROWS..]. The next gemv adds the partials to the residual stream as it loads
// it (kernel_dp4a.wgsl's PARTIALS), in order, so the sum is the same from run to run.
// (Adding them here with float atomics instead left the next gemv one vector to read,
// but 48 adds to each address made this kernel 3 µs slower on an H100: BENCHMARKS.md
// run 43.)
// h stays f32 (the unfused dp4a down projection quantizes it to int8): a 32-wide block
// costs each thread a few dozen multiply-adds per row, and an int8 h computed inside the
// kernel could round to a neighbouring step from the reference's, which `check` could not
// follow (it sees no h).
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(B_DOWN) var<storage, read> wd: array<vec4<u32>>;

override UP_ROW: u32;
// W_down: DOWN_ROWS (the model's dim) x DOWN_COLS (the FFN width), packed as `w` is,
// its scales region from vec4 DOWN_SCALES_AT.
override DOWN_ROWS: u32;
override DOWN_COLS: u32;
override DOWN_SCALES_AT: u32;

// h of the workgroup's 32 FFN rows, as scalars: row groups write neighbouring values at
// once, and a component store into a vec4 may be compiled as a load, insert and store of
// the whole vector (on an H100 that raced: wrong tokens, run to run; BENCHMARKS.md run 43).
var<workgroup> h: array<f32, 32>;

// h[4i..4i + 3].
fn h4(i: u32) -> vec4<f32> {
    return vec4<f32>(h[4u * i], h[4u * i + 1u], h[4u * i + 2u], h[4u * i + 3u]);
}

fn phys_row(r: u32) -> u32 {
    return (r >> 1u) + (r & 1u) * UP_ROW;
}

fn h_pair(r: u32, g: f32, u: f32) {
    let j = (r >> 1u) & 31u;
    h[j] = act(g) * u;
}

fn emit(r: u32, v: vec4<f32>) {
    h_pair(r, v.x, v.y);
    if NR > 2u {
        h_pair(r + 2u, v.z, v.w);
    }
}
