// add: acc += x, in place over N floats (the residual stream).

override N: u32 = 1u;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read_write> acc: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // 2-D grid (grid_2d): at most 65535 workgroups per dimension.
    let i = (wg.x + wg.y * nwg.x) * WG + lid;
    if i >= N {
        return;
    }
    acc[i] += x[i];
}
