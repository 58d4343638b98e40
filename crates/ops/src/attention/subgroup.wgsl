// Decode attention for adapters that are CPUs (variant `subgroup`): one workgroup of SG
// lanes per query head, SG being the adapter's subgroup size (lavapipe: 8). Each lane owns
// HEAD_DIM / SG consecutive dims (VPL vec4s, VPL <= 4) of q, K, V and the output; a
// position's score is the lanes' partial dots summed with subgroupAdd, and the online
// softmax (running max m and sum l, accumulators rescaled when m grows) runs the same in
// every lane. No workgroup memory, no barrier: on lavapipe a workgroup runs as one loop
// of SIMD steps and a barrier switches coroutines, which made the 256-thread fused kernel
// cost ~1.2 ms a call at 8 positions.

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 64u;
override MAX_CTX: u32 = 1u;
override SCALE: f32 = 0.125;
override SG: u32 = 8u;

const NEG: f32 = -3.0e38;

@group(0) @binding(0) var<storage, read> step: array<u32, 4>;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v_cache: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;

@compute @workgroup_size(SG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let n_ctx = min(step[1], MAX_CTX);
    let hd4 = HEAD_DIM / 4u;
    let vpl = hd4 / SG;
    let kv_head = h / (N_HEADS / N_KV_HEADS);
    let row4 = N_KV_HEADS * hd4;
    let qb = h * hd4 + lid * vpl;
    let kb = kv_head * hd4 + lid * vpl;
    // The scale goes into q once rather than into every score.
    let q0 = q[qb] * SCALE;
    var q1 = vec4<f32>(0.0);
    var q2 = vec4<f32>(0.0);
    var q3 = vec4<f32>(0.0);
    if vpl > 1u {
        q1 = q[qb + 1u] * SCALE;
    }
    if vpl > 2u {
        q2 = q[qb + 2u] * SCALE;
        q3 = q[qb + 3u] * SCALE;
    }
    var m = NEG;
    var l = 0.0;
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    for (var t = 0u; t < n_ctx; t++) {
        let base = t * row4 + kb;
        var part = dot(q0, k_cache[base]);
        if vpl > 1u {
            part += dot(q1, k_cache[base + 1u]);
        }
        if vpl > 2u {
            part += dot(q2, k_cache[base + 2u]) + dot(q3, k_cache[base + 3u]);
        }
        let s = subgroupAdd(part);
        let new_m = max(m, s);
        let correction = exp(m - new_m);
        let p = exp(s - new_m);
        l = l * correction + p;
        a0 = a0 * correction + p * v_cache[base];
        if vpl > 1u {
            a1 = a1 * correction + p * v_cache[base + 1u];
        }
        if vpl > 2u {
            a2 = a2 * correction + p * v_cache[base + 2u];
            a3 = a3 * correction + p * v_cache[base + 3u];
        }
        m = new_m;
    }
    out[qb] = a0 / l;
    if vpl > 1u {
        out[qb + 1u] = a1 / l;
    }
    if vpl > 2u {
        out[qb + 2u] = a2 / l;
        out[qb + 3u] = a3 / l;
    }
}
