// gemv epilogue for the gate/up projection: y[OUT_OFFSET + j] = act(gate_j) · up_j, with
// act from the file appended after this one (silu_mul/silu.wgsl or gelu_mul/gelu.wgsl).
// Logical row 2j is gate row j (matrix row j), logical row 2j + 1 is up row j (matrix row
// UP_ROW + j), so a lane with NR (2 or 4) rows from an even row holds whole pairs; ROWS
// is twice the FFN width.
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

override UP_ROW: u32;

fn phys_row(r: u32) -> u32 {
    return (r >> 1u) + (r & 1u) * UP_ROW;
}

fn silu_pair(r: u32, g: f32, u: f32) {
    if r < ROWS {
        y[OUT_OFFSET + (r >> 1u)] = act(g) * u;
    }
}

fn emit(r: u32, v: vec4<f32>) {
    silu_pair(r, v.x, v.y);
    if NR > 2u {
        silu_pair(r + 2u, v.z, v.w);
    }
}
