// head_norm+rope: the q and k head norms (Qwen3's and Gemma 3's attn_q_norm / attn_k_norm),
// then rope and the KV-cache append, in one dispatch over one buffer holding q, k and v
// (what the q/k/v gemv writes). The same arithmetic as head_norm/kernel.wgsl followed by
// rope/kernel.wgsl: two dispatches and a barrier fewer per layer.
//
// One workgroup per head: q heads [0, N_HEADS) are normed, rotated and written back in
// place; k heads [N_HEADS, N_HEADS + N_KV_HEADS) normed, rotated and stored in k_cache
// row `pos`; v heads (the next N_KV_HEADS) copied into v_cache row `pos`. The normed head
// sits in workgroup memory between the norm and the rotation, since a rope pair (NeoX:
// (i, i + ROPE_DIMS/2)) spans threads. With RING the cache holds MAX_CTX rows as a ring.
// The norm is head_norm/head.wgsl's, appended.

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
// Elements per thread: HEAD_DIM <= WG * PER (the largest head, as head_norm's).
const PER: u32 = 8u;

@group(0) @binding(0) var<storage, read> step: array<u32, 4>;
@group(0) @binding(1) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(3) var<storage, read_write> v_cache: array<f32>;
@group(0) @binding(4) var<storage, read> q_weight: array<f32>;
@group(0) @binding(5) var<storage, read> k_weight: array<f32>;

var<workgroup> partial: array<f32, WG>;
var<workgroup> head: array<f32, 512>;

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
    let v = normed_head(base, is_q, tid);
    for (var j = 0u; j < PER; j++) {
        let i = tid + j * WG;
        if i < HEAD_DIM {
            head[i] = v[j];
            // k stays normed (unrotated) in the buffer, as head_norm then rope leave it.
            if !is_q && inside {
                qkv[base + i] = v[j];
            }
        }
    }
    workgroupBarrier();
    if !inside {
        return;
    }
    let k_row = row + (h - select(N_HEADS, 0u, is_q)) * HEAD_DIM;
    for (var p = tid; p < HEAD_DIM / 2u; p += WG) {
        let e = pair_at(p);
        var x0 = head[e.x];
        var x1 = head[e.y];
        if p < ROPE_DIMS / 2u {
            let cs = angle(pos, p);
            let r0 = x0 * cs.x - x1 * cs.y;
            x1 = x0 * cs.y + x1 * cs.x;
            x0 = r0;
        }
        if is_q {
            qkv[base + e.x] = x0;
            qkv[base + e.y] = x1;
        } else {
            k_cache[k_row + e.x] = x0;
            k_cache[k_row + e.y] = x1;
        }
    }
}
