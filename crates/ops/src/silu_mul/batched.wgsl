// Batched gated activation over one gate/up buffer: for rows b < params[1],
// out[b * N + i] = act(gu[b * IN_STRIDE + i]) * gu[b * IN_STRIDE + UP_OFFSET + i].
// Grid: (ceil(N / WG), rows). `act` comes from the file appended: silu (silu.wgsl) or
// gelu (gelu_mul's gelu.wgsl).

override N: u32 = 1u;
override IN_STRIDE: u32 = 2u;
override UP_OFFSET: u32 = 1u;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> gu: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> params: array<u32, 4>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = wg.y;
    let i = wg.x * WG + lid;
    if b >= params[1] || i >= N {
        return;
    }
    let g = gu[b * IN_STRIDE + i];
    out[b * N + i] = act(g) * gu[b * IN_STRIDE + UP_OFFSET + i];
}
