// Fused decode attention: one query per head over the first n_ctx rows of the KV cache,
// scores, softmax and the weighted sum of values in one dispatch (two dispatches and a
// scores round trip through memory fewer than attn_scores + softmax + attn_values).
//
// One workgroup per query head. Positions are taken WG at a time; an online softmax
// keeps the running max m and sum l, rescaling the accumulators when m grows (the
// flash-attention recurrence). Within a chunk each thread scores one position; then
// thread (g, d) accumulates dimension d over the chunk's positions g, g + G, ... where
// G = WG / HEAD_DIM, and the G partial sums meet at the end.

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 64u;
override MAX_CTX: u32 = 1u;
override SCALE: f32 = 0.125;

const WG: u32 = 256u;
// A finite stand-in for -inf: exp(NEG - m) underflows to 0 without inf - inf = NaN.
const NEG: f32 = -3.0e38;

@group(0) @binding(0) var<storage, read> step: array<u32, 4>;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k_cache: array<f32>;
@group(0) @binding(3) var<storage, read> v_cache: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> q_head: array<f32, WG>;
var<workgroup> probs: array<f32, WG>;
var<workgroup> red: array<f32, WG>;

fn reduce_max(lid: u32, v: f32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if lid < s {
            red[lid] = max(red[lid], red[lid + s]);
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

fn reduce_sum(lid: u32, v: f32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if lid < s {
            red[lid] = red[lid] + red[lid + s];
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let n_ctx = min(step[1], MAX_CTX);
    let kv_head = h / (N_HEADS / N_KV_HEADS);
    let row = N_KV_HEADS * HEAD_DIM;
    let head_off = kv_head * HEAD_DIM;
    if lid < HEAD_DIM {
        q_head[lid] = q[h * HEAD_DIM + lid];
    }
    workgroupBarrier();
    let groups = WG / HEAD_DIM;
    let d = lid % HEAD_DIM;
    let g = lid / HEAD_DIM;
    var m = NEG;
    var l = 0.0;
    var acc = 0.0;
    for (var c = 0u; c < n_ctx; c += WG) {
        let t = c + lid;
        var s = NEG;
        if t < n_ctx {
            let base = t * row + head_off;
            // Four independent partial sums keep several loads in flight.
            var s0 = 0.0;
            var s1 = 0.0;
            var s2 = 0.0;
            var s3 = 0.0;
            for (var i = 0u; i < HEAD_DIM; i += 4u) {
                s0 += q_head[i] * k_cache[base + i];
                s1 += q_head[i + 1u] * k_cache[base + i + 1u];
                s2 += q_head[i + 2u] * k_cache[base + i + 2u];
                s3 += q_head[i + 3u] * k_cache[base + i + 3u];
            }
            s = ((s0 + s1) + (s2 + s3)) * SCALE;
        }
        let new_m = max(m, reduce_max(lid, s));
        var p = 0.0;
        if t < n_ctx {
            p = exp(s - new_m);
        }
        probs[lid] = p;
        let chunk_sum = reduce_sum(lid, p);
        let correction = exp(m - new_m);
        l = l * correction + chunk_sum;
        acc = acc * correction;
        let count = min(WG, n_ctx - c);
        for (var j = g; j < count; j += groups) {
            acc += probs[j] * v_cache[(c + j) * row + head_off + d];
        }
        m = new_m;
        // probs is rewritten by the next chunk.
        workgroupBarrier();
    }
    red[lid] = acc;
    workgroupBarrier();
    if g == 0u {
        var total = 0.0;
        for (var k = 0u; k < groups; k++) {
            total += red[k * HEAD_DIM + d];
        }
        out[h * HEAD_DIM + d] = total / l;
    }
}
