// gelu_mul: out = gelu(gate) · up, elementwise over N floats (the GeGLU of a Gemma FFN),
// with ggml's tanh approximation: gelu(g) = 0.5·g·(1 + tanh(√(2/π)·g·(1 + 0.044715·g²))).

override N: u32 = 1u;
const WG: u32 = 256u;
const SQRT_2_OVER_PI: f32 = 0.7978845608028654;
const GELU_COEF_A: f32 = 0.044715;

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
    let g = gate[i];
    let u = SQRT_2_OVER_PI * g * (1.0 + GELU_COEF_A * g * g);
    // tanh(±10) is ±1 in f32; clamping keeps a tanh built from exponentials from
    // overflowing into NaN for large |u|.
    out[i] = 0.5 * g * (1.0 + tanh(clamp(u, -10.0, 10.0))) * up[i];
}
