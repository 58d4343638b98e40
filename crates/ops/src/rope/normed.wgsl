// head_norm+rope: the q and k head norms (Qwen3's and Gemma 3's attn_q_norm / attn_k_norm),
// then rope and the KV-cache append, in one dispatch over one buffer holding q, k and v
// (what the q/k/v gemv writes). The same arithmetic as head_norm/kernel.wgsl followed by
// rope/kernel.wgsl: two dispatches and a barrier fewer per layer.
//
// One workgroup per head: q heads [0, N_HEADS) are normed, rotated and written back in
// place; k heads [N_HEADS, N_HEADS + N_KV_HEADS) normed, rotated and stored in k_cache
// row `pos`; v heads (the next N_KV_HEADS) copied into v_cache row `pos`. With RING the
// cache holds MAX_CTX rows as a ring.
//
// Each thread owns whole rope pairs (pair p = tid + k·WG, both of its elements), so the
// rotation needs no exchange between threads: the head's elements, their norm weights
// and the pairs' angles are all loaded or computed before the norm's one reduction, the
// only barriers. (H100, Gemma 3's 4 + 1 heads of 256: the form that staged the normed
// head in workgroup memory and loaded the weights after the reduction took 7.6 µs a call
// corrected for the timestamps, BENCHMARKS run 31.)

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 2u;
override ROPE_DIMS: u32 = 2u;
override MAX_CTX: u32 = 1u;
override BASE: f32 = 10000.0;
override NEOX: bool = false;
override RING: bool = false;
override Q_OFF: u32 = 0u;
override K_OFF: u32 = 0u;
override V_OFF: u32 = 0u;
override EPS: f32 = 1e-6;
const WG: u32 = 64u;
// Pairs per thread: HEAD_DIM / 2 <= WG * PAIRS (heads of up to 512 dims).
const PAIRS: u32 = 4u;
// v heads: elements per thread.
const PER: u32 = 2u * PAIRS;

@group(0) @binding(0) var<storage, read> step: array<u32, 4>;
@group(0) @binding(1) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(3) var<storage, read_write> v_cache: array<f32>;
@group(0) @binding(4) var<storage, read> q_weight: array<f32>;
@group(0) @binding(5) var<storage, read> k_weight: array<f32>;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let h = wg.x;
    let pos = step[0];
    // As rope: past the cache without a ring, nothing is written.
    let inside = pos < MAX_CTX || RING;
    let row = select(pos, pos % MAX_CTX, RING) * N_KV_HEADS * HEAD_DIM;
    if h >= N_HEADS + N_KV_HEADS {
        let vh = h - N_HEADS - N_KV_HEADS;
        for (var j = 0u; j < PER; j++) {
            let i = tid + j * WG;
            if i < HEAD_DIM && vh < N_KV_HEADS && inside {
                v_cache[row + vh * HEAD_DIM + i] = qkv[V_OFF + vh * HEAD_DIM + i];
            }
        }
        return;
    }
    let is_q = h < N_HEADS;
    let base = select(K_OFF + (h - N_HEADS) * HEAD_DIM, Q_OFF + h * HEAD_DIM, is_q);
    let pairs = HEAD_DIM / 2u;
    var x: array<vec2<f32>, PAIRS>;
    var w: array<vec2<f32>, PAIRS>;
    var cs: array<vec2<f32>, PAIRS>;
    var acc = 0.0;
    for (var k = 0u; k < PAIRS; k++) {
        let p = tid + k * WG;
        let e = pair_at(min(p, pairs - 1u));
        let live = p < pairs;
        x[k] = select(vec2<f32>(0.0), vec2<f32>(qkv[base + e.x], qkv[base + e.y]), live);
        w[k] = select(
            vec2<f32>(k_weight[e.x], k_weight[e.y]),
            vec2<f32>(q_weight[e.x], q_weight[e.y]),
            is_q
        );
        cs[k] = angle(pos, min(p, pairs - 1u));
        acc += dot(x[k], x[k]);
    }
    partial[tid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if tid < s {
            partial[tid] += partial[tid + s];
        }
        workgroupBarrier();
    }
    let scale = inverseSqrt(partial[0] / f32(HEAD_DIM) + EPS);
    if !inside {
        return;
    }
    let k_row = row + (h - select(N_HEADS, 0u, is_q)) * HEAD_DIM;
    for (var k = 0u; k < PAIRS; k++) {
        let p = tid + k * WG;
        if p >= pairs {
            break;
        }
        let e = pair_at(p);
        let n = x[k] * scale * w[k];
        var r = n;
        if p < ROPE_DIMS / 2u {
            r = vec2<f32>(n.x * cs[k].x - n.y * cs[k].y, n.x * cs[k].y + n.y * cs[k].x);
        }
        if is_q {
            qkv[base + e.x] = r.x;
            qkv[base + e.y] = r.y;
        } else {
            // k stays normed (unrotated) in the buffer, as head_norm then rope leave it.
            qkv[base + e.x] = n.x;
            qkv[base + e.y] = n.y;
            k_cache[k_row + e.x] = r.x;
            k_cache[k_row + e.y] = r.y;
        }
    }
}
