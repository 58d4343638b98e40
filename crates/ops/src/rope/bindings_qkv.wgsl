// rope over one buffer holding q, k and v (the output of one fused q/k/v gemv): wgpu
// refuses one buffer bound read-write and read-only in the same dispatch, even as
// disjoint ranges, so the three live behind one binding with element offsets.
@group(0) @binding(0) var<storage, read> step: array<u32, 4>;
@group(0) @binding(1) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(3) var<storage, read_write> v_cache: array<f32>;

override Q_OFF: u32 = 0u;
override K_OFF: u32 = 0u;
override V_OFF: u32 = 0u;

fn q_get(i: u32) -> f32 { return qkv[Q_OFF + i]; }
fn q_set(i: u32, x: f32) { qkv[Q_OFF + i] = x; }
fn k_get(i: u32) -> f32 { return qkv[K_OFF + i]; }
fn v_get(i: u32) -> f32 { return qkv[V_OFF + i]; }
