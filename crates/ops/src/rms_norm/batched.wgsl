// Batched rms_norm: one workgroup per row b < params[1] of x (row stride N); row b of out.
// With LAST_ONLY = 1 one workgroup normalises row params[1] - 1 into row 0 of out (the
// head of a prefill only needs the last prompt row).
//
// Prefixed by batched.rs with the element type `Elem` (f32, or vec4<f32> where N is a
// multiple of 4: one load where four scalar ones cost a third of the kernel's time,
// BENCHMARKS.md run 49), PER (floats an element) and `sq(v)` (the sum of v's squares).

override N: u32 = 1u;
override EPS: f32 = 1e-5;
override LAST_ONLY: u32 = 0u;
// Threads per workgroup, a power of two: 256, or 8 on CPU adapters (lavapipe runs a
// workgroup as a loop of 8-wide SIMD steps on one thread and switches coroutines at every
// barrier: at 141 rows of 576, 1.4 ms a call with 256).
override WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> x: array<Elem>;
@group(0) @binding(1) var<storage, read> weight: array<Elem>;
@group(0) @binding(2) var<storage, read_write> out: array<Elem>;
// [pos0, n_rows, 0, 0]
@group(0) @binding(3) var<storage, read> params: array<u32, 4>;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let n_rows = params[1];
    var b = wg.x;
    var ob = wg.x;
    if LAST_ONLY != 0u {
        b = n_rows - 1u;
        ob = 0u;
    }
    // Workgroup-uniform.
    if b >= n_rows {
        return;
    }
    let n = N / PER;
    let xi = b * n;
    let oi = ob * n;
    var acc = 0.0;
    for (var i = tid; i < n; i += WG) {
        acc += sq(x[xi + i]);
    }
    partial[tid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if tid < s {
            partial[tid] += partial[tid + s];
        }
        workgroupBarrier();
    }
    let scale = inverseSqrt(partial[0] / f32(N) + EPS);
    for (var i = tid; i < n; i += WG) {
        out[oi + i] = x[xi + i] * scale * weight[i];
    }
}
