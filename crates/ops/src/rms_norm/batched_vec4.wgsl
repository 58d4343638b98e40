// Batched rms_norm over rows of N = 4 · k floats, read and written as vec4s: the same op
// as batched.wgsl (one workgroup per row b < params[1] of x; LAST_ONLY = 1 normalises row
// params[1] - 1 into row 0 of out). Every model's hidden size is a multiple of 4; a vec4
// load is one instruction where batched.wgsl issues four.

override N: u32 = 4u;
override EPS: f32 = 1e-5;
override LAST_ONLY: u32 = 0u;
// Threads per workgroup, a power of two (as batched.wgsl: 256, or 8 on CPU adapters).
override WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> weight: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
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
    let n4 = N / 4u;
    let xi = b * n4;
    let oi = ob * n4;
    var acc = 0.0;
    for (var i = tid; i < n4; i += WG) {
        let v = x[xi + i];
        acc += dot(v, v);
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
    for (var i = tid; i < n4; i += WG) {
        out[oi + i] = x[xi + i] * scale * weight[i];
    }
}
