// head_norm: an RMS norm over each head of q and of k, in place in the qkv buffer:
// x / sqrt(mean(x²) + EPS) * weight over HEAD_DIM floats, with the q weight for the
// N_HEADS heads at Q_OFF and the k weight for the N_KV_HEADS heads at K_OFF (Qwen3's and
// Gemma 3's attn_q_norm / attn_k_norm). One workgroup per head; each thread keeps its
// elements in registers between the reduction and the write, so the update in place is
// safe. The norm itself is head.wgsl's, appended.

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 4u;
override Q_OFF: u32 = 0u;
override K_OFF: u32 = 0u;
override EPS: f32 = 1e-6;
const WG: u32 = 64u;
// Elements per thread: HEAD_DIM <= WG * PER.
const PER: u32 = 8u;

@group(0) @binding(0) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(1) var<storage, read> q_weight: array<f32>;
@group(0) @binding(2) var<storage, read> k_weight: array<f32>;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let h = wg.x;
    if h >= N_HEADS + N_KV_HEADS {
        return;
    }
    let is_q = h < N_HEADS;
    let base = select(K_OFF + (h - N_HEADS) * HEAD_DIM, Q_OFF + h * HEAD_DIM, is_q);
    let v = normed_head(base, is_q, tid);
    for (var j = 0u; j < PER; j++) {
        let i = tid + j * WG;
        if i < HEAD_DIM {
            qkv[base + i] = v[j];
        }
    }
}
