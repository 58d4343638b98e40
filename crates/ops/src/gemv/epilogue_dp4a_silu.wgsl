// The dp4a frame's hooks for the silu·mul epilogue: nothing to compute ahead.
fn epilogue_prefetch(lane: u32, row0: u32) -> Prefetched {
    return Prefetched(vec4<f32>(0.0), 0u);
}

fn emit_prefetched(r: u32, v: vec4<f32>, p: Prefetched) {
    emit(r, v);
}

// No work on the workgroup's rows together.
fn tail_prefetch(lid: u32, wg_lin: u32) {}

fn tail(lid: u32, wg_lin: u32) {}
