// The dp4a frame's hooks for the store epilogue (epilogue_store.wgsl): with ACCUMULATE
// the lane's rows before the add, loaded at the start (a = rows row0..row0 + 3; lane 0 of
// a row group emits).
fn epilogue_prefetch(lane: u32, row0: u32) -> Prefetched {
    var p = Prefetched(vec4<f32>(0.0), 0u);
    if ACCUMULATE != 0u && lane == 0u {
        let last = OUT_OFFSET + ROWS - 1u;
        let i = OUT_OFFSET + row0;
        p.a = vec4<f32>(y[min(i, last)], y[min(i + 1u, last)], y[min(i + 2u, last)], y[min(i + 3u, last)]);
    }
    return p;
}

fn emit_prefetched(r: u32, v: vec4<f32>, p: Prefetched) {
    var out = v;
    if ACCUMULATE != 0u {
        out += p.a;
    }
    for (var k = 0u; k < NR; k++) {
        put_row(r + k, out[k]);
    }
}

// No work on the workgroup's rows together.
fn tail_prefetch(lid: u32, wg_lin: u32) {}

fn tail(lid: u32, wg_lin: u32) {}
