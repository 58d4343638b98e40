// A thread's scan of the logits, shared by `argmax` and `argmax_partial` (appended; they
// declare N and `logits`).

// WGSL has no isNan and lets compilers assume NaN away in float compares, so test the
// bits: exponent all ones and a non-zero mantissa.
fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// Clamped, so that a group of loads has no branch between them.
fn load(i: u32) -> f32 {
    return logits[min(i, N - 1u)];
}

// Indices rise within a thread, so a strict > keeps the first of equal values.
fn take(v: f32, i: u32, bv: ptr<function, f32>, bi: ptr<function, u32>) {
    if i < N && !is_nan(v) && (*bi == NONE || v > *bv) {
        *bv = v;
        *bi = i;
    }
}
