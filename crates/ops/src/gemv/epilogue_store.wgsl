// gemv epilogue: y[OUT_OFFSET + r] = row r, or += with ACCUMULATE (a residual add fused
// into the projection, saving a dispatch).
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

override ACCUMULATE: u32 = 0u;

fn phys_row(r: u32) -> u32 {
    return r;
}

fn store_row(r: u32, v: f32) {
    if r < ROWS && ACCUMULATE != 0u {
        put_row(r, y[OUT_OFFSET + r] + v);
    } else {
        put_row(r, v);
    }
}

// y[OUT_OFFSET + r] = v, rows past ROWS dropped.
fn put_row(r: u32, v: f32) {
    if r < ROWS {
        y[OUT_OFFSET + r] = v;
    }
}

fn emit(r: u32, v: vec4<f32>) {
    store_row(r, v.x);
    if NR > 1u {
        store_row(r + 1u, v.y);
    }
    if NR > 2u {
        store_row(r + 2u, v.z);
    }
    if NR > 3u {
        store_row(r + 3u, v.w);
    }
}
