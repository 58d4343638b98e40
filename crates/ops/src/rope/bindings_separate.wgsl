// rope with q, k and v in buffers of their own.
@group(0) @binding(0) var<storage, read> step: array<u32, 4>;
@group(0) @binding(1) var<storage, read_write> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(5) var<storage, read_write> v_cache: array<f32>;

fn q_get(i: u32) -> f32 { return q[i]; }
fn q_set(i: u32, x: f32) { q[i] = x; }
fn k_get(i: u32) -> f32 { return k[i]; }
fn v_get(i: u32) -> f32 { return v[i]; }
