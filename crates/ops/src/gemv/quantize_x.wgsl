// x rows quantized once per 32-element block for the dp4a gemm (kernel_gemm_dp4a.wgsl), as
// the dp4a gemv does in workgroup memory (d = max|x| / 127, q = round(x / d)): one thread per
// (batch row, block), rows past params[1] skipped. A block is three vec4<u32>: the 32 int8
// quants four to a word (elements 0..15, then 16..31), then d and d * Σq as f32 bits and
// two words of padding. The gemm's 64 row tiles then read 48 bytes per block instead of
// each quantizing the block's 128 bytes of f32 again.

override COLS: u32;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> xq: array<vec4<u32>>;
// [pos0, n_rows, 0, 0]
@group(0) @binding(2) var<storage, read> params: array<u32, 4>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let blocks = COLS / 32u;
    let i = gid.x + gid.y * nwg.x * 64u;
    if i >= params[1] * blocks {
        return;
    }
    let xo = i * 8u;
    let v0 = x[xo];
    let v1 = x[xo + 1u];
    let v2 = x[xo + 2u];
    let v3 = x[xo + 3u];
    let v4 = x[xo + 4u];
    let v5 = x[xo + 5u];
    let v6 = x[xo + 6u];
    let v7 = x[xo + 7u];
    let a = max(max(max(abs(v0), abs(v1)), max(abs(v2), abs(v3))),
        max(max(abs(v4), abs(v5)), max(abs(v6), abs(v7))));
    let amax = max(max(a.x, a.y), max(a.z, a.w));
    let d = amax / 127.0;
    let inv = select(0.0, 1.0 / d, d > 0.0);
    let q0 = vec4<i32>(round(v0 * inv));
    let q1 = vec4<i32>(round(v1 * inv));
    let q2 = vec4<i32>(round(v2 * inv));
    let q3 = vec4<i32>(round(v3 * inv));
    let q4 = vec4<i32>(round(v4 * inv));
    let q5 = vec4<i32>(round(v5 * inv));
    let q6 = vec4<i32>(round(v6 * inv));
    let q7 = vec4<i32>(round(v7 * inv));
    let qs = ((q0 + q1) + (q2 + q3)) + ((q4 + q5) + (q6 + q7));
    xq[3u * i] = vec4<u32>(pack4xI8Clamp(q0), pack4xI8Clamp(q1), pack4xI8Clamp(q2), pack4xI8Clamp(q3));
    xq[3u * i + 1u] = vec4<u32>(pack4xI8Clamp(q4), pack4xI8Clamp(q5), pack4xI8Clamp(q6), pack4xI8Clamp(q7));
    xq[3u * i + 2u] = vec4<u32>(bitcast<u32>(d), bitcast<u32>(d * f32((qs.x + qs.y) + (qs.z + qs.w))), 0u, 0u);
}
