// Batched add for prompt processing: for rows b < params[1],
// acc[b * ACC_STRIDE + i] += x[b * X_STRIDE + i] over N floats. X_STRIDE 0 adds the same
// x to every row (a bias). Grid: (ceil(N / WG), rows).

override N: u32 = 1u;
override ACC_STRIDE: u32 = 1u;
override X_STRIDE: u32 = 0u;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read_write> acc: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> params: array<u32, 4>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = wg.y;
    let i = wg.x * WG + lid;
    if b >= params[1] || i >= N {
        return;
    }
    acc[b * ACC_STRIDE + i] += x[b * X_STRIDE + i];
}
