// gelu_mul: out = gelu(gate) · up, elementwise over N floats (the GeGLU of a Gemma FFN),
// gelu (`act`) from gelu.wgsl, appended.

override N: u32 = 1u;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> gate: array<f32>;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

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
    out[i] = act(gate[i]) * up[i];
}
