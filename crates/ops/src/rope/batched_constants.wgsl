// The constants and params binding of the batched rope kernels (batched.wgsl and
// batched_vec4.wgsl), prefixed to each by batched.rs. NEOX is always false in the vec4
// kernel (`RopeBatched::takes_vec4`).

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 2u;
override ROPE_DIMS: u32 = 2u;
override MAX_CTX: u32 = 1u;
override BASE: f32 = 10000.0;
override Q_OFF: u32 = 0u;
override K_OFF: u32 = 0u;
override V_OFF: u32 = 0u;
override QKV_STRIDE: u32 = 0u;
override NEOX: bool = false;
override RING: bool = false;
override PARTS: u32 = 1u;
override PART_STRIDE: u32 = 0u;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> params: array<u32, 4>;
